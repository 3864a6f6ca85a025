/* Tensor's + - * / for plain eager calls, in C (eager_operators.py says when and why),
 * and Loop: one ufunc's loop called the same way, the step of a jitted single op
 * (ufunc_loop.py; at the end of this file).
 *
 * An Operator is a method descriptor installed on the Tensor class under __add__,
 * __radd__, ... It takes the call itself when nothing but arithmetic is asked for:
 *
 *   - dispatch's `_plain` is True (no tracer, no listener), read at every call; or its
 *     `_fast_with_events` (listeners that want events after ops only, as the recorder
 *     does): then the op is also handed to the listeners (see emit);
 *   - the left operand is a Tensor over an exact, aligned, C-contiguous float32 or float64
 *     ndarray in native byte order, and autograd would not record the op (no operand
 *     requires grad, or grad mode is off in this thread: em.no_grad());
 *   - the right operand is a Tensor like it (same dtype; the same shape, or one of the two
 *     holds one element and has no more dimensions than the other), or a Python float, or
 *     a Python int the dtype holds exactly (NumPy's weak scalars, NEP 50: the result keeps
 *     the tensor's dtype).
 *
 * Then it allocates the output with NumPy and calls NumPy's own 1-d loop for that dtype
 * (the ufunc's `functions` table, the loop np.add itself runs), so the result is NumPy's,
 * bit for bit. What it leaves out is NumPy's per-call machinery: argument parsing, type
 * resolution, the error-state context and its floating-point warnings (which the Python
 * operator silences anyway: eager returns Inf/NaN quietly, as PyTorch does).
 *
 * Everything else - a listener, a trace, autograd, other dtypes, broadcasting, views,
 * GPU arrays, errors - is handed to the Python operator (dispatch.make_operator), which
 * this object holds: the same answers either way, only the time differs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <fenv.h>
#include <stdint.h>
#include <string.h>

#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>
#include "em_native.h"

/* NumPy releases the GIL for loops over more elements than this (NPY_BEGIN_THREADS
 * _THRESHOLDED); so do we. */
#define RELEASE_GIL_ELEMENTS 500

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;          /* the Python operator: every call it does not take */
    PyObject *name;              /* the op's name ("add"), as events give it */
    PyObject *ufunc;             /* np.add, ...: its loop table */
    PyTypeObject *tensor_type;
    PyObject *flags;             /* dispatch's module dict: `_plain` is read per call */
    Py_ssize_t off_data;         /* Tensor's __slots__ members */
    Py_ssize_t off_requires_grad;
    int reflected;               /* __radd__: the scalar is the loop's first operand */
    PyUFuncGenericFunction loop[2];   /* [0] float32, [1] float64 */
    void *loop_data[2];
    /* A unary function (em.exp ...; its ufunc takes one operand): the OpDef, whose `impl`
     * is read per call, and the impl it was registered with. NULL for the operators. */
    PyObject *op_def;
    PyObject *impl;
} Operator;

static PyObject *str_plain;
static PyObject *str_grad_enabled, *str_thread, *str_grad;
static PyObject *str_fast_with_events, *str_native_binary, *str_native_general, *str_impl;
/* dispatch's names an OpEvent is built from (new_event) */
static PyObject *str_on_op, *str_OpEvent, *str_seq, *str_no_attrs, *str_eager, *str_cpu;
static PyObject *str_scope, *str_state, *str_locations, *str_user_location;
static PyObject *zero;           /* 0: the op ring's frame skip from here */

/* Whether autograd records in this thread, as dispatch.grad_enabled() answers: its
 * `_grad_enabled` (on in every thread) or else the thread's own `_thread.grad`. -1: an
 * error. */
static int
grad_mode_on(Operator *self)
{
    PyObject *everywhere = PyDict_GetItemWithError(self->flags, str_grad_enabled);
    if (everywhere == NULL)
        return PyErr_Occurred() ? -1 : 1;
    if (everywhere == Py_True)
        return 1;
    PyObject *state = PyDict_GetItemWithError(self->flags, str_thread);
    if (state == NULL)
        return PyErr_Occurred() ? -1 : 1;
    PyObject *on = PyObject_GetAttr(state, str_grad);
    if (on == NULL)
        return -1;
    int result = on != Py_False;
    Py_DECREF(on);
    return result;
}

/* The operand's array when it is one this path takes, else NULL (borrowed). A tensor
 * that requires grad sets *wants_grad: the call is taken only while grad mode is off. */
static inline PyArrayObject *
plain_array(Operator *self, PyObject *tensor, int *wants_grad)
{
    if (!PyObject_TypeCheck(tensor, self->tensor_type))
        return NULL;
    PyObject *rg = em_slot(tensor, self->off_requires_grad);
    if (rg == Py_True)
        *wants_grad = 1;
    else if (rg != Py_False)
        return NULL;
    PyObject *data = em_slot(tensor, self->off_data);
    if (data == NULL || Py_TYPE(data) != &PyArray_Type)
        return NULL;
    PyArrayObject *a = (PyArrayObject *)data;
    int type = PyArray_TYPE(a);
    if (type != NPY_FLOAT && type != NPY_DOUBLE)
        return NULL;
    const int needed = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED;
    if ((PyArray_FLAGS(a) & needed) != needed || !PyArray_ISNOTSWAPPED(a))
        return NULL;
    return a;
}

/* A Python float or int as the array's dtype, as NumPy converts a weak scalar; 0 when
 * this path does not take it (an int the dtype does not hold exactly, a bool, ...). */
static inline int
scalar_value(PyObject *obj, int type, double *f64, float *f32)
{
    double value;
    if (PyFloat_CheckExact(obj)) {
        value = PyFloat_AS_DOUBLE(obj);
    }
    else if (PyLong_CheckExact(obj)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
        long long limit = type == NPY_FLOAT ? (1LL << 24) : (1LL << 53);
        if (overflow || v > limit || v < -limit) {
            if (v == -1 && PyErr_Occurred())
                PyErr_Clear();
            return 0;
        }
        value = (double)v;
    }
    else {
        return 0;
    }
    if (type == NPY_FLOAT)
        *f32 = (float)value;
    else
        *f64 = value;
    return 1;
}

/* Run a ufunc's 1-d loop over n elements as the ufunc would: without the GIL past NumPy's
 * threshold (the caller holds the operands), and leaving the floating-point status clear
 * afterwards, as NumPy does after each ufunc (having turned what it found into warnings). */
