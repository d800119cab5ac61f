/* Message: pyrdk.common.Message as a C type, with the same constructor, fields, validation,
 * repr and pickling.
 *
 * The cores make one per message, so three things keep that cheap:
 * - freed Messages of the exact type are kept in the module state's free list and made
 *   anew from it (no allocation, no count towards the cyclic GC's next collection);
 * - a consumed message's headers stay in librdkafka's form (detached from the message)
 *   until `headers` is first read, and are asked for only when the record may have any;
 * - Messages the cores make are not tracked by the cyclic GC. Their fields are bytes, str,
 *   None, ints kept in C, the producer's CompressionType member and the Partition the
 *   caller gave the core: none of these leads back to a Message, so no cycle can go
 *   through one. A setter that stores an object which could (one the GC tracks, or may
 *   track later: anything of a GC type but an untracked tuple, which is immutable and holds
 *   only such objects), and `headers` when it makes its list, put the Message under the
 *   collector. Messages made by the constructor are tracked from the start, as any object. */
#include <math.h>
#include <string.h>

#include "core.h"

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_READONLY READONLY
#endif

#define FIELD(name) ((Py_ssize_t)offsetof(message_t, name))
#define SLOT(self, offset) ((PyObject **)((char *)(self) + (offset)))

/* Track self if value may lead back to it (see the top of this file). */
static void track_for(message_t *self, PyObject *value) {
        if (!PyObject_GC_IsTracked((PyObject *)self) && PyObject_IS_GC(value) &&
            (PyObject_GC_IsTracked(value) || !PyTuple_CheckExact(value)))
                PyObject_GC_Track((PyObject *)self);
}

/* A Message of the exact type, from the free list when it has one; its fields unset
 * (NULL, 0) but for the integer defaults. Not tracked by the cyclic GC. Inline, so that
 * the compiler drops the defaults message_consumed() overwrites. */
static inline message_t *message_alloc(core_state *st) {
        message_t *msg;

        if (st->nfree > 0) {
                msg = (message_t *)st->free_messages[--st->nfree];
                PyObject_Init((PyObject *)msg, st->message_type);
        } else if (!(msg = PyObject_GC_New(message_t, st->message_type)))
                return NULL;
        msg->value = msg->key = msg->partition = msg->topic = NULL;
        msg->headers = msg->compression = msg->produce_attempt = msg->delivery_report_q = NULL;
        msg->c_headers = NULL;
        msg->core = NULL;
        msg->offset = -1;
        msg->timestamp = 0;
        msg->partition_id = -1;
        msg->timestamp_type = 0;
        msg->has_timestamp = 0;
        return msg;
}

message_t *message_new(core_state *st) {
        return message_alloc(st);
}

void message_free_list_clear(core_state *st) {
        while (st->nfree > 0)
                PyObject_GC_Del(st->free_messages[--st->nfree]);
}

static PyObject *bytes_or_none(const void *data, size_t len) {
        if (!data)
                Py_RETURN_NONE;
        return PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
}

/* Whether a consumed message may have headers; asking librdkafka about every message
 * costs a parse of each, and most have none. librdkafka hands out the value where it lies
 * in the fetched record. In a v2 record (Kafka 0.11 on) the value's length, a zigzag
 * varint, comes right before the value and the header count right after it; a count of
 * 0 there means none. Where the bytes before the value are not that varint (a v0 or v1
 * message, a value librdkafka copied), the answer is "maybe". */
static int may_have_headers(const rd_kafka_message_t *m) {
        const unsigned char *value = m->payload;
        unsigned char varint[10];
        uint64_t zigzag;
        int n = 0;

        if (!value || m->len == 0 || m->len > INT32_MAX)
                return 1; /* an empty value is not in the record: librdkafka points elsewhere */
        zigzag = (uint64_t)m->len << 1;
        do {
                varint[n++] = (unsigned char)((zigzag & 0x7f) | (zigzag > 0x7f ? 0x80 : 0));
                zigzag >>= 7;
        } while (zigzag);
        for (int i = 0; i < n; i++) { /* 1 or 2 bytes: a loop costs less than a call of memcmp */
                if (value[i - n] != varint[i])
                        return 1;
        }
        return value[m->len] != 0;
}

/* A new Message with the fields of a consumed message (topic and partition: borrowed). */
PyObject *message_consumed(core_state *st, rd_kafka_message_t *m, PyObject *topic, PyObject *partition) {
        rd_kafka_timestamp_type_t tstype;
        PyObject *value = bytes_or_none(m->payload, m->len), *key = bytes_or_none(m->key, m->key_len);
        message_t *msg = value && key ? message_alloc(st) : NULL;

        if (!msg) {
                Py_XDECREF(value);
                Py_XDECREF(key);
                return NULL;
        }
        msg->value = value;
        msg->key = key;
        Py_INCREF(partition);
        msg->partition = partition;
        Py_INCREF(topic);
        msg->topic = topic;
        msg->partition_id = m->partition;
        msg->offset = m->offset;
        msg->timestamp = rd_kafka_message_timestamp(m, &tstype);
        msg->timestamp_type = (int32_t)tstype;
        msg->has_timestamp = 1;
        if (may_have_headers(m) && rd_kafka_message_detach_headers(m, &msg->c_headers))
                msg->c_headers = NULL; /* none */
        return (PyObject *)msg;
}

