/* pyrdk._core: the C implementation of pyrdk.core's interface (the pure-Python reference is
 * pyrdk/core/pure.py, which documents each method by doing it plainly).
 *
 * A CPython extension module of its own, beside the cffi module pyrdk._rdkafka: multi-phase
 * init, heap types, everything mutable in the module state. It is compiled against
 * rdkafka.h but not linked to librdkafka: pyrdk/_loader.py opens the library with
 * RTLD_GLOBAL before pyrdk.core imports this module, and the module is linked with
 * -z now, so a symbol the loaded library lacks fails the import, never a later call.
 *
 * It relies on the GIL: a method lets no other thread in but where it calls Python code
 * (the partitioner, the general path, refill) or says it releases the GIL, and reads its
 * state again after each. It refuses to import on a free-threaded build. */
#ifndef PYRDK_CORE_H
#define PYRDK_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
/* The datetime C API's struct without the static PyDateTimeAPI pointer datetime.h would
 * otherwise define: the module state keeps the capsule's pointer instead. */
#define _PY_DATETIME_IMPL
#include <datetime.h>
#undef _PY_DATETIME_IMPL
#include <stddef.h>
#include <stdint.h>
#include <librdkafka/rdkafka.h>

#include "pyrdk_guard.h"

#if PY_VERSION_HEX < 0x030A0000
/* Py_NewRef() and Py_XNewRef() of Python 3.10, which take any object pointer as CPython's
 * own macros do. */
static inline PyObject *pyrdk_new_ref(PyObject *o) {
        Py_INCREF(o);
        return o;
}
static inline PyObject *pyrdk_xnew_ref(PyObject *o) {
        Py_XINCREF(o);
        return o;
}
#define Py_NewRef(o) pyrdk_new_ref((PyObject *)(o))
#define Py_XNewRef(o) pyrdk_xnew_ref((PyObject *)(o))
/* PyGC_Disable() and PyGC_Enable() of Python 3.10, through the gc module, taken from
 * sys.modules (PyImport_GetModule; the core imports it when it is loaded): no GC-tracked
 * object is made, so no collection runs, before the collector is off. */
static inline int pyrdk_gc_call(const char *name) {
        PyObject *key = PyUnicode_InternFromString("gc"), *gc = key ? PyImport_GetModule(key) : NULL, *r;
        int was;

        Py_XDECREF(key);
        if (!gc && !PyErr_Occurred())
                gc = PyImport_ImportModule("gc");
        r = gc ? PyObject_CallMethod(gc, name, NULL) : NULL;
        was = r ? PyObject_IsTrue(r) : 0;

        Py_XDECREF(gc);
        Py_XDECREF(r);
        PyErr_Clear();
        return was > 0;
}
static inline int PyGC_Disable(void) {
        int was = pyrdk_gc_call("isenabled");

        pyrdk_gc_call("disable");
        return was;
}
static inline int PyGC_Enable(void) {
        int was = pyrdk_gc_call("isenabled");

        pyrdk_gc_call("enable");
        return was;
}
#endif

/* Attributes and methods by an interned name. CPython 3.11's type attribute cache keeps a
 * reference to the name it was last asked for in each slot: a fresh string per call
 * (PyObject_GetAttrString's) would stay alive there, one per slot it lands in. */
static inline PyObject *core_getattr(PyObject *obj, const char *name) {
        PyObject *key = PyUnicode_InternFromString(name), *value;

        if (!key)
                return NULL;
        value = PyObject_GetAttr(obj, key);
        Py_DECREF(key);
        return value;
}
static inline int core_setattr(PyObject *obj, const char *name, PyObject *value) {
        PyObject *key = PyUnicode_InternFromString(name);
        int ret;

        if (!key)
                return -1;
        ret = PyObject_SetAttr(obj, key, value);
        Py_DECREF(key);
        return ret;
}
/* obj.name(arg), or obj.name() when arg is NULL. */
static inline PyObject *core_call_method(PyObject *obj, const char *name, PyObject *arg) {
        PyObject *key = PyUnicode_InternFromString(name), *value;

        if (!key)
                return NULL;
        value = PyObject_CallMethodObjArgs(obj, key, arg, NULL);
        Py_DECREF(key);
        return value;
}