static void
run_loop(PyUFuncGenericFunction loop, void *data, char **args, npy_intp n, npy_intp *steps)
{
    if (n > RELEASE_GIL_ELEMENTS) {
        Py_BEGIN_ALLOW_THREADS
        loop(args, &n, steps, data);
        Py_END_ALLOW_THREADS
    }
    else {
        loop(args, &n, steps, data);
    }
    if (fetestexcept(FE_ALL_EXCEPT))
        feclearexcept(FE_ALL_EXCEPT);
}

/* The loop of ``u`` whose every operand is ``type``: what the ufunc resolves a call with
 * operands of that dtype alone to. */
static int
same_type_loop(PyUFuncObject *u, char type, PyUFuncGenericFunction *loop, void **data)
{
    for (int i = 0; i < u->ntypes; ++i) {
        const char *t = u->types + i * u->nargs;
        int all = u->functions[i] != NULL;
        for (int j = 0; j < u->nargs && all; ++j)
            all = t[j] == type;
        if (all) {
            *loop = u->functions[i];
            *data = u->data == NULL ? NULL : u->data[i];
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError, "ufunc %s has no loop for type %d", u->name, (int)type);
    return -1;
}

/* (shape, dtype, device): an array operand as OpEvent describes it (dispatch's
 * `(x.shape, x.dtype, CPU)`). The last description made is kept and handed out again
 * for an array of the same shape and dtype (tuples are immutable: equal is the same):
 * in a loop the operands and the output are described by one tuple. */
static PyObject *last_described;
static int last_nd = -1;
static npy_intp last_dims[NPY_MAXDIMS];
static PyArray_Descr *last_dtype;

static PyObject *
describe(PyArrayObject *a, PyObject *device)
{
    int nd = PyArray_NDIM(a);
    if (last_described != NULL && nd == last_nd && PyArray_DESCR(a) == last_dtype
            && PyTuple_GET_ITEM(last_described, 2) == device
            && memcmp(PyArray_DIMS(a), last_dims, nd * sizeof(npy_intp)) == 0) {
        Py_INCREF(last_described);
        return last_described;
    }
    PyObject *shape = PyTuple_New(nd);
    if (shape == NULL)
        return NULL;
    for (int i = 0; i < nd; ++i) {
        PyObject *dim = PyLong_FromSsize_t(PyArray_DIM(a, i));
        if (dim == NULL) {
            Py_DECREF(shape);
            return NULL;
        }
        PyTuple_SET_ITEM(shape, i, dim);
    }
    PyObject *described = PyTuple_Pack(3, shape, (PyObject *)PyArray_DESCR(a), device);
    Py_DECREF(shape);
    if (described == NULL)
        return NULL;
    /* the cache holds the dtype through the tuple */
    Py_XSETREF(last_described, described);
    Py_INCREF(described);
    last_nd = nd;
    memcpy(last_dims, PyArray_DIMS(a), nd * sizeof(npy_intp));
    last_dtype = PyArray_DESCR(a);
    return described;
}

/* dispatch's module dict, from the first Operator made (every Operator gets the same):
 * the event parts below are looked up in it, for the operators and for emit_unary. */
static PyObject *dispatch_flags;

/* A name of dispatch's module (borrowed), or NULL with an error set. */
static PyObject *
dispatch_name(PyObject *name)
{
    PyObject *value = PyDict_GetItemWithError(dispatch_flags, name);
    if (value == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "dispatch.%U is missing", name);
    return value;
}

/* The objects of dispatch an event is built from, looked up once (strong references):
 * none is ever rebound (dispatch mutates `_on_op` and source `_locations` in place). */
static struct {
    PyObject *on_op, *event_type, *seq, *no_attrs, *eager, *cpu, *locations, *user_location;
    EmScope scope;   /* scope._state (em_scope_current) */
} parts;

static PyObject *getframe;   /* sys._getframe (user_line) */

/* threading.main_thread().ident, or (unsigned long)-1 with an error set. */
static unsigned long
main_thread_ident(void)
{
    PyObject *threading = PyImport_ImportModule("threading");
    PyObject *main = threading == NULL ? NULL
        : PyObject_CallMethod(threading, "main_thread", NULL);
    PyObject *ident = main == NULL ? NULL : PyObject_GetAttrString(main, "ident");
    Py_XDECREF(threading);
    Py_XDECREF(main);
    if (ident == NULL)
        return (unsigned long)-1;
    unsigned long value = PyLong_AsUnsignedLong(ident);
    Py_DECREF(ident);
    return value;
}

static int
event_parts(void)
{
    if (parts.on_op != NULL)
        return 0;
    if (dispatch_flags == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no Operator was made: dispatch is not known");
        return -1;
    }
    PyObject *names[8] = {str_OpEvent, str_seq, str_no_attrs, str_eager, str_cpu,
                          str_locations, str_user_location, str_scope};
    PyObject *found[8];
    for (int i = 0; i < 8; ++i) {
        found[i] = dispatch_name(names[i]);
        if (found[i] == NULL)
            return -1;
    }
    PyObject *on_op = dispatch_name(str_on_op);
    if (on_op == NULL)
        return -1;
    if (!PyType_Check(found[0]) || !PyType_IsSubtype((PyTypeObject *)found[0], &PyTuple_Type)
            || ((PyTypeObject *)found[0])->tp_dictoffset != 0
            || !PyList_CheckExact(on_op) || !PyDict_CheckExact(found[5])) {
        PyErr_SetString(PyExc_TypeError, "dispatch's OpEvent, _on_op or _locations changed kind");
        return -1;
    }
    if (em_check_op_event_layout(found[0]) < 0)
        return -1;
    unsigned long main_ident = main_thread_ident();
    if (main_ident == (unsigned long)-1 && PyErr_Occurred())
        return -1;
    PyObject *state = PyObject_GetAttr(found[7], str_state);   /* scope._state */
    if (state == NULL)
        return -1;
    if (getframe == NULL) {
        getframe = PySys_GetObject("_getframe");   /* borrowed from sys: keep our own */
        Py_XINCREF(getframe);
    }
    int failed = getframe == NULL || em_scope_init(&parts.scope, state, main_ident) < 0;
    Py_DECREF(state);
    if (failed) {
        if (getframe == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "sys._getframe is missing");
        return -1;
    }
    for (int i = 0; i < 7; ++i)
        Py_INCREF(found[i]);
    Py_INCREF(on_op);
    parts.event_type = found[0];
    parts.seq = found[1];
    parts.no_attrs = found[2];
    parts.eager = found[3];
    parts.cpu = found[4];
    parts.locations = found[5];
    parts.user_location = found[6];
    parts.on_op = on_op;
    return 0;
}

/* The user's line: the SourceLocation of the frame `skip` frames out from the one that
 * called us (0: the operators, which no frame of ours is in between; 1: a unary
 * function's C version, called from make_unary_function's `fn`; 2: emit_unary, called
 * from its Python body under `fn`), from source._locations when that
 * instruction was seen before (one dict lookup on (id(code), f_lasti), its key), else
 * from source.user_location. Answers from the table are kept by code object and offset
 * in a small direct-mapped cache: a loop asks for its few lines again and again. */
#define LINE_CACHE 8
static struct {
    PyCodeObject *code;      /* held, so that its address is not reused */
    int lasti;
    PyObject *location;
} lines[LINE_CACHE];

static PyObject *
user_line(int skip)
{
    PyFrameObject *frame;
    if (skip == 0) {
        frame = PyEval_GetFrame();   /* borrowed */
        Py_XINCREF(frame);
    }
    else {
        /* sys._getframe(skip) makes no frame object of the frames it passes (ours, new
         * at every call), as walking out with PyFrame_GetBack would */
        PyObject *depth = PyLong_FromLong(skip);
        if (depth == NULL)
            return NULL;
        frame = (PyFrameObject *)PyObject_Vectorcall(getframe, &depth, 1, NULL);
        Py_DECREF(depth);
        if (frame == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_ValueError))   /* not that deep */
                return NULL;
            PyErr_Clear();
        }
    }
    if (frame == NULL)
        Py_RETURN_NONE;
    PyCodeObject *code = PyFrame_GetCode(frame);
