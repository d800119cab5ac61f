/* C glue compiled into pyrdk._rdkafka: a call cffi cannot make (the variadic
 * rd_kafka_producev) and the delivery-report path, which runs on librdkafka's thread
 * without the GIL. The hot paths that make Python objects are the C core's (csrc/core/). */
#include <pthread.h>
#include <stdio.h>
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
        uint64_t batch_done;     /* reports of messages produced without an id */
        pyrdk_failed_t *failed;  /* the failed ones among them, with their value and key */
        size_t failed_cnt;
        size_t failed_size;
        size_t failed_lost;      /* failures that found no room in failed (out of memory) */
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
        for (size_t i = 0; i < op->failed_cnt; i++)
                pyrdk_failed_free(&op->failed[i]);
        free(op->failed);
        free(op);
}

uintptr_t pyrdk_opaque_id(void *opaque) {
        return opaque ? ((pyrdk_opaque_t *)opaque)->id : 0;
}

static char *copy_of(const void *p, size_t len) {
        char *c;
        if (!p)
                return NULL;
        c = malloc(len ? len : 1);
        if (c)
                memcpy(c, p, len);
        return c;
}

/* A message produced without an id: count its report; keep a failure with copies of the
 * value and key (without them if they cannot be copied; only counted, in failed_lost, if
 * the list cannot grow). */
static void batch_report(pyrdk_opaque_t *op, const rd_kafka_message_t *m) {
        pyrdk_failed_t *f;
        op->batch_done++;
        if (!m->err)
                return;
        if (op->failed_cnt == op->failed_size) {
                size_t size = op->failed_size ? op->failed_size * 2 : 64;
                pyrdk_failed_t *grown = realloc(op->failed, size * sizeof(*grown));
                if (!grown) {
                        op->failed_lost++;
                        return;
                }
                op->failed = grown;
                op->failed_size = size;
        }
        f = &op->failed[op->failed_cnt++];
        f->err = m->err;
        f->partition = m->partition;
        f->value = copy_of(m->payload, m->len);
        f->value_len = f->value ? m->len : 0;
        f->key = copy_of(m->key, m->key_len);
        f->key_len = f->key ? m->key_len : 0;
}

/* The Python trampoline (pyrdk/rd/callbacks.py), declared "Python+C" in csrc/cdef/callbacks.h. */
void _pyrdk_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *partitions,
                         void *opaque, int *done);

/* rd_kafka_conf_set_rebalance_cb() target: the Python trampoline tells the program and
 * assigns or revokes, setting done. A signal pending as librdkafka calls it (a Ctrl-C during
 * rd_kafka_consumer_close) raises at its first bytecode, before any of that; cffi reports the
 * exception and returns. librdkafka would then wait for ever for the assignment to change
 * (consumer close hangs, the group stalls), so it is changed here, as given. */
void pyrdk_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *partitions,
                        void *opaque) {
        const char *protocol;
        rd_kafka_error_t *error = NULL;
        int done = 0;

        _pyrdk_rebalance_cb(rk, err, partitions, opaque, &done);
        if (done)
                return;
        protocol = rd_kafka_rebalance_protocol(rk);
        if (protocol && !strcmp(protocol, "COOPERATIVE"))
                error = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ? rd_kafka_incremental_assign(rk, partitions)
                                                                    : rd_kafka_incremental_unassign(rk, partitions);
        else
                rd_kafka_assign(rk, err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ? partitions : NULL);
        if (error)
                rd_kafka_error_destroy(error);
}

/* rd_kafka_conf_set_dr_msg_cb() target: append one report; never touches Python. */
void pyrdk_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        pyrdk_opaque_t *op = opaque;
        pyrdk_report_t *r;
        (void)rk;
        if (!op)
                return;
        pthread_mutex_lock(&op->lock);
        if (!m->_private) {
                batch_report(op, m);
                pthread_cond_broadcast(&op->cond);
                pthread_mutex_unlock(&op->lock);
                return;
        }
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

/* Move up to max reports, oldest first, into one array per field; the number moved. */
size_t pyrdk_reports_drain_columns(pyrdk_opaque_t *op, uintptr_t *ids, int *errs, int32_t *partitions,
                                   int64_t *offsets, int64_t *timestamps, size_t max) {
        size_t n;
        pthread_mutex_lock(&op->lock);
        n = op->cnt < max ? op->cnt : max;
        for (size_t i = 0; i < n; i++) {
                const pyrdk_report_t *r = &op->reports[i];
                ids[i] = r->id;
                errs[i] = r->err;
                partitions[i] = r->partition;
                offsets[i] = r->offset;
                timestamps[i] = r->timestamp;
        }
        if (n) /* none yet: reports may still be NULL, which memmove() must not be given */
                memmove(op->reports, op->reports + n, (op->cnt - n) * sizeof(*op->reports));
        op->cnt -= n;
        pthread_mutex_unlock(&op->lock);
        return n;
}

