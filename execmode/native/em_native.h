/* em_native.h: what execmode's CPython extensions share, declared once (the contract is
 * stated in execmode/native/__init__.py). Include it after <Python.h>; a module that
 * reads em_str_current calls em_native_init() from its init function. */
#ifndef EM_NATIVE_H
#define EM_NATIVE_H

#include <Python.h>
#include <structmember.h>
#include "em_clock.h"   /* em_clock_ns: every event's and kernel's clock (no GIL needed) */

#ifndef Py_T_OBJECT_EX
#define Py_T_OBJECT_EX T_OBJECT_EX
#endif

static PyObject *em_str_current;   /* "current", interned */

static inline int
em_native_init(void)
{
    if (em_str_current == NULL)
        em_str_current = PyUnicode_InternFromString("current");
    return em_str_current == NULL ? -1 : 0;
}

/* --- Tensor's slots ------------------------------------------------------------------ */

/* The offset of a __slots__ member's pointer in an instance (Tensor's `_data`,
 * `requires_grad`): read once, so that a call reads the slot without an attribute lookup.
 * -1 with an error set when `descr` is not an object slot's descriptor. */
static inline Py_ssize_t
em_member_offset(PyObject *descr)
{
    if (!PyObject_TypeCheck(descr, &PyMemberDescr_Type)
            || ((PyMemberDescrObject *)descr)->d_member->type != Py_T_OBJECT_EX) {
        PyErr_SetString(PyExc_TypeError, "expected a __slots__ member descriptor");
        return -1;
    }
    return ((PyMemberDescrObject *)descr)->d_member->offset;
}

static inline PyObject *
em_slot(PyObject *obj, Py_ssize_t offset)
{
    return *(PyObject **)((char *)obj + offset);
}

/* --- the current scope (scope.py) ------------------------------------------------------ */

/* scope._state is a threading.local whose `current` is the thread's scope path. The main
 * thread's own dict of it is asked for once (the same dict for the thread's life) and
 * read with one lookup: it holds `current` once a scope was opened there, else the
 * class's default (read once) answers, as attribute lookup would. Other threads ask the
 * thread-local. */
typedef struct {
    PyObject *state;            /* scope._state */
    unsigned long main_ident;   /* the main thread's ident */
    PyObject *main_dict;        /* the main thread's dict of `state`, once asked there */
    PyObject *fallback;         /* the class's `current` (a str), or NULL */
} EmScope;

static inline int
em_scope_init(EmScope *s, PyObject *state, unsigned long main_ident)
{
    if (em_native_init() < 0)
        return -1;
    Py_INCREF(state);
    s->state = state;
    s->main_ident = main_ident;
    s->main_dict = NULL;
    s->fallback = PyObject_GetAttr((PyObject *)Py_TYPE(state), em_str_current);
    if (s->fallback == NULL || !PyUnicode_CheckExact(s->fallback)) {
        PyErr_Clear();   /* no class default: every lookup asks the thread-local */
        Py_CLEAR(s->fallback);
    }
    return 0;
}

static inline void
em_scope_clear(EmScope *s)
{
    Py_CLEAR(s->state);
    Py_CLEAR(s->main_dict);
    Py_CLEAR(s->fallback);
}

/* The calling thread's scope (a new reference), or NULL with an error set. */
static inline PyObject *
em_scope_current(EmScope *s)
{
    if (PyThread_get_thread_ident() == s->main_ident) {
        if (s->main_dict == NULL) {
            PyObject *d = PyObject_GetAttrString(s->state, "__dict__");
            if (d == NULL)
                return NULL;
            if (PyDict_CheckExact(d))
                s->main_dict = d;
            else
                Py_DECREF(d);
        }
        if (s->main_dict != NULL) {
            PyObject *scope = PyDict_GetItemWithError(s->main_dict, em_str_current);
            if (scope == NULL && PyErr_Occurred())
                return NULL;
            scope = scope != NULL ? scope : s->fallback;
            if (scope != NULL) {
                Py_INCREF(scope);
                return scope;
            }
        }
    }
    return PyObject_GetAttr(s->state, em_str_current);
}

/* --- the op event's layout (instrument.OpEvent) --------------------------------------- */

/* OpEvent's fields in their order. The C builds an OpEvent as tuple.__new__ does, by
 * position: em_check_op_event_layout compares this list with OpEvent._fields before the
 * first event is built, and tests/codegen/test_native_contract.py compares it without a
 * compiler. */
#define EM_OP_EVENT_FIELDS(X) \
    X(SEQ, seq) X(OP, op) X(ATTRS, attrs) X(INPUTS, inputs) X(OUTPUT, output) \
    X(START_NS, start_ns) X(END_NS, end_ns) X(BYTES_ALLOCATED, bytes_allocated) \
    X(SCOPE, scope) X(LOCATION, location) X(MODE, mode)

#define EM_EVENT_INDEX(upper, name) EM_EVENT_##upper,
enum { EM_OP_EVENT_FIELDS(EM_EVENT_INDEX) EM_EVENT_FIELDS };
#undef EM_EVENT_INDEX

/* 0 when `event_type`'s _fields are EM_OP_EVENT_FIELDS, in order; else -1 with a
 * TypeError that names both. */
static inline int
em_check_op_event_layout(PyObject *event_type)
{
#define EM_EVENT_NAME(upper, name) #name,
    static const char *const names[EM_EVENT_FIELDS] = {EM_OP_EVENT_FIELDS(EM_EVENT_NAME)};
#undef EM_EVENT_NAME
    PyObject *fields = PyObject_GetAttrString(event_type, "_fields");
    if (fields == NULL)
        return -1;
    int same = PyTuple_Check(fields) && PyTuple_GET_SIZE(fields) == EM_EVENT_FIELDS;
    for (Py_ssize_t i = 0; same && i < EM_EVENT_FIELDS; ++i) {
        PyObject *name = PyTuple_GET_ITEM(fields, i);
        same = PyUnicode_Check(name)
            && PyUnicode_CompareWithASCIIString(name, names[i]) == 0;
    }
    if (!same)
        PyErr_Format(PyExc_TypeError, "OpEvent's fields %R differ from em_native.h's "
                     "EM_OP_EVENT_FIELDS, which the C builds events by: change both", fields);
    Py_DECREF(fields);
    return same ? 0 : -1;
}

#endif /* EM_NATIVE_H */
