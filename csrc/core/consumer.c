/* ConsumerCore: the consumer's buffer of Messages and each partition's next offset (see
 * ConsumerCore in pyrdk/core/pure.py, which this follows step by step).
 *
 * The buffer is a ring of Messages (a power of two in size, grown by doubling). The next
 * offsets are a C array indexed by partition id, NEXT_ABSENT where the partition is not
 * held and NEXT_UNKNOWN where nothing was handed out yet; ids from NEXT_ARRAY_MAX up (and
 * negative ones) go to a dict instead, so that one odd id never costs an array of its
 * size. */
#include <string.h>

#include "core.h"

#define NEXT_ABSENT INT64_MIN
#define NEXT_UNKNOWN (INT64_MIN + 1)
enum { NEXT_ARRAY_MAX = 1 << 16 };

typedef struct {
        PyObject_HEAD
        PyObject *partitions; /* dict {id: Partition} */
        PyObject **ring;
        size_t cap, head, len; /* cap: 0 or a power of two */
        int64_t *next;         /* by partition id, nnext of them */
        size_t nnext;
        PyObject *next_far;  /* dict {id: next offset or None} for the ids the array does not take */
        PyObject *topic;     /* the last topic name made, a str */
} consumer_t;

typedef struct {
        PyObject_HEAD
        consumer_t *core;
        PyObject *refill; /* NULL once the iteration has ended */
} iterator_t;

static core_state *state_of(consumer_t *self) {
        return PyType_GetModuleState(Py_TYPE(self));
}

/* -- the ring ------------------------------------------------------------------------------ */

static int ring_grow(consumer_t *self, size_t more) {
        size_t cap = self->cap ? self->cap : 64;
        PyObject **ring;

        while (cap < self->len + more) {
                if (cap > PY_SSIZE_T_MAX / (2 * sizeof(PyObject *))) {
                        PyErr_NoMemory();
                        return -1;
                }
                cap *= 2;
        }
        if (!(ring = PyMem_Malloc(cap * sizeof(*ring)))) {
                PyErr_NoMemory();
                return -1;
        }
        for (size_t i = 0; i < self->len; i++)
                ring[i] = self->ring[(self->head + i) & (self->cap - 1)];
        PyMem_Free(self->ring);
        self->ring = ring;
        self->cap = cap;
        self->head = 0;
        return 0;
}

/* Room for more messages: 0, or -1 with an exception. */
static inline int ring_reserve(consumer_t *self, size_t more) {
        return self->len + more <= self->cap ? 0 : ring_grow(self, more);
}

/* Steals msg; room must have been reserved. */
static void ring_push(consumer_t *self, PyObject *msg) {
        self->ring[(self->head + self->len++) & (self->cap - 1)] = msg;
}

static PyObject *ring_at(consumer_t *self, size_t i) {
        return self->ring[(self->head + i) & (self->cap - 1)];
}

static PyObject *ring_pop(consumer_t *self) {
        PyObject *msg = self->ring[self->head];

        self->head = (self->head + 1) & (self->cap - 1);
        self->len--;
        return msg;
}

static void ring_clear(consumer_t *self) {
        while (self->len)
                Py_DECREF(ring_pop(self));
        self->head = 0;
}

/* -- next offsets ---------------------------------------------------------------------------- */

/* The offset after offset (the largest stays: a Message's offset is any int64). */
static int64_t after(int64_t offset) {
        return offset < INT64_MAX ? offset + 1 : INT64_MAX;
}

/* next[pid] = value (NEXT_UNKNOWN: None, NEXT_ABSENT: forget it). 0, or -1 with an exception. */
static int next_set(consumer_t *self, long long pid, int64_t value) {
        if (pid >= 0 && pid < NEXT_ARRAY_MAX) {
                if ((size_t)pid >= self->nnext) {
                        size_t n = self->nnext ? self->nnext : 16;
                        int64_t *next;

                        if (value == NEXT_ABSENT)
                                return 0;
                        while (n <= (size_t)pid)
                                n *= 2;
                        if (!(next = PyMem_Realloc(self->next, n * sizeof(*next)))) {
                                PyErr_NoMemory();
                                return -1;
                        }
                        for (size_t i = self->nnext; i < n; i++)
                                next[i] = NEXT_ABSENT;
                        self->next = next;
                        self->nnext = n;
                }
                self->next[pid] = value;
                return 0;
        } else {
                PyObject *key = PyLong_FromLongLong(pid), *offset;
                int ret;

                if (!key)
                        return -1;
                if (value == NEXT_ABSENT) {
                        ret = self->next_far && PyDict_DelItem(self->next_far, key) < 0 ? -1 : 0;
                        if (ret < 0 && PyErr_ExceptionMatches(PyExc_KeyError)) {
                                PyErr_Clear();
                                ret = 0;
                        }
                        Py_DECREF(key);
                        return ret;
                }
                if (!self->next_far && !(self->next_far = PyDict_New())) {
                        Py_DECREF(key);
                        return -1;
                }
                offset = value == NEXT_UNKNOWN ? Py_NewRef(Py_None) : PyLong_FromLongLong(value);
                ret = offset ? PyDict_SetItem(self->next_far, key, offset) : -1;
                Py_XDECREF(offset);
                Py_DECREF(key);
                return ret;
        }
}