/* rd_kafka_header_get_all() as [(name, value)]: names decoded as UTF-8 (bad bytes
 * replaced), values bytes or None. */
static PyObject *headers_list(const rd_kafka_headers_t *hdrs) {
        PyObject *list = PyList_New(0);
        const char *name;
        const void *value;
        size_t size;

        for (size_t i = 0; list && rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == 0; i++) {
                PyObject *item = Py_BuildValue("(NN)", PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "replace"),
                                               bytes_or_none(value, size));

                if (!item || PyList_Append(list, item) < 0)
                        Py_CLEAR(list);
                Py_XDECREF(item);
        }
        return list;
}

/* An aiokafka ConsumerRecord (record_type: a tuple subclass of 11 fields, as add_records()
 * checked) with the fields of a consumed message (topic and partition: borrowed):
 * (topic, partition, offset, timestamp, timestamp_type, key, value, checksum,
 * serialized_key_size, serialized_value_size, headers). timestamp_type is librdkafka's less
 * one (0 CreateTime, 1 LogAppendTime, -1 none); the sizes are -1 for None; headers are a
 * tuple of (name, value) pairs, as aiokafka's (the empty tuple when there are none). A record of immutable fields only is not
 * tracked by the garbage collector (it can be in no cycle), as CPython does for tuples. */
/* An int for value, shared with the last one made when equal (NULL with an exception). */
static PyObject *shared_int(PyObject **last, int64_t *last_value, int64_t value) {
        if (!*last || *last_value != value) {
                PyObject *made = PyLong_FromLongLong(value);

                if (!made)
                        return NULL;
                Py_XSETREF(*last, made);
                *last_value = value;
        }
        return Py_NewRef(*last);
}

PyObject *message_record(core_state *st, const rd_kafka_message_t *m, PyTypeObject *record_type, PyObject *topic,
                         PyObject *partition, record_ints_t *last) {
        rd_kafka_timestamp_type_t tstype;
        rd_kafka_headers_t *hdrs = NULL;
        int64_t timestamp = rd_kafka_message_timestamp(m, &tstype);
        PyObject *rec, *items[11];

        items[0] = Py_NewRef(topic);
        items[1] = Py_NewRef(partition);
        items[2] = PyLong_FromLongLong(m->offset);
        items[3] = shared_int(&last->timestamp, &last->timestamp_value, timestamp);
        items[4] = PyLong_FromLong(tstype ? (long)tstype - 1 : -1);
        items[5] = bytes_or_none(m->key, m->key_len);
        items[6] = bytes_or_none(m->payload, m->len);
        items[7] = Py_NewRef(Py_None);
        items[8] = PyLong_FromSsize_t(m->key ? (Py_ssize_t)m->key_len : -1);
        {
                int64_t size = m->payload ? (int64_t)m->len : -1;

                items[9] = shared_int(&last->value_size, &last->value_size_value, size);
        }
        if (may_have_headers(m) && rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                PyObject *list = headers_list(hdrs);

                /* a tuple, as aiokafka's records have (the empty one when there are none) */
                items[10] = !list ? NULL : PyList_GET_SIZE(list) ? PyList_AsTuple(list) : Py_NewRef(st->empty_tuple);
                Py_XDECREF(list);
        } else
                items[10] = Py_NewRef(st->empty_tuple);
        rec = record_type->tp_alloc(record_type, 11);
        for (int i = 0; i < 11; i++) {
                if (!items[i] && rec)
                        Py_CLEAR(rec);
        }
        if (!rec) {
                for (int i = 0; i < 11; i++)
                        Py_XDECREF(items[i]);
                return NULL;
        }
        for (int i = 0; i < 11; i++)
                PyTuple_SET_ITEM(rec, i, items[i]);
        if (items[10] == st->empty_tuple)
                PyObject_GC_UnTrack(rec);
        return rec;
}

/* -- fields ------------------------------------------------------------------------------- */

int message_set_int(const char *name, PyObject *value, int bits, int64_t *out) {
        long long v;
        int overflow;

        if (!value) {
                PyErr_Format(PyExc_AttributeError, "cannot delete Message.%s", name);
                return -1;
        }
        if (PyBool_Check(value) || PyFloat_Check(value) || !(PyLong_Check(value) || PyIndex_Check(value))) {
                PyErr_Format(PyExc_TypeError, "Message.%s must be an int, not %.200s", name, Py_TYPE(value)->tp_name);
                return -1;
        }
        /* an integer of another type (numpy's) by its __index__, as pyrdk.common.integer */
        v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (v == -1 && PyErr_Occurred())
                return -1;
        if (overflow || (bits == 32 && (v < INT32_MIN || v > INT32_MAX))) {
                PyErr_Format(PyExc_OverflowError, "Message.%s=%S does not fit in %d bits", name, value, bits);
                return -1;
        }
        *out = v;
        return 0;
}

static PyObject *get_object(message_t *self, void *offset) {
        PyObject *value = *SLOT(self, (Py_ssize_t)offset);

        return Py_NewRef(value ? value : Py_None);
}

