/* ProducerCore: the producer's fast path, its queues per partition, the Messages waiting
 * for their delivery reports, and produce_batch() (see ProducerCore in pyrdk/core/pure.py,
 * which this follows step by step; pure.py's lock is the GIL here).
 *
 * It holds the Handle that owns the rd_kafka_t, the topic handle and the use guard
 * (csrc/pyrdk_guard.h), so that their addresses stay good, and enters the guard around
 * every librdkafka call: once the handle is closed (or this is a forked child's copy of
 * it, which pyrdk.rd.handle closes at fork) the guard refuses, and so does the core.
 *
 * The Messages waiting for their reports are in a table: a ring of slots, a Message's id
 * (the msg_opaque librdkafka reports; 0: none, produce_batch()'s messages) counting up from
 * 1 and its slot the id modulo the ring's size, so that the reports, which come back
 * roughly in order, read the table in order too. The ring grows when the oldest id still
 * waiting is a ring's size behind the next one.
 * The table holds the general path's Messages (track()). It does not hold the fast path's:
 * their slot keeps what the Message was made of (value, key, Partition, partition id) and
 * a pointer to it, which the Message clears when it is freed. A Message the program has let
 * go of is thus freed at once, while it is still in the CPU's caches, rather than at its
 * delivery report a hundred thousand messages later; and when the report needs it (a
 * failure, report_all, take_all(), refused(), untrack()), one is made anew from the slot,
 * with the same fields: nothing else can see the difference, since nothing else held the
 * freed one. A delivered Message that is still alive gets its fields filled in, as in
 * pure.py.
 * The queues hold each message's value and key (references) and id, by partition id. No
 * queue is handed over with the GIL released, so each partition's messages reach
 * librdkafka in order whichever thread hands them over.
 * Given a keep list (the Handle's, which it empties once rd_kafka_destroy has returned),
 * the queues are handed over without RD_KAFKA_MSG_F_COPY: librdkafka reads each value in
 * place, from the bytes the slot holds, until the message's delivery report. A slot let go
 * without its report (take_all(), untrack(), the GC) puts its value on the keep list, as
 * librdkafka may still read it. Not copying saves a malloc, a copy and a free per message:
 * most of the client's CPU at 1 KB and 10 KB. produce_batch() keeps nothing, so copies. */
#include <string.h>

#include "producer.h"

static core_state *state_of(producer_t *self) {
        return PyType_GetModuleState(Py_TYPE(self));
}

/* Whether librdkafka may be called: not cleared, not closed, not a forked child's copy. */
static int usable(producer_t *self) {
        return self->guard && !pyrdk_guard_closing(self->guard);
}

/* Raise and return 1 when the core was cleared by the cyclic GC (only a finalizer that
 * brought it back could still call it). */
static int cleared(producer_t *self) {
        if (self->refused)
                return 0;
        PyErr_SetString(PyExc_RuntimeError, "this ProducerCore was cleared by the garbage collector");
        return 1;
}

/* -- the kept Messages ------------------------------------------------------------------- */

static slot_t *slot_of(producer_t *self, uint64_t id) {
        return &self->slots[id & (self->nslots - 1)];
}

/* A new id with a free slot, or 0 with MemoryError. */
static uint64_t slot_new(producer_t *self) {
        while (self->oldest_id < self->next_id && !slot_of(self, self->oldest_id)->used)
                self->oldest_id++;
        if (self->next_id - self->oldest_id >= self->nslots) {
                size_t n = self->nslots ? 2 * self->nslots : 1024;
                slot_t *slots = PyMem_Calloc(n, sizeof(*slots));

                if (!slots) {
                        PyErr_NoMemory();
                        return 0;
                }
                for (uint64_t id = self->oldest_id; id < self->next_id; id++)
                        slots[id & (n - 1)] = *slot_of(self, id);
                PyMem_Free(self->slots);
                self->slots = slots;
                self->nslots = n;
        }
        self->nkept++;
        return self->next_id++;
}

/* Keep msg (a new reference); its id, or 0 with MemoryError. */
static uint64_t kept_put(producer_t *self, PyObject *msg) {
        uint64_t id = slot_new(self);

        if (id)
                *slot_of(self, id) = (slot_t){Py_NewRef(msg), NULL, NULL, NULL, 0, 1, 0, 0};
        return id;
}

/* List the fast path's msg without a reference, with what it was made of; its id, or 0
 * with MemoryError. */
static uint64_t kept_put_weak(producer_t *self, message_t *msg) {
        uint64_t id = slot_new(self);

        if (!id)
                return 0;
        *slot_of(self, id) = (slot_t){(PyObject *)msg, Py_NewRef(msg->value), Py_NewRef(msg->key),
                                      Py_NewRef(msg->partition), msg->partition_id, 1, 1, 0};
        msg->core = self;
        msg->id = id;
        return id;
}

void producer_forget(struct producer_s *self, uint64_t id) {
        slot_of(self, id)->msg = NULL;
}

/* msg, made anew from a weak entry whose Message was freed (its references taken). */
static PyObject *remade(producer_t *self, slot_t *s, message_t *msg) {
        msg->value = s->value;
        msg->key = s->key;
        msg->partition = s->partition;
        s->value = s->key = s->partition = NULL;
        msg->topic = Py_NewRef(self->topic);
        msg->compression = Py_NewRef(self->compression);
        msg->partition_id = s->pid;
        return (PyObject *)msg;
}

/* A slot let go of before its delivery report: its value, which librdkafka may still read
 * in place (see above), goes on the keep list too. Should the list not take it, it is
 * leaked rather than freed under librdkafka's feet. */
static void keep_value(producer_t *self, slot_t *s) {
        PyObject *type, *exc, *tb;

        if (!self->keep || !s->handed || !s->value || s->value == Py_None)
                return;
        PyErr_Fetch(&type, &exc, &tb);
        if (PyList_Append(self->keep, s->value) < 0) {
                PyErr_Clear();
                Py_INCREF(s->value);
        }
        PyErr_Restore(type, exc, tb);
}

/* The Message of id, no longer kept: a new reference, made anew when it was freed and
 * remake is true; else NULL (none, or with an exception when it could not be made).
 * reported: its delivery report came (librdkafka is done with its value). */
