/* pyrdk.common.Message objects made in C: consumed ones a batch at a time, produced ones
 * by produce()'s short way; SimpleConsumer's iterator; produce_batch's values packed.
 *
 * The one helper file that uses the CPython API: cffi cannot make Python objects in C, and
 * one Python-level object per message is most of a client's cost. The cffi functions here
 * take Python objects as id() (their address in CPython) and take the GIL themselves,
 * since cffi releases it around every call; send_message is a plain Python function,
 * handed over by pyrdk_messages_init(). Message stays a plain Python class: its slots are
 * filled at the offsets its member descriptors name, as `msg.slot = x` would. */
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

static inline void set_slot(PyObject *msg, int slot, PyObject *value) {
        *(PyObject **)((char *)msg + slot_offsets[slot]) = value; /* steals value */
}

static PyObject *bytes_or_none(const void *ptr, size_t len) {
        if (!ptr)
                Py_RETURN_NONE;
        return PyBytes_FromStringAndSize(ptr, (Py_ssize_t)len);
}

/* rd_kafka_message_headers as [(name, value)], or None when there are none. */
static PyObject *headers_of(const rd_kafka_message_t *m) {
        rd_kafka_headers_t *hdrs;
        const char *name;
        const void *value;
        size_t size;
        PyObject *list;

        if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR)
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
        PyObject *msg = message_type->tp_alloc(message_type, 0);
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

/* Append a Message to the list out for each of msgs[0..cnt), up to the first error event.
 * partitions is None or a dict {partition_id: Partition} that names each message's
 * partition. Returns the number of messages appended (the next one, if any, is an error
 * event), or -1 if memory ran out. */