/* The first buffered message, counted as handed out (a new reference), or NULL: none. */
static PyObject *consumer_pop(consumer_t *self, int *error) {
        message_t *msg;

        *error = 0;
        if (!self->len)
                return NULL;
        msg = (message_t *)ring_pop(self);
        if (next_set(self, msg->partition_id, after(msg->offset)) < 0) {
                Py_DECREF(msg);
                *error = 1;
                return NULL;
        }
        return (PyObject *)msg;
}

/* -- methods -------------------------------------------------------------------------------- */

static int set_partitions(consumer_t *self, PyObject *value, void *closure) {
        (void)closure;
        if (!value || !PyDict_Check(value)) {
                PyErr_Format(PyExc_TypeError, "ConsumerCore.partitions must be a dict {id: Partition}, not %.200s",
                             value ? Py_TYPE(value)->tp_name : "nothing");
                return -1;
        }
        Py_XSETREF(self->partitions, Py_NewRef(value));
        return 0;
}

static PyObject *get_partitions(consumer_t *self, void *closure) {
        (void)closure;
        return self->partitions ? Py_NewRef(self->partitions) : PyDict_New(); /* none once cleared */
}

static PyObject *consumer_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
        static const char *const names[] = {"partitions", NULL};
        PyObject *partitions;
        consumer_t *self;

        if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:ConsumerCore", (char **)names, &partitions))
                return NULL;
        if (!(self = (consumer_t *)type->tp_alloc(type, 0)))
                return NULL;
        if (set_partitions(self, partitions, NULL) < 0) {
                Py_DECREF(self);
                return NULL;
        }
        return (PyObject *)self;
}

/* The topic name of m's rd_kafka_topic_t as a str (a new reference), the last one made
 * when it is the same: the caller holds it, as making objects may run Python code that
 * adds another topic's batch meanwhile. */
static PyObject *topic_of(consumer_t *self, const rd_kafka_message_t *m) {
        const char *name = m->rkt ? rd_kafka_topic_name(m->rkt) : NULL;
        const char *cached;

        if (!name)
                return Py_NewRef(Py_None);
        if (self->topic && (cached = PyUnicode_AsUTF8(self->topic)) && strcmp(cached, name) == 0)
                return Py_NewRef(self->topic);
        PyErr_Clear();
        Py_XSETREF(self->topic, PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "replace"));
        return Py_XNewRef(self->topic);
}

/* Is message i of a batch an error event? 1 (its position appended to positions), 0, or -1
 * with an exception (a NULL pointer: what names the method). */
static int error_event(const rd_kafka_message_t *m, Py_ssize_t i, PyObject *positions, const char *what) {
        PyObject *pos;
        int ret;

        if (!m) {
                PyErr_Format(PyExc_ValueError, "%s's pointers hold NULL at position %zd", what, i);
                return -1;
        }
        if (!m->err)
                return 0;
        if (!(pos = PyLong_FromSsize_t(i)))
                return -1;
        ret = PyList_Append(positions, pos) < 0 ? -1 : 1;
        Py_DECREF(pos);
        return ret;
}

PyDoc_STRVAR(add_doc,
             "add($self, pointers, /)\n--\n\n"
             "-> (count, error_positions)\n"
             "A batch from ``rd_kafka_consume_batch_queue`` (a memoryview of ``rd_kafka_message_t *``)\n"
             "becomes Messages at the end of the buffer; the positions of the error events are for the\n"
             "caller.");