static int is_kept(producer_t *self, uint64_t id) {
        return id >= self->oldest_id && id < self->next_id && slot_of(self, id)->used;
}

static PyObject *kept_take(producer_t *self, uint64_t id, int remake, int reported) {
        PyObject *msg = NULL, *drop[3];
        message_t *fresh = NULL;
        slot_t *s;

        if (!is_kept(self, id))
                return NULL;
        if (remake && slot_of(self, id)->weak && !slot_of(self, id)->msg) {
                /* Made before the slot is read: making it may run a collection, and finalizers
                 * that produce (and so move the table) or take this id themselves. */
                if (!(fresh = message_new(state_of(self))))
                        return NULL;
                if (!is_kept(self, id)) {
                        Py_DECREF(fresh);
                        return NULL;
                }
        }
        s = slot_of(self, id);
        if (!reported)
                keep_value(self, s);
        if (!s->weak)
                msg = s->msg; /* the table's reference */
        else if (s->msg) {
                msg = Py_NewRef(s->msg);
                ((message_t *)msg)->core = NULL;
        } else if (fresh) {
                msg = remade(self, s, fresh);
                fresh = NULL;
        }
        Py_XDECREF(fresh); /* not needed after all */
        /* The slot is free before anything is let go: that may run Python code. */
        drop[0] = s->value;
        drop[1] = s->key;
        drop[2] = s->partition;
        memset(s, 0, sizeof(*s));
        self->nkept--;
        for (int i = 0; i < 3; i++)
                Py_XDECREF(drop[i]);
        return msg;
}

/* -- the queues ----------------------------------------------------------------------------- */

static queue_t *queue_of(producer_t *self, int32_t pid) {
        if ((size_t)pid >= self->nqueues) {
                size_t n = (size_t)pid + 1;
                queue_t *queues = PyMem_Realloc(self->queues, n * sizeof(*queues));

                if (!queues)
                        return (queue_t *)PyErr_NoMemory();
                memset(queues + self->nqueues, 0, (n - self->nqueues) * sizeof(*queues));
                self->queues = queues;
                self->nqueues = n;
        }
        return &self->queues[pid];
}

static int queue_push(producer_t *self, queue_t *q, PyObject *value, PyObject *key, uint64_t id) {
        if (q->head + q->len == q->alloc) {
                if (q->head) { /* room at the front */
                        memmove(q->items, q->items + q->head, q->len * sizeof(*q->items));
                        q->head = 0;
                } else {
                        size_t n = q->alloc ? 2 * q->alloc : 64;
                        queued_t *items = PyMem_Realloc(q->items, n * sizeof(*items));

                        if (!items) {
                                PyErr_NoMemory();
                                return -1;
                        }
                        q->items = items;
                        q->alloc = n;
                }
        }
        q->items[q->head + q->len++] = (queued_t){Py_NewRef(value), Py_NewRef(key), id};
        self->queued++;
        return 0;
}

/* Drop the first n of q (handed over, or failed). */
static void queue_drop(producer_t *self, queue_t *q, size_t n) {
        for (size_t i = 0; i < n; i++) {
                Py_DECREF(q->items[q->head + i].value);
                Py_DECREF(q->items[q->head + i].key);
        }
        q->head = q->len == n ? 0 : q->head + n;
        q->len -= n;
        self->queued -= n;
}

static void set_message(rd_kafka_message_t *m, PyObject *value, PyObject *key, uint64_t id) {
        memset(m, 0, sizeof(*m));
        if (value != Py_None) {
                m->payload = PyBytes_AS_STRING(value);
                m->len = (size_t)PyBytes_GET_SIZE(value);
        }
        if (key != Py_None) {
                m->key = PyBytes_AS_STRING(key);
                m->key_len = (size_t)PyBytes_GET_SIZE(key);
        }
        m->_private = (void *)(uintptr_t)id;
}

/* rd_kafka_produce_batch() of msgs[0..n) to partition pid, under the guard: 0, or
 * PYRDK_ERR_CLOSED (the guard refused; nothing queued). librdkafka goes on after a refusal,
 * so any message may be queued or refused (its err), whatever came before it. */
static int produce_batch_c(producer_t *self, int32_t pid, rd_kafka_message_t *msgs, int n, int flags) {
        if (!usable(self) || !pyrdk_guard_enter(self->guard))
                return PYRDK_ERR_CLOSED;
        rd_kafka_produce_batch(self->rkt, pid, flags, msgs, n);
        pyrdk_guard_leave(self->guard);
        return 0;
}

/* A refusal other than a full queue: the message is failed, for refused() (hand_off_queue()
 * has set divert: the producer raises it from the general path). 0, or -1 with an
 * exception. */
static int refuse(producer_t *self, uint64_t id, int err) {
        PyObject *msg = kept_take(self, id, 1, 1), *pair;

        if (!msg && PyErr_Occurred())
                return -1;
        if (!msg || !self->refused) { /* the GC cleared the core: nowhere to tell */
                Py_XDECREF(msg);
                return 0;
        }
        pair = Py_BuildValue("(Ni)", msg, err);
        if (!pair || PyList_Append(self->refused, pair) < 0) {
                Py_XDECREF(pair);
                return -1;
        }
        Py_DECREF(pair);
        return 0;
}

/* Hand partition pid's queue to librdkafka, BATCH_AT_ONCE at a time. Every message it took
 * leaves the queue, also one after a refused one (never handed twice: librdkafka may be
 * reading it in place); what a full queue (or a closed handle) refuses stays, in order;
 * another refusal fails the message, for refused(), once the queue is in order again
 * (refuse() may run Python code, which may produce). 0, or -1 with an exception: then the
 * refused messages not yet failed stay kept, for stop() to report. */
