/* C glue compiled into pyrdk._rdkafka: calls cffi cannot make (variadic ones) and the
 * delivery-report path, which runs on librdkafka's polling thread without the GIL. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pyrdk_helpers.h"

struct pyrdk_opaque_s {
        uintptr_t id;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pyrdk_report_t *reports;
        size_t cnt;
        size_t size;
};

pyrdk_opaque_t *pyrdk_opaque_new(uintptr_t id) {
        pyrdk_opaque_t *op = calloc(1, sizeof(*op));
        if (!op)
                return NULL;
        op->id = id;
        pthread_mutex_init(&op->lock, NULL);
        pthread_cond_init(&op->cond, NULL);
        return op;
}

void pyrdk_opaque_destroy(pyrdk_opaque_t *op) {
        if (!op)
                return;
        pthread_mutex_destroy(&op->lock);
        pthread_cond_destroy(&op->cond);
        free(op->reports);
        free(op);
}

uintptr_t pyrdk_opaque_id(void *opaque) {
        return opaque ? ((pyrdk_opaque_t *)opaque)->id : 0;
}

/* rd_kafka_conf_set_dr_msg_cb() target: append one report; never touches Python. */
void pyrdk_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        pyrdk_opaque_t *op = opaque;
        pyrdk_report_t *r;
        (void)rk;
        if (!op)
                return;
        pthread_mutex_lock(&op->lock);
        if (op->cnt == op->size) {
                size_t size = op->size ? op->size * 2 : 1024;
                pyrdk_report_t *grown = realloc(op->reports, size * sizeof(*grown));
                if (!grown) { /* out of memory: the message stays pending; stop() reports it */
                        pthread_mutex_unlock(&op->lock);
                        return;
                }
                op->reports = grown;
                op->size = size;
        }
        r = &op->reports[op->cnt++];
        r->id = (uintptr_t)m->_private;
        r->err = m->err;
        r->partition = m->partition;
        r->offset = m->offset;
        r->timestamp = rd_kafka_message_timestamp(m, NULL);
        pthread_cond_broadcast(&op->cond);
        pthread_mutex_unlock(&op->lock);
}

/* Move up to max reports, oldest first, into out; the number moved. */
size_t pyrdk_reports_drain(pyrdk_opaque_t *op, pyrdk_report_t *out, size_t max) {
        size_t n;
        pthread_mutex_lock(&op->lock);
        n = op->cnt < max ? op->cnt : max;
        memcpy(out, op->reports, n * sizeof(*out));
        memmove(op->reports, op->reports + n, (op->cnt - n) * sizeof(*out));
        op->cnt -= n;
        pthread_mutex_unlock(&op->lock);
        return n;
}

/* Wait (GIL released by cffi) until a report is buffered or timeout_ms passes; the count. */
size_t pyrdk_reports_wait(pyrdk_opaque_t *op, int timeout_ms) {
        struct timespec ts;
        size_t n;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += timeout_ms / 1000;
        ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&op->lock);
        while (op->cnt == 0) {
                if (pthread_cond_timedwait(&op->cond, &op->lock, &ts) != 0)
                        break;
        }
        n = op->cnt;
        pthread_mutex_unlock(&op->lock);
        return n;
}

/* One message through rd_kafka_producev(), which is variadic and so out of cffi's reach.
 * The payload and key are copied (RD_KAFKA_MSG_F_COPY). On success librdkafka owns
 * the headers; on failure they are destroyed here, so the caller never frees them. */
rd_kafka_resp_err_t pyrdk_produce(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t partition,
                                  const void *value, size_t value_len, const void *key, size_t key_len,
                                  int64_t timestamp, rd_kafka_headers_t *headers, uintptr_t id) {
        rd_kafka_resp_err_t err;

        if (headers)
                err = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(partition),
                                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                        RD_KAFKA_V_VALUE((void *)value, value_len),
                                        RD_KAFKA_V_KEY(key, key_len),
                                        RD_KAFKA_V_TIMESTAMP(timestamp),
                                        RD_KAFKA_V_HEADERS(headers),
                                        RD_KAFKA_V_OPAQUE((void *)id), RD_KAFKA_V_END);
        else
                err = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(partition),
                                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                        RD_KAFKA_V_VALUE((void *)value, value_len),
                                        RD_KAFKA_V_KEY(key, key_len),
                                        RD_KAFKA_V_TIMESTAMP(timestamp),
                                        RD_KAFKA_V_OPAQUE((void *)id), RD_KAFKA_V_END);
        if (err && headers)
                rd_kafka_headers_destroy(headers);
        return err;
}
