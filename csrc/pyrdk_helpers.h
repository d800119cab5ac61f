/* Declarations of the C helpers in pyrdk_helpers.c. */
#ifndef PYRDK_HELPERS_H
#define PYRDK_HELPERS_H

#include <stdint.h>
#include <librdkafka/rdkafka.h>

/* One delivery report, as pyrdk_dr_msg_cb() records it. */
typedef struct pyrdk_report_s {
        uintptr_t id;        /* the msg_opaque given to pyrdk_produce() */
        int err;
        int32_t partition;
        int64_t offset;
        int64_t timestamp;
} pyrdk_report_t;

/* The conf opaque of every pyrdk handle: the Python registry id of its callbacks,
 * and the buffer of delivery reports that pyrdk_dr_msg_cb() fills without the GIL. */
typedef struct pyrdk_opaque_s pyrdk_opaque_t;

pyrdk_opaque_t *pyrdk_opaque_new(uintptr_t id);
void pyrdk_opaque_destroy(pyrdk_opaque_t *op);
uintptr_t pyrdk_opaque_id(void *opaque);
void pyrdk_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage, void *opaque);
size_t pyrdk_reports_drain(pyrdk_opaque_t *op, pyrdk_report_t *out, size_t max);
size_t pyrdk_reports_wait(pyrdk_opaque_t *op, int timeout_ms);

rd_kafka_resp_err_t pyrdk_produce(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t partition,
                                  const void *value, size_t value_len, const void *key, size_t key_len,
                                  int64_t timestamp, rd_kafka_headers_t *headers, uintptr_t id);

#endif
