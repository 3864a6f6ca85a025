/* _em_op_ring: the recorder's per-op path in C (see profilers/native.py).
 *
 * With a recorder as the only op listener, dispatch hands each eager op to an OpRing
 * instead of building an OpEvent. The ring writes five integers per op into a
 * preallocated buffer: (seq, site, start_ns, end_ns, bytes). Everything else an op row
 * holds (op name, input and output types, device, scope, source line, attrs) is the op's
 * *site*: the first op with a new combination registers it (a Python tuple described as
 * an OpEvent would describe it), the writer thread formats its texts once, and every
 * later op with the same site costs a hash of those facts and a table lookup. No Python
 * object is created per op.
 *
 * The writer thread (SessionWriter) takes the ring's head, then the sites registered so
 * far, and writes the records up to that head: through its own SQLite connection with
 * the GIL released (``write``, when SQLite's library could be found), or as Python rows
 * (``take``). Records are consumed in order; the producer never overwrites a record
 * before the writer has moved the tail past it: on a full ring it waits for the writer
 * with the GIL released (wait_for_room, timed). It returns False (the op then takes the
 * Python path) when the op is one the ring does not describe: another thread, a
 * non-NumPy array, a scalar or attribute of a type it does not encode; or when the
 * writer made no room for two seconds.
 *
 * Threads: the producer runs with the GIL held (any Python thread, but only the main
 * thread's ops are accepted). The writer reads records and site texts without the GIL;
 * head and tail are atomics, and a site is read by the writer only after the writer
 * itself set its texts (``set_site``), under the GIL, after the site's registration.
 * Sites live in fixed chunks that never move, so a registration in progress on the
 * producer never invalidates a site the writer is reading.
 */
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <frameobject.h>
#include <structmember.h>
#include <numpy/arrayobject.h>
#include "em_native.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* The parts, in the order they build on each other. */
#include "op_ring_sqlite.h"     /* SQLite's functions, from the library already loaded */
#include "op_ring_records.h"    /* the records, the sites' layout, the OpRing object */
#include "op_ring_sites.h"      /* an op's key, the user's frame, the site table */
#include "cpu_memory.h"         /* CpuMemory: the CPU's live and peak bytes */
#include "op_ring_producer.h"   /* recording an op on the script's thread */
#include "op_ring_writer.h"     /* the writer thread's side: sites, records, SQLite */

/* --- the type ----------------------------------------------------------------------- */

/* Writes a zero into every page of [p, p + n): memory that calloc gave zeroed stays
 * zeroed. */
static void
prefault(void *p, size_t n)
{
    volatile char *c = (volatile char *)p;
    for (size_t i = 0; i < n; i += 4096)
        c[i] = 0;
}

static int
OpRing_init(OpRing *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"capacity", "seq", "scope_state", "is_internal", "location_of",
                            "cpu", "tensor_type", "data_slot", "main_ident", "memory",
                            "wake", "seq_base", NULL};
    Py_ssize_t capacity;
    PyObject *seq, *scope_state, *is_internal, *location_of, *cpu, *tensor_type, *data_slot;
    unsigned long main_ident;
    PyObject *memory = Py_None, *wake = Py_None;
    long long seq_base = 0;
    if (self->records != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "an OpRing is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "nOOOOOOOk|OOL", names, &capacity, &seq,
                                     &scope_state, &is_internal, &location_of, &cpu,
                                     &tensor_type, &data_slot, &main_ident, &memory, &wake,
                                     &seq_base))
        return -1;
    if (capacity < 2 || (capacity & (capacity - 1)) != 0) {
        PyErr_SetString(PyExc_ValueError, "capacity must be a power of two");
        return -1;
    }
    if (memory != Py_None && !PyObject_TypeCheck(memory, &CpuMemoryType)) {
        PyErr_SetString(PyExc_TypeError, "memory must be a CpuMemory or None");
        return -1;
    }
    if (!PyType_Check(tensor_type)) {
        PyErr_SetString(PyExc_TypeError, "tensor_type must be a type");
        return -1;
    }
    self->off_data = em_member_offset(data_slot);
    if (self->off_data < 0)
        return -1;
    self->records = PyMem_Calloc((size_t)capacity, sizeof(Record));
    self->codes = PyMem_Calloc(CODE_CACHE_SLOTS * 2, sizeof(CodeEntry));
    self->chunks[0] = PyMem_Calloc(CHUNK, sizeof(Site));
    self->new_sites = PyList_New(0);
    if (self->records == NULL || self->codes == NULL || self->chunks[0] == NULL
            || self->new_sites == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    /* Large callocs are fresh pages that fault on their first write: faulted in here, at
     * the recorder's start (stated as its cost), rather than one by one under the
     * script's first ops, where the calibration (on a ring long since written through)
     * never sees them. */
    prefault(self->records, (size_t)capacity * sizeof(Record));
    prefault(self->codes, CODE_CACHE_SLOTS * 2 * sizeof(CodeEntry));
    prefault(self->chunks[0], CHUNK * sizeof(Site));
    self->capacity = (uint64_t)capacity;
    self->mask = (uint64_t)capacity - 1;
    self->main_ident = main_ident;
    if (em_scope_init(&self->scope, scope_state, main_ident) < 0)
        return -1;
    self->seq_base = seq_base;
#define KEEP(field, value) Py_INCREF(value); self->field = value
    KEEP(seq, seq);
    KEEP(is_internal, is_internal);
    KEEP(location_of, location_of);
    KEEP(cpu, cpu);
    Py_INCREF(tensor_type);
    self->tensor_type = (PyTypeObject *)tensor_type;
    if (memory != Py_None) {
        Py_INCREF(memory);
        self->memory = (CpuMemory *)memory;
    }
    if (wake != Py_None) {
        KEEP(wake, wake);
    }
#undef KEEP
    return 0;
}