static int hand_off_queue(producer_t *self, int32_t pid) {
        rd_kafka_message_t msgs[BATCH_AT_ONCE];
        unsigned char stays[BATCH_AT_ONCE];
        uint64_t refused_ids[BATCH_AT_ONCE];
        int refused_errs[BATCH_AT_ONCE];

        for (;;) {
                queue_t *q;
                int n, full = 0, nrefused = 0;
                size_t w, gone;

                if ((size_t)pid >= self->nqueues) /* take_all() emptied them meanwhile */
                        return 0;
                q = &self->queues[pid];
                n = q->len < BATCH_AT_ONCE ? (int)q->len : BATCH_AT_ONCE;
                if (n == 0)
                        return 0;
                for (int i = 0; i < n; i++) {
                        queued_t *item = &q->items[q->head + i];

                        set_message(&msgs[i], item->value, item->key, item->id);
                }
                if (produce_batch_c(self, pid, msgs, n, self->keep ? 0 : RD_KAFKA_MSG_F_COPY)) {
                        self->divert = 1; /* stop() reports what is left */
                        return 0;
                }
                for (int i = 0; i < n; i++) {
                        int err = (int)msgs[i].err;
                        uint64_t id = q->items[q->head + i].id;

                        stays[i] = 0;
                        if (!err)
                                slot_of(self, id)->handed = 1;
                        else if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                                stays[i] = 1, full = 1;
                        else {
                                refused_ids[nrefused] = id;
                                refused_errs[nrefused++] = err;
                        }
                }
                /* The messages that stay move up against the rest of the queue, in order
                 * (the values are bytes or None: letting them go runs no Python code). */
                w = q->head + (size_t)n;
                for (int i = n - 1; i >= 0; i--) {
                        queued_t *item = &q->items[q->head + (size_t)i];

                        if (stays[i])
                                q->items[--w] = *item;
                        else {
                                Py_DECREF(item->value);
                                Py_DECREF(item->key);
                        }
                }
                gone = w - q->head;
                q->len -= gone;
                q->head = q->len ? w : 0;
                self->queued -= gone;
                if (nrefused)
                        self->divert = 1; /* the producer raises them from the general path */
                for (int k = 0; k < nrefused; k++)
                        if (refuse(self, refused_ids[k], refused_errs[k]) < 0)
                                return -1;
                if (full)
                        return 0;
        }
}

static int serve(producer_t *self, int flush_ms);

/* rd_kafka_produce_batch() of msgs[0..n) (rows[0..n) what the caller calls them) to
 * partition pid with flags (RD_KAFKA_MSG_F_PARTITION: each to its own), copied: what a full
 * queue refused (it refuses every message after the first it refuses) is offered again,
 * serving librdkafka's events between tries (FULL_WAIT_MS each, added to *waited), while
 * *waited < block_ms. 0, or an error code with *failed the row of the first message not
 * queued (__QUEUE_FULL: every one after it is not queued either; another refusal: stops at
 * once, and one after it may be; PYRDK_ERR_CLOSED: the guard refused). */
int producer_send_rows(producer_t *self, int32_t pid, int flags, rd_kafka_message_t *msgs, Py_ssize_t *rows, int n,
                       Py_ssize_t block_ms, Py_ssize_t *waited, Py_ssize_t *failed) {
        int err = 0;

        while (n > 0) {
                int left = 0;

                if ((err = produce_batch_c(self, pid, msgs, n, flags | RD_KAFKA_MSG_F_COPY)))
                        break;
                for (int i = 0; i < n; i++) {
                        if (!msgs[i].err) {
                                self->batch_sent++;
                                continue;
                        }
                        if (msgs[i].err != RD_KAFKA_RESP_ERR__QUEUE_FULL && !err)
                                err = (int)msgs[i].err;
                        msgs[left] = msgs[i];
                        msgs[left].err = 0;
                        rows[left++] = rows[i];
                }
                if (err || (n = left) == 0)
                        break;
                if (*waited >= block_ms) {
                        err = RD_KAFKA_RESP_ERR__QUEUE_FULL;
                        break;
                }
                if ((err = serve(self, FULL_WAIT_MS)))
                        break;
                *waited += FULL_WAIT_MS;
        }
        if (err)
                *failed = rows[0];
        return err;
}

/* -- the partitions ------------------------------------------------------------------------- */

static size_t address_hash(PyObject *p) {
        uintptr_t a = (uintptr_t)p >> 4;

        return (size_t)(a * 0x9E3779B97F4A7C15ull);
}

/* The position of the pair whose Partition is partition itself (identity), or -1. */
static Py_ssize_t position_of(producer_t *self, PyObject *partition) {
        if (!self->lookup)
                return -1;
        for (size_t i = address_hash(partition) & self->lookup_mask;; i = (i + 1) & self->lookup_mask) {
                Py_ssize_t pos = self->lookup[i];

                if (pos < 0 || self->parts[pos] == partition)
                        return pos;
        }
}

static void release_partitions(producer_t *self) {
        for (Py_ssize_t i = 0; i < self->nparts; i++)
                Py_DECREF(self->parts[i]);
        PyMem_Free(self->parts);
        PyMem_Free(self->pids);
        PyMem_Free(self->lookup);
        self->parts = NULL;
        self->pids = NULL;
        self->lookup = NULL;
        self->nparts = 0;
        Py_CLEAR(self->pairs);
}

static int set_partitions(producer_t *self, PyObject *value, void *closure) {
        PyObject *pairs, **parts = NULL;
        int32_t *pids = NULL;
        Py_ssize_t *lookup = NULL, n;
        size_t size = 4;

        (void)closure;
        if (!value) {
                PyErr_SetString(PyExc_AttributeError, "cannot delete ProducerCore.partitions");
                return -1;
        }
        if (!(pairs = PySequence_List(value)))
                return -1;
        n = PyList_GET_SIZE(pairs);
        while (size < 2 * (size_t)n)
                size *= 2;
        parts = PyMem_Malloc((n ? n : 1) * sizeof(*parts));
        pids = PyMem_Malloc((n ? n : 1) * sizeof(*pids));
        lookup = PyMem_Malloc(size * sizeof(*lookup));
        if (!parts || !pids || !lookup) {
                PyErr_NoMemory();
                goto fail;
        }
        for (size_t i = 0; i < size; i++)
                lookup[i] = -1;
        for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *pair = PyList_GET_ITEM(pairs, i), *id;
                long pid;

                if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyLong_Check(id = PyTuple_GET_ITEM(pair, 0)) ||
                    PyBool_Check(id) || (pid = PyLong_AsLong(id)) < 0 || pid > INT32_MAX) {
                        PyErr_Clear();
                        PyErr_Format(PyExc_TypeError,
                                     "ProducerCore.partitions must be (id, Partition) pairs, ids ints from 0 to "
                                     "2**31-1, not %R", pair);
                        for (Py_ssize_t j = 0; j < i; j++)
                                Py_DECREF(parts[j]);
                        goto fail;
                }
                pids[i] = (int32_t)pid;
                parts[i] = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
        }
        for (Py_ssize_t i = 0; i < n; i++) { /* a Partition given twice: the last pair wins, as in a dict */
                size_t j = address_hash(parts[i]) & (size - 1);

                while (lookup[j] >= 0 && parts[lookup[j]] != parts[i])
                        j = (j + 1) & (size - 1);
                lookup[j] = i;
        }
        release_partitions(self);
        self->pairs = pairs;
        self->parts = parts;
        self->pids = pids;
        self->nparts = n;
        self->lookup = lookup;
        self->lookup_mask = size - 1;
        return 0;