static int set_object(message_t *self, PyObject *value, void *offset) {
        if (!value) {
                PyErr_SetString(PyExc_AttributeError, "cannot delete a Message's field");
                return -1;
        }
        track_for(self, value);
        Py_XSETREF(*SLOT(self, (Py_ssize_t)offset), Py_NewRef(value));
        return 0;
}

static PyObject *get_partition_id(message_t *self, void *closure) {
        (void)closure;
        return PyLong_FromLong(self->partition_id);
}

static int set_partition_id(message_t *self, PyObject *value, void *closure) {
        int64_t v;

        (void)closure;
        if (message_set_int("partition_id", value, 32, &v) < 0)
                return -1;
        self->partition_id = (int32_t)v;
        return 0;
}

static PyObject *get_offset(message_t *self, void *closure) {
        (void)closure;
        return PyLong_FromLongLong(self->offset);
}

static int set_offset(message_t *self, PyObject *value, void *closure) {
        (void)closure;
        return message_set_int("offset", value, 64, &self->offset);
}

static PyObject *get_timestamp(message_t *self, void *closure) {
        (void)closure;
        if (!self->has_timestamp)
                Py_RETURN_NONE;
        return PyLong_FromLongLong(self->timestamp);
}

static int set_timestamp(message_t *self, PyObject *value, void *closure) {
        (void)closure;
        if (value == Py_None) {
                self->has_timestamp = 0;
                return 0;
        }
        if (message_set_int("timestamp", value, 64, &self->timestamp) < 0)
                return -1;
        self->has_timestamp = 1;
        return 0;
}

static PyObject *get_timestamp_type(message_t *self, void *closure) {
        (void)closure;
        return PyLong_FromLong(self->timestamp_type);
}

static int set_timestamp_type(message_t *self, PyObject *value, void *closure) {
        int64_t v;

        (void)closure;
        if (message_set_int("timestamp_type", value, 32, &v) < 0)
                return -1;
        self->timestamp_type = (int32_t)v;
        return 0;
}

static PyObject *get_headers(message_t *self, void *closure) {
        (void)closure;
        if (!self->headers) {
                /* With the collector off, making the list runs no Python code (a finalizer
                 * could read or set these headers, and free c_headers, meanwhile). */
                int collecting = PyGC_Disable();
                PyObject *list = self->c_headers ? headers_list(self->c_headers) : PyList_New(0);

                if (collecting)
                        PyGC_Enable();
                if (!list)
                        return NULL;
                if (self->c_headers) {
                        rd_kafka_headers_destroy(self->c_headers);
                        self->c_headers = NULL;
                }
                track_for(self, list);
                self->headers = list;
        }
        return Py_NewRef(self->headers);
}

static int set_headers(message_t *self, PyObject *value, void *closure) {
        if (value == Py_None) /* none: an empty list, made on first use */
                Py_CLEAR(self->headers);
        else if (set_object(self, value, closure) < 0)
                return -1;
        if (self->c_headers) {
                rd_kafka_headers_destroy(self->c_headers);
                self->c_headers = NULL;
        }
        return 0;
}

static PyObject *get_compression(message_t *self, void *closure) {
        PyObject *value = self->compression;

        (void)closure;
        if (!value) {
                core_state *st = core_state_of_type(Py_TYPE(self));

                value = st ? st->default_compression : NULL;
        }
        return Py_NewRef(value ? value : Py_None);
}

static PyObject *get_produce_attempt(message_t *self, void *closure) {
        (void)closure;
        if (!self->produce_attempt)
                return PyLong_FromLong(0);
        return Py_NewRef(self->produce_attempt);
}

static PyObject *get_timestamp_dt(message_t *self, void *closure) {
        core_state *st = core_state_of_type(Py_TYPE(self));
        PyObject *args, *dt;

        (void)closure;
        if (!self->has_timestamp || self->timestamp <= 0)
                Py_RETURN_NONE;
        if (!st || !st->datetime_api) {
                PyErr_SetString(PyExc_RuntimeError, "pyrdk._core is not initialised");
                return NULL;
        }
        if (!(args = Py_BuildValue("(dO)", (double)self->timestamp / 1000.0, st->datetime_api->TimeZone_UTC)))
                return NULL;
        dt = st->datetime_api->DateTime_FromTimestamp((PyObject *)st->datetime_api->DateTimeType, args, NULL);
        Py_DECREF(args);
        return dt;
}