static PyObject *consumer_add(consumer_t *self, PyObject *pointers) {
        core_state *st = state_of(self);
        PyObject *positions = NULL, *partition = NULL, *result = NULL;
        const rd_kafka_topic_t *rkt = NULL;
        PyObject *topic = NULL;
        int32_t last_pid = -1;
        int topic_known = 0;
        Py_ssize_t count = 0, n;
        rd_kafka_message_t **msgs;
        Py_buffer view;

        if (core_read_column(pointers, &view, (Py_ssize_t)sizeof(void *), "LQ", "add()'s pointers") < 0)
                return NULL;
        msgs = view.buf;
        n = view.len / view.itemsize;
        if (!(positions = PyList_New(0)) || ring_reserve(self, (size_t)n) < 0)
                goto done;
        for (Py_ssize_t i = 0; i < n; i++) {
                rd_kafka_message_t *m = msgs[i];
                PyObject *msg;

                switch (error_event(m, i, positions, "add()")) {
                case -1:
                        goto done;
                case 1:
                        continue;
                }
                if (!topic_known || m->rkt != rkt) {
                        rkt = m->rkt;
                        topic_known = 1;
                        Py_XSETREF(topic, topic_of(self, m));
                        if (!topic)
                                goto done;
                }
                if (!partition || m->partition != last_pid) { /* once for a run of one partition's */
                        PyObject *key = PyLong_FromLong(m->partition);

                        Py_CLEAR(partition);
                        if (!key)
                                goto done;
                        PyObject *parts = Py_XNewRef(self->partitions), *found; /* held: a key's __eq__ */

                        found = parts ? PyDict_GetItemWithError(parts, key) : NULL;
                        Py_DECREF(key);
                        partition = Py_XNewRef(found);
                        Py_XDECREF(parts);
                        if (!partition && PyErr_Occurred())
                                goto done;
                        if (!partition)
                                partition = Py_NewRef(Py_None);
                        last_pid = m->partition;
                }
                if (!(msg = message_consumed(st, m, topic, partition)))
                        goto done;
                /* Making the Message may have run a collection, whose finalizers may have
                 * added to the buffer (a consumer's resume()): the room is checked again. */
                if (ring_reserve(self, 1) < 0) {
                        Py_DECREF(msg);
                        goto done;
                }
                ring_push(self, msg);
                count++;
        }
        result = Py_BuildValue("(nO)", count, positions);
done:
        Py_XDECREF(topic);
        Py_XDECREF(partition);
        Py_XDECREF(positions);
        PyBuffer_Release(&view);
        return result;
}

/* -- add_records: a batch as aiokafka's records ------------------------------------------- */

PyDoc_STRVAR(add_records_doc,
             "add_records($self, pointers, record, partition, /)\n--\n\n"
             "-> (runs, error_positions)\n"
             "A batch from ``rd_kafka_consume_batch_queue`` as aiokafka's records, each message counted as\n"
             "handed out, none buffered: ``runs`` is ``[[partition(topic, id), [record(...)]]]``, one\n"
             "run for each stretch of one partition's messages, in order; ``record`` and ``partition`` are\n"
             "namedtuple classes of 11 and 2 fields (ConsumerRecord, TopicPartition).");

/* Is type a namedtuple class of n fields (a tuple subclass of no other storage)? 0, or -1
 * with a TypeError naming what. */
static int check_record_type(PyObject *type, Py_ssize_t n, const char *what) {
        PyObject *fields;
        Py_ssize_t have = -1;

        if (PyType_Check(type) && PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type) &&
            ((PyTypeObject *)type)->tp_basicsize == PyTuple_Type.tp_basicsize &&
            ((PyTypeObject *)type)->tp_itemsize == PyTuple_Type.tp_itemsize &&
            (fields = core_getattr(type, "_fields"))) {
                have = PyTuple_Check(fields) ? PyTuple_GET_SIZE(fields) : -1;
                Py_DECREF(fields);
        }
        PyErr_Clear();
        if (have == n)
                return 0;
        PyErr_Format(PyExc_TypeError, "add_records(): %s must be a namedtuple class of %zd fields, not %R", what, n, type);
        return -1;
}