fail:
        Py_DECREF(pairs);
        PyMem_Free(parts);
        PyMem_Free(pids);
        PyMem_Free(lookup);
        return -1;
}

static PyObject *get_partitions(producer_t *self, void *closure) {
        (void)closure;
        return self->pairs ? Py_NewRef(self->pairs) : PyList_New(0);
}

/* -- construction --------------------------------------------------------------------------- */

static void *address_arg(PyObject *arg, const char *what) {
        void *p = PyLong_Check(arg) ? PyLong_AsVoidPtr(arg) : NULL;

        if (!p && !PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "ProducerCore: %s must be a non-zero address (an int from "
                             "Handle.addresses()), not %R", what, arg);
        return p;
}

static PyObject *producer_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
        static const char *const names[] = {"owner", "rk", "rkt", "guard", "topic", "partitions", "partitioner",
                                            "compression", "max_size", "batch", "report_all", "general", "start",
                                            "keep", NULL};
        PyObject *owner, *rk, *rkt, *guard, *topic, *partitions, *partitioner, *compression, *general, *start;
        PyObject *keep = Py_None;
        Py_ssize_t max_size, batch;
        int report_all;
        producer_t *self;

        if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOUOOOnnpOO|O:ProducerCore", (char **)names, &owner, &rk,
                                         &rkt, &guard, &topic, &partitions, &partitioner, &compression, &max_size,
                                         &batch, &report_all, &general, &start, &keep))
                return NULL;
        if (keep != Py_None && !PyList_CheckExact(keep)) {
                PyErr_Format(PyExc_TypeError, "ProducerCore: keep must be None or a list, not %.200s",
                             Py_TYPE(keep)->tp_name);
                return NULL;
        }
        if (partitioner != Py_None && !PyCallable_Check(partitioner)) {
                PyErr_Format(PyExc_TypeError, "ProducerCore: partitioner must be None or callable, not %.200s",
                             Py_TYPE(partitioner)->tp_name);
                return NULL;
        }
        if (!PyCallable_Check(general)) {
                PyErr_Format(PyExc_TypeError, "ProducerCore: general must be callable, not %.200s",
                             Py_TYPE(general)->tp_name);
                return NULL;
        }
        if (max_size < 0 || batch < 1) {
                PyErr_Format(PyExc_ValueError, "ProducerCore: max_size must be >= 0 and batch >= 1, not %zd and %zd",
                             max_size, batch);
                return NULL;
        }
        if (!(self = (producer_t *)type->tp_alloc(type, 0)))
                return NULL;
        self->owner = Py_NewRef(owner);
        self->topic = Py_NewRef(topic);
        self->partitioner = Py_NewRef(partitioner);
        self->compression = Py_NewRef(compression);
        self->general = Py_NewRef(general);
        self->keep = keep == Py_None ? NULL : Py_NewRef(keep);
        self->max_size = (size_t)max_size;
        self->batch = batch;
        self->report_all = report_all;
        self->next_id = self->oldest_id = 1;
        if (!(self->refused = PyList_New(0)) || set_partitions(self, partitions, NULL) < 0 ||
            !(self->rk = address_arg(rk, "rk")) || !(self->rkt = address_arg(rkt, "rkt")) ||
            !(self->guard = address_arg(guard, "guard"))) {
                Py_DECREF(self);
                return NULL;
        }
        if (!PyLong_Check(start)) {
                PyErr_Format(PyExc_TypeError, "ProducerCore: start must be an int, not %.200s", Py_TYPE(start)->tp_name);
                Py_DECREF(self);
                return NULL;
        }
        self->counter = PyLong_AsUnsignedLongLongMask(start);
        return (PyObject *)self;
}

/* -- produce() ------------------------------------------------------------------------------ */

static int bytes_or_none(PyObject *o) {
        return o == Py_None || PyBytes_CheckExact(o);
}

static size_t size_of(PyObject *o) {
        return o == Py_None ? 0 : (size_t)PyBytes_GET_SIZE(o);
}

static PyObject *call_general(producer_t *self, PyObject *const *a, PyObject *partition) {
        PyObject *args[5] = {a[0], a[1], a[2], a[3], partition ? partition : Py_None};
        PyObject *general, *result;

        if (cleared(self))
                return NULL;
        general = Py_NewRef(self->general);
        result = PyObject_Vectorcall(general, args, 5, NULL);
        Py_DECREF(general);
        return result;
}