/* Days from 1970-01-01 to the proleptic Gregorian date y-m-d. */
static int64_t days_from_civil(int64_t y, int m, int d) {
        int64_t era, yoe, doy;

        y -= m <= 2;
        era = (y >= 0 ? y : y - 399) / 400;
        yoe = y - era * 400;
        doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
        return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* The ms since the epoch of datetime dt (naive: UTC, as pykafka took it), rounded down, into
 * *out; exact, with no float in between. -1 with an exception if dt.utcoffset() raised. */
static int datetime_ms(core_state *st, PyObject *dt, int64_t *out) {
        PyObject *offset = core_call_method(dt, "utcoffset", NULL);
        int64_t us, offset_us = 0;

        if (!offset)
                return -1;
        if (PyObject_TypeCheck(offset, st->datetime_api->DeltaType))
                offset_us = ((int64_t)PyDateTime_DELTA_GET_DAYS(offset) * 86400 + PyDateTime_DELTA_GET_SECONDS(offset)) *
                                    1000000 +
                            PyDateTime_DELTA_GET_MICROSECONDS(offset);
        Py_DECREF(offset);
        us = ((days_from_civil(PyDateTime_GET_YEAR(dt), PyDateTime_GET_MONTH(dt), PyDateTime_GET_DAY(dt)) * 24 +
               PyDateTime_DATE_GET_HOUR(dt)) * 3600 +
              PyDateTime_DATE_GET_MINUTE(dt) * 60 + PyDateTime_DATE_GET_SECOND(dt)) * 1000000 +
             PyDateTime_DATE_GET_MICROSECOND(dt) - offset_us;
        *out = us >= 0 ? us / 1000 : -((-us + 999) / 1000);
        return 0;
}

/* Set self's timestamp (through a subclass's own property, if it has one) from ts: ms since
 * the epoch (an int, or a finite float cut to whole ms), a datetime or None. what names the
 * caller in the TypeError for another type. */
static int set_timestamp_from(PyObject *self, PyObject *ts, const char *what) {
        core_state *st = core_state_of_type(Py_TYPE(self));
        PyObject *ms;
        int64_t v;
        int ret;

        if (!st || !st->datetime_api) {
                PyErr_SetString(PyExc_RuntimeError, "pyrdk._core is not initialised");
                return -1;
        }
        if (PyObject_TypeCheck(ts, st->datetime_api->DateTimeType)) {
                if (datetime_ms(st, ts, &v) < 0)
                        return -1;
                ms = PyLong_FromLongLong(v);
        } else if (PyFloat_Check(ts) && isfinite(PyFloat_AS_DOUBLE(ts))) {
                ms = PyLong_FromDouble(PyFloat_AS_DOUBLE(ts));
        } else if (ts == Py_None || (PyLong_Check(ts) && !PyBool_Check(ts))) {
                ms = Py_NewRef(ts);
        } else if (PyIndex_Check(ts) && !PyBool_Check(ts)) {
                ms = PyNumber_Index(ts); /* an integer of another type (numpy's) */
        } else {
                PyErr_Format(PyExc_TypeError, "%s takes ms since the epoch (an int or a float), a datetime or None, not %R",
                             what, ts);
                return -1;
        }
        if (!ms)
                return -1;
        ret = core_setattr(self, "timestamp", ms);
        Py_DECREF(ms);
        return ret;
}

/* timestamp_dt = dt: pykafka's setter of the timestamp from a datetime (naive: UTC). */
static int set_timestamp_dt(message_t *self, PyObject *value, void *closure) {
        core_state *st = core_state_of_type(Py_TYPE(self));

        (void)closure;
        if (!value) {
                PyErr_SetString(PyExc_AttributeError, "cannot delete Message.timestamp_dt");
                return -1;
        }
        if (st && st->datetime_api && value != Py_None && !PyObject_TypeCheck(value, st->datetime_api->DateTimeType)) {
                PyErr_Format(PyExc_TypeError, "Message.timestamp_dt takes a datetime or None, not %R", value);
                return -1;
        }
        return set_timestamp_from((PyObject *)self, value, "Message.timestamp_dt");
}

/* pykafka's message format version: always 1 (a message with a timestamp). */
static PyObject *get_protocol_version(message_t *self, void *closure) {
        (void)self;
        (void)closure;
        return PyLong_FromLong(1);
}

/* Alias of partition_key: a subclass's own partition_key, if it has one. */
static PyObject *get_key(message_t *self, void *closure) {
        core_state *st = core_state_of_type(Py_TYPE(self));

        (void)closure;
        if (st && Py_TYPE(self) != st->message_type)
                return core_getattr((PyObject *)self, "partition_key");
        return get_object(self, (void *)FIELD(key));
}

/* value and the key, which a consumer reads per message, are read-only members: the
 * interpreter reads them straight from the object (a getset costs a call of its getter).
 * Both are set in every Message made; message_setattro() writes them. */
static PyMemberDef message_members[] = {
        {"value", Py_T_OBJECT_EX, FIELD(value), Py_READONLY, NULL},
        {"partition_key", Py_T_OBJECT_EX, FIELD(key), Py_READONLY, NULL},
        {NULL, 0, 0, 0, NULL},
};

/* The offset of the member name when message_setattro() writes it: one of the two, found
 * by self's type as this type's own descriptor (a subclass may put its own in front).
 * Otherwise -1, with an exception set if one was raised. */
static Py_ssize_t written_member(PyObject *self, PyObject *name) {
        core_state *st = core_state_of_type(Py_TYPE(self));
        Py_ssize_t offset;
        PyObject *descr;
        int ours;

        if (!PyUnicode_Check(name) || !st)
                return -1;
        if (PyUnicode_CompareWithASCIIString(name, "value") == 0)
                offset = FIELD(value);
        else if (PyUnicode_CompareWithASCIIString(name, "partition_key") == 0)
                offset = FIELD(key);
        else
                return -1;
        if (Py_TYPE(self) == st->message_type)
                return offset;
        if (!(descr = PyObject_GetAttr((PyObject *)Py_TYPE(self), name))) /* a member descriptor itself */
                return -1;
        ours = Py_IS_TYPE(descr, &PyMemberDescr_Type) && PyDescr_TYPE(descr) == st->message_type;
        Py_DECREF(descr);
        return ours ? offset : -1;
}

static int message_setattro(PyObject *self, PyObject *name, PyObject *value) {
        Py_ssize_t offset = written_member(self, name);

        if (offset >= 0)
                return set_object((message_t *)self, value, (void *)offset);
        if (PyErr_Occurred())
                return -1;
        return PyObject_GenericSetAttr(self, name, value);
}

static PyGetSetDef message_getset[] = {
        {"partition", (getter)get_object, (setter)set_object, NULL, (void *)FIELD(partition)},
        {"topic", (getter)get_object, (setter)set_object, NULL, (void *)FIELD(topic)},
        {"partition_id", (getter)get_partition_id, (setter)set_partition_id, NULL, NULL},
        {"offset", (getter)get_offset, (setter)set_offset, NULL, NULL},
        {"timestamp", (getter)get_timestamp, (setter)set_timestamp, NULL, NULL},
        {"timestamp_type", (getter)get_timestamp_type, (setter)set_timestamp_type, NULL, NULL},
        {"headers", (getter)get_headers, (setter)set_headers,
         "``[(name, value)]`` (an empty list, made on first use, when there are none).", (void *)FIELD(headers)},
        {"compression_type", (getter)get_compression, (setter)set_object, "The producer's :class:`CompressionType`.",
         (void *)FIELD(compression)},
        {"produce_attempt", (getter)get_produce_attempt, (setter)set_object, NULL, (void *)FIELD(produce_attempt)},
        {"delivery_report_q", (getter)get_object, (setter)set_object,
         "The queue :meth:`Producer.get_delivery_report` reads this message's report from.",
         (void *)FIELD(delivery_report_q)},
        {"key", (getter)get_key, NULL, "Alias of ``partition_key``.", NULL},
        {"protocol_version", (getter)get_protocol_version, NULL,
         "pykafka's message format version: 1, a message with a timestamp (librdkafka reads and "
         "writes record batches of format 2, whose records all have one).",
         NULL},
        {"timestamp_dt", (getter)get_timestamp_dt, (setter)set_timestamp_dt,
         "``timestamp`` as a UTC datetime (None when the message has none); set from a datetime "
         "(naive: UTC), as pykafka's.",
         NULL},
        {NULL, NULL, NULL, NULL, NULL},
};

/* -- the type ----------------------------------------------------------------------------- */

static PyObject *message_new_py(PyTypeObject *type, PyObject *args, PyObject *kwds) {
        message_t *msg = (message_t *)type->tp_alloc(type, 0);

        (void)args;
        (void)kwds;
        if (msg) {
                msg->offset = -1;
                msg->partition_id = -1;
        }
        return (PyObject *)msg;
}

/* Message(value, partition_key=None, partition_id=-1, offset=-1, timestamp=None, headers=None,
 *         partition=None, topic=None, timestamp_type=0, compression_type=CompressionType.NONE,
 *         produce_attempt=0, delivery_report_q=None) */
static int message_init(message_t *self, PyObject *args, PyObject *kwds) {
        static const char *const names[] = {"value", "partition_key", "partition_id", "offset", "timestamp",
                                            "headers", "partition", "topic", "timestamp_type",
                                            "compression_type", "produce_attempt", "delivery_report_q", NULL};
        PyObject *value, *key = Py_None, *pid = NULL, *offset = NULL, *timestamp = Py_None, *headers = Py_None;
        PyObject *partition = Py_None, *topic = Py_None, *tstype = NULL, *compression = NULL, *attempt = NULL;
        PyObject *queue = Py_None;
        int64_t v_pid = -1, v_offset = -1, v_ts = 0, v_tstype = 0;
        core_state *st;

        if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOOOOOOOOOO:Message", (char **)names, &value, &key, &pid,
                                         &offset, &timestamp, &headers, &partition, &topic, &tstype,
                                         &compression, &attempt, &queue))
                return -1;
        if ((pid && message_set_int("partition_id", pid, 32, &v_pid) < 0) ||
            (offset && message_set_int("offset", offset, 64, &v_offset) < 0) ||
            (timestamp != Py_None && message_set_int("timestamp", timestamp, 64, &v_ts) < 0) ||
            (tstype && message_set_int("timestamp_type", tstype, 32, &v_tstype) < 0))
                return -1;
        st = core_state_of_type(Py_TYPE(self));
        if (st && Py_TYPE(self) == st->message_type) {
                set_object(self, value, (void *)FIELD(value));
                set_object(self, key, (void *)FIELD(key));
                set_object(self, partition, (void *)FIELD(partition));
                set_object(self, topic, (void *)FIELD(topic));
        } else if (core_setattr((PyObject *)self, "value", value) < 0 ||
                   core_setattr((PyObject *)self, "partition_key", key) < 0 ||
                   core_setattr((PyObject *)self, "partition", partition) < 0 ||
                   core_setattr((PyObject *)self, "topic", topic) < 0)
                return -1; /* through a subclass's own properties, if it has them, as pyrdk.common.Message's */
        set_headers(self, headers, (void *)FIELD(headers));
        if (compression)
                set_object(self, compression, (void *)FIELD(compression));
        else
                Py_CLEAR(self->compression);
        if (attempt)
                set_object(self, attempt, (void *)FIELD(produce_attempt));
        else
                Py_CLEAR(self->produce_attempt);
        set_object(self, queue, (void *)FIELD(delivery_report_q));
        self->partition_id = (int32_t)v_pid;
        self->offset = v_offset;
        self->timestamp = v_ts;
        self->has_timestamp = timestamp != Py_None;
        self->timestamp_type = (int32_t)v_tstype;
        return 0;
}