/* How many messages produced without an id have been reported, delivered or failed. */
uint64_t pyrdk_batch_done(pyrdk_opaque_t *op) {
        uint64_t n;
        pthread_mutex_lock(&op->lock);
        n = op->batch_done;
        pthread_mutex_unlock(&op->lock);
        return n;
}

/* Move the oldest failure of a message produced without an id into out: 1, or 0 if none. */
int pyrdk_failed_pop(pyrdk_opaque_t *op, pyrdk_failed_t *out) {
        int found = 0;
        pthread_mutex_lock(&op->lock);
        if (op->failed_cnt) {
                *out = op->failed[0];
                memmove(op->failed, op->failed + 1, (op->failed_cnt - 1) * sizeof(*op->failed));
                op->failed_cnt--;
                found = 1;
        }
        pthread_mutex_unlock(&op->lock);
        return found;
}

/* How many failures found no room to be kept since the last call (and reset it). */
size_t pyrdk_failed_lost(pyrdk_opaque_t *op) {
        size_t n;
        pthread_mutex_lock(&op->lock);
        n = op->failed_lost;
        op->failed_lost = 0;
        pthread_mutex_unlock(&op->lock);
        return n;
}

void pyrdk_failed_free(pyrdk_failed_t *f) {
        free(f->value);
        free(f->key);
        f->value = f->key = NULL;
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
        while (op->cnt == 0 && op->failed_cnt == 0) {
                if (pthread_cond_timedwait(&op->cond, &op->lock, &ts) != 0)
                        break;
        }
        n = op->cnt + op->failed_cnt;
        pthread_mutex_unlock(&op->lock);
        return n;
}

static rd_kafka_resp_err_t produce_one(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t partition,
                                       const void *value, size_t value_len, const void *key,
                                       size_t key_len, int64_t timestamp, rd_kafka_headers_t *headers,
                                       uintptr_t id) {
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
        return err;
}

/* One message through rd_kafka_producev(), which is variadic and so out of cffi's reach,
 * under the handle's guard (PYRDK_ERR_CLOSED once closed). The payload and key are copied
 * (RD_KAFKA_MSG_F_COPY); value + key larger than max_size is refused with
 * RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE. On success librdkafka owns the headers; on
 * failure they are destroyed here, so the caller never frees them. */
rd_kafka_resp_err_t pyrdk_produce(pyrdk_guard_t *guard, rd_kafka_t *rk, rd_kafka_topic_t *rkt,
                                  int32_t partition, const void *value, size_t value_len,
                                  const void *key, size_t key_len, int64_t timestamp,
                                  rd_kafka_headers_t *headers, uintptr_t id, size_t max_size) {
        rd_kafka_resp_err_t err;

        if (value_len + key_len > max_size)
                err = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
        else if (!pyrdk_guard_enter(guard))
                err = (rd_kafka_resp_err_t)PYRDK_ERR_CLOSED;
        else {
                err = produce_one(rk, rkt, partition, value, value_len, key, key_len, timestamp,
                                  headers, id);
                pyrdk_guard_leave(guard);
        }
        if (err && headers)
                rd_kafka_headers_destroy(headers);
        return err;
}

void pyrdk_batch_destroy(rd_kafka_message_t **msgs, size_t cnt) {
        for (size_t i = 0; i < cnt; i++)
                rd_kafka_message_destroy(msgs[i]);
}

ssize_t pyrdk_consume_ready(rd_kafka_queue_t *rkqu, int timeout_ms, rd_kafka_message_t **array, size_t size) {
        ssize_t n = rd_kafka_consume_batch_queue(rkqu, 0, array, size);

        if (n != 0 || timeout_ms == 0 || size == 0)
                return n;
        if (!(array[0] = rd_kafka_consume_queue(rkqu, timeout_ms)))
                return 0;
        n = size > 1 ? rd_kafka_consume_batch_queue(rkqu, 0, array + 1, size - 1) : 0;
        return n < 0 ? 1 : n + 1;
}

rd_kafka_event_t *pyrdk_queue_poll(rd_kafka_queue_t *rkqu, int timeout_ms, rd_kafka_event_t **out) {
        return *out = rd_kafka_queue_poll(rkqu, timeout_ms);
}

char *pyrdk_conf_properties(void) {
        char *text = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&text, &len);

        if (!fp)
                return NULL;
        rd_kafka_conf_properties_show(fp);
        if (fclose(fp) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

void pyrdk_free(void *p) {
        free(p);
}