/* produce(value, key=None, timestamp=None, headers=None)'s arguments into a[4]. */
static int produce_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **a) {
        static const char *const names[] = {"value", "key", "timestamp", "headers"};
        Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;

        if (nargs > 4 || (nargs < 1 && nkw == 0)) {
                PyErr_Format(PyExc_TypeError, "produce(value, key=None, timestamp=None, headers=None) takes 1 to 4 "
                             "arguments (%zd given)", nargs + nkw);
                return -1;
        }
        for (Py_ssize_t i = 0; i < 4; i++)
                a[i] = i < nargs ? args[i] : NULL;
        for (Py_ssize_t k = 0; k < nkw; k++) {
                PyObject *name = PyTuple_GET_ITEM(kwnames, k);
                int i = 0;

                while (i < 4 && PyUnicode_CompareWithASCIIString(name, names[i]) != 0)
                        i++;
                if (i == 4 || a[i]) {
                        PyErr_Format(PyExc_TypeError, "produce() got %s argument %R",
                                     i == 4 ? "an unexpected keyword" : "multiple values for", name);
                        return -1;
                }
                a[i] = args[nargs + k];
        }
        if (!a[0]) {
                PyErr_SetString(PyExc_TypeError, "produce() missing its argument 'value'");
                return -1;
        }
        for (int i = 1; i < 4; i++)
                if (!a[i])
                        a[i] = Py_None;
        return 0;
}

static PyObject *producer_produce(producer_t *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
        PyObject *a[4], *partition, *value, *key;
        Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), pos;
        message_t *msg;
        queue_t *q;
        int32_t pid;
        uint64_t id;

        if (kwnames || nargs != 4) {
                if (produce_args(args, nargs, kwnames, a) < 0)
                        return NULL;
        } else
                memcpy(a, args, sizeof(a));
        value = a[0];
        key = a[1];
        if (self->divert || a[2] != Py_None || a[3] != Py_None || !bytes_or_none(value) || !bytes_or_none(key) ||
            size_of(value) + size_of(key) + SIZE_MARGIN > self->max_size || !self->nparts || !usable(self))
                return call_general(self, a, NULL);
        if (self->partitioner == Py_None) {
                pos = (Py_ssize_t)(self->counter++ % (uint64_t)self->nparts);
                partition = Py_NewRef(self->parts[pos]);
        } else {
                Py_ssize_t n = self->nparts;
                PyObject *partitioner = Py_NewRef(self->partitioner), *list = PyList_New(n);

                if (!list) {
                        Py_DECREF(partitioner);
                        return NULL;
                }
                if (self->nparts != n) { /* the allocation ran Python code, which changed them */
                        Py_DECREF(list);
                        Py_DECREF(partitioner);
                        return call_general(self, a, NULL);
                }
                for (Py_ssize_t i = 0; i < n; i++)
                        PyList_SET_ITEM(list, i, Py_NewRef(self->parts[i]));
                partition = PyObject_CallFunctionObjArgs(partitioner, list, key, NULL);
                Py_DECREF(list);
                Py_DECREF(partitioner);
                if (!partition)
                        return NULL;
                /* not one of the topic's Partitions: the general path says what it is */
                if ((pos = position_of(self, partition)) < 0) {
                        PyObject *result = call_general(self, a, partition);

                        Py_DECREF(partition);
                        return result;
                }
        }
        pid = self->pids[pos];
        if (!(q = queue_of(self, pid)))
                goto fail;
        if (q->len >= (size_t)self->batch || self->divert) {
                /* librdkafka's queue was full at the last hand-off (or the producer stopped meanwhile) */
                PyObject *result = call_general(self, a, partition);

                Py_DECREF(partition);
                return result;
        }
        if (!(msg = message_new(state_of(self))))
                goto fail;
        msg->value = Py_NewRef(value);
        msg->key = Py_NewRef(key);
        msg->partition = partition; /* the reference taken above */
        msg->topic = Py_NewRef(self->topic);
        msg->compression = Py_NewRef(self->compression);
        msg->partition_id = pid;
        /* Making the Message may have run a collection, and finalizers, and so let another
         * thread in: if stop() closed the core meanwhile, its hand-off has passed, and a
         * message queued now would get no delivery report. Nothing below runs Python code. */
        if (self->divert) {
                PyObject *result = call_general(self, a, partition);

                Py_DECREF(msg);
                return result;
        }
        if (!(id = kept_put_weak(self, msg)) || !(q = queue_of(self, pid)) || queue_push(self, q, value, key, id) < 0) {
                if (id)
                        Py_XDECREF(kept_take(self, id, 0, 1));
                Py_DECREF(msg);
                return NULL;
        }
        if (q->len >= (size_t)self->batch && hand_off_queue(self, pid) < 0) {
                Py_DECREF(msg);
                return NULL;
        }
        return (PyObject *)msg;
fail:
        Py_DECREF(partition);
        return NULL;
}

/* -- the general path's Messages, hand-off, reports --------------------------------------- */

static PyObject *producer_track(producer_t *self, PyObject *msg) {
        uint64_t id;

        if (!PyObject_TypeCheck(msg, state_of(self)->message_type)) {
                PyErr_Format(PyExc_TypeError, "track() takes a Message, not %.200s", Py_TYPE(msg)->tp_name);
                return NULL;
        }
        if (!(id = kept_put(self, msg)))
                return NULL;
        return PyLong_FromUnsignedLongLong(id);
}

static PyObject *producer_untrack(producer_t *self, PyObject *arg) {
        uint64_t id = PyLong_Check(arg) ? PyLong_AsUnsignedLongLong(arg) : 0;
        PyObject *msg;

        if (PyErr_Occurred()) { /* a negative or too large int: no id of this core */
                PyErr_Clear();
                id = 0;
        }
        msg = kept_take(self, id, 1, 0);
        if (!msg && !PyErr_Occurred())
                Py_RETURN_NONE;
        return msg;
}

static PyObject *producer_hand_off(producer_t *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
        Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        int stopping = 0;

        if (nargs + nkw > 1 || (nkw && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "stopping"))) {
                PyErr_SetString(PyExc_TypeError, "hand_off(stopping=False) takes one argument, stopping");
                return NULL;
        }
        if (nargs + nkw && (stopping = PyObject_IsTrue(args[0])) < 0)
                return NULL;
        if (!self->closed || stopping)
                for (size_t pid = 0; pid < self->nqueues; pid++)
                        if (self->queues[pid].len && hand_off_queue(self, (int32_t)pid) < 0)
                                return NULL;
        return PyLong_FromSize_t(self->queued);
}

static PyObject *producer_close(producer_t *self, PyObject *unused) {
        (void)unused;
        self->closed = 1;
        self->divert = 1;
        Py_RETURN_NONE;
}

