/* SenderCore: the per-record work of pyrdk.aio's producer (see SenderCore in
 * pyrdk/core/pure.py, which this follows step by step): a record to librdkafka in one call
 * (rd_kafka_producev, copied), send()'s common record made pending with its future in one
 * call (send_record()), and a batch of delivery reports resolved into the futures send()
 * returned.
 *
 * Given a keep list (the Handle's, which it empties once rd_kafka_destroy has returned),
 * send_record() hands values over without RD_KAFKA_MSG_F_COPY: librdkafka reads each in
 * place until the record's delivery report, and the core holds it until deliver() sees that
 * report, in a ring indexed by send_record()'s sequence (SEQ_OF(msg_id)). What it
 * still holds when it is cleared goes to the keep list. Should the oldest held be HELD_MAX
 * records behind, it copies rather than grow the ring further.
 *
 * It holds the Handle that owns the rd_kafka_t, its topic handles and the use guard
 * (csrc/pyrdk_guard.h), so that their addresses stay good, and enters the guard around each
 * librdkafka call: once the Handle is closed the guard refuses, and so does the core. */
#include "core.h"

/* A value send_record() handed to librdkafka without a copy, held until the record's report. */
typedef struct {
        uint64_t id;     /* its msg_id; 0: a free slot */
        PyObject *value; /* a reference */
} held_t;

typedef struct {
        PyObject_HEAD
        PyObject *owner;      /* the Handle: keeps rk, the topic handles and guard alive */
        PyObject *topics;     /* dict {topic name: (rd_kafka_topic_t address, its index or 0)} */
        PyObject *names;      /* list: the topic of each index add_topic() gave, [0] None */
        PyObject *pending;    /* bind()'s: send_record()'s table, its future maker and loop */
        PyObject *make, *loop;
        PyObject *make_args, *make_kw; /* (), and {"loop": loop} or NULL: make(loop=loop) */
        rd_kafka_t *rk;
        pyrdk_guard_t *guard; /* NULL once cleared */
        size_t max_size;
        PyObject *keep;       /* NULL (values copied), or the list held values go to when let go unreported */
        held_t *held;         /* send_record()'s values librdkafka reads in place, a ring of nheld */
        size_t nheld;         /* 0 or a power of two */
        size_t nheld_used;    /* the values held */
        uint64_t oldest;      /* no seq below this is held */
        uint64_t seq;         /* send_record()'s last SEQ_OF(msg_id) */
        uint64_t calls;       /* send_record()'s calls, to say when to yield */
        uint64_t yield_every;
} sender_t;

enum {
        HELD_MAX = 1 << 22,     /* the most records from the oldest held to the newest (64 MB of ring) */
};

static void *sender_address(PyObject *arg, const char *what) {
        void *p = PyLong_Check(arg) ? PyLong_AsVoidPtr(arg) : NULL;

        if (!p && !PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "SenderCore: %s must be a non-zero address (an int from "
                             "Handle.addresses()), not %R", what, arg);
        return p;
}

static PyObject *sender_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
        static const char *const names[] = {"owner", "rk", "guard", "max_size", "keep", NULL};
        PyObject *owner, *rk, *guard, *keep = Py_None;
        Py_ssize_t max_size;
        sender_t *self;

        if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOn|O:SenderCore", (char **)names, &owner, &rk, &guard,
                                         &max_size, &keep))
                return NULL;
        if (max_size < 0) {
                PyErr_Format(PyExc_ValueError, "SenderCore: max_size must be >= 0, not %zd", max_size);
                return NULL;
        }
        if (keep != Py_None && !PyList_CheckExact(keep)) {
                PyErr_Format(PyExc_TypeError, "SenderCore: keep must be a list or None, not %.200s",
                             Py_TYPE(keep)->tp_name);
                return NULL;
        }
        if (!(self = (sender_t *)type->tp_alloc(type, 0)))
                return NULL;
        self->owner = Py_NewRef(owner);
        self->max_size = (size_t)max_size;
        self->keep = keep == Py_None ? NULL : Py_NewRef(keep);
        if (!(self->topics = PyDict_New()) || !(self->names = PyList_New(1)) ||
            !(self->make_args = PyTuple_New(0)) || !(self->rk = sender_address(rk, "rk")) ||
            !(self->guard = sender_address(guard, "guard"))) {
                Py_DECREF(self);
                return NULL;
        }
        PyList_SET_ITEM(self->names, 0, Py_NewRef(Py_None));
        return (PyObject *)self;
}

