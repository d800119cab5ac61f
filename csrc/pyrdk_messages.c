/* pyrdk.common.Message objects made in C: consumed ones a batch at a time, produced ones
 * by produce()'s short and buffered ways; SimpleConsumer's iterator; produce_batch's
 * values packed.
 *
 * The one helper file that uses the CPython API: cffi cannot make Python objects in C, and
 * one Python-level object per message is most of a client's cost. The cffi functions here
 * take Python objects as id() (their address in CPython) and take the GIL themselves,
 * since cffi releases it around every call; send_message, buffered_produce and the rest
 * are plain Python functions, handed over by pyrdk_messages_init(). Message stays a plain
 * Python class: its slots are filled at the offsets its member descriptors name, as
 * `msg.slot = x` would, and its tp_dealloc is message_dealloc, which keeps freed Messages
 * for reuse. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

#include "pyrdk_helpers.h"

/* The Message slots set here, in this order; consumed messages get all but the last. */
static const char *slot_names[] = {"value", "partition_key", "partition_id", "offset", "timestamp",
                                   "partition", "topic", "timestamp_type", "_headers",
                                   "_compression_type"};
enum { S_VALUE, S_KEY, S_PARTITION_ID, S_OFFSET, S_TIMESTAMP, S_PARTITION, S_TOPIC, S_TSTYPE,
       S_HEADERS, S_CONSUMED = S_HEADERS + 1, S_COMPRESSION = S_CONSUMED, S_COUNT };

static PyTypeObject *message_type;
static Py_ssize_t slot_offsets[S_COUNT];

/* Freed Messages, kept for the next ones made here: a Message is made and freed for each
 * message consumed or produced, and one taken from this list skips the allocator, the
 * cyclic GC's count of allocations (which set off a collection every 700 Messages) and
 * subtype_dealloc's general path. The list holds Messages only (not instances of a
 * subclass), untracked, their slots cleared, without a reference to their type. */
enum { FREE_MAX = 2048 };
static PyObject *free_messages[FREE_MAX];
static int nfree;

/* Message's tp_dealloc: what subtype_dealloc does for a Message, then onto the free list
 * if it has room. For an instance of a subclass, subtype_dealloc has already cleared what
 * the subclass added and calls this as its base's tp_dealloc: this clears Message's slots
 * and frees it. */
static void message_dealloc(PyObject *self) {
        PyTypeObject *type = Py_TYPE(self), *base = type;

        PyObject_GC_UnTrack(self);
        Py_TRASHCAN_BEGIN(self, message_dealloc)
        if (type->tp_dealloc == message_dealloc && type->tp_finalize) { /* Message.__del__ was set */
                PyObject_GC_Track(self);
                if (PyObject_CallFinalizerFromDealloc(self) < 0)
                        goto resurrected;
                PyObject_GC_UnTrack(self);
        }
        while (base->tp_dealloc != message_dealloc)
                base = base->tp_base;
        for (PyMemberDef *mp = base->tp_members; mp->name; mp++)
                if (mp->type == T_OBJECT_EX)
                        Py_CLEAR(*(PyObject **)((char *)self + mp->offset));
        if (type == message_type && nfree < FREE_MAX)
                free_messages[nfree++] = self;
        else
                type->tp_free(self);
        Py_DECREF(type);
resurrected:
        Py_TRASHCAN_END
}

/* A new Message with every slot unset (and untracked, when it comes from the free list). */
static PyObject *new_message(void) {
        if (nfree > 0)
                return PyObject_Init(free_messages[--nfree], message_type);
        return message_type->tp_alloc(message_type, 0);
}

static inline void set_slot(PyObject *msg, int slot, PyObject *value) {
        *(PyObject **)((char *)msg + slot_offsets[slot]) = value; /* steals value */
}

static PyObject *bytes_or_none(const void *ptr, size_t len) {
        if (!ptr)
                Py_RETURN_NONE;
        return PyBytes_FromStringAndSize(ptr, (Py_ssize_t)len);
}

/* Whether the consumed message m may have headers. rd_kafka_message_headers() allocates a
 * parser for every message it is asked about, which was a fifth of consuming's time, and
 * most messages have none. librdkafka hands out a value where it lies in the fetched
 * record. In a v2 record (the format since Kafka 0.11) the value's length, a zigzag
 * varint, comes just before it and the header count just after it: a 0 there means none.
 * In a v0 or v1 message the four bytes before the value are its length big-endian, which
 * never read as that varint, so such messages are asked about as before. */
static int may_have_headers(const rd_kafka_message_t *m) {
        const unsigned char *value = m->payload;
        uint64_t zigzag = (uint64_t)m->len << 1;
        int n = 1;

        if (!value || m->len == 0 || m->len > INT32_MAX)
                return 1; /* an empty value is not in the record: librdkafka points at "" */
        while (zigzag >> (7 * n))
                n++;
        for (int i = 0; i < n; i++) {
                unsigned char group = (zigzag >> (7 * i)) & 0x7f;

                if (value[i - n] != (i + 1 < n ? group | 0x80 : group))
                        return 1;
        }
        return value[m->len] != 0;
}

/* rd_kafka_message_headers as [(name, value)], or None when there are none. */
static PyObject *headers_of(const rd_kafka_message_t *m) {
        rd_kafka_headers_t *hdrs;
        const char *name;
        const void *value;
        size_t size;
        PyObject *list;

        if (!may_have_headers(m) || rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR)
                Py_RETURN_NONE;
        list = PyList_New(0);
        for (size_t i = 0; list && rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == 0; i++) {
                PyObject *item = Py_BuildValue("(NN)", PyUnicode_DecodeUTF8(name, strlen(name), "replace"),
                                               bytes_or_none(value, size));
                if (!item || PyList_Append(list, item) < 0)
                        Py_CLEAR(list);
                Py_XDECREF(item);
        }
        return list;
}

/* A new Message with the fields of m, its timestamp an int object equal to
 * rd_kafka_message_timestamp(m) (topic, partition, timestamp: new references are taken). */
static PyObject *message_of(const rd_kafka_message_t *m, PyObject *topic, PyObject *partition,
                            PyObject *timestamp, rd_kafka_timestamp_type_t tstype) {
        PyObject *msg = new_message();
        PyObject *fields[S_CONSUMED];

        if (!msg)
                return NULL;
        fields[S_VALUE] = bytes_or_none(m->payload, m->len);
        fields[S_KEY] = bytes_or_none(m->key, m->key_len);
        fields[S_PARTITION_ID] = PyLong_FromLong(m->partition);
        fields[S_OFFSET] = PyLong_FromLongLong(m->offset);
        Py_INCREF(timestamp);
        fields[S_TIMESTAMP] = timestamp;
        Py_INCREF(partition);
        fields[S_PARTITION] = partition;
        Py_INCREF(topic);
        fields[S_TOPIC] = topic;
        fields[S_TSTYPE] = PyLong_FromLong(tstype);
        fields[S_HEADERS] = headers_of(m);
        for (int i = 0; i < S_CONSUMED; i++) /* every slot is set, so a failure frees them all */
                set_slot(msg, i, fields[i]);
        for (int i = 0; i < S_CONSUMED; i++)
                if (!fields[i]) {
                        Py_DECREF(msg);
                        return NULL;
                }
        return msg;
}

/* partitions[partition_id] as a new reference: None when partitions is None or lacks it,
 * NULL with an exception set on an error. */