#if PY_VERSION_HEX >= 0x030B0000
    int offset = PyFrame_GetLasti(frame);
#else
    int offset = -1;   /* no cheap f_lasti before 3.11: ask the frame every time */
#endif
    PyObject *location = NULL;
    int slot = (int)((((uintptr_t)code >> 4) ^ ((unsigned)offset >> 1)) % LINE_CACHE);
    if (offset >= 0 && lines[slot].code == code && lines[slot].lasti == offset) {
        Py_DECREF(code);
        location = lines[slot].location;
        Py_INCREF(location);
        goto done;
    }
    PyObject *lasti = offset >= 0 ? PyLong_FromLong(offset)
        : PyObject_GetAttrString((PyObject *)frame, "f_lasti");
    PyObject *code_id = PyLong_FromVoidPtr(code);
    PyObject *key = (lasti != NULL && code_id != NULL) ? PyTuple_Pack(2, code_id, lasti) : NULL;
    Py_XDECREF(lasti);
    Py_XDECREF(code_id);
    if (key == NULL) {
        Py_DECREF(code);
        goto done;
    }
    PyObject *entry = PyDict_GetItemWithError(parts.locations, key);   /* (code, loc) */
    Py_DECREF(key);
    if (entry != NULL && PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 2) {
        location = PyTuple_GET_ITEM(entry, 1);
        Py_INCREF(location);
        /* Only a user frame's line is in the table, so this answer holds for next time. */
        if (offset >= 0) {
            Py_INCREF(location);
            Py_XSETREF(lines[slot].location, location);
            Py_XSETREF(lines[slot].code, code);   /* our reference moves to the cache */
            lines[slot].lasti = offset;
        }
        else {
            Py_DECREF(code);
        }
        goto done;
    }
    Py_DECREF(code);
    if (!PyErr_Occurred())
        location = PyObject_CallOneArg(parts.user_location, (PyObject *)frame);
done:
    Py_DECREF(frame);
    return location;
}

/* An event no listener kept, refilled for the next op. A tuple nobody else holds can be
 * refilled unseen (zip and enumerate refill their result tuples so): what allocating
 * and freeing an OpEvent per op cost. Held while its listeners run, so a listener that
 * runs ops itself makes its own; refilled only while nothing else took a reference
 * meanwhile (gc.get_objects() can hand it out). Not from 3.14 on, where a tuple may
 * keep its hash. */
#if PY_VERSION_HEX < 0x030E0000
#define REFILL_EVENTS 1
#else
#define REFILL_EVENTS 0
#endif
static PyObject *spare_event;

/* The OpEvent dispatch builds (emit_operator_event, emit_unary_event), built here: the
 * same fields, the same objects (the shapes as tuples of ints, the dtypes, dispatch's CPU
 * device, the scope string, the interned SourceLocation), with no Python frame in between.
 * Steals `inputs` (the operands' descriptions, NULL after an error). */
static PyObject *
new_event(PyObject *name, PyObject *inputs, PyArrayObject *out, int64_t t0,
          Py_ssize_t nbytes, int skip)
{
    int64_t t1 = em_clock_ns();
    PyObject *items[EM_EVENT_FIELDS] = {NULL};
    PyObject *event = NULL;
    items[EM_EVENT_INPUTS] = inputs;
    if (inputs == NULL)
        goto done;
    /* each item after the last one made: none is asked for with an error pending */
    if ((items[EM_EVENT_SEQ] = PyIter_Next(parts.seq)) == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "dispatch._seq is exhausted");
        goto done;
    }
    Py_INCREF(name);
    items[EM_EVENT_OP] = name;
    Py_INCREF(parts.no_attrs);
    items[EM_EVENT_ATTRS] = parts.no_attrs;
    Py_INCREF(parts.eager);
    items[EM_EVENT_MODE] = parts.eager;
    if ((items[EM_EVENT_OUTPUT] = describe(out, parts.cpu)) == NULL
            || (items[EM_EVENT_START_NS] = PyLong_FromLongLong(t0)) == NULL
            || (items[EM_EVENT_END_NS] = PyLong_FromLongLong(t1)) == NULL
            || (items[EM_EVENT_BYTES_ALLOCATED] = PyLong_FromSsize_t(nbytes)) == NULL
            || (items[EM_EVENT_SCOPE] = em_scope_current(&parts.scope)) == NULL
            || (items[EM_EVENT_LOCATION] = user_line(skip)) == NULL)
        goto done;
    if (spare_event != NULL && Py_REFCNT(spare_event) == 1) {
        event = spare_event;   /* our reference moves to the caller */
        spare_event = NULL;
        for (int i = 0; i < EM_EVENT_FIELDS; ++i) {
            PyObject *old = PyTuple_GET_ITEM(event, i);
            PyTuple_SET_ITEM(event, i, items[i]);
            items[i] = old;   /* released below */
        }
    }
    else {
        Py_CLEAR(spare_event);
        PyTypeObject *event_type = (PyTypeObject *)parts.event_type;
        /* tuple.__new__(OpEvent, items), as dispatch does */
        event = event_type->tp_alloc(event_type, EM_EVENT_FIELDS);
        if (event != NULL) {
            for (int i = 0; i < EM_EVENT_FIELDS; ++i) {
                PyTuple_SET_ITEM(event, i, items[i]);
                items[i] = NULL;
            }
        }
    }