PyDoc_STRVAR(add_topic_doc,
             "add_topic($self, topic, rkt, /)\n--\n\n"
             "-> index\n"
             "Let send() produce to topic (a str) through its rd_kafka_topic_t (an address from\n"
             "Handle.addresses()); the topic's index (1 to TOPIC_MASK) that msg_id >> TOPIC_SHIFT names in\n"
             "deliver(), or 0 once TOPIC_MASK topics have one.");

static PyObject *sender_add_topic(sender_t *self, PyObject *const *args, Py_ssize_t nargs) {
        Py_ssize_t index = 0;
        PyObject *entry;
        int stored;

        if (nargs != 2) {
                PyErr_Format(PyExc_TypeError, "add_topic(topic, rkt) takes 2 arguments (%zd given)", nargs);
                return NULL;
        }
        if (!PyUnicode_CheckExact(args[0])) {
                PyErr_Format(PyExc_TypeError, "add_topic(): topic must be a str, not %.200s", Py_TYPE(args[0])->tp_name);
                return NULL;
        }
        if (!sender_address(args[1], "rkt"))
                return NULL;
        if ((entry = PyDict_GetItemWithError(self->topics, args[0]))) /* added before: its index stays */
                index = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 1));
        else if (PyErr_Occurred())
                return NULL;
        if (!index && PyList_GET_SIZE(self->names) <= TOPIC_MASK) {
                if (PyList_Append(self->names, args[0]) < 0)
                        return NULL;
                index = PyList_GET_SIZE(self->names) - 1;
        }
        if (!(entry = Py_BuildValue("(On)", args[1], index)))
                return NULL;
        stored = PyDict_SetItem(self->topics, args[0], entry);
        Py_DECREF(entry);
        return stored < 0 ? NULL : PyLong_FromSsize_t(index);
}

/* bytes or None: its data and size (NULL, 0 for None). 0, or -1 with a TypeError. */
static int bytes_arg(PyObject *obj, const char *what, const char **data, size_t *size) {
        if (obj == Py_None) {
                *data = NULL;
                *size = 0;
                return 0;
        }
        if (!PyBytes_CheckExact(obj)) {
                PyErr_Format(PyExc_TypeError, "send(): the %s must be bytes or None, not %.200s", what,
                             Py_TYPE(obj)->tp_name);
                return -1;
        }
        *data = PyBytes_AS_STRING(obj);
        *size = (size_t)PyBytes_GET_SIZE(obj);
        return 0;
}

PyDoc_STRVAR(send_doc,
             "send($self, topic, partition, value, key, msg_id, /)\n--\n\n"
             "-> err\n"
             "One record through ``rd_kafka_producev`` (copied), ``msg_id`` its delivery report's opaque:\n"
             "0, or librdkafka's code refusing it (MSG_SIZE_TOO_LARGE above max_size; PYRDK_ERR_CLOSED once\n"
             "the handle is closed). ``partition`` -1: librdkafka's partitioner chooses. A topic not\n"
             "added (add_topic()) raises KeyError. The record's future, in the producer's table, stays\n"
             "under the cyclic GC (send_record()'s are left out of it).");