static PyObject *partition_of(PyObject *partitions, int32_t partition_id) {
        PyObject *id, *partition = NULL;

        if (partitions != Py_None) {
                if (!(id = PyLong_FromLong(partition_id)))
                        return NULL;
                partition = PyDict_GetItemWithError(partitions, id);
                Py_DECREF(id);
                if (!partition && PyErr_Occurred())
                        return NULL;
        }
        partition = partition ? partition : Py_None;
        Py_INCREF(partition);
        return partition;
}

/* Append a Message to the list out for each of msgs[0..cnt), up to the first error event.
 * partitions is None or a dict {partition_id: Partition} that names each message's
 * partition. Returns the number of messages appended (the next one, if any, is an error
 * event), or -1 if memory ran out. */
ssize_t pyrdk_messages_append(rd_kafka_message_t **msgs, size_t cnt, void *out, void *partitions) {
        PyGILState_STATE gil = PyGILState_Ensure();
        PyObject *list = out, *parts = partitions;
        const rd_kafka_topic_t *rkt = NULL;
        PyObject *topic = NULL, *timestamp = NULL, *partition = NULL;
        int64_t last_ts = 0;
        int32_t last_id = 0;
        Py_ssize_t i;

        for (i = 0; (size_t)i < cnt && !msgs[i]->err; i++) {
                const rd_kafka_message_t *m = msgs[i];
                PyObject *msg;
                rd_kafka_timestamp_type_t tstype;
                int64_t ts = rd_kafka_message_timestamp(m, &tstype);

                if (!timestamp || ts != last_ts) { /* messages of one millisecond share it */
                        Py_XDECREF(timestamp);
                        if (!(timestamp = PyLong_FromLongLong(ts)))
                                goto fail;
                        last_ts = ts;
                }

                if (!topic || m->rkt != rkt) {
                        const char *name = m->rkt ? rd_kafka_topic_name(m->rkt) : NULL;

                        Py_XDECREF(topic);
                        topic = name ? PyUnicode_FromString(name) : Py_None;
                        rkt = m->rkt;
                        if (!topic)
                                goto fail;
                        if (topic == Py_None)
                                Py_INCREF(topic);
                }
                if (!partition || m->partition != last_id) { /* one lookup for a run of them */
                        Py_XDECREF(partition);
                        if (!(partition = partition_of(parts, m->partition)))
                                goto fail;
                        last_id = m->partition;
                }
                msg = message_of(m, topic, partition, timestamp, tstype);
                if (!msg || PyList_Append(list, msg) < 0) {
                        Py_XDECREF(msg);
                        goto fail;
                }
                /* Its fields cannot lead back to it, so the cyclic GC need not walk it:
                 * a batch of them would otherwise set off collections that cost a
                 * third of the consumer's time. */
                PyObject_GC_UnTrack(msg);
                Py_DECREF(msg);
        }
        goto done;
fail:
        i = -1;
        PyErr_Clear();
done:
        Py_XDECREF(partition);
        Py_XDECREF(topic);
        Py_XDECREF(timestamp);
        PyGILState_Release(gil);
        return i;
}

static inline PyObject *get_slot(PyObject *msg, int slot) {
        return *(PyObject **)((char *)msg + slot_offsets[slot]); /* borrowed, NULL: unset */
}

static int same_partition(PyObject *msg, PyObject *other) {
        PyObject *a, *b;

        if (Py_TYPE(msg) != message_type || Py_TYPE(other) != message_type)
                return 0;
        a = get_slot(msg, S_PARTITION_ID);
        b = get_slot(other, S_PARTITION_ID);
        return a && b && (a == b || (PyLong_CheckExact(a) && PyLong_CheckExact(b) &&
                                     PyLong_AsLong(a) == PyLong_AsLong(b) && !PyErr_Occurred()));
}

/* next[partition_id] = offset + 1 for one handed-out message (by its slots when it is a
 * Message). Returns 0, or -1 with an exception set. */