static PyObject *consumer_add_records(consumer_t *self, PyObject *const *args, Py_ssize_t nargs) {
        core_state *st = state_of(self);
        PyObject *positions = NULL, *runs = NULL, *records = NULL, *pid = NULL, *result = NULL;
        record_ints_t ints = {NULL, NULL, 0, 0};
        PyTypeObject *record_type, *tp_type;
        const rd_kafka_topic_t *rkt = NULL;
        PyObject *topic = NULL;
        int32_t last_pid = -1;
        int in_run = 0;
        rd_kafka_message_t **msgs;
        Py_buffer view;
        Py_ssize_t n;

        if (nargs != 3) {
                PyErr_Format(PyExc_TypeError, "add_records(pointers, record, partition) takes 3 arguments (%zd given)",
                             nargs);
                return NULL;
        }
        if (check_record_type(args[1], 11, "record") < 0 || check_record_type(args[2], 2, "partition") < 0)
                return NULL;
        record_type = (PyTypeObject *)args[1];
        tp_type = (PyTypeObject *)args[2];
        if (core_read_column(args[0], &view, (Py_ssize_t)sizeof(void *), "LQ", "add_records()'s pointers") < 0)
                return NULL;
        msgs = view.buf;
        n = view.len / view.itemsize;
        if (!(positions = PyList_New(0)) || !(runs = PyList_New(0)))
                goto done;
        for (Py_ssize_t i = 0; i < n; i++) {
                rd_kafka_message_t *m = msgs[i];
                PyObject *rec;

                switch (error_event(m, i, positions, "add_records()")) {
                case -1:
                        goto done;
                case 1:
                        continue;
                }
                if (!in_run || m->rkt != rkt || m->partition != last_pid) { /* a new run */
                        PyObject *tp, *run;

                        if (!in_run || m->rkt != rkt) {
                                rkt = m->rkt;
                                Py_XSETREF(topic, topic_of(self, m));
                                if (!topic)
                                        goto done;
                        }
                        Py_XSETREF(pid, PyLong_FromLong(m->partition));
                        Py_CLEAR(records);
                        if (!pid || !(records = PyList_New(0)) || !(tp = tp_type->tp_alloc(tp_type, 2)))
                                goto done;
                        PyTuple_SET_ITEM(tp, 0, Py_NewRef(topic));
                        PyTuple_SET_ITEM(tp, 1, Py_NewRef(pid));
                        PyObject_GC_UnTrack(tp); /* a str and an int: in no cycle */
                        run = PyList_New(2);
                        if (!run) {
                                Py_DECREF(tp);
                                goto done;
                        }
                        PyList_SET_ITEM(run, 0, tp);
                        PyList_SET_ITEM(run, 1, Py_NewRef(records));
                        if (PyList_Append(runs, run) < 0) {
                                Py_DECREF(run);
                                goto done;
                        }
                        Py_DECREF(run);
                        last_pid = m->partition;
                        in_run = 1;
                }
                if (!(rec = message_record(st, m, record_type, topic, pid, &ints)))
                        goto done;
                if (PyList_Append(records, rec) < 0) {
                        Py_DECREF(rec);
                        goto done;
                }
                Py_DECREF(rec);
                if (next_set(self, m->partition, after(m->offset)) < 0) /* counted, as add_columns() counts */
                        goto done;
        }
        result = PyTuple_Pack(2, runs, positions);
done:
        Py_XDECREF(topic);
        Py_XDECREF(ints.timestamp);
        Py_XDECREF(ints.value_size);
        Py_XDECREF(records);
        Py_XDECREF(pid);
        Py_XDECREF(runs);
        Py_XDECREF(positions);
        PyBuffer_Release(&view);
        return result;
}

/* -- add_columns: a batch as Arrow columns ---------------------------------------------------- */

PyDoc_STRVAR(add_columns_doc,
             "add_columns($self, pointers, /)\n--\n\n"
             "-> (columns, error_positions)\n"
             "A batch from ``rd_kafka_consume_batch_queue`` as the buffers of Arrow columns (see\n"
             "pyrdk.core.arrow), each message counted as handed out, none buffered; the positions of the\n"
             "error events are for the caller.");

/* A new bytes object of size bytes to fill (NULL with an exception). */
static PyObject *column(size_t size) {
        if (size > PY_SSIZE_T_MAX)
                return PyErr_NoMemory();
        return PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
}

/* An Arrow validity bitmap of n bits, all set (NULL with an exception). */
static PyObject *bitmap(Py_ssize_t n) {
        PyObject *out = column(((size_t)n + 7) / 8);

        if (out)
                memset(PyBytes_AS_STRING(out), 0xff, PyBytes_GET_SIZE(out));
        return out;
}

static void put_offset(char *offsets, int wide, Py_ssize_t i, size_t value) {
        if (wide)
                ((int64_t *)offsets)[i] = (int64_t)value;
        else
                ((int32_t *)offsets)[i] = (int32_t)value;
}

/* Copy size bytes of data (NULL: a null) as item i of a variable-size column. */
static void put_item(char *data, char *offsets, char *valid, int wide, Py_ssize_t i, size_t *at, const void *item,
                     size_t size) {
        if (item) {
                memcpy(data + *at, item, size);
                *at += size;
        } else if (valid)
                valid[i / 8] &= (char)~(1 << (i % 8));
        put_offset(offsets, wide, i + 1, *at);
}