static PyObject *sender_send(sender_t *self, PyObject *const *args, Py_ssize_t nargs) {
        const char *value, *key;
        size_t value_len, key_len;
        PyObject *rkt_obj;
        rd_kafka_topic_t *rkt;
        long partition;
        uint64_t id;
        int err;

        if (nargs != 5) {
                PyErr_Format(PyExc_TypeError, "send(topic, partition, value, key, msg_id) takes 5 arguments (%zd given)",
                             nargs);
                return NULL;
        }
        if (!(rkt_obj = PyDict_GetItemWithError(self->topics, args[0]))) {
                if (!PyErr_Occurred())
                        PyErr_Format(PyExc_KeyError, "send(): topic %R was not added (add_topic())", args[0]);
                return NULL;
        }
        rkt = PyLong_AsVoidPtr(PyTuple_GET_ITEM(rkt_obj, 0));
        partition = PyLong_Check(args[1]) ? PyLong_AsLong(args[1]) : (PyErr_Format(PyExc_TypeError,
                    "send(): partition must be an int, not %.200s", Py_TYPE(args[1])->tp_name), -1);
        if (partition == -1 && PyErr_Occurred())
                return NULL;
        if (partition < -1 || partition > INT32_MAX) {
                PyErr_Format(PyExc_ValueError, "send(): partition must be -1 or a partition id, not %ld", partition);
                return NULL;
        }
        if (bytes_arg(args[2], "value", &value, &value_len) < 0 || bytes_arg(args[3], "key", &key, &key_len) < 0)
                return NULL;
        if (!PyLong_Check(args[4]) || (id = PyLong_AsUnsignedLongLong(args[4])) == (uint64_t)-1 || id == 0) {
                if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
                        PyErr_Clear();
                        PyErr_Format(PyExc_ValueError, "send(): msg_id must be an int > 0, not %R", args[4]);
                }
                return NULL;
        }
        if (value_len + key_len > self->max_size)
                err = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
        else if (!self->guard || !pyrdk_guard_enter(self->guard))
                err = PYRDK_ERR_CLOSED;
        else {
                err = rd_kafka_producev(self->rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION((int32_t)partition),
                                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                        RD_KAFKA_V_VALUE((void *)value, value_len), RD_KAFKA_V_KEY(key, key_len),
                                        RD_KAFKA_V_OPAQUE((void *)(uintptr_t)id), RD_KAFKA_V_END);
                pyrdk_guard_leave(self->guard);
        }
        return PyLong_FromLong(err);
}

/* -- the values held for librdkafka ------------------------------------------------------ */

static held_t *held_slot(sender_t *self, uint64_t seq) {
        return &self->held[seq & (self->nheld - 1)];
}

/* Let the value of report id go: librdkafka is done with it. */
static void held_release(sender_t *self, uint64_t id) {
        uint64_t seq = SEQ_OF(id);
        held_t *h;
        PyObject *value;

        if (!self->nheld || !TOPIC_OF(id) || seq < self->oldest || seq > self->seq || (h = held_slot(self, seq))->id != id)
                return;
        value = h->value;
        h->id = 0;
        h->value = NULL;
        self->nheld_used--;
        while (self->oldest <= self->seq && !held_slot(self, self->oldest)->id)
                self->oldest++;
        Py_DECREF(value); /* bytes: no Python code runs */
}

/* Room for seq in the ring: 0; 1 when the ring would outgrow HELD_MAX; -1 with MemoryError. */
static int held_room(sender_t *self, uint64_t seq) {
        size_t n;
        held_t *ring;

        if (!self->nheld_used)
                self->oldest = seq; /* none held: the ring starts again here */
        if (self->nheld && seq - self->oldest < self->nheld)
                return 0;
        if (seq - self->oldest >= HELD_MAX)
                return 1; /* the oldest report is that far behind: copy instead */
        n = self->nheld ? self->nheld * 2 : 1024;
        while (seq - self->oldest >= n)
                n *= 2;
        if (!(ring = PyMem_Calloc(n, sizeof(*ring)))) {
                PyErr_NoMemory();
                return -1;
        }
        for (uint64_t s = self->oldest; self->nheld && s < seq; s++) {
                held_t *h = held_slot(self, s);

                if (h->id && SEQ_OF(h->id) == s)
                        ring[s & (n - 1)] = *h;
        }
        PyMem_Free(self->held);
        self->held = ring;
        self->nheld = n;
        return 0;
}

/* Every value still held goes to the keep list (the Handle lets go of it once rd_kafka_destroy
 * has returned); one the list does not take is leaked rather than freed under librdkafka's feet. */
