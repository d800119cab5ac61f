/* Declarations of the C helpers in pyrdk_helpers.c. */
#ifndef PYRDK_HELPERS_H
#define PYRDK_HELPERS_H

#include <stdint.h>
#include <sys/types.h>
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

/* A handle's use count, kept in C so that the per-message calls need no Python lock:
 * pyrdk_guard_enter() fails once pyrdk_guard_close() has run, and close waits for
 * pyrdk_guard_users() to reach 0 before rd_kafka_destroy(). */
typedef struct pyrdk_guard_s {
        int users;
        int closing;
} pyrdk_guard_t;

int pyrdk_guard_enter(pyrdk_guard_t *g);
void pyrdk_guard_leave(pyrdk_guard_t *g);
void pyrdk_guard_close(pyrdk_guard_t *g);
int pyrdk_guard_users(pyrdk_guard_t *g);

/* A failed delivery of a message produced without an id (pyrdk_produce_batch), with
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

/* Returned by the guarded calls when the handle is closed. */
enum { PYRDK_ERR_CLOSED = -10000 };

rd_kafka_resp_err_t pyrdk_produce(pyrdk_guard_t *guard, rd_kafka_t *rk, rd_kafka_topic_t *rkt,
                                  int32_t partition, const void *value, size_t value_len,
                                  const void *key, size_t key_len, int64_t timestamp,
                                  rd_kafka_headers_t *headers, uintptr_t id, size_t max_size);
/* What pyrdk_send() needs besides the message: the per-message path passes one pointer. */
typedef struct pyrdk_sender_s {
        pyrdk_guard_t *guard;
        rd_kafka_t *rk;
        rd_kafka_topic_t *rkt;
        size_t max_size;
} pyrdk_sender_t;

rd_kafka_resp_err_t pyrdk_send(const pyrdk_sender_t *s, int32_t partition, const char *value,
                               size_t value_len, const char *key, size_t key_len, uintptr_t id);
/* The most messages handed to rd_kafka_produce_batch() in one call. */
enum { BATCH_AT_ONCE = 256 };
/* More than RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD (36 bytes): a message this close to
 * max_size goes alone, so that librdkafka's own size check never fails in a batch. */
enum { SIZE_MARGIN = 64 };

int pyrdk_produce_run(rd_kafka_topic_t *rkt, int32_t partition, rd_kafka_message_t *msgs, int n);

rd_kafka_resp_err_t pyrdk_produce_batch(pyrdk_guard_t *guard, rd_kafka_t *rk, rd_kafka_topic_t *rkt,
                                        int32_t partition_cnt, uint64_t start, uint64_t run,
                                        const char *values, const size_t *value_lens,
                                        const char *keys, const size_t *key_lens, size_t cnt,
                                        size_t max_size, int block_ms, size_t *done);

void pyrdk_batch_destroy(rd_kafka_message_t **msgs, size_t cnt);

/* pyrdk_messages.c: consumed messages as Message objects (arguments typed void * are
 * Python objects, passed as their id()). */
int pyrdk_messages_init(void *type, void *namespace);
ssize_t pyrdk_messages_append(rd_kafka_message_t **msgs, size_t cnt, void *out, void *partitions);
int pyrdk_messages_mark_next(void *msgs, void *next);
int pyrdk_messages_deliver(void *pending, void *table, const uintptr_t *ids, const int *errs,
                           const int32_t *partitions, const int64_t *offsets, const int64_t *timestamps,
                           size_t cnt);

#endif