static int message_traverse(message_t *self, visitproc visit, void *arg) {
        Py_VISIT(Py_TYPE(self));
        Py_VISIT(self->value);
        Py_VISIT(self->key);
        Py_VISIT(self->partition);
        Py_VISIT(self->topic);
        Py_VISIT(self->headers);
        Py_VISIT(self->compression);
        Py_VISIT(self->produce_attempt);
        Py_VISIT(self->delivery_report_q);
        return 0;
}

static int message_clear(message_t *self) {
        Py_CLEAR(self->value);
        Py_CLEAR(self->key);
        Py_CLEAR(self->partition);
        Py_CLEAR(self->topic);
        Py_CLEAR(self->headers);
        Py_CLEAR(self->compression);
        Py_CLEAR(self->produce_attempt);
        Py_CLEAR(self->delivery_report_q);
        if (self->c_headers) {
                rd_kafka_headers_destroy(self->c_headers);
                self->c_headers = NULL;
        }
        return 0;
}

static void message_dealloc(message_t *self);

/* Cleared, then kept for reuse (the exact type, while the free list has room) or freed. */
static void message_free(message_t *self, PyTypeObject *type) {
        message_clear(self);
        if (type->tp_dealloc == (destructor)message_dealloc) { /* the exact type: made by this module */
                PyObject *module = ((PyHeapTypeObject *)type)->ht_module; /* NULL once cleared at exit */
                core_state *st = module ? PyModule_GetState(module) : NULL;

                if (st && st->message_type == type && st->nfree < MESSAGE_FREE_MAX) {
                        st->free_messages[st->nfree++] = (PyObject *)self;
                        Py_DECREF(type); /* a kept Message holds none; PyObject_Init takes one */
                        return;
                }
        }
        type->tp_free(self);
        Py_DECREF(type);
}