static void held_let_go(sender_t *self) {
        PyObject *type, *exc, *tb;

        PyErr_Fetch(&type, &exc, &tb);
        for (size_t i = 0; i < self->nheld; i++) {
                PyObject *value = self->held[i].value;

                if (!value)
                        continue;
                self->held[i].id = 0;
                self->held[i].value = NULL;
                if (!self->keep || PyList_Append(self->keep, value) < 0)
                        PyErr_Clear();
                else
                        Py_DECREF(value);
        }
        PyErr_Restore(type, exc, tb);
        PyMem_Free(self->held);
        self->held = NULL;
        self->nheld = self->nheld_used = 0;
}

PyDoc_STRVAR(bind_doc,
             "bind($self, pending, make, loop, yield_every, /)\n--\n\n"
             "What send_record() works with: the producer's table of pending records ({msg_id: future}),\n"
             "how to make a future (``make(loop=loop)``, or ``make()`` when loop is None), and how often\n"
             "to let the event loop run other tasks (every ``yield_every`` calls, > 1: the call after one that\n"
             "said so never says so).");

static PyObject *sender_bind(sender_t *self, PyObject *const *args, Py_ssize_t nargs) {
        PyObject *kw;
        Py_ssize_t every;

        if (nargs != 4) {
                PyErr_Format(PyExc_TypeError, "bind(pending, make, loop, yield_every) takes 4 arguments (%zd given)",
                             nargs);
                return NULL;
        }
        if (!PyDict_CheckExact(args[0])) {
                PyErr_Format(PyExc_TypeError, "bind(): pending must be a dict, not %.200s", Py_TYPE(args[0])->tp_name);
                return NULL;
        }
        if (!PyCallable_Check(args[1])) {
                PyErr_Format(PyExc_TypeError, "bind(): make must be callable, not %.200s", Py_TYPE(args[1])->tp_name);
                return NULL;
        }
        every = PyLong_Check(args[3]) ? PyLong_AsSsize_t(args[3]) : -1;
        if (every <= 1) {
                if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
                        PyErr_Clear();
                        PyErr_Format(PyExc_ValueError, "bind(): yield_every must be an int > 1, not %R", args[3]);
                }
                return NULL;
        }
        if (args[2] == Py_None)
                kw = NULL;
        else if (!(kw = Py_BuildValue("{sO}", "loop", args[2])))
                return NULL;
        Py_XSETREF(self->make_kw, kw); /* a dict made once: type calls take it as it is */
        Py_XSETREF(self->pending, Py_NewRef(args[0]));
        Py_XSETREF(self->make, Py_NewRef(args[1]));
        Py_XSETREF(self->loop, Py_NewRef(args[2]));
        self->yield_every = (uint64_t)every;
        Py_RETURN_NONE;
}

PyDoc_STRVAR(send_record_doc,
             "send_record($self, topic, value, key, /)\n--\n\n"
             "-> future, None or False\n"
             "send()'s common record in one call: to an added topic (a str) with an index, value and key\n"
             "bytes or None, librdkafka's partitioner choosing. A new future, pending in bind()'s table under a\n"
             "new msg_id naming the topic's index, and the record through ``rd_kafka_producev`` (given a keep\n"
             "list, the value held until its report rather than copied).\n"
             "None, having done nothing, for any other record, one librdkafka refuses (a full queue too),\n"
             "or a closed handle: send()'s general path takes it. False, having done nothing, once every\n"
             "yield_every calls: let the loop run, then call again. The future is left out of the cyclic\n"
             "GC until deliver() or release() hands it back.");