done:
    for (int i = 0; i < EM_EVENT_FIELDS; ++i)
        Py_XDECREF(items[i]);
    return event;
}

/* The event to each of dispatch's `_on_op` callbacks with the op's tensor, as `for fn in
 * _on_op: fn(ev, t)` does; the event is kept for the next op when no listener kept it. */
static int
call_listeners(PyObject *event, PyObject *t)
{
    /* As `for fn in _on_op` walks it: a listener that adds or removes listeners changes
     * the list under the loop, so its length is read at every step. */
    PyObject *callbacks = parts.on_op;
    int status = 0;
    for (Py_ssize_t i = 0; status == 0 && i < PyList_GET_SIZE(callbacks); ++i) {
        PyObject *fn = PyList_GET_ITEM(callbacks, i);
        Py_INCREF(fn);
        /* a free slot before the arguments: a bound method puts its self there */
        PyObject *call_args[3] = {NULL, event, t};
        PyObject *result = PyObject_Vectorcall(fn, call_args + 1,
                                               2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(fn);
        if (result == NULL)
            status = -1;
        Py_XDECREF(result);
    }
    if (REFILL_EVENTS && Py_REFCNT(event) == 1 && spare_event == NULL)
        spare_event = event;
    else
        Py_DECREF(event);
    return status;
}

/* The last (left, right) pair of operand descriptions, handed out again for the same two
 * (describe hands out one tuple per shape and dtype). */
static PyObject *last_pair;

static PyObject *
describe_pair(PyObject *left, PyObject *right)
{
    if (last_pair != NULL && PyTuple_GET_ITEM(last_pair, 0) == left
            && PyTuple_GET_ITEM(last_pair, 1) == right) {
        Py_INCREF(last_pair);
        return last_pair;
    }
    PyObject *pair = PyTuple_Pack(2, left, right);
    if (pair != NULL) {
        Py_INCREF(pair);
        Py_XSETREF(last_pair, pair);
    }
    return pair;
}

/* The last (x,) of one operand description, handed out again for the same one. */
static PyObject *last_one;

static PyObject *
describe_one(PyObject *x)
{
    if (last_one != NULL && PyTuple_GET_ITEM(last_one, 0) == x) {
        Py_INCREF(last_one);
        return last_one;
    }
    PyObject *one = PyTuple_Pack(1, x);
    if (one != NULL) {
        Py_INCREF(one);
        Py_XSETREF(last_one, one);
    }
    return one;
}

/* What an op ring entry point answered (`taken`: its result, a new reference, or NULL):
 * 1 when it took the op, 0 when it declined (the op goes to the listeners), -1 an error. */
static int
ring_took(PyObject *taken)
{
    if (taken == NULL)
        return -1;
    int done = taken == Py_True;
    Py_DECREF(taken);
    return done;
}

/* The op to the listeners, as the Python operator hands it over: to the recorder's op
 * ring, `_native_binary(name, a, b, out, t0, skip)`, when there is one and it takes it;
 * else an OpEvent (new_event) to each of dispatch's `_on_op` callbacks, as
 * dispatch.emit_operator_event gives it. Both find the user's line from the frame that
 * called this operator (skip 0: no Python frame of ours is in between). */
static int
emit(Operator *self, PyObject *a, PyObject *b, PyObject *out, PyObject *t, int64_t t0)
{
    PyObject *sink = PyDict_GetItemWithError(self->flags, str_native_binary);
    if (sink != NULL && sink != Py_None) {
        PyObject *t0_obj = PyLong_FromLongLong(t0);
        if (t0_obj == NULL)
            return -1;
        PyObject *sink_args[6] = {self->name, a, b, out, t0_obj, zero};
        int done = ring_took(PyObject_Vectorcall(sink, sink_args, 6, NULL));
        Py_DECREF(t0_obj);
        if (done)
            return done < 0 ? -1 : 0;
    }
    if (sink == NULL && PyErr_Occurred())
        return -1;
    if (event_parts() < 0)
        return -1;
    if (PyList_GET_SIZE(parts.on_op) == 0)
        return 0;
    PyObject *left = describe((PyArrayObject *)a, parts.cpu);
    PyObject *right;
    if (PyArray_CheckExact(b)) {
        right = describe((PyArrayObject *)b, parts.cpu);
    }
    else {
        Py_INCREF(b);
        right = b;
    }
    PyObject *inputs = (left != NULL && right != NULL) ? describe_pair(left, right) : NULL;
    Py_XDECREF(left);
    Py_XDECREF(right);
    PyObject *event = new_event(self->name, inputs, (PyArrayObject *)out, t0,
                                PyArray_NBYTES((PyArrayObject *)out), 0);
    if (event == NULL)
        return -1;
    return call_listeners(event, t);
}

/* A unary function's op as run_eager hands it over: to the recorder's op ring,
 * `_native_general(name, (x,), no_attrs, out, t0, CPU, skip)`, when there is one and it
 * takes it; else an OpEvent of the tensor `x` (array `a`) giving `out` (wrapped as `t`)
 * to the listeners. bytes = 0 for a view of another array, as run_eager's. `skip`: the
 * frames from the Python function that called us out to the user's. */
static int
emit_one(PyObject *flags, PyObject *name, PyObject *x, PyArrayObject *a, PyArrayObject *out,
         PyObject *t, int64_t t0, int skip)
{
    if (event_parts() < 0)
        return -1;
    PyObject *sink = flags == NULL ? NULL : PyDict_GetItemWithError(flags, str_native_general);
    if (sink != NULL && sink != Py_None) {
        PyObject *t0_obj = PyLong_FromLongLong(t0);
        PyObject *inputs = t0_obj == NULL ? NULL : PyTuple_Pack(1, x);
        PyObject *skip_obj = inputs == NULL ? NULL : PyLong_FromLong(skip);
        int done = -1;
        if (skip_obj != NULL) {
            PyObject *sink_args[7] = {name, inputs, parts.no_attrs, (PyObject *)out, t0_obj,
                                      parts.cpu, skip_obj};
            done = ring_took(PyObject_Vectorcall(sink, sink_args, 7, NULL));
        }
        Py_XDECREF(t0_obj);
        Py_XDECREF(inputs);
        Py_XDECREF(skip_obj);
        if (done)
            return done < 0 ? -1 : 0;
    }
    if (sink == NULL && PyErr_Occurred())
        return -1;
    if (PyList_GET_SIZE(parts.on_op) == 0)
        return 0;
    PyObject *described = describe(a, parts.cpu);
    PyObject *inputs = described != NULL ? describe_one(described) : NULL;
    Py_XDECREF(described);
    Py_ssize_t nbytes = PyArray_BASE(out) == NULL ? PyArray_NBYTES(out) : 0;
    PyObject *event = new_event(name, inputs, out, t0, nbytes, skip);
    if (event == NULL)
        return -1;
    return call_listeners(event, t);
}

/* emit_unary(name, x, out, t, t0, skip): dispatch.emit_unary_event in C, for the unary
 * functions' Python fast path (dispatch.make_unary_function): the OpEvent of `x` (an
 * ndarray) giving `out` (an ndarray, wrapped as the tensor `t`) to the listeners, the
 * user's line `skip` frames out from the caller's. */
static PyObject *
emit_unary(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6 || !PyArray_CheckExact(args[1]) || !PyArray_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "emit_unary(name, x, out, t, t0, skip): x, out ndarrays");
        return NULL;
    }
    int64_t t0 = PyLong_AsLongLong(args[4]);
    long skip = PyLong_AsLong(args[5]);
    if ((t0 == -1 || skip == -1) && PyErr_Occurred())
        return NULL;
    if (skip < 0 || skip > 8) {
        PyErr_SetString(PyExc_ValueError, "emit_unary: skip 0-8");
        return NULL;
    }
    if (emit_one(NULL, args[0], NULL, (PyArrayObject *)args[1], (PyArrayObject *)args[2],
                 args[3], t0, (int)skip) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
fallback(Operator *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

/* Whether a call is taken here: 1 with no tracer and no listener (dispatch's `_plain`),
 * 2 with listeners that want events after ops only (`_fast_with_events`: take the op,
 * then emit it; not the reflected operators), 0 when the Python one takes it, -1 an
 * error. */
static int
taken_how(Operator *self)
{
    PyObject *plain = PyDict_GetItemWithError(self->flags, str_plain);
    if (plain == Py_True)
        return 1;
    PyObject *events = self->reflected ? NULL
        : PyDict_GetItemWithError(self->flags, str_fast_with_events);
    if (events == Py_True)
        return 2;
    return PyErr_Occurred() ? -1 : 0;
}

/* Whether autograd would record the op (an operand requires grad and grad mode is on
 * in this thread): then the Python one takes it. -1: an error. */
static int
records_grad(Operator *self, int wants_grad)
{
    return wants_grad ? grad_mode_on(self) : 0;
}

/* A new Tensor on `out` (the reference moves to it), as object.__new__(Tensor) with
 * _data = out and requires_grad = False; NULL (and `out` released) after an error. */
static PyObject *
new_tensor(Operator *self, PyObject *out)
{
    PyTypeObject *tt = self->tensor_type;
    PyObject *t = tt->tp_alloc(tt, 0);
    if (t == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    *(PyObject **)((char *)t + self->off_data) = out;
    Py_INCREF(Py_False);
    *(PyObject **)((char *)t + self->off_requires_grad) = Py_False;
    return t;
}

static PyObject *
op_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Operator *self = (Operator *)callable;
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL)
        return fallback(self, args, nargsf, kwnames);
    int how = taken_how(self);
    if (how <= 0)
        return how < 0 ? NULL : fallback(self, args, nargsf, kwnames);
    int listening = how == 2;
    int wants_grad = 0;
    PyArrayObject *a = plain_array(self, args[0], &wants_grad);
    if (a == NULL)
        return fallback(self, args, nargsf, kwnames);
    int type = PyArray_TYPE(a);
    npy_intp itemsize = PyArray_ITEMSIZE(a);
    PyObject *other = args[1];
    double f64;
    float f32;
    char *pa = PyArray_BYTES(a), *pb;
    npy_intp sa = itemsize, sb;
    PyArrayObject *b = NULL;       /* the right operand's array, when it is a tensor */
    PyArrayObject *shape_of = a;   /* the output's shape */

    if (PyObject_TypeCheck(other, self->tensor_type)) {
        if (self->reflected)  /* Python calls __radd__ with a Tensor only for subclasses */
            return fallback(self, args, nargsf, kwnames);
        b = plain_array(self, other, &wants_grad);
        if (b == NULL || PyArray_TYPE(b) != type)
            return fallback(self, args, nargsf, kwnames);
        int nd = PyArray_NDIM(a);
        pb = PyArray_BYTES(b);
        sb = itemsize;
        if (PyArray_NDIM(b) == nd
                && memcmp(PyArray_DIMS(a), PyArray_DIMS(b), nd * sizeof(npy_intp)) == 0) {
            /* same shape */
        }
        else if (PyArray_SIZE(b) == 1 && PyArray_NDIM(b) <= nd) {
            sb = 0;
        }
        else if (PyArray_SIZE(a) == 1 && nd <= PyArray_NDIM(b)) {
            sa = 0;
            shape_of = b;
        }
        else {
            return fallback(self, args, nargsf, kwnames);
        }
    }
    else if (scalar_value(other, type, &f64, &f32)) {
        pb = type == NPY_FLOAT ? (char *)&f32 : (char *)&f64;
        sb = 0;
    }
    else {
        return fallback(self, args, nargsf, kwnames);
    }

    int recorded = records_grad(self, wants_grad);
    if (recorded)
        return recorded < 0 ? NULL : fallback(self, args, nargsf, kwnames);

    int64_t t0 = listening ? em_clock_ns() : 0;
    int which = type == NPY_DOUBLE;
    PyObject *out = PyArray_SimpleNew(PyArray_NDIM(shape_of), PyArray_DIMS(shape_of), type);
    if (out == NULL)
        return NULL;
    npy_intp n = PyArray_SIZE(shape_of);
    char *loop_args[3];
    npy_intp steps[3];
    if (self->reflected) {
        loop_args[0] = pb; steps[0] = sb;
        loop_args[1] = pa; steps[1] = sa;
    }
    else {
        loop_args[0] = pa; steps[0] = sa;
        loop_args[1] = pb; steps[1] = sb;
    }
    loop_args[2] = PyArray_BYTES((PyArrayObject *)out);
    steps[2] = itemsize;
    /* Another thread may rebind an operand's _data while the loop runs without the GIL,
     * and a listener may run any code: hold the arrays until the op is emitted. */
    Py_INCREF(a);
    Py_XINCREF(b);
    run_loop(self->loop[which], self->loop_data[which], loop_args, n, steps);

    PyObject *t = new_tensor(self, out);
    if (t != NULL && listening
            && emit(self, (PyObject *)a, b != NULL ? (PyObject *)b : other, out, t, t0) < 0)
        Py_CLEAR(t);
    Py_DECREF(a);
    Py_XDECREF(b);
    return t;
}

/* A unary function (em.exp, em.negative, ...) called from its Python function
 * (dispatch.make_unary_function, which holds this object once the operators are hot): the
 * operators' kind of path for one operand. A float32/float64 C-contiguous tensor autograd
 * would not record, with no tracer and no debugger, while the op's impl is the one it was
 * registered with (the fuzzer's rounding oracle swaps it), gets the ufunc's 1-d loop for
 * its dtype: np.exp's own function, NumPy's bits. Everything else goes to the Python
 * function's body (`fallback`). */
static PyObject *
unary_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Operator *self = (Operator *)callable;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL)
        return fallback(self, args, nargsf, kwnames);
    int how = taken_how(self);
    if (how <= 0)
        return how < 0 ? NULL : fallback(self, args, nargsf, kwnames);
    int listening = how == 2;
    int wants_grad = 0;
    PyArrayObject *a = plain_array(self, args[0], &wants_grad);
    if (a == NULL)
        return fallback(self, args, nargsf, kwnames);
    PyObject *impl = PyObject_GetAttr(self->op_def, str_impl);
    if (impl == NULL)
        return NULL;
    Py_DECREF(impl);   /* only compared: the OpDef holds it */
    if (impl != self->impl)
        return fallback(self, args, nargsf, kwnames);
    int recorded = records_grad(self, wants_grad);
    if (recorded)
        return recorded < 0 ? NULL : fallback(self, args, nargsf, kwnames);

    int64_t t0 = listening ? em_clock_ns() : 0;
    int type = PyArray_TYPE(a);
    npy_intp itemsize = PyArray_ITEMSIZE(a);
    PyObject *out = PyArray_SimpleNew(PyArray_NDIM(a), PyArray_DIMS(a), type);
    if (out == NULL)
        return NULL;
    char *loop_args[2] = {PyArray_BYTES(a), PyArray_BYTES((PyArrayObject *)out)};
    npy_intp steps[2] = {itemsize, itemsize};
    Py_INCREF(a);   /* held until the op is emitted (op_vectorcall says why) */
    run_loop(self->loop[type == NPY_DOUBLE], self->loop_data[type == NPY_DOUBLE], loop_args,
             PyArray_SIZE(a), steps);

    PyObject *t = new_tensor(self, out);
    /* skip 1: past the Python function that called us (make_unary_function's `fn`, the
     * only caller), out to the user's frame */
    if (t != NULL && listening && emit_one(self->flags, self->name, args[0], a,
                                           (PyArrayObject *)out, t, t0, 1) < 0)
        Py_CLEAR(t);
    Py_DECREF(a);
    return t;
}