static PyObject *producer_refused(producer_t *self, PyObject *unused) {
        PyObject *out, *fresh;

        (void)unused;
        if (cleared(self) || !(fresh = PyList_New(0)))
                return NULL;
        /* Read after the allocation, which may have run a finalizer that called this too. */
        out = self->refused;
        self->refused = fresh;
        return out;
}

static PyObject *pair_of(PyObject *msg, int err) {
        return Py_BuildValue("(Oi)", msg, err);
}

static PyObject *producer_deliver(producer_t *self, PyObject *const *args, Py_ssize_t nargs) {
        static const char *const what[] = {"deliver()'s ids", "deliver()'s errs", "deliver()'s partitions",
                                           "deliver()'s offsets", "deliver()'s timestamps"};
        static const char *const formats[] = {"LQ", "i", "i", "q", "q"};
        static const Py_ssize_t sizes[] = {sizeof(uintptr_t), sizeof(int), sizeof(int32_t), sizeof(int64_t),
                                           sizeof(int64_t)};
        Py_buffer views[5];
        PyObject *out = NULL;
        Py_ssize_t n = PY_SSIZE_T_MAX;
        int got = 0;

        if (nargs != 5) {
                PyErr_Format(PyExc_TypeError, "deliver(ids, errs, partitions, offsets, timestamps) takes 5 arguments "
                             "(%zd given)", nargs);
                return NULL;
        }
        for (; got < 5; got++) {
                if (core_read_column(args[got], &views[got], sizes[got], formats[got], what[got]) < 0)
                        goto done;
                if (views[got].len / sizes[got] < n)
                        n = views[got].len / sizes[got]; /* as zip() does */
        }
        if (!(out = PyList_New(0)))
                goto done;
        {
                const uintptr_t *ids = views[0].buf;
                const int *errs = views[1].buf;
                const int32_t *partitions = views[2].buf;
                const int64_t *offsets = views[3].buf, *timestamps = views[4].buf;

                for (Py_ssize_t i = 0; i < n; i++) {
                        /* a freed Message is made anew only to be told */
                        message_t *msg = (message_t *)kept_take(self, ids[i], errs[i] || self->report_all, 1);
                        PyObject *pair = NULL;

                        if (!msg) {
                                if (PyErr_Occurred()) {
                                        Py_CLEAR(out);
                                        goto done;
                                }
                                continue;
                        }
                        if (errs[i]) {
                                if (partitions[i] >= 0)
                                        msg->partition_id = partitions[i];
                                pair = pair_of((PyObject *)msg, errs[i]);
                        } else {
                                msg->partition_id = partitions[i];
                                /* With required_acks=0 the broker tells nothing: librdkafka reports an
                                 * invalid offset (-1001...); pykafka's Message says -1. */
                                msg->offset = offsets[i] >= 0 ? offsets[i] : -1;
                                msg->timestamp = timestamps[i];
                                msg->has_timestamp = 1;
                                if (self->report_all)
                                        pair = pair_of((PyObject *)msg, 0);
                                else {
                                        Py_DECREF(msg);
                                        continue;
                                }
                        }
                        Py_DECREF(msg);
                        if (!pair || PyList_Append(out, pair) < 0) {
                                Py_XDECREF(pair);
                                Py_CLEAR(out);
                                goto done;
                        }
                        Py_DECREF(pair);
                }
        }
done:
        while (got > 0)
                PyBuffer_Release(&views[--got]);
        return out;
}

static void clear_queues(producer_t *self) {
        for (size_t pid = 0; pid < self->nqueues; pid++) {
                queue_drop(self, &self->queues[pid], self->queues[pid].len);
                PyMem_Free(self->queues[pid].items);
        }
        PyMem_Free(self->queues);
        self->queues = NULL;
        self->nqueues = 0;
}

static PyObject *producer_take_all(producer_t *self, PyObject *unused) {
        PyObject *out = PyList_New(0), *refused, *fresh;

        (void)unused;
        if (!out || cleared(self)) {
                Py_XDECREF(out);
                return NULL;
        }
        clear_queues(self);
        if (!(fresh = PyList_New(0))) {
                Py_DECREF(out);
                return NULL;
        }
        refused = self->refused; /* read after the allocation, which may have run Python code */
        self->refused = fresh;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(refused); i++)
                if (PyList_Append(out, PyTuple_GET_ITEM(PyList_GET_ITEM(refused, i), 0)) < 0)
                        goto fail;
        for (uint64_t id = self->oldest_id; id < self->next_id; id++) {
                PyObject *msg = kept_take(self, id, 1, 0);

                if ((!msg && PyErr_Occurred()) || (msg && PyList_Append(out, msg) < 0)) {
                        Py_XDECREF(msg);
                        goto fail;
                }
                Py_XDECREF(msg);
        }
        clear_queues(self); /* what a finalizer produced while Messages were made anew */
        Py_DECREF(refused);
        return out;
fail:
        Py_DECREF(refused);
        Py_DECREF(out);
        return NULL;
}

/* -- produce_batch() ------------------------------------------------------------------------ */

/* The value and key (borrowed; key None when there is none) of item, or 0 when it is
 * neither bytes nor a (bytes, bytes or None) pair. */
static int batch_item(PyObject *item, PyObject **value, PyObject **key) {
        if (PyBytes_CheckExact(item)) {
                *value = item;
                *key = Py_None;
                return 1;
        }
        if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 2 && PyBytes_CheckExact(PyTuple_GET_ITEM(item, 0)) &&
            bytes_or_none(PyTuple_GET_ITEM(item, 1))) {
                *value = PyTuple_GET_ITEM(item, 0);
                *key = PyTuple_GET_ITEM(item, 1);
                return 1;
        }
        return 0;
}

