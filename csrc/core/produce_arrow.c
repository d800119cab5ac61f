/* ProducerCore.produce_arrow(): the rows of a batch's Arrow columns handed to librdkafka
 * straight from the columns' buffers, with no Python object per row (see produce_arrow in
 * pyrdk/core/pure.py, which does the same row by row).
 *
 * columns is (rows, hashed, value, key, partition):
 * - value and key (key None: no key column): (offset, validity, offsets, data, wide), the
 *   buffers of an Arrow binary array (offsets int32, or int64 when wide: large_binary), its
 *   offset in them, and validity None when no row is null;
 * - partition (None: no partition column): (offset, validity, data), an int32 array;
 * - hashed: a row with no partition but a key goes to murmur2 of its key
 *   (rd_kafka_msg_partitioner_murmur2, as the Java client); else, and for rows with
 *   neither, the rows are spread as produce_batch() spreads them: one run of consecutive
 *   rows a partition, from the round robin's next step.
 * The rows from start go in rd_kafka_produce_batch() calls of up to BATCH_AT_ONCE rows with
 * RD_KAFKA_MSG_F_PARTITION (each row its partition), copied, msg_opaque 0: their delivery
 * reports are counted, and failures told, as produce_batch()'s are.
 * Returns (next, err): err 0 and next == rows when all went; else the row at which it
 * stopped and why (a librdkafka code: __QUEUE_FULL once block_ms has passed between two
 * calls, so that the caller serves its reports and calls again from next;
 * MSG_SIZE_TOO_LARGE; __UNKNOWN_PARTITION for a partition not in partitions). Rows a full
 * queue refused inside a call are offered again, in their order, before the call returns,
 * so that next always means every row before it was queued. None when there are no
 * partitions. Buffers shorter than the rows need raise ValueError. */
#include <string.h>

#include "producer.h"

typedef struct {
        const unsigned char *valid; /* NULL: no row is null */
        const char *offsets;
        const char *data;
        size_t data_len;
        Py_ssize_t offset;
        int wide;
} binary_t;

typedef struct {
        const unsigned char *valid;
        const char *data; /* int32s, maybe unaligned (a buffer pyarrow was given): read with memcpy */
        Py_ssize_t offset;
} ints_t;

enum { MAX_VIEWS = 8 };

typedef struct {
        Py_buffer views[MAX_VIEWS];
        int n;
} views_t;

static void views_release(views_t *v) {
        while (v->n > 0)
                PyBuffer_Release(&v->views[--v->n]);
}

/* The bytes of buffer obj, at least need of them; NULL with an exception. */
static const void *buffer_of(views_t *v, PyObject *obj, Py_ssize_t need, const char *what) {
        Py_buffer *view = &v->views[v->n];

        if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) {
                PyErr_Format(PyExc_TypeError, "produce_arrow: the %s buffer must support the buffer protocol, not %.200s",
                             what, Py_TYPE(obj)->tp_name);
                return NULL;
        }
        v->n++;
        if (view->len < need) {
                PyErr_Format(PyExc_ValueError, "produce_arrow: the %s buffer holds %zd bytes, the rows need %zd", what,
                             view->len, need);
                return NULL;
        }
        return view->buf;
}

/* An offset, a row count or a start: an int >= 0, small enough that no buffer size
 * computed from it overflows. */
static int offset_arg(PyObject *obj, Py_ssize_t *out) {
        if (!PyLong_Check(obj) || (*out = PyLong_AsSsize_t(obj)) < 0 || *out > PY_SSIZE_T_MAX / 32) {
                if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
                        PyErr_Clear();
                        PyErr_SetString(PyExc_ValueError, "produce_arrow: a column's offset, the rows and start must be "
                                        "ints >= 0 and below 2**58");
                }
                return -1;
        }
        return 0;
}

/* A binary column's buffers: 0, or -1 with an exception. */
static int binary_arg(views_t *v, PyObject *obj, Py_ssize_t rows, const char *name, binary_t *out) {
        char what[64];
        Py_ssize_t width;

        if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 5) {
                PyErr_Format(PyExc_TypeError, "produce_arrow: the %s column must be (offset, validity, offsets, data, wide)",
                             name);
                return -1;
        }
        if (offset_arg(PyTuple_GET_ITEM(obj, 0), &out->offset) < 0 ||
            (out->wide = PyObject_IsTrue(PyTuple_GET_ITEM(obj, 4))) < 0)
                return -1;
        width = out->wide ? 8 : 4;
        out->valid = NULL;
        if (PyTuple_GET_ITEM(obj, 1) != Py_None) {
                snprintf(what, sizeof(what), "%s validity", name);
                if (!(out->valid = buffer_of(v, PyTuple_GET_ITEM(obj, 1), (out->offset + rows + 7) / 8, what)))
                        return -1;
        }
        snprintf(what, sizeof(what), "%s offsets", name);
        if (!(out->offsets = buffer_of(v, PyTuple_GET_ITEM(obj, 2), (out->offset + rows + 1) * width, what)))
                return -1;
        snprintf(what, sizeof(what), "%s data", name);
        if (!(out->data = buffer_of(v, PyTuple_GET_ITEM(obj, 3), 0, what)))
                return -1;
        out->data_len = (size_t)v->views[v->n - 1].len;
        return 0;
}