/* --- construction ------------------------------------------------------------------- */

static PyObject *
op_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fallback_op, *name, *ufunc, *tensor_type, *flags;
    PyObject *op_def = NULL, *impl = NULL;
    int reflected;
    static char *names[] = {"fallback", "name", "ufunc", "tensor_type", "flags", "reflected",
                            "op", "impl", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OUO!O!O!p|OO", names, &fallback_op, &name,
                                     &PyUFunc_Type, &ufunc, &PyType_Type, &tensor_type,
                                     &PyDict_Type, &flags, &reflected, &op_def, &impl))
        return NULL;
    PyUFuncObject *u = (PyUFuncObject *)ufunc;
    int unary = op_def != NULL;
    if (unary && (impl == NULL || reflected)) {
        PyErr_SetString(PyExc_TypeError, "a unary function needs its op and impl, unreflected");
        return NULL;
    }
    if (u->nin != (unary ? 1 : 2) || u->nout != 1 || u->core_enabled) {
        PyErr_SetString(PyExc_ValueError, unary ? "expected a unary elementwise ufunc"
                                                : "expected a binary elementwise ufunc");
        return NULL;
    }
    PyObject *data_descr = PyObject_GetAttrString(tensor_type, EM_NAME_DATA);
    PyObject *rg_descr = data_descr == NULL ? NULL
        : PyObject_GetAttrString(tensor_type, EM_NAME_REQUIRES_GRAD);
    Py_ssize_t off_data = data_descr == NULL ? -1 : em_member_offset(data_descr);
    Py_ssize_t off_rg = (rg_descr == NULL || off_data < 0) ? -1 : em_member_offset(rg_descr);
    Py_XDECREF(data_descr);
    Py_XDECREF(rg_descr);
    if (off_rg < 0)
        return NULL;
    Operator *self = (Operator *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = unary ? unary_vectorcall : op_vectorcall;
    self->reflected = reflected;
    Py_XINCREF(op_def); self->op_def = op_def;
    Py_XINCREF(impl); self->impl = impl;
    self->off_data = off_data;
    self->off_requires_grad = off_rg;
    Py_INCREF(fallback_op); self->fallback = fallback_op;
    Py_INCREF(name); self->name = name;
    Py_INCREF(ufunc); self->ufunc = ufunc;
    Py_INCREF(tensor_type); self->tensor_type = (PyTypeObject *)tensor_type;
    Py_INCREF(flags); self->flags = flags;
    if (dispatch_flags == NULL) {
        Py_INCREF(flags);
        dispatch_flags = flags;
    }
    if (same_type_loop(u, NPY_FLOAT, &self->loop[0], &self->loop_data[0]) < 0
            || same_type_loop(u, NPY_DOUBLE, &self->loop[1], &self->loop_data[1]) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
op_traverse(Operator *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    Py_VISIT(self->name);
    Py_VISIT(self->ufunc);
    Py_VISIT(self->tensor_type);
    Py_VISIT(self->flags);
    Py_VISIT(self->op_def);
    Py_VISIT(self->impl);
    return 0;
}

static int
op_clear(Operator *self)
{
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->name);
    Py_CLEAR(self->ufunc);
    Py_CLEAR(self->tensor_type);
    Py_CLEAR(self->flags);
    Py_CLEAR(self->op_def);
    Py_CLEAR(self->impl);
    return 0;
}

static void
op_dealloc(Operator *self)
{
    PyObject_GC_UnTrack(self);
    op_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A method descriptor: t.__add__ is a bound method; type slots call it unbound. */
static PyObject *
op_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

/* __name__, __qualname__, __doc__, __wrapped__: the Python operator's, for help() and
 * tracebacks. */
static PyObject *
op_getattro(PyObject *obj, PyObject *name)
{
    const char *s = PyUnicode_AsUTF8(name);
    if (s == NULL)
        return NULL;
    if (strcmp(s, "__name__") == 0 || strcmp(s, "__qualname__") == 0
            || strcmp(s, "__doc__") == 0 || strcmp(s, "__module__") == 0)
        return PyObject_GetAttr(((Operator *)obj)->fallback, name);
    return PyObject_GenericGetAttr(obj, name);
}

static PyObject *
op_repr(PyObject *obj)
{
    PyObject *name = PyObject_GetAttrString(((Operator *)obj)->fallback, "__qualname__");
    if (name == NULL)
        return NULL;
    PyObject *text = PyUnicode_FromFormat(((Operator *)obj)->op_def != NULL
                                          ? "<C function %U>" : "<C operator %U>", name);
    Py_DECREF(name);
    return text;
}

static PyMemberDef op_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(Operator, fallback), READONLY,
     "the Python operator, which takes every call this one does not"},
    {"reflected", T_INT, offsetof(Operator, reflected), READONLY, NULL},
    {"impl", T_OBJECT, offsetof(Operator, impl), READONLY,
     "a unary function's registered impl: while the op's is another, calls go to Python"},
    {NULL},
};