static PyObject *sender_send_record(sender_t *self, PyObject *const *args, Py_ssize_t nargs) {
        PyObject *topic, *value, *key, *entry, *fut, *id_obj, *pending;
        held_t *held;
        int room = 0;
        const char *key_data = NULL;
        size_t value_len = 0, key_len = 0;
        rd_kafka_topic_t *rkt;
        uintptr_t index;
        uint64_t id;
        int err;

        if (nargs != 3) {
                PyErr_Format(PyExc_TypeError, "send_record(topic, value, key) takes 3 arguments (%zd given)", nargs);
                return NULL;
        }
        if (!self->pending) {
                PyErr_SetString(PyExc_RuntimeError, "send_record(): bind() the producer's table first");
                return NULL;
        }
        topic = args[0];
        value = args[1];
        key = args[2];
        if (!PyUnicode_CheckExact(topic) || (value != Py_None && !PyBytes_CheckExact(value)) ||
            (key != Py_None && !PyBytes_CheckExact(key)))
                Py_RETURN_NONE;
        if (!(entry = PyDict_GetItemWithError(self->topics, topic)))
                return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        if (!(index = (uintptr_t)PyLong_AsSize_t(PyTuple_GET_ITEM(entry, 1))) || index > TOPIC_MASK) {
                PyErr_Clear();
                Py_RETURN_NONE;
        }
        if (value != Py_None)
                value_len = (size_t)PyBytes_GET_SIZE(value);
        if (key != Py_None) {
                key_data = PyBytes_AS_STRING(key);
                key_len = (size_t)PyBytes_GET_SIZE(key);
        }
        if (value_len + key_len > self->max_size || !self->guard || pyrdk_guard_closing(self->guard))
                Py_RETURN_NONE;
        if (++self->calls % self->yield_every == 0)
                Py_RETURN_FALSE;
        rkt = PyLong_AsVoidPtr(PyTuple_GET_ITEM(entry, 0));
        /* May run Python code: what is needed of the state is read above, and the maker and
         * its arguments are held (a bind() meanwhile would let go of them). */
        {
                PyObject *make = Py_NewRef(self->make), *make_args = Py_NewRef(self->make_args);
                PyObject *make_kw = Py_XNewRef(self->make_kw);

                fut = PyObject_Call(make, make_args, make_kw);
                Py_DECREF(make);
                Py_DECREF(make_args);
                Py_XDECREF(make_kw);
        }
        if (!fut)
                return NULL;
        if (!self->pending || !self->guard) { /* cleared meanwhile */
                Py_DECREF(fut);
                Py_RETURN_NONE;
        }
        /* Without a copy when the value can be held until the record's report. */
        if ((room = self->keep && value != Py_None ? held_room(self, self->seq + 1) : 1) < 0) {
                Py_DECREF(fut);
                return NULL;
        }
        pending = Py_NewRef(self->pending);
        id = (uint64_t)index << TOPIC_SHIFT | (self->seq + 1);
        if (!(id_obj = PyLong_FromUnsignedLongLong(id)) || PyDict_SetItem(pending, id_obj, fut) < 0) {
                Py_XDECREF(id_obj);
                Py_DECREF(fut);
                Py_DECREF(pending);
                return NULL;
        }
        self->seq++;
        held = room == 0 ? held_slot(self, self->seq) : NULL;
        if (!pyrdk_guard_enter(self->guard))
                err = PYRDK_ERR_CLOSED;
        else {
                err = rd_kafka_producev(self->rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
                                        RD_KAFKA_V_MSGFLAGS(held ? 0 : RD_KAFKA_MSG_F_COPY),
                                        RD_KAFKA_V_VALUE(value == Py_None ? NULL : PyBytes_AS_STRING(value), value_len),
                                        RD_KAFKA_V_KEY(key_data, key_len),
                                        RD_KAFKA_V_OPAQUE((void *)(uintptr_t)id), RD_KAFKA_V_END);
                pyrdk_guard_leave(self->guard);
        }
        if (err) { /* not taken: the general path tries it again and says why */
                int gone = PyDict_DelItem(pending, id_obj);

                Py_DECREF(pending);
                Py_DECREF(id_obj);
                Py_DECREF(fut);
                return gone < 0 ? NULL : Py_NewRef(Py_None);
        }
        if (held) {
                held->id = id;
                held->value = Py_NewRef(value);
                self->nheld_used++;
        }
        Py_DECREF(pending);
        Py_DECREF(id_obj);
        if (PyObject_IS_GC(fut) && PyObject_GC_IsTracked(fut))
                PyObject_GC_UnTrack(fut); /* pending: held by the producer's table until its report */
        return fut;
}