static int is_valid(const unsigned char *valid, Py_ssize_t i) {
        return !valid || (valid[i >> 3] >> (i & 7)) & 1;
}

/* Row i of a binary column: 1 (*p, *len), 0 null, -1 with ValueError (bad offsets). */
static int binary_cell(const binary_t *c, Py_ssize_t row, const char *name, const char **p, size_t *len) {
        Py_ssize_t i = c->offset + row;
        int64_t start, end;

        if (!is_valid(c->valid, i))
                return 0;
        if (c->wide) {
                memcpy(&start, c->offsets + 8 * i, 8);
                memcpy(&end, c->offsets + 8 * (i + 1), 8);
        } else {
                int32_t s, e;

                memcpy(&s, c->offsets + 4 * i, 4);
                memcpy(&e, c->offsets + 4 * (i + 1), 4);
                start = s;
                end = e;
        }
        if (start < 0 || end < start || (uint64_t)end > c->data_len) {
                PyErr_Format(PyExc_ValueError, "produce_arrow: row %zd of the %s column has offsets %lld..%lld outside "
                             "its %zu bytes of data", row, name, (long long)start, (long long)end, c->data_len);
                return -1;
        }
        *p = c->data + start;
        *len = (size_t)(end - start);
        return 1;
}

/* Whether pid is one of pids[0..n) (sorted). */
static int known_partition(const int32_t *pids, Py_ssize_t n, int32_t pid) {
        Py_ssize_t lo = 0, hi = n;

        while (lo < hi) {
                Py_ssize_t mid = (lo + hi) / 2;

                if (pids[mid] == pid)
                        return 1;
                if (pids[mid] < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return 0;
}

/* One row's message and partition: 0, 1 with *err the refusal of the row (librdkafka's
 * own codes are negative too), or -1 with ValueError. */
static int row_message(producer_t *self, const int32_t *pids, Py_ssize_t npids, Py_ssize_t row, const binary_t *value,
                       const binary_t *key, const ints_t *part, int hashed, int32_t spread, rd_kafka_message_t *m,
                       int *err) {
        const char *p;
        size_t len;
        int got;

        memset(m, 0, sizeof(*m));
        if ((got = binary_cell(value, row, "value", &p, &len)) < 0)
                return -1;
        if (got) {
                m->payload = (void *)p;
                m->len = len;
        }
        if (key && (got = binary_cell(key, row, "key", &p, &len)) != 0) {
                if (got < 0)
                        return -1;
                m->key = (void *)p;
                m->key_len = len;
        }
        if (m->len + m->key_len > self->max_size) {
                *err = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
                return 1;
        }
        if (part && is_valid(part->valid, part->offset + row)) {
                memcpy(&m->partition, part->data + 4 * (part->offset + row), 4);
                if (!known_partition(pids, npids, m->partition)) {
                        *err = RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
                        return 1;
                }
        } else if (hashed && m->key)
                m->partition = pids[rd_kafka_msg_partitioner_murmur2(self->rkt, m->key, m->key_len, (int32_t)npids,
                                                                     NULL, NULL)];
        else
                m->partition = spread;
        return 0;
}

/* rd_kafka_producev() of one row alone (one too close to max_size for a batch, see
 * producer.c): 0 or an error code. */
static int send_alone(producer_t *self, rd_kafka_message_t *m) {
        int err;

        if (!producer_usable(self) || !pyrdk_guard_enter(self->guard))
                return PYRDK_ERR_CLOSED;
        err = rd_kafka_producev(self->rk, RD_KAFKA_V_RKT(self->rkt), RD_KAFKA_V_PARTITION(m->partition),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(m->payload, m->len),
                                RD_KAFKA_V_KEY(m->key, m->key_len), RD_KAFKA_V_OPAQUE(NULL), RD_KAFKA_V_END);
        pyrdk_guard_leave(self->guard);
        if (!err)
                self->batch_sent++;
        return err;
}

PyObject *producer_produce_arrow(producer_t *self, PyObject *const *args, Py_ssize_t nargs) {
        rd_kafka_message_t msgs[BATCH_AT_ONCE];
        Py_ssize_t rows_of[BATCH_AT_ONCE];
        binary_t value, key;
        ints_t part;
        views_t views = {.n = 0};
        PyObject *columns, *result = NULL;
        Py_ssize_t rows, start, block_ms, run, next, npids, waited = 0, failed = 0;
        int hashed, has_key, has_part, err = 0;
        int32_t *pids = NULL;

        if (nargs != 3) {
                PyErr_Format(PyExc_TypeError, "produce_arrow(columns, start, block_ms) takes 3 arguments (%zd given)",
                             nargs);
                return NULL;
        }
        columns = args[0];
        if (!PyTuple_Check(columns) || PyTuple_GET_SIZE(columns) != 5) {
                PyErr_SetString(PyExc_TypeError, "produce_arrow: columns must be (rows, hashed, value, key, partition)");
                return NULL;
        }
        if (offset_arg(PyTuple_GET_ITEM(columns, 0), &rows) < 0 || offset_arg(args[1], &start) < 0 ||
            ((block_ms = PyNumber_AsSsize_t(args[2], PyExc_OverflowError)) == -1 && PyErr_Occurred()) ||
            (hashed = PyObject_IsTrue(PyTuple_GET_ITEM(columns, 1))) < 0)
                return NULL;
        has_key = PyTuple_GET_ITEM(columns, 3) != Py_None;
        has_part = PyTuple_GET_ITEM(columns, 4) != Py_None;
        if (binary_arg(&views, PyTuple_GET_ITEM(columns, 2), rows, "value", &value) < 0 ||
            (has_key && binary_arg(&views, PyTuple_GET_ITEM(columns, 3), rows, "key", &key) < 0))
                goto done;
        if (has_part) {
                PyObject *p = PyTuple_GET_ITEM(columns, 4);

                if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 3) {
                        PyErr_SetString(PyExc_TypeError, "produce_arrow: the partition column must be (offset, validity, data)");
                        goto done;
                }
                if (offset_arg(PyTuple_GET_ITEM(p, 0), &part.offset) < 0)
                        goto done;
                part.valid = NULL;
                if (PyTuple_GET_ITEM(p, 1) != Py_None &&
                    !(part.valid = buffer_of(&views, PyTuple_GET_ITEM(p, 1), (part.offset + rows + 7) / 8,
                                             "partition validity")))
                        goto done;
                if (!(part.data = buffer_of(&views, PyTuple_GET_ITEM(p, 2), (part.offset + rows) * 4, "partition data")))
                        goto done;
        }
        if (start > rows) {
                PyErr_Format(PyExc_ValueError, "produce_arrow: start %zd is past the %zd rows", start, rows);
                goto done;
        }
        /* Read once the arguments are: reading them may have run Python code (__index__,
         * __bool__). A copy of the partitions' ids, which Python code run while serving
         * (librdkafka's error and statistics callbacks, other threads) may change. */
        if (!(npids = self->nparts)) {
                result = Py_NewRef(Py_None); /* nowhere to send them: the caller says so */
                goto done;
        }
        if (!(pids = PyMem_Malloc(npids * sizeof(*pids)))) {
                PyErr_NoMemory();
                goto done;
        }
        memcpy(pids, self->pids, npids * sizeof(*pids));
        if (start == 0)
                self->arrow_first = self->counter++;
        run = rows ? (rows + npids - 1) / npids : 1; /* each partition's share, consecutive */
        next = start;
        while (next < rows) {
                int n = 0, alone = 0, got = 0, refusal = 0;

                while (n < BATCH_AT_ONCE && next + n < rows) {
                        Py_ssize_t row = next + n;
                        int32_t spread = pids[(self->arrow_first + (uint64_t)(row / run)) % (uint64_t)npids];

                        got = row_message(self, pids, npids, row, &value, has_key ? &key : NULL, has_part ? &part : NULL, hashed,
                                          spread, &msgs[n], &refusal);
                        if (got < 0)
                                goto done;
                        if (got)
                                break;
                        if (msgs[n].len + msgs[n].key_len + SIZE_MARGIN > self->max_size) {
                                alone = 1;
                                break;
                        }
                        rows_of[n++] = row;
                }
                if (n && (err = producer_send_rows(self, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_PARTITION, msgs,
                                                   rows_of, n, block_ms, &waited, &failed))) {
                        next = failed;
                        break;
                }
                if ((next + n) / POLL_EVERY != next / POLL_EVERY && producer_serve(self, 0)) {
                        err = PYRDK_ERR_CLOSED; /* serve delivery reports as we go */
                        next += n;
                        break;
                }
                next += n;
                if (got) {
                        err = refusal;
                        break;
                }
                if (alone) { /* offered again while a full queue refuses it, for block_ms at most */
                        while ((err = send_alone(self, &msgs[n])) == RD_KAFKA_RESP_ERR__QUEUE_FULL && waited < block_ms) {
                                if (producer_serve(self, FULL_WAIT_MS)) {
                                        err = PYRDK_ERR_CLOSED;
                                        break;
                                }
                                waited += FULL_WAIT_MS;
                        }
                        if (err)
                                break;
                        next++;
                }
                if (waited > block_ms && next < rows) {
                        err = RD_KAFKA_RESP_ERR__QUEUE_FULL; /* the caller serves and calls again */
                        break;
                }
        }
        result = Py_BuildValue("(ni)", next, err);
done:
        PyMem_Free(pids);
        views_release(&views);
        return result;
}