/* SenderCore: a msg_id's bits from TOPIC_SHIFT up are the index of its topic (0: none, at most
 * TOPIC_MASK), the bits below a sequence number: ids in sequence hash to consecutive slots of
 * the producer's table (a dict), where the index in the low bits spread them 64 apart, and
 * collided. pyrdk._core.TOPIC_MASK and TOPIC_SHIFT. */
enum { TOPIC_MASK = 63, TOPIC_SHIFT = 58 };
#define TOPIC_OF(id) (((uint64_t)(id) >> TOPIC_SHIFT) & TOPIC_MASK)
#define SEQ_OF(id) ((uint64_t)(id) & ((UINT64_C(1) << TOPIC_SHIFT) - 1))

/* Freed Messages kept for reuse (see message.c). */
enum { MESSAGE_FREE_MAX = 1024 };

typedef struct {
        PyTypeObject *message_type;
        PyTypeObject *producer_type;
        PyTypeObject *consumer_type;
        PyTypeObject *sender_type;
        PyTypeObject *iterator_type;
        PyObject *default_compression; /* CompressionType.NONE, given by setup() */
        PyObject *remake; /* pyrdk.core's maker of a pickled Message, given by setup() */
        PyDateTime_CAPI *datetime_api;  /* from the datetime module's capsule */
        PyObject *empty_tuple;
        PyObject *free_messages[MESSAGE_FREE_MAX];
        int nfree;
} core_state;

/* pyrdk.common.Message's fields; the integer ones as C integers. Object fields are NULL
 * only where a default stands: compression (the state's default_compression), headers
 * (an empty list made on first use, or parsed from c_headers), produce_attempt (0). */
typedef struct {
        PyObject_HEAD
        PyObject *value;
        PyObject *key;
        PyObject *partition;
        PyObject *topic;
        PyObject *headers;
        PyObject *compression;
        PyObject *produce_attempt;
        PyObject *delivery_report_q;
        rd_kafka_headers_t *c_headers; /* a consumed message's, detached, parsed on first use */
        struct producer_s *core; /* the ProducerCore whose table lists it without a reference */
        uint64_t id;             /* (and its id there), or NULL */
        int64_t offset;
        int64_t timestamp;
        int32_t partition_id;
        int32_t timestamp_type;
        int has_timestamp; /* 0: timestamp is None */
} message_t;

/* module.c */
core_state *core_state_of_type(PyTypeObject *type);
int core_read_column(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *formats,
                     const char *what);

/* message.c */
extern PyType_Spec message_spec;
message_t *message_new(core_state *st);
PyObject *message_consumed(core_state *st, rd_kafka_message_t *m, PyObject *topic, PyObject *partition);
/* The last timestamp and value size message_record() made an int of, to share it with the
 * next record of the same (a batch's records often have one timestamp and one size). */
typedef struct {
        PyObject *timestamp, *value_size; /* NULL, or a reference */
        int64_t timestamp_value;
        int64_t value_size_value;
} record_ints_t;

PyObject *message_record(core_state *st, const rd_kafka_message_t *m, PyTypeObject *record_type, PyObject *topic,
                         PyObject *partition, record_ints_t *last);
void message_free_list_clear(core_state *st);
PyObject *message_remade(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
int message_set_int(const char *name, PyObject *value, int bits, int64_t *out);

/* producer.c, consumer.c, sender.c */
void producer_forget(struct producer_s *core, uint64_t id);
extern PyType_Spec producer_spec;
extern PyType_Spec consumer_spec;
extern PyType_Spec sender_spec;
extern PyType_Spec iterator_spec;

#endif