static int mark_one(PyObject *next, PyObject *msg) {
        PyObject *pid, *offset, *after;
        int ret;

        if (Py_TYPE(msg) == message_type) {
                pid = get_slot(msg, S_PARTITION_ID);
                offset = get_slot(msg, S_OFFSET);
                Py_XINCREF(pid);
                Py_XINCREF(offset);
        } else {
                pid = PyObject_GetAttrString(msg, "partition_id");
                offset = pid ? PyObject_GetAttrString(msg, "offset") : NULL;
        }
        if (!pid || !offset) {
                if (!PyErr_Occurred())
                        PyErr_SetString(PyExc_AttributeError, "a buffered message lacks partition_id or offset");
                Py_XDECREF(pid);
                Py_XDECREF(offset);
                return -1;
        }
        after = PyLong_CheckExact(offset) ? PyLong_FromLongLong(PyLong_AsLongLong(offset) + 1) : NULL;
        if (!after && !PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a buffered message's offset is not an int");
        ret = after && !PyErr_Occurred() ? PyDict_SetItem(next, pid, after) : -1;
        Py_XDECREF(after);
        Py_DECREF(pid);
        Py_DECREF(offset);
        return ret;
}

/* For each partition of the messages in the list msgs, set next[partition_id] to the
 * offset after its last one there. Returns 0, or -1 if an item lacks an int offset or a
 * partition_id, or memory ran out. */
int pyrdk_messages_mark_next(void *msgs, void *next) {
        PyGILState_STATE gil = PyGILState_Ensure();
        PyObject *list = msgs;
        Py_ssize_t n = PyList_Check(list) ? PyList_GET_SIZE(list) : -1;
        int ret = n < 0 ? -1 : 0;

        for (Py_ssize_t i = 0; i < n && ret == 0; i++) {
                PyObject *msg = PyList_GET_ITEM(list, i);

                if (i + 1 < n && same_partition(msg, PyList_GET_ITEM(list, i + 1)))
                        continue; /* its partition's next message comes next */
                ret = mark_one(next, msg);
        }
        PyErr_Clear();
        PyGILState_Release(gil);
        return ret;
}

static int bytes_or_none_arg(PyObject *value, const char *name) {
        if (value == Py_None || PyBytes_CheckExact(value))
                return 1;
        PyErr_Format(PyExc_TypeError, "Producer.produce accepts bytes as %s (or a serializer), but got %s",
                     name, Py_TYPE(value)->tp_name);
        return 0;
}

/* A Message as produce() makes it: value, key and partition (partition_id is its id), no
 * offset or timestamp yet; compression is stored when not NULL. Left out of the cyclic
 * GC, as in pyrdk_messages_append(). */
static PyObject *produced_message(PyObject *value, PyObject *key, PyObject *partition_id, PyObject *partition,
                                  PyObject *topic, PyObject *compression) {
        PyObject *msg = new_message();

        if (!msg)
                return NULL;
        Py_INCREF(value);
        set_slot(msg, S_VALUE, value);
        Py_INCREF(key);
        set_slot(msg, S_KEY, key);
        Py_INCREF(partition_id);
        set_slot(msg, S_PARTITION_ID, partition_id);
        set_slot(msg, S_OFFSET, PyLong_FromLong(-1));
        Py_INCREF(Py_None);
        set_slot(msg, S_TIMESTAMP, Py_None);
        Py_INCREF(partition);
        set_slot(msg, S_PARTITION, partition);
        Py_INCREF(topic);
        set_slot(msg, S_TOPIC, topic);
        set_slot(msg, S_TSTYPE, PyLong_FromLong(0));
        Py_INCREF(Py_None);
        set_slot(msg, S_HEADERS, Py_None);
        if (compression) {
                Py_INCREF(compression);
                set_slot(msg, S_COMPRESSION, compression);
        }
        PyObject_GC_UnTrack(msg);
        return msg;
}

static PyObject *address_name; /* "address" */

/* send_message(sender, partition_id, value, key, msg_id, pending, partition, topic, compression)
 *
 * produce()'s short way in one call: a Message for value and key, kept in the dict
 * pending under msg_id until its delivery report, sent through pyrdk_send(). sender is a
 * pyrdk.rd.handle.Sender: the argument keeps it, and so its pyrdk_sender_t (at
 * sender.address), alive for the call. Returns the Message, or (err, Message) when
 * librdkafka refused it (then it is not in pending). */
static PyObject *send_message(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        PyObject *value, *key, *msg_id, *pending, *msg, *address;
        const pyrdk_sender_t *sender;
        long partition_id;
        size_t id;
        int compressed;
        rd_kafka_resp_err_t err;

        (void)self;
        if (nargs != 9) {
                PyErr_SetString(PyExc_TypeError, "send_message takes 9 arguments");
                return NULL;
        }
        value = args[2];
        key = args[3];
        msg_id = args[4];
        pending = args[5];
        address = PyObject_GetAttr(args[0], address_name);
        if (!address)
                return NULL;
        sender = PyLong_AsVoidPtr(address);
        Py_DECREF(address);
        partition_id = PyLong_AsLong(args[1]);
        id = PyLong_AsSize_t(msg_id);
        if (PyErr_Occurred() || !bytes_or_none_arg(value, "message") ||
            !bytes_or_none_arg(key, "partition_key") || (compressed = PyObject_IsTrue(args[8])) < 0)
                return NULL;
        if (!sender || !PyDict_CheckExact(pending) || partition_id < 0 || partition_id > INT32_MAX) {
                PyErr_SetString(PyExc_ValueError, "send_message: bad sender, partition or pending");
                return NULL;
        }
        msg = produced_message(value, key, args[1], args[6], args[7], compressed ? args[8] : NULL);
        if (!msg)
                return NULL;
        if (PyDict_SetItem(pending, msg_id, msg) < 0) {
                Py_DECREF(msg);
                return NULL;
        }
        err = pyrdk_send(sender, (int32_t)partition_id,
                         value == Py_None ? NULL : PyBytes_AS_STRING(value),
                         value == Py_None ? 0 : (size_t)PyBytes_GET_SIZE(value),
                         key == Py_None ? NULL : PyBytes_AS_STRING(key),
                         key == Py_None ? 0 : (size_t)PyBytes_GET_SIZE(key), id);
        if (!err)
                return msg;
        if (PyDict_DelItem(pending, msg_id) < 0)
                PyErr_Clear();
        return Py_BuildValue("(iN)", (int)err, msg);
}

/* The Messages of produce()'s buffered way until their delivery reports: a table of
 * slots, a message's id being base + its slot (librdkafka carries it as the message's
 * opaque). Unlike a dict, it makes no int object and hashes nothing per message. */
typedef struct {
        PyObject_HEAD
        PyObject **slots; /* owned; NULL when free */
        size_t *free;     /* the free slots, a stack: the lowest on top */
        size_t base, nslots, nfree;
} table_t;

static PyTypeObject *table_type;

#define NO_ID ((size_t)-1)

/* Keep msg (a new reference); its id, or NO_ID with MemoryError set. */
static size_t table_put(table_t *t, PyObject *msg) {
        size_t slot;

        if (t->nfree == 0) {
                size_t n = t->nslots ? 2 * t->nslots : 1024;
                PyObject **slots = PyMem_Realloc(t->slots, n * sizeof(*slots));
                size_t *free;

                if (slots)
                        t->slots = slots;
                if (!slots || !(free = PyMem_Realloc(t->free, n * sizeof(*free)))) {
                        PyErr_NoMemory();
                        return NO_ID;
                }
                t->free = free;
                for (size_t i = n; i > t->nslots; i--) {
                        slots[i - 1] = NULL;
                        free[t->nfree++] = i - 1;
                }
                t->nslots = n;
        }
        slot = t->free[--t->nfree];
        Py_INCREF(msg);
        t->slots[slot] = msg;
        return t->base + slot;
}

/* The Message of id, taken out (the table's reference), or NULL (no exception): none. */
static PyObject *table_take(table_t *t, size_t id) {
        size_t slot = id - t->base;
        PyObject *msg;

        if (id < t->base || slot >= t->nslots || !(msg = t->slots[slot]))
                return NULL;
        t->slots[slot] = NULL;
        t->free[t->nfree++] = slot;
        return msg;
}

static PyObject *table_take_py(table_t *t, PyObject *id) {
        size_t n = PyLong_AsSize_t(id);
        PyObject *msg;

        if (n == NO_ID && PyErr_Occurred()) {
                PyErr_Clear();
                Py_RETURN_NONE; /* not an id of this table */
        }
        if (!(msg = table_take(t, n)))
                Py_RETURN_NONE;
        return msg;
}

static PyObject *table_take_all(table_t *t, PyObject *unused) {
        PyObject *list = PyList_New(0);

        (void)unused;
        for (size_t slot = 0; list && slot < t->nslots; slot++) {
                PyObject *msg = table_take(t, t->base + slot);

                if (msg && PyList_Append(list, msg) < 0)
                        Py_CLEAR(list); /* the table's others stay */
                Py_XDECREF(msg);
        }
        return list;
}

static Py_ssize_t table_len(table_t *t) {
        return (Py_ssize_t)(t->nslots - t->nfree);
}

static void table_dealloc(table_t *t) {
        PyTypeObject *type = Py_TYPE(t);

        for (size_t slot = 0; slot < t->nslots; slot++)
                Py_XDECREF(t->slots[slot]);
        PyMem_Free(t->slots);
        PyMem_Free(t->free);
        type->tp_free(t);
        Py_DECREF(type);
}

static PyMethodDef table_methods[] = {
        {"take", (PyCFunction)table_take_py, METH_O, "take(id): its Message, no longer kept; or None."},
        {"take_all", (PyCFunction)table_take_all, METH_NOARGS, "Every Message kept, no longer kept."},
        {NULL, NULL, 0, NULL},
};

static PyType_Slot table_slots[] = {
        {Py_tp_methods, table_methods},
        {Py_sq_length, table_len},
        {Py_tp_dealloc, table_dealloc},
        {0, NULL},
};

static PyType_Spec table_spec = {
        "pyrdk._rdkafka.PendingTable", sizeof(table_t), 0, Py_TPFLAGS_DEFAULT, table_slots,
};

/* pending_table(base) -> an empty table, its ids from base up. */
static PyObject *pending_table(PyObject *self, PyObject *arg) {
        size_t base = PyLong_AsSize_t(arg);
        table_t *t;

        (void)self;
        if (base == NO_ID && PyErr_Occurred())
                return NULL;
        if (!(t = PyObject_New(table_t, table_type)))
                return NULL;
        t->slots = NULL;
        t->free = NULL;
        t->base = base;
        t->nslots = t->nfree = 0;
        return (PyObject *)t;
}

/* produce()'s buffered way: a Producer's produce, when nothing but a value and a key is
 * given. Each message becomes a Message kept in table (a PendingTable) and waits
 * in its partition's queue here; a queue of BUFFER_CAP messages goes to librdkafka in one
 * rd_kafka_produce_batch() call, as does every queue on hand_off() (the poller thread's
 * tick, flush(), stop()). A call it does not take, and any call while it is not open
 * (stopped, forked, a failure or an outage to raise), goes to slow: Producer.produce. */
typedef struct {
        PyObject *value, *key; /* owned */
        size_t id;             /* NO_ID once released */
} queued_t;

/* Released: a message whose Message its caller has let go of (the table holds the only
 * reference) RELEASE_LAG calls later, while the message still waits in its queue. The
 * Message is freed then, still in the CPU's cache, rather than at the delivery report
 * (at 100 B, touching Messages made a hundred thousand messages before had cost a quarter
 * of the time per message); the message goes to librdkafka without an id, as
 * produce_batch()'s do: its report is counted, and a failure kept with copies of its value
 * and key. */
enum { RELEASE_LAG = 2 };

typedef struct {
        queued_t *items;
        size_t len, alloc;
} fifo_t;

typedef struct {
        PyObject_HEAD
        vectorcallfunc vectorcall;
        PyObject *sender; /* pyrdk.rd.handle.Sender, keeping ctx alive */
        const pyrdk_sender_t *ctx;
        table_t *table;
        PyObject *failed, *outage, *partitions, *partitioner, *topic, *compression;
        PyObject *ids; /* a tuple: each partition's id, as partitions orders them */
        PyObject *slow, *housekeeping, *wait_room, *on_failure;
        uint64_t counter;
        size_t produced, buffered, cap, housekeeping_every, max_size;
        size_t released_sent; /* released messages handed to librdkafka */
        size_t recent[RELEASE_LAG];   /* the ids of the last calls' messages, */
        int32_t recent_partition[RELEASE_LAG]; /* and their partitions */
        int open, compressed;
        fifo_t *fifos; /* by partition id */
        size_t nfifos;
} buffered_t;

static PyObject *since_name, *id_name, *partition_key_name;

static int buffered_open(const buffered_t *b) {
        return b->open && !__atomic_load_n(&b->ctx->guard->closing, __ATOMIC_SEQ_CST);
}

/* Whether a call may take the buffered way: open, the handle not closing, no failure
 * waiting to be raised, no outage. -1 with an exception set. */
static int buffered_ready(buffered_t *b) {
        PyObject *since;
        int ready;

        if (!buffered_open(b) || PyList_GET_SIZE(b->failed) > 0)
                return 0;
        if (!(since = PyObject_GetAttr(b->outage, since_name)))
                return -1;
        ready = since == Py_None;
        Py_DECREF(since);
        return ready;
}

/* The ids of a list of Partitions, as a tuple of ints in 0..INT32_MAX (NULL: an error). */
static PyObject *ids_of(PyObject *partitions) {
        Py_ssize_t n = PyList_GET_SIZE(partitions);
        PyObject *ids = PyTuple_New(n);

        for (Py_ssize_t i = 0; ids && i < n; i++) {
                PyObject *id = PyObject_GetAttr(PyList_GET_ITEM(partitions, i), id_name);
                long pid = id ? PyLong_AsLong(id) : -1;

                if (!id || PyErr_Occurred() || pid < 0 || pid > INT32_MAX) {
                        if (!PyErr_Occurred())
                                PyErr_SetString(PyExc_ValueError, "a Partition's id is not an int32");
                        Py_XDECREF(id);
                        Py_CLEAR(ids);
                        break;
                }
                PyTuple_SET_ITEM(ids, i, id);
        }
        return ids;
}

static fifo_t *fifo_of(buffered_t *b, size_t partition) {
        if (partition >= b->nfifos) {
                size_t n = partition + 1;
                fifo_t *fifos = PyMem_Realloc(b->fifos, n * sizeof(*fifos));

                if (!fifos)
                        return (fifo_t *)PyErr_NoMemory();
                memset(fifos + b->nfifos, 0, (n - b->nfifos) * sizeof(*fifos));
                b->fifos = fifos;
                b->nfifos = n;
        }
        return &b->fifos[partition];
}

static int fifo_push(fifo_t *q, PyObject *value, PyObject *key, size_t id) {
        if (q->len == q->alloc) {
                size_t n = q->alloc ? 2 * q->alloc : 64;
                queued_t *items = PyMem_Realloc(q->items, n * sizeof(*items));

                if (!items) {
                        PyErr_NoMemory();
                        return -1;
                }
                q->items = items;
                q->alloc = n;
        }
        Py_INCREF(value);
        Py_INCREF(key);
        q->items[q->len++] = (queued_t){value, key, id};
        return 0;
}

/* Drop the first n messages of q (handed over or failed). */
static void fifo_drop(buffered_t *b, fifo_t *q, size_t n) {
        for (size_t i = 0; i < n; i++) {
                Py_DECREF(q->items[i].value);
                Py_DECREF(q->items[i].key);
        }
        if (q->len > n)
                memmove(q->items, q->items + n, (q->len - n) * sizeof(*q->items));
        q->len -= n;
        b->buffered -= n;
}

/* Release the message of RELEASE_LAG calls ago if its Message is held by the table alone
 * and it is still queued (among the last RELEASE_LAG + 1 of its partition's queue); then
 * remember this call's. */
static void release_recent(buffered_t *b, size_t id, int32_t partition) {
        size_t i = b->produced % RELEASE_LAG, old = b->recent[i];
        fifo_t *q = old == NO_ID ? NULL : &b->fifos[b->recent_partition[i]];

        for (size_t k = 1; q && k <= q->len && k <= RELEASE_LAG + 1; k++) {
                queued_t *item = &q->items[q->len - k];

                if (item->id != old)
                        continue;
                if (Py_REFCNT(b->table->slots[old - b->table->base]) == 1) {
                        item->id = NO_ID;
                        Py_DECREF(table_take(b->table, old));
                }
                break;
        }
        b->recent[i] = id;
        b->recent_partition[i] = partition;
}

enum { HANDED = 0, QUEUE_FULL = 1, CLOSED = 2, PY_ERROR = -1 };

/* Hand q's messages to librdkafka, BATCH_AT_ONCE at a time, through pyrdk_produce_run()
 * (messages near max_size never get here). What a full queue refuses stays queued; another
 * refusal fails the message through on_failure(msg_id or None if released, err, partition,
 * value, key). Not once stopped (open is 0), unless stopping: stop() hands over
 * what it can before it purges librdkafka's queue, and a message of a released
 * Message handed over after that would not be reported. Never releases the GIL, so
 * each partition's messages reach librdkafka in order whichever thread hands them over. */
static int fifo_hand_off(buffered_t *b, int32_t partition, int stopping) {
        rd_kafka_message_t msgs[BATCH_AT_ONCE];

        for (;;) {
                fifo_t *q = &b->fifos[partition]; /* again: on_failure may have grown fifos */
                int n = q->len < BATCH_AT_ONCE ? (int)q->len : BATCH_AT_ONCE, queued;
                PyObject *res, *failed_id;
                queued_t failed;

                if (n == 0)
                        return HANDED;
                if (!b->open && !stopping)
                        return CLOSED;
                for (int i = 0; i < n; i++) {
                        PyObject *value = q->items[i].value, *key = q->items[i].key;

                        memset(&msgs[i], 0, sizeof(msgs[i]));
                        msgs[i].payload = value == Py_None ? NULL : PyBytes_AS_STRING(value);
                        msgs[i].len = value == Py_None ? 0 : (size_t)PyBytes_GET_SIZE(value);
                        msgs[i].key = key == Py_None ? NULL : PyBytes_AS_STRING(key);
                        msgs[i].key_len = key == Py_None ? 0 : (size_t)PyBytes_GET_SIZE(key);
                        msgs[i]._private = q->items[i].id == NO_ID ? NULL : (void *)q->items[i].id;
                }
                if (!pyrdk_guard_enter(b->ctx->guard)) {
                        b->open = 0;
                        return CLOSED; /* stop() reports what is left */
                }
                queued = pyrdk_produce_run(b->ctx->rkt, partition, msgs, n);
                pyrdk_guard_leave(b->ctx->guard);
                for (int i = 0; i < queued; i++)
                        b->released_sent += q->items[i].id == NO_ID;
                fifo_drop(b, q, (size_t)queued);
                if (queued == n)
                        continue;
                if (msgs[queued].err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        return QUEUE_FULL;
                /* Out of the queue before on_failure runs Python code: no other thread
                 * may hand it over meanwhile. */
                failed = q->items[0];
                Py_INCREF(failed.value);
                Py_INCREF(failed.key);
                fifo_drop(b, q, 1);
                if (failed.id == NO_ID) {
                        Py_INCREF(Py_None);
                        failed_id = Py_None;
                } else
                        failed_id = PyLong_FromSize_t(failed.id);
                res = PyObject_CallFunction(b->on_failure, "NiiNN", failed_id, (int)msgs[queued].err,
                                            (int)partition, failed.value, failed.key);
                if (!res)
                        return PY_ERROR;
                Py_DECREF(res);
        }
}

/* produce(message, partition_key=None): returns the Message. */
static PyObject *buffered_call(buffered_t *b, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
        Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        PyObject *value, *key = Py_None, *partition, *partition_id, *msg;
        long pid;
        size_t size, id;
        fifo_t *q;
        int ready;

        if (nargs == 1 && nkw == 1 && PyTuple_GET_ITEM(kwnames, 0) == partition_key_name)
                key = args[1];
        else if (nargs == 2 && nkw == 0)
                key = args[1];
        else if (nargs != 1 || nkw != 0)
                goto slow;
        value = args[0];
        if ((value != Py_None && !PyBytes_CheckExact(value)) || (key != Py_None && !PyBytes_CheckExact(key)))
                goto slow; /* it says what is wrong */
        size = (value == Py_None ? 0 : (size_t)PyBytes_GET_SIZE(value)) +
               (key == Py_None ? 0 : (size_t)PyBytes_GET_SIZE(key));
        if (size + SIZE_MARGIN > b->max_size || PyList_GET_SIZE(b->partitions) == 0 ||
            PyList_GET_SIZE(b->partitions) != PyTuple_GET_SIZE(b->ids))
                goto slow; /* goes alone, and names the size when it is too large */
        if ((ready = buffered_ready(b)) <= 0) {
                if (ready < 0)
                        return NULL;
                goto slow;
        }
        if (b->partitioner == Py_None) { /* round robin, the ids known */
                Py_ssize_t i = (Py_ssize_t)(b->counter++ % (uint64_t)PyList_GET_SIZE(b->partitions));

                partition = PyList_GET_ITEM(b->partitions, i);
                Py_INCREF(partition);
                partition_id = PyTuple_GET_ITEM(b->ids, i);
                Py_INCREF(partition_id);
        } else if (!(partition = PyObject_CallFunctionObjArgs(b->partitioner, b->partitions, key, NULL)))
                return NULL;
        else
                partition_id = PyObject_GetAttr(partition, id_name);
        pid = partition_id ? PyLong_AsLong(partition_id) : -1;
        if (!partition_id || PyErr_Occurred() || pid < 0 || pid > INT32_MAX) {
                if (!PyErr_Occurred())
                        PyErr_Format(PyExc_ValueError, "the partitioner returned %R, not a Partition of the topic",
                                     partition);
                Py_XDECREF(partition_id);
                Py_DECREF(partition);
                return NULL;
        }
        if (pid >= PyList_GET_SIZE(b->partitions)) { /* not one of the topic's: slow names it */
                Py_DECREF(partition_id);
                Py_DECREF(partition);
                goto slow;
        }
        msg = produced_message(value, key, partition_id, partition, b->topic,
                               b->compressed ? b->compression : NULL);
        Py_DECREF(partition_id);
        Py_DECREF(partition);
        if (!msg)
                return NULL;
        if (!buffered_open(b)) {
                /* Stopped while Python code ran (the partitioner, a collection): no Python
                 * code runs from here to the push, so stop() hands over what is pushed. */
                Py_DECREF(msg);
                goto slow;
        }
        if (!(q = fifo_of(b, (size_t)pid)) || (id = table_put(b->table, msg)) == NO_ID)
                goto fail;
        if (fifo_push(q, value, key, id) < 0) {
                Py_DECREF(table_take(b->table, id));
                goto fail;
        }
        b->buffered++;
        release_recent(b, id, (int32_t)pid);
        if (q->len >= b->cap) {
                int handed = fifo_hand_off(b, (int32_t)pid, 0);

                if (handed == PY_ERROR)
                        goto fail;
                if (handed == QUEUE_FULL) { /* wait_room() waits, handing over again */
                        PyObject *res = PyObject_CallNoArgs(b->wait_room);

                        if (!res)
                                goto fail;
                        Py_DECREF(res);
                }
        }
        if (++b->produced % b->housekeeping_every == 0) {
                PyObject *res = PyObject_CallNoArgs(b->housekeeping);

                if (!res)
                        goto fail;
                Py_DECREF(res);
        }
        return msg;
fail: /* if queued, the message will be delivered or reported */
        Py_DECREF(msg);
        return NULL;
slow:
        return PyObject_Vectorcall(b->slow, args, nargsf, kwnames);
}

/* hand_off(stopping=False) -> how many messages are left (a full queue refused them, or
 * the producer is stopped and this is not stop()). */
static PyObject *buffered_hand_off(buffered_t *b, PyObject *const *args, Py_ssize_t nargs) {
        int stopping = nargs > 0 ? PyObject_IsTrue(args[0]) : 0;

        if (nargs > 1 || stopping < 0) {
                if (!PyErr_Occurred())
                        PyErr_SetString(PyExc_TypeError, "hand_off(stopping=False)");
                return NULL;
        }
        for (size_t p = 0; p < b->nfifos; p++) {
                int handed = fifo_hand_off(b, (int32_t)p, stopping);

                if (handed == PY_ERROR)
                        return NULL;
                if (handed == CLOSED)
                        break;
        }
        return PyLong_FromSize_t(b->buffered);
}

/* Drop what is buffered; the released messages' (partition, value, key) go to released
 * if not NULL (the others are in the table). Dropping runs no Python code: only bytes are
 * freed. */
static int fifos_clear(buffered_t *b, PyObject *released) {
        int ret = 0;

        for (size_t p = 0; p < b->nfifos; p++) {
                fifo_t *q = &b->fifos[p];

                for (size_t i = 0; released && ret == 0 && i < q->len; i++) {
                        PyObject *item;

                        if (q->items[i].id != NO_ID)
                                continue;
                        item = Py_BuildValue("(nOO)", (Py_ssize_t)p, q->items[i].value, q->items[i].key);
                        if (!item || PyList_Append(released, item) < 0)
                                ret = -1;
                        Py_XDECREF(item);
                }
                fifo_drop(b, q, q->len);
        }
        return ret;
}

/* clear() -> [(partition, value, key)] of the released messages, all dropped (stop()
 * reports them, and the table's). */
static PyObject *buffered_clear_queues(buffered_t *b, PyObject *unused) {
        PyObject *released = PyList_New(0);

        (void)unused;
        if (!released || fifos_clear(b, released) < 0) {
                Py_XDECREF(released);
                return NULL;
        }
        return released;
}

static int buffered_traverse(buffered_t *b, visitproc visit, void *arg) {
        Py_VISIT(Py_TYPE(b));
        Py_VISIT(b->sender);
        Py_VISIT(b->table);
        Py_VISIT(b->failed);
        Py_VISIT(b->outage);
        Py_VISIT(b->partitions);
        Py_VISIT(b->ids);
        Py_VISIT(b->partitioner);
        Py_VISIT(b->topic);
        Py_VISIT(b->compression);
        Py_VISIT(b->slow);
        Py_VISIT(b->housekeeping);
        Py_VISIT(b->wait_room);
        Py_VISIT(b->on_failure);
        return 0;
}

static int buffered_clear(buffered_t *b) {
        Py_CLEAR(b->sender);
        Py_CLEAR(b->table);
        Py_CLEAR(b->failed);
        Py_CLEAR(b->outage);
        Py_CLEAR(b->partitions);
        Py_CLEAR(b->ids);
        Py_CLEAR(b->partitioner);
        Py_CLEAR(b->topic);
        Py_CLEAR(b->compression);
        Py_CLEAR(b->slow);
        Py_CLEAR(b->housekeeping);
        Py_CLEAR(b->wait_room);
        Py_CLEAR(b->on_failure);
        return 0;
}

static void buffered_dealloc(buffered_t *b) {
        PyTypeObject *type = Py_TYPE(b);

        PyObject_GC_UnTrack(b);
        fifos_clear(b, NULL);
        for (size_t p = 0; p < b->nfifos; p++)
                PyMem_Free(b->fifos[p].items);
        PyMem_Free(b->fifos);
        buffered_clear(b);
        type->tp_free(b);
        Py_DECREF(type);
}

static PyObject *buffered_get_buffered(buffered_t *b, void *unused) {
        (void)unused;
        return PyLong_FromSize_t(b->buffered);
}

/* Released messages still queued here (not in the table any more). */
static PyObject *buffered_get_released(buffered_t *b, void *unused) {
        size_t n = 0;

        (void)unused;
        for (size_t p = 0; p < b->nfifos; p++)
                for (size_t i = 0; i < b->fifos[p].len; i++)
                        n += b->fifos[p].items[i].id == NO_ID;
        return PyLong_FromSize_t(n);
}

static PyMethodDef buffered_methods[] = {
        {"hand_off", (PyCFunction)(void (*)(void))buffered_hand_off, METH_FASTCALL,
         "Hand every buffered message to librdkafka (once stopped, only if stopping); returns "
         "how many are left."},
        {"clear", (PyCFunction)buffered_clear_queues, METH_NOARGS,
         "Drop the buffered messages; the released ones' (partition, value, key)."},
        {NULL, NULL, 0, NULL},
};

static PyMemberDef buffered_members[] = {
        {"__vectorcalloffset__", T_PYSSIZET, offsetof(buffered_t, vectorcall), READONLY, NULL},
        {"open", T_INT, offsetof(buffered_t, open), 0, "0: every call goes to slow."},
        {"released_sent", T_PYSSIZET, offsetof(buffered_t, released_sent), READONLY,
         "Released messages handed to librdkafka (reported like produce_batch()'s)."},
        {NULL, 0, 0, 0, NULL},
};

static PyObject *buffered_get_partitions(buffered_t *b, void *unused) {
        (void)unused;
        Py_INCREF(b->partitions);
        return b->partitions;
}

static int buffered_set_partitions(buffered_t *b, PyObject *value, void *unused) {
        PyObject *ids;

        (void)unused;
        if (!value || !PyList_CheckExact(value)) {
                PyErr_SetString(PyExc_TypeError, "partitions must be a list");
                return -1;
        }
        if (!(ids = ids_of(value)))
                return -1;
        Py_SETREF(b->ids, ids);
        Py_INCREF(value);
        Py_SETREF(b->partitions, value);
        return 0;
}

/* __doc__ and __name__ are those of slow (Producer.produce), and __wrapped__ is slow, so
 * that help() and inspect.signature() show produce() as the class defines it. */
static PyObject *buffered_get_slow(buffered_t *b, void *name) {
        if (!b->slow) {
                PyErr_SetString(PyExc_AttributeError, name ? name : "__wrapped__");
                return NULL;
        }
        if (name)
                return PyObject_GetAttrString(b->slow, name);
        Py_INCREF(b->slow);
        return b->slow;
}

static PyGetSetDef buffered_getset[] = {
        {"__doc__", (getter)buffered_get_slow, NULL, NULL, "__doc__"},
        {"__name__", (getter)buffered_get_slow, NULL, NULL, "__name__"},
        {"__wrapped__", (getter)buffered_get_slow, NULL, NULL, NULL},
        {"buffered", (getter)buffered_get_buffered, NULL, "Messages buffered here.", NULL},
        {"released", (getter)buffered_get_released, NULL, "Released messages buffered here.", NULL},
        {"partitions", (getter)buffered_get_partitions, (setter)buffered_set_partitions,
         "The topic's Partitions, by id.", NULL},
        {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot buffered_slots[] = {
        {Py_tp_call, PyVectorcall_Call},
        {Py_tp_methods, buffered_methods},
        {Py_tp_members, buffered_members},
        {Py_tp_getset, buffered_getset},
        {Py_tp_traverse, buffered_traverse},
        {Py_tp_clear, buffered_clear},
        {Py_tp_dealloc, buffered_dealloc},
        {0, NULL},
};

static PyType_Spec buffered_spec = {
        "pyrdk._rdkafka.BufferedProduce", sizeof(buffered_t), 0,
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, buffered_slots,
};

static PyTypeObject *buffered_type;

/* buffered_produce(sender, table, failed, outage, partitions, partitioner, topic,
 *                  compression, slow, housekeeping, wait_room, on_failure, counter,
 *                  cap, housekeeping_every, max_size) -> the callable above,
 * open. partitioner None: round robin from counter. A message within SIZE_MARGIN of
 * max_size (librdkafka's message.max.bytes, if lower than the sender's) goes to slow. */
static PyObject *buffered_produce(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        buffered_t *b;
        PyObject *address;
        const pyrdk_sender_t *ctx;
        unsigned long long counter;
        size_t cap, every, max_size;
        int compressed;

        (void)self;
        if (nargs != 16 || !Py_IS_TYPE(args[1], table_type) || !PyList_CheckExact(args[2]) ||
            !PyList_CheckExact(args[4])) {
                PyErr_SetString(PyExc_TypeError, "buffered_produce: bad arguments");
                return NULL;
        }
        if (!(address = PyObject_GetAttr(args[0], address_name)))
                return NULL;
        ctx = PyLong_AsVoidPtr(address);
        Py_DECREF(address);
        counter = PyLong_AsUnsignedLongLong(args[12]);
        cap = PyLong_AsSize_t(args[13]);
        every = PyLong_AsSize_t(args[14]);
        max_size = PyLong_AsSize_t(args[15]);
        if (PyErr_Occurred() || (compressed = PyObject_IsTrue(args[7])) < 0)
                return NULL;
        if (!ctx || cap == 0 || every == 0) {
                PyErr_SetString(PyExc_ValueError, "buffered_produce: bad sender, cap or housekeeping_every");
                return NULL;
        }
        if (!(b = PyObject_GC_New(buffered_t, buffered_type)))
                return NULL;
        b->vectorcall = (vectorcallfunc)buffered_call;
        b->ctx = ctx;
        PyObject **fields[] = {&b->sender, (PyObject **)&b->table, &b->failed, &b->outage, &b->partitions,
                               &b->partitioner, &b->topic, &b->compression, &b->slow, &b->housekeeping,
                               &b->wait_room, &b->on_failure};
        for (int i = 0; i < 12; i++) {
                Py_INCREF(args[i]);
                *fields[i] = args[i];
        }
        b->counter = counter;
        b->produced = b->buffered = b->released_sent = 0;
        for (int i = 0; i < RELEASE_LAG; i++)
                b->recent[i] = NO_ID;
        b->cap = cap;
        b->housekeeping_every = every;
        b->max_size = max_size < ctx->max_size ? max_size : ctx->max_size;
        b->open = 1;
        b->compressed = compressed;
        b->fifos = NULL;
        b->nfifos = 0;
        if (!(b->ids = ids_of(b->partitions))) {
                Py_DECREF(b);
                return NULL;
        }
        PyObject_GC_Track(b);
        return (PyObject *)b;
}

static int set_int_slot(PyObject *msg, int slot, long long value) {
        PyObject *v = PyLong_FromLongLong(value);
        PyObject **field = (PyObject **)((char *)msg + slot_offsets[slot]);

        if (!v)
                return -1;
        Py_XSETREF(*field, v);
        return 0;
}

/* The Message of a report's id, no longer pending (a new reference): from table for its
 * ids, else popped from the dict pending. NULL if there is none, or with an exception set. */
static PyObject *pending_pop(PyObject *pending, table_t *table, size_t id) {
        PyObject *key, *msg;

        if (table && id >= table->base)
                return table_take(table, id);
        if (!(key = PyLong_FromSize_t(id)))
                return NULL;
        msg = PyDict_GetItemWithError(pending, key);
        Py_XINCREF(msg);
        if (msg && PyDict_DelItem(pending, key) < 0)
                Py_CLEAR(msg);
        Py_DECREF(key);
        return msg;
}

/* Hand cnt delivery reports without errors to their Messages, taken from table (a
 * PendingTable, or NULL) or popped from the dict pending: each one's partition_id, offset
 * (-1 when the broker told none) and timestamp. Reports of ids in neither are skipped.
 * Returns 0; or 1, touching nothing, if a report has an error; or -1 if memory ran out. */
int pyrdk_messages_deliver(void *pending, void *table, const uintptr_t *ids, const int *errs,
                           const int32_t *partitions, const int64_t *offsets, const int64_t *timestamps,
                           size_t cnt) {
        PyGILState_STATE gil = PyGILState_Ensure();
        int ret = 0;

        for (size_t i = 0; i < cnt; i++)
                if (errs[i]) {
                        PyGILState_Release(gil);
                        return 1;
                }
        for (size_t i = 0; i < cnt && ret == 0; i++) {
                PyObject *msg = pending_pop(pending, table, ids[i]);

                if (!msg) {
                        if (PyErr_Occurred())
                                ret = -1;
                } else if (Py_TYPE(msg) == message_type) {
                        /* Held only here (a Message has no weak references, and is not
                         * tracked by the GC), no one can see its fields: they are left. */
                        if (Py_REFCNT(msg) > 1 &&
                            (set_int_slot(msg, S_PARTITION_ID, partitions[i]) < 0 ||
                             set_int_slot(msg, S_OFFSET, offsets[i] >= 0 ? offsets[i] : -1) < 0 ||
                             set_int_slot(msg, S_TIMESTAMP, timestamps[i]) < 0))
                                ret = -1;
                } else { /* not a Message: through its attributes */
                        PyObject *p = PyLong_FromLong(partitions[i]);
                        PyObject *o = PyLong_FromLongLong(offsets[i] >= 0 ? offsets[i] : -1);
                        PyObject *t = PyLong_FromLongLong(timestamps[i]);

                        if (!p || !o || !t || PyObject_SetAttrString(msg, "partition_id", p) < 0 ||
                            PyObject_SetAttrString(msg, "offset", o) < 0 ||
                            PyObject_SetAttrString(msg, "timestamp", t) < 0)
                                ret = -1;
                        Py_XDECREF(p);
                        Py_XDECREF(o);
                        Py_XDECREF(t);
                }
                Py_XDECREF(msg);
        }
        PyErr_Clear();
        PyGILState_Release(gil);
        return ret;
}

static int one_item_list(PyObject *o) {
        return PyList_CheckExact(o) && PyList_GET_SIZE(o) == 1;
}

/* Mark in next the message last[0] (a list of one item), if any, and set last[0] = None.
 * Returns 0, or -1 with an exception set. */
static int mark_last(PyObject *last, PyObject *next) {
        PyObject *msg;

        if (!one_item_list(last) || !PyDict_Check(next)) {
                PyErr_SetString(PyExc_TypeError, "mark_last(last, next): a list of one item, a dict");
                return -1;
        }
        msg = PyList_GET_ITEM(last, 0);
        if (msg == Py_None)
                return 0;
        if (mark_one(next, msg) < 0)
                return -1;
        Py_INCREF(Py_None);
        PyList_SET_ITEM(last, 0, Py_None);
        Py_DECREF(msg);
        return 0;
}

static PyObject *mark_last_py(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        (void)self;
        if (nargs != 2) {
                PyErr_SetString(PyExc_TypeError, "mark_last(last, next) takes two arguments");
                return NULL;
        }
        if (mark_last(args[0], args[1]) < 0)
                return NULL;
        Py_RETURN_NONE;
}

/* SimpleConsumer's iterator, the short way: pops the messages of its buffer (a deque);
 * when it is empty, returns what refill() returns, None ending the iteration. A message
 * handed out is counted in next (next[partition_id] = offset + 1) late: it waits in
 * last[0] until one of another partition follows it, or mark_last() is called. Within a
 * partition's run only the last message is marked, which saves a new int and a dict
 * store per message. */
typedef struct {
        PyObject_HEAD
        PyObject *buffer, *popleft, *next, *refill, *last;
} buffer_iter_t;

static PyObject *buffer_iter_next(buffer_iter_t *it) {
        Py_ssize_t n = PyObject_Size(it->buffer);
        PyObject *msg, *prev;

        if (n < 0)
                return NULL;
        if (n == 0) {
                msg = PyObject_CallNoArgs(it->refill);
                if (msg == Py_None) {
                        Py_DECREF(msg);
                        return NULL; /* StopIteration */
                }
                return msg;
        }
        msg = PyObject_CallNoArgs(it->popleft);
        if (!msg)
                return NULL;
        /* msg's mark covers one of its partition waiting in last; another is marked now */
        if (!(one_item_list(it->last) && same_partition(PyList_GET_ITEM(it->last, 0), msg)) &&
            mark_last(it->last, it->next) < 0) {
                Py_DECREF(msg);
                return NULL;
        }
        prev = PyList_GET_ITEM(it->last, 0);
        Py_INCREF(msg);
        PyList_SET_ITEM(it->last, 0, msg);
        Py_DECREF(prev);
        return msg;
}

static int buffer_iter_traverse(buffer_iter_t *it, visitproc visit, void *arg) {
        Py_VISIT(Py_TYPE(it));
        Py_VISIT(it->buffer);
        Py_VISIT(it->popleft);
        Py_VISIT(it->next);
        Py_VISIT(it->refill);
        Py_VISIT(it->last);
        return 0;
}

static int buffer_iter_clear(buffer_iter_t *it) {
        Py_CLEAR(it->buffer);
        Py_CLEAR(it->popleft);
        Py_CLEAR(it->next);
        Py_CLEAR(it->refill);
        Py_CLEAR(it->last);
        return 0;
}

static void buffer_iter_dealloc(buffer_iter_t *it) {
        PyTypeObject *type = Py_TYPE(it);

        PyObject_GC_UnTrack(it);
        buffer_iter_clear(it);
        type->tp_free(it);
        Py_DECREF(type);
}

static PyType_Slot buffer_iter_slots[] = {
        {Py_tp_iter, PyObject_SelfIter},
        {Py_tp_iternext, buffer_iter_next},
        {Py_tp_traverse, buffer_iter_traverse},
        {Py_tp_clear, buffer_iter_clear},
        {Py_tp_dealloc, buffer_iter_dealloc},
        {0, NULL},
};

static PyType_Spec buffer_iter_spec = {
        "pyrdk._rdkafka.BufferIterator", sizeof(buffer_iter_t), 0,
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, buffer_iter_slots,
};

static PyTypeObject *buffer_iter_type;

/* buffer_iterator(buffer, next, refill, last) -> the iterator above. */
static PyObject *buffer_iterator(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        buffer_iter_t *it;
        PyObject *popleft;

        (void)self;
        if (nargs != 4 || !PyDict_Check(args[1]) || !PyCallable_Check(args[2]) ||
            !one_item_list(args[3])) {
                PyErr_SetString(PyExc_TypeError,
                                "buffer_iterator(buffer, next, refill, last): a deque, a dict, a callable, "
                                "a list of one item");
                return NULL;
        }
        popleft = PyObject_GetAttrString(args[0], "popleft");
        if (!popleft)
                return NULL;
        it = PyObject_GC_New(buffer_iter_t, buffer_iter_type);
        if (!it) {
                Py_DECREF(popleft);
                return NULL;
        }
        Py_INCREF(args[0]);
        it->buffer = args[0];
        it->popleft = popleft;
        Py_INCREF(args[1]);
        it->next = args[1];
        Py_INCREF(args[2]);
        it->refill = args[2];
        Py_INCREF(args[3]);
        it->last = args[3];
        PyObject_GC_Track(it);
        return (PyObject *)it;
}

/* pack_values(values) -> (joined, lengths): the bytes of a list of bytes, joined, and
 * their sizes as a size_t array (in bytes), in one pass; None if an item is not bytes. */
static PyObject *pack_values(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        PyObject *list, *joined, *lengths;
        Py_ssize_t n, total = 0;
        size_t *lens;
        char *out;

        (void)self;
        if (nargs != 1 || !PyList_Check(args[0])) {
                PyErr_SetString(PyExc_TypeError, "pack_values takes a list");
                return NULL;
        }
        list = args[0];
        n = PyList_GET_SIZE(list);
        for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *v = PyList_GET_ITEM(list, i);

                if (!PyBytes_CheckExact(v))
                        Py_RETURN_NONE;
                total += PyBytes_GET_SIZE(v);
        }
        joined = PyBytes_FromStringAndSize(NULL, total);
        lengths = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(size_t));
        if (!joined || !lengths) {
                Py_XDECREF(joined);
                Py_XDECREF(lengths);
                return NULL;
        }
        out = PyBytes_AS_STRING(joined);
        lens = (size_t *)PyBytes_AS_STRING(lengths);
        for (Py_ssize_t i = 0; i < n; i++) { /* no Python code runs in between: the list stays */
                PyObject *v = PyList_GET_ITEM(list, i);

                lens[i] = (size_t)PyBytes_GET_SIZE(v);
                memcpy(out, PyBytes_AS_STRING(v), lens[i]);
                out += lens[i];
        }
        return Py_BuildValue("(NN)", joined, lengths);
}

static PyMethodDef functions[] = {
        {"send_message", (PyCFunction)(void (*)(void))send_message, METH_FASTCALL,
         "produce()'s short way: a Message sent through pyrdk_send()."},
        {"buffer_iterator", (PyCFunction)(void (*)(void))buffer_iterator, METH_FASTCALL,
         "SimpleConsumer's iterator, the short way: the buffer's messages, then refill()'s."},
        {"mark_last", (PyCFunction)(void (*)(void))mark_last_py, METH_FASTCALL,
         "Mark the message SimpleConsumer's iterator handed out last, if not yet marked."},
        {"buffered_produce", (PyCFunction)(void (*)(void))buffered_produce, METH_FASTCALL,
         "produce()'s buffered way: a callable that queues Messages per partition."},
        {"pending_table", (PyCFunction)pending_table, METH_O,
         "produce()'s buffered way: a table of the Messages waiting for their reports."},
        {"pack_values", (PyCFunction)(void (*)(void))pack_values, METH_FASTCALL,
         "produce_batch's values joined, and their sizes as a size_t array."},
        {NULL, NULL, 0, NULL},
};

/* Remember Message (its type object) and the offsets of its slots, and put this file's
 * Python functions into the dict namespace. Returns 0, or -1 if a slot is not an object
 * slot of Message (or memory ran out). */
int pyrdk_messages_init(void *type, void *namespace) {
        PyGILState_STATE gil = PyGILState_Ensure();
        int ret = -1;

        if (!PyType_Check((PyObject *)type) || !PyType_IS_GC((PyTypeObject *)type) ||
            !PyDict_Check((PyObject *)namespace))
                goto out;
        for (int i = 0; i < S_COUNT; i++) {
                PyObject *descr = PyObject_GetAttrString((PyObject *)type, slot_names[i]);
                int ok = descr && Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
                         ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX;

                if (ok)
                        slot_offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
                Py_XDECREF(descr);
                if (!ok)
                        goto out;
        }
        if ((!address_name && !(address_name = PyUnicode_InternFromString("address"))) ||
            (!since_name && !(since_name = PyUnicode_InternFromString("since"))) ||
            (!id_name && !(id_name = PyUnicode_InternFromString("id"))) ||
            (!partition_key_name && !(partition_key_name = PyUnicode_InternFromString("partition_key"))))
                goto out;
        if (!buffered_type && !(buffered_type = (PyTypeObject *)PyType_FromSpec(&buffered_spec)))
                goto out;
        if (!table_type && !(table_type = (PyTypeObject *)PyType_FromSpec(&table_spec)))
                goto out;
        if (!buffer_iter_type &&
            !(buffer_iter_type = (PyTypeObject *)PyType_FromSpec(&buffer_iter_spec)))
                goto out;
        if (message_type != type) /* kept Messages are of the type they were made of */
                while (nfree > 0)
                        PyObject_GC_Del(free_messages[--nfree]);
        Py_INCREF(type);
        Py_XSETREF(message_type, (PyTypeObject *)type);
        message_type->tp_dealloc = message_dealloc;
        for (PyMethodDef *def = functions; def->ml_name; def++) {
                PyObject *fn = PyCFunction_New(def, NULL);

                if (!fn || PyDict_SetItemString((PyObject *)namespace, def->ml_name, fn) < 0) {
                        Py_XDECREF(fn);
                        goto out;
                }
                Py_DECREF(fn);
        }
        ret = 0;
out:
        PyErr_Clear();
        PyGILState_Release(gil);
        return ret;
}