/* Hand a future send_record() left out of the cyclic GC back to it. */
static void retrack(PyObject *fut) {
        if (PyObject_IS_GC(fut) && !PyObject_GC_IsTracked(fut))
                PyObject_GC_Track(fut);
}

PyDoc_STRVAR(release_doc,
             "release($self, future, /)\n--\n\n"
             "A future send_record() made that leaves the producer's table another way than deliver(): back\n"
             "under the cyclic GC.");

static PyObject *sender_release(sender_t *self, PyObject *fut) {
        (void)self;
        retrack(fut);
        Py_RETURN_NONE;
}

PyDoc_STRVAR(deliver_doc,
             "deliver($self, pending, ids, errs, partitions, offsets, timestamps, metadata, partition, /)\n--\n\n"
             "-> [(future, topic, err)]\n"
             "A batch of delivery reports (memoryviews, as pyrdk.rd.callbacks drains them) into the futures\n"
             "of ``pending`` ({msg_id: (future, topic, timestamp_ms or None)}, or {msg_id: future} where\n"
             "msg_id >> TOPIC_SHIFT is the index add_topic() gave the topic): each report's entry leaves\n"
             "pending, its future back under the cyclic GC; a delivered record's future, unless done, gets ``metadata(topic, partition,\n"
             "partition(topic, partition), offset, timestamp, 0, None)`` (the timestamp: timestamp_ms when\n"
             "one was given, else the report's), left out of the cyclic GC when its fields are immutable.\n"
             "Returns the failed ones, for the caller to fail.");