static PyTypeObject OperatorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_em_eager_operators.Operator",
    .tp_basicsize = sizeof(Operator),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A Tensor operator with NumPy's loop called directly for plain eager calls.",
    .tp_new = op_new,
    .tp_dealloc = (destructor)op_dealloc,
    .tp_traverse = (traverseproc)op_traverse,
    .tp_clear = (inquiry)op_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Operator, vectorcall),
    .tp_descr_get = op_descr_get,
    .tp_getattro = op_getattro,
    .tp_repr = op_repr,
    .tp_members = op_members,
};

/* --- Loop: one ufunc's loop called directly, for the jit's fast entry ------------------
 *
 * A Loop object wraps one elementwise ufunc (np.add, np.exp, ...) and one dtype (float32
 * or float64). Called with the ufunc's operands, it takes the call itself when every array
 * operand is an exact, aligned, C-contiguous, native-order ndarray of that dtype and the
 * same shape, and every other operand a Python float (or an int the dtype holds exactly):
 * it allocates the output and runs the loop from the ufunc's `functions` table for that
 * dtype, as the operators above do. Any other call goes to the ufunc itself. A 0-d result
 * is a 0-d array (as the plan's steps return), not a NumPy scalar. ufunc_loop.py says why.
 */
#define MAX_OPERANDS 3

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *ufunc;
    int nin;
    int type;                    /* NPY_FLOAT or NPY_DOUBLE */
    PyUFuncGenericFunction loop;
    void *loop_data;
} Loop;