static PyObject *consumer_add_columns(consumer_t *self, PyObject *pointers) {
        PyObject *positions = NULL, *result = NULL, *cols[12] = {NULL};
        size_t key_size = 0, value_size = 0, topic_size = 0, topic_len = 0, key_at = 0, value_at = 0, topic_at = 0;
        Py_ssize_t n, rows = 0, key_nulls = 0, value_nulls = 0, row;
        const rd_kafka_topic_t *rkt = NULL;
        const char *topic = "";
        rd_kafka_message_t **msgs;
        int wide, ncols = (int)(sizeof(cols) / sizeof(cols[0]));
        Py_buffer view;

        if (core_read_column(pointers, &view, (Py_ssize_t)sizeof(void *), "LQ", "add_columns()'s pointers") < 0)
                return NULL;
        n = view.len / (Py_ssize_t)sizeof(void *);
        msgs = view.buf;
        if (!(positions = PyList_New(0)))
                goto done;
        /* First the sizes, then each column at once at its size. */
        for (Py_ssize_t i = 0; i < n; i++) {
                const rd_kafka_message_t *m = msgs[i];

                switch (error_event(m, i, positions, "add_columns()")) {
                case -1:
                        goto done;
                case 1:
                        continue;
                }
                if (m->rkt != rkt || !rows) {
                        rkt = m->rkt;
                        topic = rd_kafka_topic_name(rkt);
                        topic_len = topic ? strlen(topic) : 0;
                }
                rows++;
                key_size += m->key ? m->key_len : 0;
                key_nulls += !m->key;
                value_size += m->payload ? m->len : 0;
                value_nulls += !m->payload;
                topic_size += topic_len;
        }
        wide = key_size > INT32_MAX || value_size > INT32_MAX || topic_size > INT32_MAX;
        {
                size_t osize = (size_t)(rows + 1) * (wide ? 8 : 4);

                if (!(cols[0] = key_nulls ? bitmap(rows) : Py_NewRef(Py_None)) || !(cols[1] = column(osize)) ||
                    !(cols[2] = column(key_size)) || !(cols[3] = value_nulls ? bitmap(rows) : Py_NewRef(Py_None)) ||
                    !(cols[4] = column(osize)) || !(cols[5] = column(value_size)) || !(cols[6] = column(osize)) ||
                    !(cols[7] = column(topic_size)) || !(cols[8] = column((size_t)rows * 4)) ||
                    !(cols[9] = column((size_t)rows * 8)) || !(cols[10] = column((size_t)rows * 8)) ||
                    !(cols[11] = column((size_t)rows * 4)))
                        goto done;
        }
        {
                char *key_valid = cols[0] == Py_None ? NULL : PyBytes_AS_STRING(cols[0]);
                char *key_offsets = PyBytes_AS_STRING(cols[1]), *key_data = PyBytes_AS_STRING(cols[2]);
                char *value_valid = cols[3] == Py_None ? NULL : PyBytes_AS_STRING(cols[3]);
                char *value_offsets = PyBytes_AS_STRING(cols[4]), *value_data = PyBytes_AS_STRING(cols[5]);
                char *topic_offsets = PyBytes_AS_STRING(cols[6]), *topic_data = PyBytes_AS_STRING(cols[7]);
                int32_t *partitions = (int32_t *)PyBytes_AS_STRING(cols[8]);
                int64_t *offsets = (int64_t *)PyBytes_AS_STRING(cols[9]);
                int64_t *timestamps = (int64_t *)PyBytes_AS_STRING(cols[10]);
                int32_t *types = (int32_t *)PyBytes_AS_STRING(cols[11]);

                put_offset(key_offsets, wide, 0, 0);
                put_offset(value_offsets, wide, 0, 0);
                put_offset(topic_offsets, wide, 0, 0);
                rkt = NULL;
                row = 0;
                for (Py_ssize_t i = 0; i < n; i++) {
                        const rd_kafka_message_t *m = msgs[i];
                        rd_kafka_timestamp_type_t tstype;

                        if (m->err)
                                continue;
                        if (m->rkt != rkt || !row) {
                                rkt = m->rkt;
                                topic = rd_kafka_topic_name(rkt);
                                topic_len = topic ? strlen(topic) : 0;
                        }
                        put_item(key_data, key_offsets, key_valid, wide, row, &key_at, m->key, m->key_len);
                        put_item(value_data, value_offsets, value_valid, wide, row, &value_at, m->payload, m->len);
                        put_item(topic_data, topic_offsets, NULL, wide, row, &topic_at, topic, topic_len);
                        partitions[row] = m->partition;
                        offsets[row] = m->offset;
                        timestamps[row] = rd_kafka_message_timestamp(m, &tstype);
                        types[row] = (int32_t)tstype;
                        if (next_set(self, m->partition, after(m->offset)) < 0) /* counted, as take() counts */
                                goto done;
                        row++;
                }
        }
        result = Py_BuildValue("((nOnOOOnOOOOOOOOO)O)", rows, wide ? Py_True : Py_False, key_nulls, cols[0], cols[1],
                               cols[2], value_nulls, cols[3], cols[4], cols[5], cols[6], cols[7], cols[8], cols[9],
                               cols[10], cols[11], positions);
done:
        for (int i = 0; i < ncols; i++)
                Py_XDECREF(cols[i]);
        Py_XDECREF(positions);
        PyBuffer_Release(&view);
        return result;
}

static PyObject *consumer_next(consumer_t *self, PyObject *unused) {
        int error;
        PyObject *msg = consumer_pop(self, &error);

        (void)unused;
        if (!msg && !error)
                Py_RETURN_NONE;
        return msg;
}