/* rd_kafka_producev() of one message without an id, under the guard; 1 or 0, and *err. */
static int produce_alone(producer_t *self, int32_t pid, PyObject *value, PyObject *key, int *err) {
        if (!usable(self) || !pyrdk_guard_enter(self->guard)) {
                *err = PYRDK_ERR_CLOSED;
                return 0;
        }
        *err = rd_kafka_producev(self->rk, RD_KAFKA_V_RKT(self->rkt), RD_KAFKA_V_PARTITION(pid),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                 RD_KAFKA_V_VALUE(value == Py_None ? NULL : PyBytes_AS_STRING(value), size_of(value)),
                                 RD_KAFKA_V_KEY(key == Py_None ? NULL : PyBytes_AS_STRING(key), size_of(key)),
                                 RD_KAFKA_V_OPAQUE(NULL), RD_KAFKA_V_END);
        pyrdk_guard_leave(self->guard);
        return *err ? 0 : 1;
}

/* rd_kafka_poll(rk, 0) or rd_kafka_flush(rk, ms) without the GIL, under the guard: 0, or
 * PYRDK_ERR_CLOSED. */
static int serve(producer_t *self, int flush_ms) {
        rd_kafka_t *rk = self->rk;

        if (!usable(self) || !pyrdk_guard_enter(self->guard))
                return PYRDK_ERR_CLOSED;
        Py_BEGIN_ALLOW_THREADS
        if (flush_ms)
                rd_kafka_flush(rk, flush_ms);
        else
                rd_kafka_poll(rk, 0);
        Py_END_ALLOW_THREADS
        pyrdk_guard_leave(self->guard);
        return 0;
}

static PyObject *producer_produce_batch(producer_t *self, PyObject *const *args, Py_ssize_t nargs) {
        rd_kafka_message_t msgs[BATCH_AT_ONCE];
        PyObject *items, *value = Py_None, *key = Py_None, *result = NULL;
        Py_ssize_t n, count, run, sent = 0, block_ms, waited = 0;
        int32_t *pids = NULL;
        uint64_t first;
        int err = 0;

        if (nargs != 2) {
                PyErr_Format(PyExc_TypeError, "produce_batch(messages, block_ms) takes 2 arguments (%zd given)", nargs);
                return NULL;
        }
        if ((block_ms = PyNumber_AsSsize_t(args[1], PyExc_OverflowError)) == -1 && PyErr_Occurred())
                return NULL;
        if (!(items = PySequence_Fast(args[0], "produce_batch() takes a list of values or (value, key) pairs")))
                return NULL;
        /* The GIL is let go (and Python code may run, in librdkafka's callbacks) while it
         * waits or serves: then the list is a copy, and the partitions' ids too. The copy
         * is made first: making it may run Python code too. */
        if (PyList_Check(items) && (block_ms > 0 || PyList_GET_SIZE(items) >= POLL_EVERY)) {
                Py_SETREF(items, PyList_GetSlice(items, 0, PY_SSIZE_T_MAX));
                if (!items)
                        return NULL;
        }
        n = PySequence_Fast_GET_SIZE(items);
        for (Py_ssize_t i = 0; i < n; i++)
                if (!batch_item(PySequence_Fast_GET_ITEM(items, i), &value, &key)) {
                        Py_DECREF(items);
                        Py_RETURN_NONE; /* the general path says what is wrong with it */
                }
        if (n == 0 || !self->nparts) {
                Py_DECREF(items);
                if (n)
                        Py_RETURN_NONE; /* no partition to send to: the general path says so */
                return Py_BuildValue("(ii)", 0, 0);
        }
        count = self->nparts;
        if (!(pids = PyMem_Malloc(count * sizeof(*pids)))) {
                PyErr_NoMemory();
                goto done;
        }
        memcpy(pids, self->pids, count * sizeof(*pids));
        run = (n + count - 1) / count; /* each partition's share, consecutive */
        first = self->counter++;
        while (sent < n) {
                int32_t pid = pids[(first + (uint64_t)(sent / run)) % (uint64_t)count];
                Py_ssize_t end = (sent / run + 1) * run, done, size;

                end = end < n ? end : n;
                end = end < sent + BATCH_AT_ONCE ? end : sent + BATCH_AT_ONCE;
                batch_item(PySequence_Fast_GET_ITEM(items, sent), &value, &key);
                size = (Py_ssize_t)(size_of(value) + size_of(key));
                if ((size_t)size > self->max_size) {
                        err = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
                        break;
                }
                if ((size_t)size + SIZE_MARGIN > self->max_size) {
                        done = produce_alone(self, pid, value, key, &err);
                        self->batch_sent += (unsigned long long)done;
                } else {
                        Py_ssize_t cnt = 0;

                        for (; sent + cnt < end; cnt++) {
                                batch_item(PySequence_Fast_GET_ITEM(items, sent + cnt), &value, &key);
                                if (size_of(value) + size_of(key) + SIZE_MARGIN > self->max_size)
                                        break;
                                set_message(&msgs[cnt], value, key, 0);
                        }
                        Py_ssize_t rows[BATCH_AT_ONCE], failed = 0;

                        for (Py_ssize_t i = 0; i < cnt; i++)
                                rows[i] = i;
                        err = producer_send_rows(self, pid, 0, msgs, rows, (int)cnt, block_ms, &waited, &failed);
                        done = err ? failed : cnt;
                }
                if ((sent + done) / POLL_EVERY != sent / POLL_EVERY && serve(self, 0))
                        err = PYRDK_ERR_CLOSED; /* serve delivery reports as we go */
                sent += done;
                if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && waited < block_ms) {
                        if ((err = serve(self, FULL_WAIT_MS))) /* sends at once, whatever linger.ms says */
                                break;
                        waited += FULL_WAIT_MS;
                        continue;
                }
                if (err)
                        break;
        }
        result = Py_BuildValue("(ni)", sent, err);
done:
        PyMem_Free(pids);
        Py_XDECREF(items);
        return result;
}

int producer_usable(producer_t *self) {
        return usable(self);
}

int producer_serve(producer_t *self, int flush_ms) {
        return serve(self, flush_ms);
}

/* -- the type ------------------------------------------------------------------------------- */

static PyObject *get_divert(producer_t *self, void *closure) {
        (void)closure;
        return PyBool_FromLong(self->divert);
}

static int set_divert(producer_t *self, PyObject *value, void *closure) {
        int divert = value ? PyObject_IsTrue(value) : -1;

        (void)closure;
        if (divert < 0) {
                if (!value)
                        PyErr_SetString(PyExc_AttributeError, "cannot delete ProducerCore.divert");
                return -1;
        }
        self->divert = divert;
        return 0;
}

