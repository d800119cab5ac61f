/* ProducerCore's state (producer.c), shared with its Arrow entry (produce_arrow.c). */
#ifndef PYRDK_PRODUCER_H
#define PYRDK_PRODUCER_H

#include "core.h"

enum {
        BATCH_AT_ONCE = 256, /* the most messages handed to one rd_kafka_produce_batch() call */
        /* More than librdkafka's record overhead (36 bytes): a message this close to max_size
         * goes alone, so that librdkafka's own size check never refuses one inside a batch. */
        SIZE_MARGIN = 64,
        FULL_WAIT_MS = 10, /* produce_batch()'s wait for room in a full queue, at a time */
        POLL_EVERY = 1024, /* produce_batch() serves librdkafka's events every this many messages */
};

typedef struct {
        PyObject *value, *key; /* references; None or bytes */
        uint64_t id;
} queued_t;

typedef struct {
        queued_t *items; /* items[head .. head + len) */
        size_t head, len, alloc;
} queue_t;

typedef struct {
        PyObject *msg; /* the Message: a reference (track()'s), or not (the fast path's, weak) */
        PyObject *value, *key, *partition; /* a weak entry's: references, to make it anew */
        int32_t pid;
        unsigned char used, weak, handed; /* handed: to librdkafka, which may read value in place */
} slot_t;

typedef struct producer_s {
        PyObject_HEAD
        PyObject *owner; /* the Handle: keeps rk, rkt and guard alive */
        rd_kafka_t *rk;
        rd_kafka_topic_t *rkt;
        pyrdk_guard_t *guard; /* NULL once cleared */
        PyObject *topic;
        PyObject *pairs;    /* the partitions as given, [(id, Partition)] */
        PyObject **parts;   /* each pair's Partition (references) and id, by position */
        int32_t *pids;
        Py_ssize_t nparts;
        Py_ssize_t *lookup; /* positions by the Partition's address (open addressing), or -1 */
        size_t lookup_mask;
        PyObject *partitioner; /* None or a callable */
        PyObject *compression;
        PyObject *general;
        size_t max_size;
        Py_ssize_t batch;
        int report_all;
        int divert, closed;
        uint64_t counter; /* the round robin's next step */
        uint64_t arrow_first; /* produce_arrow()'s step for the batch it is in (start 0 takes one) */
        slot_t *slots;    /* the kept Messages, a ring of nslots (0 or a power of two) */
        size_t nslots, nkept;
        uint64_t next_id, oldest_id; /* no id below oldest_id is kept */
        queue_t *queues; /* by partition id */
        size_t nqueues, queued;
        PyObject *refused; /* [(Message, err)] refused at hand-off */
        PyObject *keep;    /* NULL (values copied), or the list values go to when let go unreported */
        unsigned long long batch_sent;
} producer_t;

/* producer.c, for produce_arrow.c */
int producer_usable(producer_t *self);
int producer_serve(producer_t *self, int flush_ms);
int producer_send_rows(producer_t *self, int32_t pid, int flags, rd_kafka_message_t *msgs, Py_ssize_t *rows, int n,
                       Py_ssize_t block_ms, Py_ssize_t *waited, Py_ssize_t *failed);
PyObject *producer_produce_arrow(producer_t *self, PyObject *const *args, Py_ssize_t nargs);

#endif