static PyObject *
call_ufunc(Loop *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return PyObject_Vectorcall(self->ufunc, args, nargsf, kwnames);
}

static PyObject *
loop_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Loop *self = (Loop *)obj;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs != self->nin)
        return call_ufunc(self, args, nargsf, kwnames);
    char *loop_args[MAX_OPERANDS];
    npy_intp steps[MAX_OPERANDS];
    double f64[MAX_OPERANDS];
    float f32[MAX_OPERANDS];
    PyArrayObject *shape_of = NULL;
    const npy_intp itemsize = self->type == NPY_FLOAT ? 4 : 8;
    for (Py_ssize_t k = 0; k < nargs; ++k) {
        PyObject *x = args[k];
        if (PyArray_CheckExact(x)) {
            PyArrayObject *a = (PyArrayObject *)x;
            if (PyArray_TYPE(a) != self->type || !PyArray_ISCARRAY_RO(a)
                    || !PyArray_ISNOTSWAPPED(a))
                return call_ufunc(self, args, nargsf, kwnames);
            if (shape_of == NULL) {
                shape_of = a;
            }
            else if (PyArray_NDIM(a) != PyArray_NDIM(shape_of)
                     || memcmp(PyArray_DIMS(a), PyArray_DIMS(shape_of),
                               PyArray_NDIM(a) * sizeof(npy_intp)) != 0) {
                return call_ufunc(self, args, nargsf, kwnames);
            }
            loop_args[k] = PyArray_BYTES(a);
            steps[k] = itemsize;
        }
        else if (scalar_value(x, self->type, &f64[k], &f32[k])) {
            loop_args[k] = self->type == NPY_FLOAT ? (char *)&f32[k] : (char *)&f64[k];
            steps[k] = 0;
        }
        else {
            return call_ufunc(self, args, nargsf, kwnames);
        }
    }
    if (shape_of == NULL)  /* numbers only: NumPy's own answer (a scalar) */
        return call_ufunc(self, args, nargsf, kwnames);
    PyObject *out = PyArray_SimpleNew(PyArray_NDIM(shape_of), PyArray_DIMS(shape_of),
                                      self->type);
    if (out == NULL)
        return NULL;
    loop_args[nargs] = PyArray_BYTES((PyArrayObject *)out);
    steps[nargs] = itemsize;
    /* The caller holds the operands: no other thread can free them meanwhile. */
    run_loop(self->loop, self->loop_data, loop_args, PyArray_SIZE(shape_of), steps);
    return out;
}