static PyObject *consumer_take(consumer_t *self, PyObject *arg) {
        Py_ssize_t max = PyNumber_AsSsize_t(arg, PyExc_OverflowError), n;
        PyObject *out;
        int error;

        if (max == -1 && PyErr_Occurred())
                return NULL;
        n = max < 0 ? 0 : (size_t)max < self->len ? max : (Py_ssize_t)self->len;
        if (!(out = PyList_New(n)))
                return NULL;
        /* Making the list may have run a collection, whose finalizers may have emptied the
         * buffer (a consumer's stop()): what is left is taken. */
        if ((size_t)n > self->len && PyList_SetSlice(out, (Py_ssize_t)self->len, n, NULL) < 0) {
                Py_DECREF(out);
                return NULL;
        }
        n = PyList_GET_SIZE(out);
        for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *msg = consumer_pop(self, &error);

                if (!msg && !error) { /* counting one ran Python code, which emptied the buffer */
                        if (PyList_SetSlice(out, i, n, NULL) < 0) {
                                Py_DECREF(out);
                                return NULL;
                        }
                        break;
                }
                if (!msg) { /* out of memory counting it */
                        PyList_SET_ITEM(out, i, Py_NewRef(Py_None));
                        for (Py_ssize_t j = i + 1; j < n; j++)
                                PyList_SET_ITEM(out, j, Py_NewRef(Py_None));
                        Py_DECREF(out);
                        return NULL;
                }
                PyList_SET_ITEM(out, i, msg);
        }
        return out;
}

static PyObject *consumer_iterator(consumer_t *self, PyObject *refill) {
        iterator_t *it;

        if (!PyCallable_Check(refill)) {
                PyErr_Format(PyExc_TypeError, "iterator(refill): refill must be callable, not %.200s",
                             Py_TYPE(refill)->tp_name);
                return NULL;
        }
        if (!(it = PyObject_GC_New(iterator_t, state_of(self)->iterator_type)))
                return NULL;
        it->core = (consumer_t *)Py_NewRef(self);
        it->refill = Py_NewRef(refill);
        PyObject_GC_Track(it);
        return (PyObject *)it;
}

static PyObject *consumer_next_offsets(consumer_t *self, PyObject *unused) {
        PyObject *out = PyDict_New();

        (void)unused;
        for (size_t pid = 0; out && pid < self->nnext; pid++) {
                int64_t value = self->next[pid];
                PyObject *key, *offset;

                if (value == NEXT_ABSENT)
                        continue;
                key = PyLong_FromSize_t(pid);
                offset = value == NEXT_UNKNOWN ? Py_NewRef(Py_None) : PyLong_FromLongLong(value);
                if (!key || !offset || PyDict_SetItem(out, key, offset) < 0)
                        Py_CLEAR(out);
                Py_XDECREF(key);
                Py_XDECREF(offset);
        }
        if (out && self->next_far && PyDict_Update(out, self->next_far) < 0)
                Py_CLEAR(out);
        return out;
}