/* For an instance of a subclass, subtype_dealloc has finalized it and cleared what the
 * subclass added (slots, dict, weak references), and tracked it again, before it calls
 * this. The trashcan frees a long chain of Messages a level at a time instead of by
 * recursion. A Message the collector does not track holds nothing that leads to another
 * Message (see the top of this file) and starts no such chain: it goes without the
 * trashcan's four calls and their checks, a fifth of what freeing a consumed Message took. */
static void message_dealloc(message_t *self) {
        PyTypeObject *type = Py_TYPE(self);
        int tracked = PyObject_GC_IsTracked((PyObject *)self);

        if (tracked)
                PyObject_GC_UnTrack(self);
        if (self->core) { /* out of its producer core's table at once */
                producer_forget(self->core, self->id);
                self->core = NULL;
        }
        if (!tracked) {
                message_free(self, type);
                return;
        }
        Py_TRASHCAN_BEGIN(self, message_dealloc)
        message_free(self, type);
        Py_TRASHCAN_END
}

/* A subclass's repr: its fields read as attributes, through any property of its own in
 * front of them, as pyrdk.common.Message's __repr__ reads them ("%d": int() of the ids);
 * a field the subclass's __init__ left unset is the stored one, None. */
static PyObject *subclass_repr(message_t *self) {
        static const char *const names[] = {"topic", "partition_id", "offset", "value"};
        PyObject *fields[4] = {NULL, NULL, NULL, NULL}, *repr = NULL;
        int i;

        for (i = 0; i < 4; i++) {
                if (!(fields[i] = core_getattr((PyObject *)self, names[i]))) {
                        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                                goto done;
                        PyErr_Clear();
                        fields[i] = i == 1 ? get_partition_id(self, NULL) : i == 2 ? get_offset(self, NULL)
                                  : get_object(self, (void *)(i == 0 ? FIELD(topic) : FIELD(value)));
                        if (!fields[i])
                                goto done;
                }
                if (i == 1 || i == 2) { /* "%d" % field, as pyrdk.common.Message's: a number, as an int */
                        if (!PyNumber_Check(fields[i])) {
                                PyErr_Format(PyExc_TypeError, "%%d format: a real number is required, not %.200s",
                                             Py_TYPE(fields[i])->tp_name);
                                goto done;
                        }
                        Py_SETREF(fields[i], PyNumber_Long(fields[i]));
                        if (!fields[i])
                                goto done;
                }
        }
        if (PyBytes_Check(fields[3]) || PyUnicode_Check(fields[3])) {
                Py_SETREF(fields[3], PySequence_GetSlice(fields[3], 0, 40));
                if (!fields[3])
                        goto done;
        }
        repr = PyUnicode_FromFormat("<pyrdk.Message topic=%R partition=%S offset=%S value=%R>", fields[0], fields[1],
                                    fields[2], fields[3]);
done:
        for (i = 0; i < 4; i++)
                Py_XDECREF(fields[i]);
        return repr;
}

