/* Declarations of the C helpers in pyrdk_helpers.c (compiled into the cffi module). */
#ifndef PYRDK_HELPERS_H
#define PYRDK_HELPERS_H

#include <stdint.h>
#include <sys/types.h>
#include <librdkafka/rdkafka.h>

#include "pyrdk_guard.h"

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
void pyrdk_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *partitions,
                        void *opaque);
size_t pyrdk_reports_wait(pyrdk_opaque_t *op, int timeout_ms);

/* A failed delivery of a message produced without an id (produce_batch()'s), with
 * copies of its value and key: pyrdk_failed_pop() hands them over, pyrdk_failed_free()
 * releases them. */
typedef struct pyrdk_failed_s {
        int err;
        int32_t partition;
        char *value;        /* NULL: none */
        size_t value_len;
        char *key;          /* NULL: none */
        size_t key_len;
} pyrdk_failed_t;

size_t pyrdk_reports_drain_columns(pyrdk_opaque_t *op, uintptr_t *ids, int *errs, int32_t *partitions,
                                   int64_t *offsets, int64_t *timestamps, size_t max);
uint64_t pyrdk_batch_done(pyrdk_opaque_t *op);
int pyrdk_failed_pop(pyrdk_opaque_t *op, pyrdk_failed_t *out);
size_t pyrdk_failed_lost(pyrdk_opaque_t *op);
void pyrdk_failed_free(pyrdk_failed_t *f);

rd_kafka_resp_err_t pyrdk_produce(pyrdk_guard_t *guard, rd_kafka_t *rk, rd_kafka_topic_t *rkt,
                                  int32_t partition, const void *value, size_t value_len,
                                  const void *key, size_t key_len, int64_t timestamp,
                                  rd_kafka_headers_t *headers, uintptr_t id, size_t max_size);
void pyrdk_batch_destroy(rd_kafka_message_t **msgs, size_t cnt);

/* Up to size messages (and error events) of the queue into array, as
 * rd_kafka_consume_batch_queue() puts them there; the number, or -1. What is there now;
 * else the first to come within timeout_ms (rd_kafka_consume_queue()) and what is there
 * after it: rd_kafka_consume_batch_queue() alone waits until size have come, or the timeout. */
ssize_t pyrdk_consume_ready(rd_kafka_queue_t *rkqu, int timeout_ms, rd_kafka_message_t **array, size_t size);

/* rd_kafka_queue_poll(), its event (or NULL) also left in *out: a caller whose call a
 * signal's handler interrupts as it returns (Ctrl-C) finds it there, to destroy. */
rd_kafka_event_t *pyrdk_queue_poll(rd_kafka_queue_t *rkqu, int timeout_ms, rd_kafka_event_t **out);

/* rd_kafka_conf_properties_show()'s table of every property (its name, the clients it
 * applies to, ...) as one string, or NULL; free it with pyrdk_free(). */
char *pyrdk_conf_properties(void);
void pyrdk_free(void *p);

#endif