/* A partition id argument: an int (not a bool). */
static int pid_arg(PyObject *arg, long long *pid) {
        int overflow;

        if (!PyLong_Check(arg) || PyBool_Check(arg)) {
                PyErr_Format(PyExc_TypeError, "a partition id must be an int, not %.200s", Py_TYPE(arg)->tp_name);
                return -1;
        }
        *pid = PyLong_AsLongLongAndOverflow(arg, &overflow);
        if (overflow || *pid < INT32_MIN || *pid > INT32_MAX) {
                PyErr_Format(PyExc_OverflowError, "partition id %S does not fit in 32 bits", arg);
                return -1;
        }
        return *pid == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *consumer_set_next(consumer_t *self, PyObject *const *args, Py_ssize_t nargs) {
        long long pid;
        int64_t offset = NEXT_UNKNOWN;

        if (nargs != 2) {
                PyErr_Format(PyExc_TypeError, "set_next(pid, offset) takes 2 arguments (%zd given)", nargs);
                return NULL;
        }
        if (pid_arg(args[0], &pid) < 0)
                return NULL;
        if (args[1] != Py_None) {
                if (!PyLong_Check(args[1]) || PyBool_Check(args[1])) {
                        PyErr_Format(PyExc_TypeError, "set_next(pid, offset): offset must be an int or None, not %.200s",
                                     Py_TYPE(args[1])->tp_name);
                        return NULL;
                }
                offset = PyLong_AsLongLong(args[1]);
                if (offset == -1 && PyErr_Occurred())
                        return NULL;
                if (offset <= NEXT_UNKNOWN) {
                        PyErr_Format(PyExc_OverflowError, "set_next(pid, offset): offset %S is out of range", args[1]);
                        return NULL;
                }
        }
        if (next_set(self, pid, offset) < 0)
                return NULL;
        Py_RETURN_NONE;
}

static PyObject *consumer_forget(consumer_t *self, PyObject *arg) {
        long long pid;

        if (pid_arg(arg, &pid) < 0 || next_set(self, pid, NEXT_ABSENT) < 0)
                return NULL;
        Py_RETURN_NONE;
}

/* Is the Message's partition in pids (the `in` operator), asked once for a run of one
 * partition's messages? 1, 0, or -1 with an exception. */
static int in_pids(PyObject *pids, message_t *msg, int32_t *last, int *last_answer) {
        PyObject *key;

        if (*last_answer >= 0 && msg->partition_id == *last)
                return *last_answer;
        if (!(key = PyLong_FromLong(msg->partition_id)))
                return -1;
        *last_answer = PySequence_Contains(pids, key);
        *last = msg->partition_id;
        Py_DECREF(key);
        return *last_answer;
}

static PyObject *consumer_take_partitions(consumer_t *self, PyObject *pids) {
        size_t n = self->len, len, nkept = 0, t = 0;
        PyObject **snap = NULL, **kept = NULL, *taken = NULL;
        unsigned char *found = NULL;
        int32_t last = 0;
        int answer = -1;

        if (!n)
                return PyList_New(0);
        if (!(snap = PyMem_Malloc(n * sizeof(*snap))) || !(found = PyMem_Malloc(n))) {
                PyMem_Free(snap);
                return PyErr_NoMemory();
        }
        for (size_t i = 0; i < n; i++)
                snap[i] = Py_NewRef(ring_at(self, i));
        /* Ask first, of the buffer as it was: `in` may run Python code, which may change it. */
        for (size_t i = 0; i < n; i++) {
                int f = in_pids(pids, (message_t *)snap[i], &last, &answer);

                if (f < 0)
                        goto done;
                found[i] = (unsigned char)f;
        }
        /* Take the ones found that are still in the buffer, in order; keep the others. */
        if (!(taken = PyList_New(0)))
                goto done;
        len = self->len; /* from here on, no Python code runs */
        if (!(kept = PyMem_Malloc((len ? len : 1) * sizeof(*kept)))) {
                PyErr_NoMemory();
                Py_CLEAR(taken);
                goto done;
        }
        for (size_t i = 0; i < len; i++) {
                PyObject *msg = ring_at(self, i);

                while (t < n && !found[t])
                        t++;
                if (t < n && snap[t] == msg) {
                        t++;
                        if (PyList_Append(taken, msg) < 0) { /* the buffer is as it was */
                                Py_CLEAR(taken);
                                goto done;
                        }
                } else
                        kept[nkept++] = msg;
        }
        for (size_t i = 0; i < nkept; i++)
                self->ring[i] = kept[i];
        self->head = 0;
        self->len = nkept;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(taken); i++)
                Py_DECREF(PyList_GET_ITEM(taken, i)); /* the buffer's reference */
done:
        PyMem_Free(kept);
        PyMem_Free(found);
        for (size_t i = 0; i < n; i++)
                Py_DECREF(snap[i]);
        PyMem_Free(snap);
        return taken;
}

static PyObject *consumer_extend(consumer_t *self, PyObject *messages) {
        core_state *st = state_of(self);
        PyObject *seq = PySequence_Fast(messages, "extend() takes an iterable of Messages");
        Py_ssize_t n;

        if (!seq)
                return NULL;
        n = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *msg = PySequence_Fast_GET_ITEM(seq, i);

                if (!PyObject_TypeCheck(msg, st->message_type)) {
                        PyErr_Format(PyExc_TypeError, "extend() takes Messages, not %.200s", Py_TYPE(msg)->tp_name);
                        Py_DECREF(seq);
                        return NULL;
                }
        }
        if (ring_reserve(self, (size_t)n) < 0) {
                Py_DECREF(seq);
                return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++)
                ring_push(self, Py_NewRef(PySequence_Fast_GET_ITEM(seq, i)));
        Py_DECREF(seq);
        Py_RETURN_NONE;
}

static PyObject *consumer_clear_py(consumer_t *self, PyObject *unused) {
        (void)unused;
        ring_clear(self);
        Py_RETURN_NONE;
}

static Py_ssize_t consumer_len(consumer_t *self) {
        return (Py_ssize_t)self->len;
}

static int consumer_traverse(consumer_t *self, visitproc visit, void *arg) {
        Py_VISIT(Py_TYPE(self));
        Py_VISIT(self->partitions);
        Py_VISIT(self->next_far);
        for (size_t i = 0; i < self->len; i++)
                Py_VISIT(ring_at(self, i));
        return 0;
}

static int consumer_clear(consumer_t *self) {
        ring_clear(self);
        Py_CLEAR(self->partitions);
        Py_CLEAR(self->next_far);
        Py_CLEAR(self->topic);
        return 0;
}