static PyObject *message_repr(message_t *self) {
        PyObject *value = self->value ? self->value : Py_None, *shown, *repr;
        core_state *st = core_state_of_type(Py_TYPE(self));

        if (st && Py_TYPE(self) != st->message_type)
                return subclass_repr(self);
        if (PyBytes_Check(value) || PyUnicode_Check(value))
                shown = PySequence_GetSlice(value, 0, 40);
        else
                shown = Py_NewRef(value);
        if (!shown)
                return NULL;
        repr = PyUnicode_FromFormat("<pyrdk.Message topic=%R partition=%d offset=%lld value=%R>",
                                    self->topic ? self->topic : Py_None, (int)self->partition_id,
                                    (long long)self->offset, shown);
        Py_DECREF(shown);
        return repr;
}

/* _remade(cls, args): an instance of cls, a subclass of Message, made by cls.__new__ and
 * Message's own constructor (the subclass's may take other arguments), for pickle. */
PyObject *message_remade(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
        core_state *st = PyModule_GetState(module);
        PyObject *obj;

        if (nargs != 2 || !PyType_Check(args[0]) || !st->message_type ||
            !PyType_IsSubtype((PyTypeObject *)args[0], st->message_type) || !PyTuple_Check(args[1])) {
                PyErr_SetString(PyExc_TypeError, "_remade(cls, args) takes a subclass of Message and a tuple");
                return NULL;
        }
        if (!(obj = core_call_method(args[0], "__new__", args[0])))
                return NULL;
        if (!PyObject_TypeCheck(obj, st->message_type)) {
                PyErr_Format(PyExc_TypeError, "%R.__new__ made %.200s, not a Message", args[0], Py_TYPE(obj)->tp_name);
                Py_DECREF(obj);
                return NULL;
        }
        if (message_init((message_t *)obj, args[1], NULL) < 0)
                Py_CLEAR(obj);
        return obj;
}

#if PY_VERSION_HEX < 0x030B0000
/* What object.__getstate__ (Python 3.11 on) gives, for the Pythons before it: None, the
 * instance dict when it holds anything, and with slots holding values (dict or None,
 * {slot: value}); the slot names are copyreg's, as pickle's own are. */
static PyObject *object_state(PyObject *self) {
        PyObject *state, *names = NULL, *slots = NULL, *copyreg;

        if (!(state = core_getattr(self, "__dict__"))) {
                if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                        return NULL;
                PyErr_Clear();
                state = Py_NewRef(Py_None);
        } else if (!PyDict_Check(state) || PyDict_GET_SIZE(state) == 0) {
                Py_SETREF(state, Py_NewRef(Py_None));
        }
        if (!(copyreg = PyImport_ImportModule("copyreg")))
                goto fail;
        names = core_call_method(copyreg, "_slotnames", (PyObject *)Py_TYPE(self));
        Py_DECREF(copyreg);
        if (names) {
                PyObject *tuple = PySequence_Tuple(names);

                Py_DECREF(names);
                names = tuple;
        }
        if (!names || !(slots = PyDict_New()))
                goto fail;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
                PyObject *name = PyTuple_GET_ITEM(names, i), *value = PyObject_GetAttr(self, name);

                if (!value) {
                        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                                goto fail;
                        PyErr_Clear(); /* an unset slot */
                        continue;
                }
                if (PyDict_SetItem(slots, name, value) < 0) {
                        Py_DECREF(value);
                        goto fail;
                }
                Py_DECREF(value);
        }
        Py_DECREF(names);
        if (PyDict_GET_SIZE(slots) == 0) {
                Py_DECREF(slots);
                return state;
        }
        return Py_BuildValue("(NN)", state, slots);
fail:
        Py_XDECREF(names);
        Py_XDECREF(slots);
        Py_DECREF(state);
        return NULL;
}
#else
static PyObject *object_state(PyObject *self) {
        return core_call_method(self, "__getstate__", NULL);
}
#endif

/* (pyrdk.core's remake, constructor arguments), or for an instance of a subclass (_remade, (type,
 * constructor arguments)[, state]): the state is what object.__getstate__ gives, i.e. the
 * subclass's dict and slots. partition and delivery_report_q are left out (None): they are
 * this process's live objects (the client's Partition, a producer's queue), which hold
 * locks. */