static PyObject *sender_deliver(sender_t *self, PyObject *const *args, Py_ssize_t nargs) {
        PyObject *pending, *failed = NULL, *done_name = NULL, *set_name = NULL, *tp = NULL, *result = NULL;
        PyTypeObject *md_type, *tp_type;
        Py_buffer views[5];
        int nviews = 0;
        Py_ssize_t n;
        static const char *const what[] = {"deliver()'s ids", "deliver()'s errs", "deliver()'s partitions",
                                           "deliver()'s offsets", "deliver()'s timestamps"};
        static const Py_ssize_t sizes[] = {sizeof(uintptr_t), sizeof(int), sizeof(int32_t), sizeof(int64_t),
                                           sizeof(int64_t)};
        static const char *const formats[] = {"LQ", "i", "i", "q", "q"};

        if (nargs != 8) {
                PyErr_Format(PyExc_TypeError, "deliver() takes 8 arguments (%zd given)", nargs);
                return NULL;
        }
        pending = args[0];
        if (!PyDict_Check(pending)) {
                PyErr_Format(PyExc_TypeError, "deliver(): pending must be a dict, not %.200s", Py_TYPE(pending)->tp_name);
                return NULL;
        }
        for (int i = 6; i < 8; i++) {
                if (!PyType_Check(args[i]) || !PyType_IsSubtype((PyTypeObject *)args[i], &PyTuple_Type) ||
                    ((PyTypeObject *)args[i])->tp_basicsize != PyTuple_Type.tp_basicsize) {
                        PyErr_Format(PyExc_TypeError, "deliver(): %s must be a namedtuple class, not %R",
                                     i == 6 ? "metadata" : "partition", args[i]);
                        return NULL;
                }
        }
        md_type = (PyTypeObject *)args[6];
        tp_type = (PyTypeObject *)args[7];
        for (; nviews < 5; nviews++) {
                if (core_read_column(args[1 + nviews], &views[nviews], sizes[nviews], formats[nviews], what[nviews]) < 0)
                        goto done;
        }
        n = views[0].len / views[0].itemsize;
        for (int i = 1; i < 5; i++) {
                if (views[i].len / views[i].itemsize != n) {
                        PyErr_SetString(PyExc_ValueError, "deliver(): the columns must be of one length");
                        goto done;
                }
        }
        if (!(failed = PyList_New(0)) || !(done_name = PyUnicode_InternFromString("done")) ||
            !(set_name = PyUnicode_InternFromString("set_result")))
                goto done;
        {
                const uintptr_t *ids = views[0].buf;
                const int *errs = views[1].buf;
                const int32_t *parts = views[2].buf;
                const int64_t *offsets = views[3].buf, *timestamps = views[4].buf;
                PyObject *tp_topic = NULL; /* tp's topic (borrowed from tp) */
                int32_t tp_part = -1;

                for (Py_ssize_t i = 0; i < n; i++)
                        held_release(self, ids[i]); /* librdkafka is done with these values */

                for (Py_ssize_t i = 0; i < n; i++) {
                        PyObject *key = PyLong_FromUnsignedLongLong(ids[i]), *entry, *fut, *topic, *ts, *is_done;
                        PyObject *md, *items[7], *ret;
                        int done_flag;

                        if (!key)
                                goto done;
                        entry = PyDict_GetItemWithError(pending, key);
                        if (!entry) {
                                Py_DECREF(key);
                                if (PyErr_Occurred())
                                        goto done;
                                continue;
                        }
                        Py_INCREF(entry);
                        if (PyDict_DelItem(pending, key) < 0) {
                                Py_DECREF(key);
                                Py_DECREF(entry);
                                goto done;
                        }
                        Py_DECREF(key);
                        if (!PyTuple_Check(entry) && TOPIC_OF(ids[i]) &&
                            TOPIC_OF(ids[i]) < (uint64_t)PyList_GET_SIZE(self->names)) {
                                fut = entry; /* the topic by its index */
                                topic = PyList_GET_ITEM(self->names, (Py_ssize_t)TOPIC_OF(ids[i]));
                                ts = Py_None;
                        } else if (PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 3) {
                                fut = PyTuple_GET_ITEM(entry, 0);
                                topic = PyTuple_GET_ITEM(entry, 1);
                                ts = PyTuple_GET_ITEM(entry, 2);
                        } else {
                                PyErr_Format(PyExc_TypeError, "deliver(): pending's values must be "
                                             "(future, topic, timestamp_ms), or a future where the msg_id names "
                                             "a topic, not %R", entry);
                                retrack(entry);
                                Py_DECREF(entry);
                                goto done;
                        }
                        retrack(fut);
                        if (!(is_done = PyObject_CallMethodNoArgs(fut, done_name))) {
                                Py_DECREF(entry);
                                goto done;
                        }
                        done_flag = PyObject_IsTrue(is_done);
                        Py_DECREF(is_done);
                        if (done_flag) { /* cancelled by the program: nothing to tell */
                                Py_DECREF(entry);
                                if (done_flag < 0)
                                        goto done;
                                continue;
                        }
                        if (errs[i]) {
                                PyObject *item = Py_BuildValue("(OOi)", fut, topic, (int)errs[i]);

                                Py_DECREF(entry);
                                if (!item || PyList_Append(failed, item) < 0) {
                                        Py_XDECREF(item);
                                        goto done;
                                }
                                Py_DECREF(item);
                                continue;
                        }
                        if (!tp || tp_topic != topic || tp_part != parts[i]) { /* one per run of a partition's */
                                PyObject *made = tp_type->tp_alloc(tp_type, 2), *pid = PyLong_FromLong(parts[i]);

                                if (!made || !pid) {
                                        Py_XDECREF(made);
                                        Py_XDECREF(pid);
                                        Py_DECREF(entry);
                                        goto done;
                                }
                                PyTuple_SET_ITEM(made, 0, Py_NewRef(topic));
                                PyTuple_SET_ITEM(made, 1, pid);
                                if (PyUnicode_CheckExact(topic))
                                        PyObject_GC_UnTrack(made); /* a str and an int: in no cycle */
                                Py_XSETREF(tp, made);
                                tp_topic = topic;
                                tp_part = parts[i];
                        }
                        items[0] = Py_NewRef(topic);
                        items[1] = Py_NewRef(PyTuple_GET_ITEM(tp, 1));
                        items[2] = Py_NewRef(tp);
                        items[3] = PyLong_FromLongLong(offsets[i]);
                        items[4] = ts == Py_None ? PyLong_FromLongLong(timestamps[i]) : Py_NewRef(ts);
                        items[5] = PyLong_FromLong(0);
                        items[6] = Py_NewRef(Py_None);
                        md = md_type->tp_alloc(md_type, 7);
                        if (!md || !items[3] || !items[4] || !items[5]) {
                                for (int k = 0; k < 7; k++)
                                        Py_XDECREF(items[k]);
                                Py_XDECREF(md);
                                Py_DECREF(entry);
                                goto done;
                        }
                        for (int k = 0; k < 7; k++)
                                PyTuple_SET_ITEM(md, k, items[k]);
                        if (!PyObject_GC_IsTracked(tp) && !PyObject_GC_IsTracked(items[4]))
                                PyObject_GC_UnTrack(md); /* immutable fields only: in no cycle */
                        ret = PyObject_CallMethodOneArg(fut, set_name, md);
                        Py_DECREF(md);
                        Py_DECREF(entry);
                        if (!ret)
                                goto done;
                        Py_DECREF(ret);
                }
        }
        result = Py_NewRef(failed);
done:
        Py_XDECREF(tp);
        Py_XDECREF(failed);
        Py_XDECREF(done_name);
        Py_XDECREF(set_name);
        while (nviews > 0)
                PyBuffer_Release(&views[--nviews]);
        return result;
}