static void
OpRing_dealloc(OpRing *self)
{
    close_db(self);
    for (Py_ssize_t s = 0; s < self->nsites; ++s) {
        Site *site = site_at(self, s);
        PyMem_Free(site->key);
        Py_XDECREF(site->refs);
        for (int i = 0; i < N_TEXTS; ++i)
            PyMem_Free(site->text[i]);
    }
    for (int c = 0; c < MAX_CHUNKS; ++c)
        PyMem_Free(self->chunks[c]);
    if (self->codes != NULL) {
        for (uint64_t j = 0; j < CODE_CACHE_SLOTS * 2; ++j)
            Py_XDECREF(self->codes[j].code);
        PyMem_Free(self->codes);
    }
    PyMem_Free(self->table);
    PyMem_Free(self->records);
    Py_XDECREF(self->seq);
    em_scope_clear(&self->scope);
    Py_XDECREF(self->is_internal);
    Py_XDECREF(self->location_of);
    Py_XDECREF(self->cpu);
    Py_XDECREF(self->tensor_type);
    Py_XDECREF(self->new_sites);
    Py_XDECREF(self->memory);
    Py_XDECREF(self->wake);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef OpRing_methods[] = {
    {"binary", (PyCFunction)(void (*)(void))OpRing_binary, METH_FASTCALL,
     "binary(name, a, b, out, t0, skip=1) -> bool: record an operator's op (False: not recorded)"},
    {"general", (PyCFunction)(void (*)(void))OpRing_general, METH_FASTCALL,
     "general(name, inputs, attrs, out, t0, device, skip=2) -> bool: record an eager op"},
    {"head", (PyCFunction)OpRing_head, METH_NOARGS, "records ever written to the ring"},
    {"pending", (PyCFunction)OpRing_pending, METH_NOARGS, "records not yet consumed"},
    {"take_sites", (PyCFunction)OpRing_take_sites, METH_NOARGS,
     "the sites registered since the last call: (index, op, inputs, output, scope, "
     "location, attrs) each"},
    {"set_site", (PyCFunction)(void (*)(void))OpRing_set_site, METH_FASTCALL,
     "set_site(index, texts or None)"},
    {"take", (PyCFunction)OpRing_take, METH_O, "take(upto) -> list of record tuples"},
    {"drop", (PyCFunction)OpRing_drop, METH_O, "drop(upto) -> records consumed unwritten"},
    {"open_writer", (PyCFunction)OpRing_open_writer, METH_VARARGS,
     "open_writer(sqlite_library, session_path, pragmas)"},
    {"close_writer", (PyCFunction)OpRing_close_writer, METH_NOARGS, "close the connection"},
    {"write", (PyCFunction)(void (*)(void))OpRing_write, METH_FASTCALL,
     "write(upto, statements) -> (consumed, written, malformed, error or None)"},
    {"stats", (PyCFunction)OpRing_stats, METH_NOARGS, "counters, for tests and benchmarks"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject OpRingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_em_op_ring.OpRing",
    .tp_basicsize = sizeof(OpRing),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A preallocated ring of op records and the table of their sites.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)OpRing_init,
    .tp_dealloc = (destructor)OpRing_dealloc,
    .tp_methods = OpRing_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_em_op_ring", "The recorder's per-op path in C.", -1, NULL,
};

PyMODINIT_FUNC
PyInit__em_op_ring(void)
{
    import_array();
    TrackedRefType.tp_base = &_PyWeakref_RefType;
    pthread_atfork(NULL, NULL, reset_buffers_lock);
    if (PyType_Ready(&OpRingType) < 0 || PyType_Ready(&TrackedRefType) < 0
            || PyType_Ready(&CpuMemoryType) < 0)
        return NULL;
    getframe = PySys_GetObject("_getframe");  /* borrowed from sys: keep our own */
    if (em_native_init() < 0 || getframe == NULL)
        return NULL;
    Py_INCREF(getframe);
    for (int i = 0; i < 3; ++i)
        if ((skip_objs[i] = PyLong_FromLong(i)) == NULL)
            return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&OpRingType);
    Py_INCREF(&CpuMemoryType);
    if (PyModule_AddObject(m, "OpRing", (PyObject *)&OpRingType) < 0
            || PyModule_AddObject(m, "CpuMemory", (PyObject *)&CpuMemoryType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