ssize_t pyrdk_messages_append(rd_kafka_message_t **msgs, size_t cnt, void *out, void *partitions) {
        PyGILState_STATE gil = PyGILState_Ensure();
        PyObject *list = out, *parts = partitions;
        const rd_kafka_topic_t *rkt = NULL;
        PyObject *topic = NULL, *timestamp = NULL;
        int64_t last_ts = 0;
        Py_ssize_t i;

        for (i = 0; (size_t)i < cnt && !msgs[i]->err; i++) {
                const rd_kafka_message_t *m = msgs[i];
                PyObject *partition = Py_None, *msg;
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
                if (parts != Py_None) {
                        PyObject *pid = PyLong_FromLong(m->partition);

                        if (!pid)
                                goto fail;
                        partition = PyDict_GetItemWithError(parts, pid);
                        Py_DECREF(pid);
                        if (!partition) {
                                if (PyErr_Occurred())
                                        goto fail;
                                partition = Py_None;
                        }
                }
                Py_INCREF(partition); /* a collection in message_of() may run Python code */
                msg = message_of(m, topic, partition, timestamp, tstype);
                Py_DECREF(partition);
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
        Py_XDECREF(topic);
        Py_XDECREF(timestamp);
        PyGILState_Release(gil);
        return i;
fail:
        Py_XDECREF(topic);
        Py_XDECREF(timestamp);
        PyErr_Clear();
        PyGILState_Release(gil);
        return -1;
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
        msg = message_type->tp_alloc(message_type, 0);
        if (!msg)
                return NULL;
        Py_INCREF(value);
        set_slot(msg, S_VALUE, value);
        Py_INCREF(key);
        set_slot(msg, S_KEY, key);
        Py_INCREF(args[1]);
        set_slot(msg, S_PARTITION_ID, args[1]);
        set_slot(msg, S_OFFSET, PyLong_FromLong(-1));
        Py_INCREF(Py_None);
        set_slot(msg, S_TIMESTAMP, Py_None);
        Py_INCREF(args[6]);
        set_slot(msg, S_PARTITION, args[6]);
        Py_INCREF(args[7]);
        set_slot(msg, S_TOPIC, args[7]);
        set_slot(msg, S_TSTYPE, PyLong_FromLong(0));
        Py_INCREF(Py_None);
        set_slot(msg, S_HEADERS, Py_None);
        if (compressed) {
                Py_INCREF(args[8]);
                set_slot(msg, S_COMPRESSION, args[8]);
        }
        PyObject_GC_UnTrack(msg); /* as in pyrdk_messages_append() */
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

static int set_int_slot(PyObject *msg, int slot, long long value) {
        PyObject *v = PyLong_FromLongLong(value);
        PyObject **field = (PyObject **)((char *)msg + slot_offsets[slot]);

        if (!v)
                return -1;
        Py_XSETREF(*field, v);
        return 0;
}

/* Hand cnt delivery reports without errors to their Messages, popped from the dict
 * pending: each one's partition_id, offset (-1 when the broker told none) and timestamp.
 * Reports of ids not in pending are skipped. Returns 0; or 1, touching nothing, if a
 * report has an error; or -1 if memory ran out. */
int pyrdk_messages_deliver(void *pending, const uintptr_t *ids, const int *errs, const int32_t *partitions,
                           const int64_t *offsets, const int64_t *timestamps, size_t cnt) {
        PyGILState_STATE gil = PyGILState_Ensure();
        PyObject *dict = pending;
        int ret = 0;

        for (size_t i = 0; i < cnt; i++)
                if (errs[i]) {
                        PyGILState_Release(gil);
                        return 1;
                }
        for (size_t i = 0; i < cnt && ret == 0; i++) {
                PyObject *id = PyLong_FromSize_t(ids[i]), *msg;

                if (!id) {
                        ret = -1;
                        break;
                }
                msg = PyDict_GetItemWithError(dict, id);
                Py_XINCREF(msg);
                if (msg && PyDict_DelItem(dict, id) < 0)
                        ret = -1;
                else if (msg && Py_TYPE(msg) == message_type) {
                        if (set_int_slot(msg, S_PARTITION_ID, partitions[i]) < 0 ||
                            set_int_slot(msg, S_OFFSET, offsets[i] >= 0 ? offsets[i] : -1) < 0 ||
                            set_int_slot(msg, S_TIMESTAMP, timestamps[i]) < 0)
                                ret = -1;
                } else if (msg) { /* not a Message: through its attributes */
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
                } else if (PyErr_Occurred())
                        ret = -1;
                Py_XDECREF(msg);
                Py_DECREF(id);
        }
        PyErr_Clear();
        PyGILState_Release(gil);
        return ret;
}

/* SimpleConsumer's iterator, the short way: pops the messages of its buffer (a deque),
 * setting next[partition_id] = offset + 1 for each as it is handed out; when the buffer
 * is empty, returns what refill() returns, None ending the iteration. */
typedef struct {
        PyObject_HEAD
        PyObject *buffer, *popleft, *next, *refill;
} buffer_iter_t;

static PyObject *buffer_iter_next(buffer_iter_t *it) {
        Py_ssize_t n = PyObject_Size(it->buffer);
        PyObject *msg;

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
        if (msg && mark_one(it->next, msg) < 0)
                Py_CLEAR(msg);
        return msg;
}

static int buffer_iter_traverse(buffer_iter_t *it, visitproc visit, void *arg) {
        Py_VISIT(Py_TYPE(it));
        Py_VISIT(it->buffer);
        Py_VISIT(it->popleft);
        Py_VISIT(it->next);
        Py_VISIT(it->refill);
        return 0;
}

static int buffer_iter_clear(buffer_iter_t *it) {
        Py_CLEAR(it->buffer);
        Py_CLEAR(it->popleft);
        Py_CLEAR(it->next);
        Py_CLEAR(it->refill);
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

/* buffer_iterator(buffer, next, refill) -> the iterator above. */
static PyObject *buffer_iterator(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        buffer_iter_t *it;
        PyObject *popleft;

        (void)self;
        if (nargs != 3 || !PyDict_Check(args[1]) || !PyCallable_Check(args[2])) {
                PyErr_SetString(PyExc_TypeError, "buffer_iterator(buffer, next, refill): a deque, a dict, a callable");
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
        if (!address_name && !(address_name = PyUnicode_InternFromString("address")))
                goto out;
        if (!buffer_iter_type &&
            !(buffer_iter_type = (PyTypeObject *)PyType_FromSpec(&buffer_iter_spec)))
                goto out;
        Py_INCREF(type);
        Py_XSETREF(message_type, (PyTypeObject *)type);
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