static void consumer_dealloc(consumer_t *self) {
        PyTypeObject *type = Py_TYPE(self);

        PyObject_GC_UnTrack(self);
        consumer_clear(self);
        PyMem_Free(self->ring);
        PyMem_Free(self->next);
        type->tp_free(self);
        Py_DECREF(type);
}

static PyMethodDef consumer_methods[] = {
        {"add", (PyCFunction)consumer_add, METH_O, add_doc},
        {"add_columns", (PyCFunction)consumer_add_columns, METH_O, add_columns_doc},
        {"add_records", (PyCFunction)(void (*)(void))consumer_add_records, METH_FASTCALL, add_records_doc},
        {"next", (PyCFunction)consumer_next, METH_NOARGS,
         "next() -> message or None\n--\n\nThe first buffered message, counted as handed out."},
        {"take", (PyCFunction)consumer_take, METH_O,
         "take(max_messages) -> [message]\n--\n\nUp to max_messages buffered messages, counted."},
        {"iterator", (PyCFunction)consumer_iterator, METH_O,
         "iterator($self, refill, /)\n--\n\nThe buffered messages, counted, then refill() when the buffer is empty;\n"
         "the iteration ends when refill() returns None."},
        {"next_offsets", (PyCFunction)consumer_next_offsets, METH_NOARGS,
         "next_offsets() -> {partition id: next offset or None}\n--\n\nThe partitions held."},
        {"set_next", (PyCFunction)(void (*)(void))consumer_set_next, METH_FASTCALL,
         "set_next($self, pid, offset, /)\n--\n\nThe next offset of a partition (None: not known yet)."},
        {"forget", (PyCFunction)consumer_forget, METH_O, "forget($self, pid, /)\n--\n\nA partition no longer held."},
        {"take_partitions", (PyCFunction)consumer_take_partitions, METH_O,
         "take_partitions(pids) -> [message]\n--\n\nThe buffered messages of pids, out of the buffer, in order."},
        {"extend", (PyCFunction)consumer_extend, METH_O, "extend($self, messages, /)\n--\n\nMessages at the end of the buffer."},
        {"clear", (PyCFunction)consumer_clear_py, METH_NOARGS, "clear($self, /)\n--\n\nEmpty the buffer."},
        {NULL, NULL, 0, NULL},
};

static PyGetSetDef consumer_getset[] = {
        {"partitions", (getter)get_partitions, (setter)set_partitions, "``{id: Partition}`` naming each Message's partition.",
         NULL},
        {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot consumer_slots[] = {
        {Py_tp_doc, "ConsumerCore(partitions)\n--\n\nThe consumer's core (see pyrdk.core)."},
        {Py_tp_new, consumer_new},
        {Py_tp_dealloc, consumer_dealloc},
        {Py_tp_traverse, consumer_traverse},
        {Py_tp_clear, consumer_clear},
        {Py_tp_methods, consumer_methods},
        {Py_tp_getset, consumer_getset},
        {Py_sq_length, consumer_len},
        {0, NULL},
};

PyType_Spec consumer_spec = {
        "pyrdk._core.ConsumerCore", sizeof(consumer_t), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, consumer_slots,
};

/* -- the iterator --------------------------------------------------------------------------- */

static PyObject *iterator_next(iterator_t *it) {
        PyObject *msg, *refill;
        int error;

        if (!it->refill)
                return NULL;
        if ((msg = consumer_pop(it->core, &error)) || error)
                return msg;
        refill = Py_NewRef(it->refill);
        msg = PyObject_CallNoArgs(refill);
        Py_DECREF(refill);
        if (!msg || msg == Py_None) { /* the end, as a generator's after it returned or raised */
                Py_XDECREF(msg);
                Py_CLEAR(it->refill);
                return NULL;
        }
        return msg;
}

static int iterator_traverse(iterator_t *it, visitproc visit, void *arg) {
        Py_VISIT(Py_TYPE(it));
        Py_VISIT(it->core);
        Py_VISIT(it->refill);
        return 0;
}

static int iterator_clear(iterator_t *it) {
        Py_CLEAR(it->core);
        Py_CLEAR(it->refill);
        return 0;
}

static void iterator_dealloc(iterator_t *it) {
        PyTypeObject *type = Py_TYPE(it);

        PyObject_GC_UnTrack(it);
        iterator_clear(it);
        type->tp_free(it);
        Py_DECREF(type);
}

static PyType_Slot iterator_slots[] = {
        {Py_tp_iter, PyObject_SelfIter},
        {Py_tp_iternext, iterator_next},
        {Py_tp_traverse, iterator_traverse},
        {Py_tp_clear, iterator_clear},
        {Py_tp_dealloc, iterator_dealloc},
        {0, NULL},
};

PyType_Spec iterator_spec = {
        "pyrdk._core.ConsumerIterator", sizeof(iterator_t), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
        iterator_slots,
};