static PyObject *message_reduce(message_t *self, PyObject *unused) {
        PyObject *headers, *compression, *attempt, *args, *state, *out, *remade;
        core_state *st;

        (void)unused;
        headers = self->headers || self->c_headers ? get_headers(self, NULL) : Py_NewRef(Py_None);
        compression = get_compression(self, NULL);
        attempt = get_produce_attempt(self, NULL);
        {
                /* Held: making the tuple may run Python code, which may set these fields. */
                PyObject *fields[] = {get_object(self, (void *)FIELD(value)), get_object(self, (void *)FIELD(key)),
                                      Py_NewRef(Py_None), get_object(self, (void *)FIELD(topic)),
                                      Py_NewRef(Py_None)};

                args = headers && compression && attempt
                        ? Py_BuildValue("(OOiLOOOOiOOO)", fields[0], fields[1], (int)self->partition_id,
                                        (long long)self->offset, Py_None, headers, fields[2], fields[3],
                                        (int)self->timestamp_type, compression, attempt, fields[4])
                        : NULL;
                for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
                        Py_DECREF(fields[i]);
        }
        Py_XDECREF(headers);
        Py_XDECREF(compression);
        Py_XDECREF(attempt);
        if (!args)
                return NULL;
        if (self->has_timestamp) { /* the fifth argument */
                PyObject *ts = PyLong_FromLongLong(self->timestamp);

                if (!ts) {
                        Py_DECREF(args);
                        return NULL;
                }
                Py_SETREF(PyTuple_GET_ITEM(args, 4), ts);
        }
        st = core_state_of_type(Py_TYPE(self));
        if (st && Py_TYPE(self) == st->message_type) /* loaded as the loading process's core's */
                return Py_BuildValue("(ON)", st->remake ? st->remake : (PyObject *)Py_TYPE(self), args);
        if (!st || !(remade = core_getattr(((PyHeapTypeObject *)st->message_type)->ht_module, "_remade"))) {
                if (!PyErr_Occurred())
                        PyErr_SetString(PyExc_RuntimeError, "pyrdk._core is not initialised");
                Py_DECREF(args);
                return NULL;
        }
        if (!(state = object_state((PyObject *)self))) {
                Py_DECREF(remade);
                Py_DECREF(args);
                return NULL;
        }
        out = state == Py_None ? Py_BuildValue("(N(ON))", remade, Py_TYPE(self), args)
                               : Py_BuildValue("(N(ON)O)", remade, Py_TYPE(self), args, state);
        Py_DECREF(state);
        return out;
}

/* pykafka's Message.set_timestamp(ts). */
static PyObject *message_set_timestamp(PyObject *self, PyObject *ts) {
        if (set_timestamp_from(self, ts, "set_timestamp()") < 0)
                return NULL;
        Py_RETURN_NONE;
}

/* The size of value or partition_key (None: 0), read through a subclass's own property. */
static Py_ssize_t field_size(PyObject *self, PyObject *field, const char *name, int exact) {
        PyObject *value = exact ? Py_XNewRef(field) : core_getattr(self, name);
        Py_ssize_t size;

        if (exact && !value)
                return 0;
        if (!value)
                return -1;
        size = value == Py_None ? 0 : PyObject_Size(value);
        Py_DECREF(value);
        return size;
}

/* len(message), as pykafka's: its size in the message format pykafka wrote (v1): a 14-byte
 * header, the key, the value and, with a timestamp, 8 bytes for it. */
static Py_ssize_t message_length(PyObject *self) {
        core_state *st = core_state_of_type(Py_TYPE(self));
        message_t *msg = (message_t *)self;
        int exact = st && Py_TYPE(self) == st->message_type;
        Py_ssize_t value, key, size = 14;

        if ((value = field_size(self, msg->value, "value", exact)) < 0 ||
            (key = field_size(self, msg->key, "partition_key", exact)) < 0)
                return -1;
        if (exact) {
                size += msg->has_timestamp && msg->timestamp ? 8 : 0;
        } else {
                PyObject *ts = core_getattr(self, "timestamp");
                int set;

                if (!ts || (set = PyObject_IsTrue(ts)) < 0) {
                        Py_XDECREF(ts);
                        return -1;
                }
                Py_DECREF(ts);
                size += set ? 8 : 0;
        }
        return size + value + key;
}

/* A Message is true, whatever its length (a deserializer may make a value without one). */
static int message_bool(PyObject *self) {
        (void)self;
        return 1;
}

static PyMethodDef message_methods[] = {
        {"__reduce__", (PyCFunction)message_reduce, METH_NOARGS, NULL},
        {"set_timestamp", (PyCFunction)message_set_timestamp, METH_O,
         "set_timestamp($self, ts, /)\n--\n\npykafka's: set ``timestamp`` from ms since the epoch (an int, or a float "
         "cut to whole ms), a datetime (naive: UTC) or None."},
        {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(message_doc,
             "Message(value, partition_key=None, partition_id=-1, offset=-1, timestamp=None, headers=None, "
             "partition=None, topic=None, timestamp_type=0, compression_type=CompressionType.NONE, "
             "produce_attempt=0, delivery_report_q=None)\n--\n\n"
             "One Kafka message, produced or consumed (pykafka's ``Message``): the C core's, with the\n"
             "fields and behaviour of :class:`pyrdk.common.Message`.");

static PyType_Slot message_slots[] = {
        {Py_tp_doc, (void *)message_doc},
        {Py_tp_new, message_new_py},
        {Py_tp_init, message_init},
        {Py_tp_dealloc, message_dealloc},
        {Py_tp_traverse, message_traverse},
        {Py_tp_clear, message_clear},
        {Py_tp_repr, message_repr},
        {Py_tp_members, message_members},
        {Py_tp_getset, message_getset},
        {Py_tp_setattro, message_setattro},
        {Py_tp_methods, message_methods},
        {Py_sq_length, message_length},
        {Py_nb_bool, message_bool},
        {0, NULL},
};

PyType_Spec message_spec = {
        "pyrdk._core.Message", sizeof(message_t), 0,
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, message_slots,
};