static PyObject *
loop_new(PyTypeObject *cls, PyObject *args, PyObject *kwds)
{
    PyObject *ufunc;
    PyObject *dtype_obj;
    static char *names[] = {"ufunc", "dtype", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O", names, &PyUFunc_Type, &ufunc,
                                     &dtype_obj))
        return NULL;
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrConverter(dtype_obj, &descr))
        return NULL;
    int typenum = descr->type_num;
    Py_DECREF(descr);
    PyUFuncObject *u = (PyUFuncObject *)ufunc;
    if (u->nout != 1 || u->nin < 1 || u->nin + 1 > MAX_OPERANDS || u->core_enabled
            || (typenum != NPY_FLOAT && typenum != NPY_DOUBLE)) {
        PyErr_SetString(PyExc_ValueError,
                        "expected an elementwise ufunc with one output, float32 or float64");
        return NULL;
    }
    PyUFuncGenericFunction loop;
    void *loop_data;
    if (same_type_loop(u, (char)typenum, &loop, &loop_data) < 0)
        return NULL;
    Loop *self = (Loop *)cls->tp_alloc(cls, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = loop_vectorcall;
    Py_INCREF(ufunc);
    self->ufunc = ufunc;
    self->nin = u->nin;
    self->type = typenum;
    self->loop = loop;
    self->loop_data = loop_data;
    return (PyObject *)self;
}

static int
loop_traverse(Loop *self, visitproc visit, void *arg)
{
    Py_VISIT(self->ufunc);
    return 0;
}

static int
loop_clear(Loop *self)
{
    Py_CLEAR(self->ufunc);
    return 0;
}

static void
loop_dealloc(Loop *self)
{
    PyObject_GC_UnTrack(self);
    loop_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
loop_repr(PyObject *obj)
{
    Loop *self = (Loop *)obj;
    return PyUnicode_FromFormat("<ufunc loop %s %s>", ((PyUFuncObject *)self->ufunc)->name,
                                self->type == NPY_FLOAT ? "float32" : "float64");
}

static PyMemberDef loop_members[] = {
    {"ufunc", T_OBJECT, offsetof(Loop, ufunc), READONLY,
     "the ufunc: every call this object does not take goes to it"},
    {NULL},
};

static PyTypeObject LoopType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_em_eager_operators.Loop",
    .tp_basicsize = sizeof(Loop),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A ufunc's 1-d loop called directly for plain same-dtype operands.",
    .tp_new = loop_new,
    .tp_dealloc = (destructor)loop_dealloc,
    .tp_traverse = (traverseproc)loop_traverse,
    .tp_clear = (inquiry)loop_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Loop, vectorcall),
    .tp_repr = loop_repr,
    .tp_members = loop_members,
};

static PyMethodDef module_functions[] = {
    {"emit_unary", (PyCFunction)(void (*)(void))emit_unary, METH_FASTCALL,
     "emit_unary(name, x, out, t, t0, skip): a unary function's OpEvent to the listeners"},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_em_eager_operators",
    "Tensor's + - * / for plain eager calls (execmode/codegen/eager_operators.py), "
    "a unary function's events (emit_unary), and a ufunc's loop called directly "
    "(ufunc_loop.py).", -1, module_functions,
};

PyMODINIT_FUNC
PyInit__em_eager_operators(void)
{
    import_array();
    import_umath();
    str_plain = PyUnicode_InternFromString(EM_NAME_PLAIN);
    str_grad_enabled = PyUnicode_InternFromString(EM_NAME_GRAD_ENABLED);
    str_thread = PyUnicode_InternFromString(EM_NAME_THREAD);
    str_grad = PyUnicode_InternFromString(EM_NAME_GRAD);
    str_fast_with_events = PyUnicode_InternFromString(EM_NAME_FAST_WITH_EVENTS);
    str_native_binary = PyUnicode_InternFromString(EM_NAME_NATIVE_BINARY);
    str_native_general = PyUnicode_InternFromString(EM_NAME_NATIVE_GENERAL);
    str_impl = PyUnicode_InternFromString(EM_NAME_IMPL);
    str_on_op = PyUnicode_InternFromString(EM_NAME_ON_OP);
    str_OpEvent = PyUnicode_InternFromString(EM_NAME_OPEVENT);
    str_seq = PyUnicode_InternFromString(EM_NAME_SEQ);
    str_no_attrs = PyUnicode_InternFromString(EM_NAME_NO_ATTRS);
    str_eager = PyUnicode_InternFromString(EM_NAME_EAGER);
    str_cpu = PyUnicode_InternFromString(EM_NAME_CPU);
    str_scope = PyUnicode_InternFromString(EM_NAME_SCOPE);
    str_state = PyUnicode_InternFromString(EM_NAME_STATE);
    str_locations = PyUnicode_InternFromString(EM_NAME_LOCATIONS);
    str_user_location = PyUnicode_InternFromString(EM_NAME_USER_LOCATION);
    zero = PyLong_FromLong(0);
    if (str_plain == NULL || str_grad_enabled == NULL || str_thread == NULL || str_grad == NULL
            || str_fast_with_events == NULL || str_native_binary == NULL
            || str_native_general == NULL || str_impl == NULL
            || str_on_op == NULL || str_OpEvent == NULL || str_seq == NULL
            || str_no_attrs == NULL || str_eager == NULL || str_cpu == NULL
            || str_scope == NULL || str_state == NULL || em_native_init() < 0
            || str_locations == NULL || str_user_location == NULL || zero == NULL
            || PyType_Ready(&OperatorType) < 0 || PyType_Ready(&LoopType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&OperatorType);
    if (PyModule_AddObject(m, "Operator", (PyObject *)&OperatorType) < 0) {
        Py_DECREF(&OperatorType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&LoopType);
    if (PyModule_AddObject(m, "Loop", (PyObject *)&LoopType) < 0) {
        Py_DECREF(&LoopType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
