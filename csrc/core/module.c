/* The module pyrdk._core: its state, its types, setup(), and the reading of the columns
 * pyrdk.rd hands over (memoryviews, through the buffer protocol). See core.h. */
#include <string.h>

#include "core.h"

static struct PyModuleDef core_module;

/* The module state of the module that made type or one of its bases (NULL: none). */
core_state *core_state_of_type(PyTypeObject *type) {
        for (; type; type = type->tp_base) {
                PyObject *module;

                if (!(type->tp_flags & Py_TPFLAGS_HEAPTYPE))
                        continue;
                module = ((PyHeapTypeObject *)type)->ht_module;
                if (module && PyModule_GetDef(module) == &core_module)
                        return PyModule_GetState(module);
        }
        return NULL;
}

/* Get a one-dimensional, contiguous buffer of obj whose items are itemsize bytes, of one
 * of the struct formats in formats ("@" or none for the byte order). 0, or -1 with a
 * TypeError naming what (e.g. "deliver()'s ids") and the formats wanted. */
int core_read_column(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *formats, const char *what) {
        const char *format;

        if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_ND) < 0) {
                PyErr_Format(PyExc_TypeError, "%s must be a contiguous memoryview of format '%s', not %.200s", what,
                             formats, Py_TYPE(obj)->tp_name);
                return -1;
        }
        format = view->format ? view->format : "B";
        if (format[0] == '@')
                format++;
        if (view->ndim != 1 || view->itemsize != itemsize || strlen(format) != 1 || !strchr(formats, format[0])) {
                PyErr_Format(PyExc_TypeError,
                             "%s must be a one-dimensional memoryview of format '%s' (%zd bytes an item), not "
                             "format '%s' with %d dimensions and %zd bytes an item", what, formats, itemsize,
                             view->format ? view->format : "B", view->ndim, view->itemsize);
                PyBuffer_Release(view);
                return -1;
        }
        return 0;
}

PyDoc_STRVAR(setup_doc,
             "setup($module, default_compression, remake, /)\n--\n\n"
             "What the core takes from pyrdk at import: ``CompressionType.NONE``, the ``compression_type``\n"
             "of a Message made without one; and ``remake(*args)``, which a pickled Message is loaded\n"
             "through, as a Message of the loading process's core.");

static PyObject *core_setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
        core_state *st = PyModule_GetState(module);

        if (nargs != 2) {
                PyErr_Format(PyExc_TypeError, "setup() takes 2 arguments (%zd given)", nargs);
                return NULL;
        }
        if (!PyCallable_Check(args[1])) {
                PyErr_SetString(PyExc_TypeError, "setup(): remake must be callable");
                return NULL;
        }
        Py_XSETREF(st->default_compression, Py_NewRef(args[0]));
        Py_XSETREF(st->remake, Py_NewRef(args[1]));
        Py_RETURN_NONE;
}

static PyMethodDef core_functions[] = {
        {"setup", (PyCFunction)(void (*)(void))core_setup, METH_FASTCALL, setup_doc},
        {"_remade", (PyCFunction)(void (*)(void))message_remade, METH_FASTCALL,
         "_remade($module, cls, args, /)\n--\n\nAn instance of cls, a subclass of Message, made with Message's own "
         "constructor:\nwhat a subclass's instance is unpickled through."},
        {NULL, NULL, 0, NULL},
};

static int add_type(PyObject *module, PyType_Spec *spec, PyTypeObject **out) {
        *out = (PyTypeObject *)PyType_FromModuleAndSpec(module, spec, NULL);
        return *out ? PyModule_AddType(module, *out) : -1;
}

static int core_exec(PyObject *module) {
        core_state *st = PyModule_GetState(module);

#ifdef Py_GIL_DISABLED
        (void)st;
        PyErr_SetString(PyExc_ImportError,
                        "pyrdk's C core needs the GIL, and this Python runs without one (free-threaded); "
                        "PYRDK_IMPL=python selects the pure-Python core, which runs everywhere");
        return -1;
#else
#if PY_VERSION_HEX < 0x030A0000
        PyObject *gc = PyImport_ImportModule("gc"); /* in sys.modules for core.h's PyGC_Disable() */

        if (!gc)
                return -1;
        Py_DECREF(gc);
#endif
        st->nfree = 0;
        if (!(st->datetime_api = PyCapsule_Import(PyDateTime_CAPSULE_NAME, 0)) ||
            !(st->empty_tuple = PyTuple_New(0)) ||
            add_type(module, &message_spec, &st->message_type) < 0 ||
            add_type(module, &producer_spec, &st->producer_type) < 0 ||
            add_type(module, &consumer_spec, &st->consumer_type) < 0 ||
            add_type(module, &sender_spec, &st->sender_type) < 0 ||
            !(st->iterator_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &iterator_spec, NULL)) ||
            PyModule_AddIntConstant(module, "TOPIC_MASK", TOPIC_MASK) < 0 ||
            PyModule_AddIntConstant(module, "TOPIC_SHIFT", TOPIC_SHIFT) < 0)
                return -1;
        return 0;
#endif
}

static int core_traverse(PyObject *module, visitproc visit, void *arg) {
        core_state *st = PyModule_GetState(module);

        Py_VISIT(st->message_type);
        Py_VISIT(st->producer_type);
        Py_VISIT(st->consumer_type);
        Py_VISIT(st->sender_type);
        Py_VISIT(st->iterator_type);
        Py_VISIT(st->default_compression);
        Py_VISIT(st->remake);
        return 0;
}

static int core_clear(PyObject *module) {
        core_state *st = PyModule_GetState(module);

        message_free_list_clear(st);
        Py_CLEAR(st->message_type);
        Py_CLEAR(st->producer_type);
        Py_CLEAR(st->consumer_type);
        Py_CLEAR(st->sender_type);
        Py_CLEAR(st->iterator_type);
        Py_CLEAR(st->default_compression);
        Py_CLEAR(st->remake);
        Py_CLEAR(st->empty_tuple);
        st->datetime_api = NULL;
        return 0;
}

static void core_free(void *module) {
        core_clear(module);
}

static PyModuleDef_Slot core_slots[] = {
        {Py_mod_exec, core_exec},
        {0, NULL},
};

PyDoc_STRVAR(core_doc, "pyrdk's hot-path core in C: Message, ProducerCore, ConsumerCore, SenderCore (see pyrdk.core).");

static struct PyModuleDef core_module = {
        PyModuleDef_HEAD_INIT, "pyrdk._core", core_doc, sizeof(core_state), core_functions, core_slots,
        core_traverse, core_clear, core_free,
};

PyMODINIT_FUNC PyInit__core(void) {
        return PyModuleDef_Init(&core_module);
}