static int sender_traverse(sender_t *self, visitproc visit, void *arg) {
        Py_VISIT(Py_TYPE(self));
        Py_VISIT(self->owner);
        Py_VISIT(self->topics);
        Py_VISIT(self->names);
        Py_VISIT(self->pending);
        Py_VISIT(self->make);
        Py_VISIT(self->loop);
        Py_VISIT(self->make_kw);
        Py_VISIT(self->keep);
        return 0;
}

static int sender_clear(sender_t *self) {
        self->guard = NULL; /* the owner may go: never call librdkafka again */
        held_let_go(self);
        Py_CLEAR(self->keep);
        Py_CLEAR(self->owner);
        Py_CLEAR(self->topics);
        Py_CLEAR(self->names);
        Py_CLEAR(self->pending);
        Py_CLEAR(self->make);
        Py_CLEAR(self->loop);
        Py_CLEAR(self->make_args);
        Py_CLEAR(self->make_kw);
        return 0;
}

static void sender_dealloc(sender_t *self) {
        PyTypeObject *type = Py_TYPE(self);

        PyObject_GC_UnTrack(self);
        sender_clear(self);
        type->tp_free(self);
        Py_DECREF(type);
}

static PyMethodDef sender_methods[] = {
        {"add_topic", (PyCFunction)(void (*)(void))sender_add_topic, METH_FASTCALL, add_topic_doc},
        {"send", (PyCFunction)(void (*)(void))sender_send, METH_FASTCALL, send_doc},
        {"bind", (PyCFunction)(void (*)(void))sender_bind, METH_FASTCALL, bind_doc},
        {"send_record", (PyCFunction)(void (*)(void))sender_send_record, METH_FASTCALL, send_record_doc},
        {"deliver", (PyCFunction)(void (*)(void))sender_deliver, METH_FASTCALL, deliver_doc},
        {"release", (PyCFunction)sender_release, METH_O, release_doc},
        {NULL, NULL, 0, NULL},
};

static PyType_Slot sender_slots[] = {
        {Py_tp_doc, "SenderCore(owner, rk, guard, max_size, keep=None)\n--\n\nThe asyncio producer's core (see pyrdk.core)."},
        {Py_tp_new, sender_new},
        {Py_tp_dealloc, sender_dealloc},
        {Py_tp_traverse, sender_traverse},
        {Py_tp_clear, sender_clear},
        {Py_tp_methods, sender_methods},
        {0, NULL},
};

PyType_Spec sender_spec = {
        "pyrdk._core.SenderCore", sizeof(sender_t), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, sender_slots,
};