static PyObject *get_queued(producer_t *self, void *closure) {
        (void)closure;
        return PyLong_FromSize_t(self->queued);
}

static PyObject *get_batch_sent(producer_t *self, void *closure) {
        (void)closure;
        return PyLong_FromUnsignedLongLong(self->batch_sent);
}

static Py_ssize_t producer_len(producer_t *self) {
        return (Py_ssize_t)self->nkept;
}

static int producer_traverse(producer_t *self, visitproc visit, void *arg) {
        Py_VISIT(Py_TYPE(self));
        Py_VISIT(self->owner);
        Py_VISIT(self->pairs);
        for (Py_ssize_t i = 0; i < self->nparts; i++)
                Py_VISIT(self->parts[i]);
        Py_VISIT(self->partitioner);
        Py_VISIT(self->compression);
        Py_VISIT(self->general);
        Py_VISIT(self->refused);
        Py_VISIT(self->keep);
        for (size_t i = 0; i < self->nslots; i++) {
                slot_t *slot = &self->slots[i];

                if (!slot->weak)
                        Py_VISIT(slot->msg);
                Py_VISIT(slot->partition);
        }
        return 0;
}

static int producer_clear(producer_t *self) {
        self->guard = NULL; /* the owner may go: never call librdkafka again */
        self->divert = self->closed = 1;
        clear_queues(self);
        for (size_t i = 0; i < self->nslots; i++) {
                slot_t *slot = &self->slots[i];

                if (slot->weak && slot->msg)
                        ((message_t *)slot->msg)->core = NULL;
                else
                        Py_CLEAR(slot->msg);
                slot->msg = NULL;
                keep_value(self, slot);
                Py_CLEAR(slot->value);
                Py_CLEAR(slot->key);
                Py_CLEAR(slot->partition);
        }
        PyMem_Free(self->slots);
        self->slots = NULL;
        self->nslots = self->nkept = 0;
        self->oldest_id = self->next_id;
        release_partitions(self);
        Py_CLEAR(self->refused);
        Py_CLEAR(self->general);
        Py_CLEAR(self->partitioner);
        Py_CLEAR(self->compression);
        Py_CLEAR(self->topic);
        Py_CLEAR(self->keep);
        Py_CLEAR(self->owner);
        return 0;
}

static void producer_dealloc(producer_t *self) {
        PyTypeObject *type = Py_TYPE(self);

        PyObject_GC_UnTrack(self);
        producer_clear(self);
        type->tp_free(self);
        Py_DECREF(type);
}

static PyMethodDef producer_methods[] = {
        {"produce", (PyCFunction)(void (*)(void))producer_produce, METH_FASTCALL | METH_KEYWORDS,
         "produce(value, key=None, timestamp=None, headers=None) -> Message\n--\n\n"
         "The fast path: a Message queued for its partition; anything else goes to general()."},
        {"track", (PyCFunction)producer_track, METH_O, "track(message) -> id\n--\n\nKeep a general path's Message."},
        {"untrack", (PyCFunction)producer_untrack, METH_O,
         "untrack(id) -> message or None\n--\n\nA kept Message, no longer kept."},
        {"hand_off", (PyCFunction)(void (*)(void))producer_hand_off, METH_FASTCALL | METH_KEYWORDS,
         "hand_off(stopping=False) -> int\n--\n\nEvery queue to librdkafka (rd_kafka_produce_batch); the number "
         "still queued."},
        {"deliver", (PyCFunction)(void (*)(void))producer_deliver, METH_FASTCALL,
         "deliver(ids, errs, partitions, offsets, timestamps) -> [(message, err)]\n--\n\n"
         "A batch of delivery reports fills the Messages in."},
        {"refused", (PyCFunction)producer_refused, METH_NOARGS,
         "refused() -> [(message, err)]\n--\n\nThe messages librdkafka refused at hand-off."},
        {"produce_batch", (PyCFunction)(void (*)(void))producer_produce_batch, METH_FASTCALL,
         "produce_batch(messages, block_ms) -> (sent, err) or None\n--\n\nValues or (value, key) pairs, without "
         "Messages, in runs per partition."},
        {"produce_arrow", (PyCFunction)(void (*)(void))producer_produce_arrow, METH_FASTCALL,
         "produce_arrow(columns, start, block_ms) -> (next, err) or None\n--\n\nThe rows of Arrow columns' buffers "
         "(value, key, partition), without a Python object per row (see produce_arrow.c)."},
        {"take_all", (PyCFunction)producer_take_all, METH_NOARGS,
         "take_all() -> [message]\n--\n\nEvery Message still kept, no longer kept."},
        {"close", (PyCFunction)producer_close, METH_NOARGS, "close($self, /)\n--\n\nHand nothing more over but when stopping."},
        {NULL, NULL, 0, NULL},
};

static PyGetSetDef producer_getset[] = {
        {"partitions", (getter)get_partitions, (setter)set_partitions, "``[(id, Partition)]``, by id.", NULL},
        {"divert", (getter)get_divert, (setter)set_divert, "True sends every produce() to the general path.", NULL},
        {"queued", (getter)get_queued, NULL, "The messages in the queues.", NULL},
        {"batch_sent", (getter)get_batch_sent, NULL, "The messages produce_batch() sent.", NULL},
        {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot producer_slots[] = {
        {Py_tp_doc, "ProducerCore(owner, rk, rkt, guard, topic, partitions, partitioner, compression, max_size, batch, "
                    "report_all, general, start, keep=None)\n--\n\nThe producer's core (see pyrdk.core); with a keep list, values are handed over uncopied."},
        {Py_tp_new, producer_new},
        {Py_tp_dealloc, producer_dealloc},
        {Py_tp_traverse, producer_traverse},
        {Py_tp_clear, producer_clear},
        {Py_tp_methods, producer_methods},
        {Py_tp_getset, producer_getset},
        {Py_sq_length, producer_len},
        {0, NULL},
};

PyType_Spec producer_spec = {
        "pyrdk._core.ProducerCore", sizeof(producer_t), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, producer_slots,
};
