/* _em_fast_entry: the C fast entry of a jitted replay (see fast_entry.py).
 *
 * One FastEntry object replays one concrete function whose plan is a single compiled C
 * function (a program or one fused kernel) or a single Python-callable step (a NumPy
 * ufunc: a jitted single op), doing in C what the generated Python replay
 * (execmode/jit_driver/fastcall.py) does: check the global flags and every argument against
 * the signature, gather data pointers into the argument block, take output arrays from
 * the kernel's OutputPool, call the entry point, wrap the outputs in Tensors.
 *
 * Any difference from the signature returns the MISS sentinel (the general path takes
 * over, as after a miss of the Python replay). A difference that only this entry checks
 * (an argument's strides, a captured tensor's array) calls the Python replay instead,
 * which copies into the kernel's layout: the entry never changes behaviour, only cost.
 *
 * Every object the specs point at is owned by one tuple (``refs``), so the GC support is
 * one visit and one clear.
 */
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <structmember.h>
#include <numpy/arrayobject.h>
#include "em_native.h"

#define FE_MAX_DIMS 32
#define FE_MAX_ITEMS 64    /* arguments, inputs, outputs, results (more: the Python replay) */
#define FE_STACK_BLOCK 64  /* argument blocks up to this size live on the C stack */

typedef void (*entry_fn)(void *const *);

typedef struct {
    int ndim;
    npy_intp dims[FE_MAX_DIMS];
    npy_intp strides[FE_MAX_DIMS];  /* expected byte strides (checked where dims > 1) */
    PyArray_Descr *descr;
} Layout;

typedef struct {
    int is_static;
    Py_ssize_t leaf;           /* tensor: its leaf index */
    Layout layout;             /* tensor: shape and dtype of the signature (no strides) */
    PyObject *requires_grad;   /* tensor: Py_True or Py_False */
    Py_ssize_t same_as;        /* tensor traced as an earlier argument (f(x, x)): that
                                * position, whose object this one must be; else -1 */
    PyTypeObject *static_type; /* static: exact type and value */
    PyObject *static_value;
} Position;

typedef struct {
    Py_ssize_t block;          /* index in the argument block */
    Py_ssize_t leaf;           /* >= 0: an argument's array; -1: a captured tensor */
    PyObject *capture;         /* the captured Tensor (its _data is read at every call) */
    Layout layout;
} Input;

typedef struct {
    Py_ssize_t block;
    PyObject *entries;         /* OutputPool.entries: a list of (array, pointer) */
    PyObject *take;            /* OutputPool.take, when every entry is busy */
} Output;

typedef struct {
    Py_ssize_t output;         /* >= 0: wrap that output; -1: return ``value`` */
    PyObject *value;
} Result;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    entry_fn fn;
    PyObject *call;            /* call mode: the plan's one step (a ufunc); else NULL. The
                                * block then holds its argument vector: constants as
                                * PyObject pointers, inputs filled in per call */
    Py_ssize_t n_positions, n_leaves, n_inputs, n_outputs, n_results, n_block;
    Position *positions;
    Input *inputs;
    Output *outputs;
    Result *results;
    void **block;              /* the template: fixed pointers (constants, scratch) */
    void **heap_block;         /* scratch copy for blocks too big for the stack */
    PyObject *structure;       /* NULL: return the single result as is */
    PyObject *unflatten;
    PyObject *dispatch_dict, *jit_dict;
    PyObject *hooks;           /* instrument's _on_kernel, _before_kernel, _after_kernel */
    PyObject *grad_enabled;
    PyTypeObject *tensor_type;
    Py_ssize_t off_data, off_requires_grad;
    PyObject *miss;
    PyObject *python;          /* the generated Python replay: layout misses go there */
    PyObject *guard;           /* NULL, or () -> True while the Python state is as traced */
    long long *clock;          /* NULL, or a one-step plan's kernel clock (kernel_clock.py):
                                  [on, run sums, step sums]; a program times itself */
    int release_gil;
    PyObject *refs;            /* owns every object above */
} FastEntry;

static PyObject *k_tracing, *k_grad_enabled, *k_jit_disabled;

/* --- the kernel clock (execmode/kernel_clock.py): em_clock.h, the programs' own helpers -- */

#define CLOCK_HEADER 5   /* kernel_clock.HEADER: on, whole runs' calls, ns, min, max */

/* The one step of a one-step plan took the time since t0 (and allocated nbytes): its
 * sums and the whole run's are the same time. */
static inline void
clock_step_done(long long *clock, long long t0, long long nbytes)
{
    em_clock_step(clock + CLOCK_HEADER, t0);
    em_clock_step(clock + 1, t0);
    clock[CLOCK_HEADER + 4] += nbytes;
}

/* --- checks ------------------------------------------------------------------------- */

/* 1: the global state allows a replay; 0: it does not; -1: error. The same conditions as
 * the Python replay's first lines, read from the modules' dicts at every call (a listener
 * or a tracer may come and go between any two calls). */
static int
globals_allow(FastEntry *self)
{
    PyObject *v;
    int truth;

    /* dispatch._tracing: how many threads trace (0 almost always, a small int singleton) */
    v = PyDict_GetItemWithError(self->dispatch_dict, k_tracing);
    if (v == NULL)
        return PyErr_Occurred() ? -1 : 0;
    truth = PyObject_IsTrue(v);
    if (truth != 0)
        return truth < 0 ? -1 : 0;
    v = PyDict_GetItemWithError(self->dispatch_dict, k_grad_enabled);
    if (v != self->grad_enabled)
        return v == NULL && PyErr_Occurred() ? -1 : 0;
    v = PyDict_GetItemWithError(self->jit_dict, k_jit_disabled);
    if (v != Py_False) {
        if (v == NULL)
            return PyErr_Occurred() ? -1 : 0;
        truth = PyObject_IsTrue(v);
        if (truth != 0)
            return truth < 0 ? -1 : 0;
    }
    /* instrument's hook lists, held (it fills them in place, never rebinds them): three
     * dict lookups fewer per call, a tenth of a jitted single op's overhead */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->hooks); ++i)
        if (PyList_GET_SIZE(PyTuple_GET_ITEM(self->hooks, i)) != 0)
            return 0;
    return 1;
}

static int
shape_matches(PyArrayObject *a, const Layout *l)
{
    if (PyArray_NDIM(a) != l->ndim)
        return 0;
    const npy_intp *dims = PyArray_DIMS(a);
    for (int d = 0; d < l->ndim; ++d)
        if (dims[d] != l->dims[d])
            return 0;
    return 1;
}

/* The kernel reads the array with these strides; size-1 axes may carry any stride. */
static int
strides_match(PyArrayObject *a, const Layout *l)
{
    const npy_intp *strides = PyArray_STRIDES(a);
    for (int d = 0; d < l->ndim; ++d)
        if (l->dims[d] > 1 && strides[d] != l->strides[d])
            return 0;
    return 1;
}

/* --- the call ----------------------------------------------------------------------- */

static PyObject *
wrap(FastEntry *self, PyObject *array)
{
    PyTypeObject *type = self->tensor_type;
    /* object.__new__(Tensor) is type->tp_alloc(type, 0) after argument checks. */
    PyObject *t = type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    Py_INCREF(array);
    *(PyObject **)((char *)t + self->off_data) = array;
    Py_INCREF(Py_False);
    *(PyObject **)((char *)t + self->off_requires_grad) = Py_False;
    return t;
}

static PyObject *
miss(FastEntry *self)
{
    Py_INCREF(self->miss);
    return self->miss;
}

static PyObject *
fe_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FastEntry *self = (FastEntry *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *leaf_data[FE_MAX_ITEMS];    /* borrowed: the argument tensors hold them */
    PyObject *held[FE_MAX_ITEMS];         /* strong references released at the end */
    PyObject *out_arrays[FE_MAX_ITEMS];
    void *stack_block[FE_STACK_BLOCK];
    Py_ssize_t n_held = 0, n_out = 0;
    PyObject *result = NULL;
    int soft_miss = 0;

    if (self->refs == NULL || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)
            || nargs != self->n_positions)
        return miss(self);
    int allow = globals_allow(self);
    if (allow <= 0)
        return allow < 0 ? NULL : miss(self);
    if (self->guard != NULL) {  /* globals rebound, attributes changed (graph/guards.py) */
        PyObject *ok = PyObject_CallNoArgs(self->guard);
        if (ok == NULL)
            return NULL;
        Py_DECREF(ok);
        if (ok != Py_True)
            return miss(self);
    }

    for (Py_ssize_t p = 0; p < nargs; ++p) {
        PyObject *a = args[p];
        const Position *pos = &self->positions[p];
        if (pos->is_static) {
            /* ``a.__class__ is not KT or a != K``, as the Python replay spells it (a NaN
             * is never equal to itself, even when it is the same object). */
            if (Py_TYPE(a) != pos->static_type)
                return miss(self);
            PyObject *ne = PyObject_RichCompare(a, pos->static_value, Py_NE);
            if (ne == NULL)
                return NULL;
            int differs = PyObject_IsTrue(ne);
            Py_DECREF(ne);
            if (differs != 0)
                return differs < 0 ? NULL : miss(self);
            continue;
        }
        if (pos->same_as >= 0) {  /* one graph input for both: the same object, checked */
            if (a != args[pos->same_as])
                return miss(self);
            continue;
        }
        if (Py_TYPE(a) != self->tensor_type)
            return miss(self);
        PyObject *d = em_slot(a, self->off_data);
        if (d == NULL || !PyArray_CheckExact(d)
                || PyArray_DESCR((PyArrayObject *)d) != pos->layout.descr
                || !shape_matches((PyArrayObject *)d, &pos->layout)
                || em_slot(a, self->off_requires_grad) != pos->requires_grad)
            return miss(self);
        leaf_data[pos->leaf] = d;
    }

    /* From here on Python code may run (a pool allocating): hold what we read. */
    for (Py_ssize_t k = 0; k < self->n_inputs; ++k) {
        const Input *in = &self->inputs[k];
        PyObject *d;
        if (in->leaf >= 0) {
            d = leaf_data[in->leaf];
            /* A kernel reads fixed strides; a callable step takes any layout. */
            if (self->call == NULL && !strides_match((PyArrayObject *)d, &in->layout)) {
                soft_miss = 1;
                goto done;
            }
        }
        else {
            d = em_slot(in->capture, self->off_data);
            if (d == NULL || !PyArray_CheckExact(d)
                    || !shape_matches((PyArrayObject *)d, &in->layout)
                    || (self->call == NULL && !strides_match((PyArrayObject *)d, &in->layout))
                    || !PyArray_EquivTypes(PyArray_DESCR((PyArrayObject *)d),
                                           in->layout.descr)) {
                soft_miss = 1;
                goto done;
            }
        }
        Py_INCREF(d);
        held[n_held++] = d;
    }
    if (self->call != NULL) {
        /* The step itself: f(*inputs and constants). A failure or an unexpected result
         * goes to the Python replay, which answers MISS so the general path raises
         * eager's error (as a failing step in the Python replay does). */
        PyObject *argv[FE_STACK_BLOCK];
        memcpy(argv, self->block, self->n_block * sizeof(void *));
        for (Py_ssize_t k = 0; k < self->n_inputs; ++k)
            argv[self->inputs[k].block] = held[k];
        long long t0 = self->clock != NULL && self->clock[0] ? em_clock_ticks() : 0;
        PyObject *ret = PyObject_Vectorcall(self->call, argv, self->n_block, NULL);
        if (ret == NULL || !PyArray_CheckExact(ret)) {
            if (ret == NULL)
                PyErr_Clear();
            Py_XDECREF(ret);
            soft_miss = 1;
            goto done;
        }
        if (t0)  /* the ufunc's result is a new array: its bytes are new memory */
            clock_step_done(self->clock, t0, PyArray_BASE((PyArrayObject *)ret) == NULL
                            ? (long long)PyArray_NBYTES((PyArrayObject *)ret) : 0);
        out_arrays[n_out++] = ret;
        goto wrap_results;
    }
    for (Py_ssize_t k = 0; k < self->n_outputs; ++k) {
        const Output *o = &self->outputs[k];
        PyObject *array = NULL;
        /* OutputPool's rule: reuse an array only its pool entry references. */
        Py_ssize_t n = PyList_GET_SIZE(o->entries);
        for (Py_ssize_t i = 0; i < n; ++i) {
            PyObject *candidate = PyTuple_GET_ITEM(PyList_GET_ITEM(o->entries, i), 0);
            if (Py_REFCNT(candidate) == 1) {
                array = candidate;
                Py_INCREF(array);
                break;
            }
        }
        if (array == NULL) {
            PyObject *entry = PyObject_CallNoArgs(o->take);
            if (entry == NULL)
                goto done;
            if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) < 1
                    || !PyArray_Check(PyTuple_GET_ITEM(entry, 0))) {
                Py_DECREF(entry);
                PyErr_SetString(PyExc_TypeError, "OutputPool.take() returned no array");
                goto done;
            }
            array = PyTuple_GET_ITEM(entry, 0);
            Py_INCREF(array);
            Py_DECREF(entry);
        }
        out_arrays[n_out++] = array;
    }

    /* No Python code runs between filling the block and the call. */
    void **block = self->n_block <= FE_STACK_BLOCK ? stack_block : self->heap_block;
    memcpy(block, self->block, self->n_block * sizeof(void *));
    for (Py_ssize_t k = 0; k < self->n_inputs; ++k)
        block[self->inputs[k].block] = PyArray_DATA((PyArrayObject *)held[k]);
    for (Py_ssize_t k = 0; k < self->n_outputs; ++k)
        block[self->outputs[k].block] = PyArray_DATA((PyArrayObject *)out_arrays[k]);
    long long t0 = self->clock != NULL && self->clock[0] ? em_clock_ticks() : 0;
    if (self->release_gil) {
        /* Big, stateless kernels only: the block is on this thread's stack and we hold
         * every array it points into. */
        Py_BEGIN_ALLOW_THREADS
        self->fn(block);
        Py_END_ALLOW_THREADS
    }
    else {
        self->fn(block);
    }
    if (t0)  /* outputs come from the kernel's pool: no new memory counted */
        clock_step_done(self->clock, t0, 0);

wrap_results:
    if (self->structure == NULL) {
        const Result *r = &self->results[0];
        if (r->output >= 0)
            result = wrap(self, out_arrays[r->output]);
        else {
            result = r->value;
            Py_INCREF(result);
        }
        goto done;
    }
    PyObject *leaves = PyList_New(self->n_results);
    if (leaves == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < self->n_results; ++k) {
        const Result *r = &self->results[k];
        PyObject *item;
        if (r->output >= 0) {
            item = wrap(self, out_arrays[r->output]);
            if (item == NULL) {
                Py_DECREF(leaves);
                goto done;
            }
        }
        else {
            item = r->value;
            Py_INCREF(item);
        }
        PyList_SET_ITEM(leaves, k, item);
    }
    result = PyObject_CallFunctionObjArgs(self->unflatten, self->structure, leaves, NULL);
    Py_DECREF(leaves);

done:
    for (Py_ssize_t k = 0; k < n_held; ++k)
        Py_DECREF(held[k]);
    for (Py_ssize_t k = 0; k < n_out; ++k)
        Py_DECREF(out_arrays[k]);
    if (soft_miss)
        return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
    return result;
}

/* --- construction ------------------------------------------------------------------- */

static int
read_layout(PyObject *shape, PyObject *strides, PyObject *dtype, Layout *l)
{
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > FE_MAX_DIMS
            || (strides != Py_None && (!PyTuple_Check(strides)
                                       || PyTuple_GET_SIZE(strides) != PyTuple_GET_SIZE(shape)))
            || !PyArray_DescrCheck(dtype)) {
        PyErr_SetString(PyExc_ValueError, "bad layout (shape, strides, dtype)");
        return -1;
    }
    l->ndim = (int)PyTuple_GET_SIZE(shape);
    for (int d = 0; d < l->ndim; ++d) {
        l->dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
        l->strides[d] = strides == Py_None ? 0 : PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, d));
    }
    l->descr = (PyArray_Descr *)dtype;
    return PyErr_Occurred() ? -1 : 0;
}

static int
check_count(Py_ssize_t n, const char *what)
{
    if (n > FE_MAX_ITEMS) {
        PyErr_Format(PyExc_ValueError, "too many %s for a fast entry: %zd", what, n);
        return -1;
    }
    return 0;
}

/* FastEntry(spec): spec is the tuple that fast_entry.py builds (see _spec there). */
static PyObject *
fe_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fn_address, *fixed, *positions, *inputs, *outputs, *results, *structure,
        *unflatten, *dispatch_dict, *jit_dict, *hooks, *grad_enabled, *tensor_type,
        *data_descr, *rg_descr, *miss_obj, *python, *keep, *guard, *clock = Py_None;
    Py_ssize_t n_block, n_leaves;
    int release_gil;

    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "FastEntry takes positional arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OnOOnOOOOOO!O!O!OO!OOOpOOO|O:FastEntry", &fn_address, &n_block,
                          &fixed, &positions, &n_leaves, &inputs, &outputs, &results,
                          &structure, &unflatten, &PyDict_Type, &dispatch_dict, &PyDict_Type,
                          &jit_dict, &PyTuple_Type, &hooks, &grad_enabled,
                          &PyType_Type, &tensor_type, &data_descr, &rg_descr, &miss_obj,
                          &release_gil, &python, &keep, &guard, &clock))
        return NULL;
    if (clock != Py_None && (!PyArray_CheckExact(clock)
            || PyArray_TYPE((PyArrayObject *)clock) != NPY_INT64
            || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)clock)
            || !PyArray_ISWRITEABLE((PyArrayObject *)clock)
            || PyArray_SIZE((PyArrayObject *)clock) < CLOCK_HEADER + 5)) {
        PyErr_SetString(PyExc_TypeError, "the clock must be a one-step plan's int64 array");
        return NULL;
    }
    if (!PyTuple_Check(fixed) || !PyTuple_Check(positions) || !PyTuple_Check(inputs)
            || !PyTuple_Check(outputs) || !PyTuple_Check(results)) {
        PyErr_SetString(PyExc_TypeError, "the spec's lists must be tuples");
        return NULL;
    }
    if (check_count(PyTuple_GET_SIZE(positions), "arguments") < 0
            || check_count(n_leaves, "tensor arguments") < 0
            || check_count(PyTuple_GET_SIZE(inputs), "inputs") < 0
            || check_count(PyTuple_GET_SIZE(outputs), "outputs") < 0
            || check_count(PyTuple_GET_SIZE(results), "results") < 0)
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(hooks); ++i)
        if (!PyList_CheckExact(PyTuple_GET_ITEM(hooks, i))) {
            PyErr_SetString(PyExc_TypeError, "instrument's hooks must be lists");
            return NULL;
        }
    if (PyTuple_GET_SIZE(results) < 1 || n_block < 1
            || (grad_enabled != Py_True && grad_enabled != Py_False)) {
        PyErr_SetString(PyExc_ValueError, "bad fast entry spec");
        return NULL;
    }

    FastEntry *self = (FastEntry *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = fe_vectorcall;
    /* Everything the specs borrow from: the argument tuple holds all of it. */
    Py_INCREF(args);
    self->refs = args;
    (void)keep;  /* the kernel or program object: through refs it keeps ``fn`` loaded */
    /* An int: a kernel's or program's address; else the callable step (call mode). */
    if (PyLong_Check(fn_address))
        self->fn = (entry_fn)PyLong_AsVoidPtr(fn_address);
    else if (PyCallable_Check(fn_address) && n_block <= FE_STACK_BLOCK)
        self->call = fn_address;
    self->n_block = n_block;
    self->n_leaves = n_leaves;
    self->n_positions = PyTuple_GET_SIZE(positions);
    self->n_inputs = PyTuple_GET_SIZE(inputs);
    self->n_outputs = PyTuple_GET_SIZE(outputs);
    self->n_results = PyTuple_GET_SIZE(results);
    self->structure = structure == Py_None ? NULL : structure;
    self->unflatten = unflatten;
    self->dispatch_dict = dispatch_dict;
    self->jit_dict = jit_dict;
    self->hooks = hooks;
    self->grad_enabled = grad_enabled;
    self->tensor_type = (PyTypeObject *)tensor_type;
    /* Its own reference: a cleared entry still answers MISS. */
    Py_INCREF(miss_obj);
    self->miss = miss_obj;
    self->python = python;
    self->guard = guard == Py_None ? NULL : guard;
    /* The array is in args, which refs holds. */
    self->clock = clock == Py_None ? NULL : (long long *)PyArray_DATA((PyArrayObject *)clock);
    self->release_gil = release_gil && n_block <= FE_STACK_BLOCK && self->call == NULL;
    self->off_data = em_member_offset(data_descr);
    self->off_requires_grad = self->off_data < 0 ? -1 : em_member_offset(rg_descr);
    if ((self->fn == NULL && self->call == NULL) || self->off_requires_grad < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "no entry point and no callable step");
        goto fail;
    }
    if (self->structure == NULL && self->n_results != 1) {
        PyErr_SetString(PyExc_ValueError, "a single result needs no structure");
        goto fail;
    }

    self->block = PyMem_Calloc(n_block, sizeof(void *));
    self->heap_block = PyMem_Calloc(n_block, sizeof(void *));
    self->positions = PyMem_Calloc(self->n_positions + 1, sizeof(Position));
    self->inputs = PyMem_Calloc(self->n_inputs + 1, sizeof(Input));
    self->outputs = PyMem_Calloc(self->n_outputs + 1, sizeof(Output));
    self->results = PyMem_Calloc(self->n_results, sizeof(Result));
    if (!self->block || !self->heap_block || !self->positions || !self->inputs
            || !self->outputs || !self->results) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fixed); ++i) {
        Py_ssize_t index;
        PyObject *address;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fixed, i), "nO", &index, &address))
            goto fail;
        if (index < 0 || index >= n_block) {
            PyErr_SetString(PyExc_IndexError, "fixed pointer outside the block");
            goto fail;
        }
        /* Call mode: a constant argument (borrowed: refs owns the spec). */
        self->block[index] = self->call != NULL ? (void *)address : PyLong_AsVoidPtr(address);
        if (PyErr_Occurred())
            goto fail;
    }
    for (Py_ssize_t p = 0; p < self->n_positions; ++p) {
        /* (False, leaf, shape, dtype, requires_grad[, same position]) or
         * (True, type, value) */
        PyObject *item = PyTuple_GET_ITEM(positions, p);
        Position *pos = &self->positions[p];
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 3) {
            PyErr_SetString(PyExc_ValueError, "bad position spec");
            goto fail;
        }
        pos->is_static = PyObject_IsTrue(PyTuple_GET_ITEM(item, 0));
        if (pos->is_static) {
            if (!PyType_Check(PyTuple_GET_ITEM(item, 1))) {
                PyErr_SetString(PyExc_TypeError, "a static argument needs its type");
                goto fail;
            }
            pos->static_type = (PyTypeObject *)PyTuple_GET_ITEM(item, 1);
            pos->static_value = PyTuple_GET_ITEM(item, 2);
            continue;
        }
        PyObject *flag, *shape, *dtype, *rg;
        pos->same_as = -1;
        if (!PyArg_ParseTuple(item, "OnOOO|n", &flag, &pos->leaf, &shape, &dtype, &rg,
                              &pos->same_as)
                || read_layout(shape, Py_None, dtype, &pos->layout) < 0)
            goto fail;
        if (pos->leaf < 0 || pos->leaf >= n_leaves || (rg != Py_True && rg != Py_False)
                || pos->same_as >= p) {
            PyErr_SetString(PyExc_ValueError, "bad tensor argument spec");
            goto fail;
        }
        pos->requires_grad = rg;
    }
    for (Py_ssize_t k = 0; k < self->n_inputs; ++k) {
        /* (block index, leaf index or -1, captured tensor or None, shape, strides, dtype) */
        Input *in = &self->inputs[k];
        PyObject *shape, *strides, *dtype;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(inputs, k), "nnOOOO", &in->block, &in->leaf,
                              &in->capture, &shape, &strides, &dtype)
                || read_layout(shape, strides, dtype, &in->layout) < 0)
            goto fail;
        if (in->block < 0 || in->block >= n_block || in->leaf >= n_leaves
                || (in->leaf < 0 && Py_TYPE(in->capture) != self->tensor_type)) {
            PyErr_SetString(PyExc_ValueError, "bad input spec");
            goto fail;
        }
    }
    for (Py_ssize_t k = 0; k < self->n_outputs; ++k) {
        /* (block index, pool entries, pool take) */
        Output *o = &self->outputs[k];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(outputs, k), "nO!O", &o->block, &PyList_Type,
                              &o->entries, &o->take))
            goto fail;
        if (o->block < 0 || o->block >= n_block) {
            PyErr_SetString(PyExc_ValueError, "bad output spec");
            goto fail;
        }
    }
    for (Py_ssize_t k = 0; k < self->n_results; ++k) {
        /* (output index or -1, constant or None) */
        Result *r = &self->results[k];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(results, k), "nO", &r->output, &r->value))
            goto fail;
        if (r->output >= (self->call != NULL ? 1 : self->n_outputs)) {
            PyErr_SetString(PyExc_ValueError, "bad result spec");
            goto fail;
        }
    }
    return (PyObject *)self;

fail:
    Py_DECREF(self);
    return NULL;
}

static int
fe_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(((FastEntry *)op)->refs);
    return 0;
}

static int
fe_clear(PyObject *op)
{
    /* A cleared entry answers MISS (refs == NULL) until it is freed. */
    Py_CLEAR(((FastEntry *)op)->refs);
    return 0;
}

static void
fe_dealloc(PyObject *op)
{
    FastEntry *self = (FastEntry *)op;
    PyObject_GC_UnTrack(op);
    Py_CLEAR(self->refs);
    Py_CLEAR(self->miss);
    PyMem_Free(self->block);
    PyMem_Free(self->heap_block);
    PyMem_Free(self->positions);
    PyMem_Free(self->inputs);
    PyMem_Free(self->outputs);
    PyMem_Free(self->results);
    Py_TYPE(op)->tp_free(op);
}

static PyObject *
fe_get_python(PyObject *op, void *closure)
{
    (void)closure;
    PyObject *python = ((FastEntry *)op)->refs ? ((FastEntry *)op)->python : Py_None;
    Py_INCREF(python);
    return python;
}

static PyGetSetDef fe_getset[] = {
    {"python", fe_get_python, NULL, "the generated Python replay (layout misses run it)",
     NULL},
    {NULL},
};

static PyTypeObject FastEntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_em_fast_entry.FastEntry",
    .tp_basicsize = sizeof(FastEntry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A jitted replay in C: call it like the function; returns MISS on a mismatch.",
    .tp_new = fe_new,
    .tp_dealloc = fe_dealloc,
    .tp_traverse = fe_traverse,
    .tp_clear = fe_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FastEntry, vectorcall),
    .tp_getset = fe_getset,
};

/* --- JitCall: JitFunction.__call__ in C --------------------------------------------------
 *
 * ``jitted(*args)`` first tries ``jitted._fast(*args)`` (a FastEntry or the generated Python
 * replay) and, on MISS, runs ``jitted._call(args, {})``: what JitFunction.__call__ does in
 * Python, without its Python frame (~190 ns, as much as the whole C entry of a jitted
 * single op). A method descriptor, so the class's call slot hands it the instance first.
 * Keyword arguments go to the Python __call__ it holds.
 */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python_call;     /* the Python __call__: keyword calls, and __wrapped__ */
    PyObject *miss;            /* fastcall.MISS */
} JitCall;

static PyObject *k_fast, *k_call;

static PyObject *
jc_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    JitCall *self = (JitCall *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0))
        return PyObject_Vectorcall(self->python_call, args, nargsf, kwnames);
    PyObject *obj = args[0];
    PyObject *fast = PyObject_GetAttr(obj, k_fast);
    if (fast == NULL)
        return NULL;
    if (fast != Py_None) {
        PyObject *out = PyObject_Vectorcall(fast, args + 1, nargs - 1, NULL);
        Py_DECREF(fast);
        if (out == NULL || out != self->miss)
            return out;
        Py_DECREF(out);
    }
    else {
        Py_DECREF(fast);
    }
    PyObject *call_args = PyTuple_New(nargs - 1);
    PyObject *kwargs = call_args == NULL ? NULL : PyDict_New();
    if (kwargs == NULL) {
        Py_XDECREF(call_args);
        return NULL;
    }
    for (Py_ssize_t k = 1; k < nargs; ++k) {
        Py_INCREF(args[k]);
        PyTuple_SET_ITEM(call_args, k - 1, args[k]);
    }
    PyObject *out = PyObject_CallMethodObjArgs(obj, k_call, call_args, kwargs, NULL);
    Py_DECREF(call_args);
    Py_DECREF(kwargs);
    return out;
}

static PyObject *
jc_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *python_call, *miss_obj;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "JitCall takes positional arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OO:JitCall", &python_call, &miss_obj))
        return NULL;
    JitCall *self = (JitCall *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = jc_vectorcall;
    Py_INCREF(python_call);
    self->python_call = python_call;
    Py_INCREF(miss_obj);
    self->miss = miss_obj;
    return (PyObject *)self;
}

static int
jc_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(((JitCall *)op)->python_call);
    Py_VISIT(((JitCall *)op)->miss);
    return 0;
}

static int
jc_clear(PyObject *op)
{
    Py_CLEAR(((JitCall *)op)->python_call);
    Py_CLEAR(((JitCall *)op)->miss);
    return 0;
}

static void
jc_dealloc(PyObject *op)
{
    PyObject_GC_UnTrack(op);
    jc_clear(op);
    Py_TYPE(op)->tp_free(op);
}

/* A method descriptor: jitted.__call__ is a bound method; the call slot calls it unbound. */
static PyObject *
jc_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *
jc_getattro(PyObject *op, PyObject *name)
{
    /* __name__, __qualname__, __doc__, __module__: the Python __call__'s. */
    const char *s = PyUnicode_AsUTF8(name);
    if (s == NULL)
        return NULL;
    if (strcmp(s, "__name__") == 0 || strcmp(s, "__qualname__") == 0
            || strcmp(s, "__doc__") == 0 || strcmp(s, "__module__") == 0)
        return PyObject_GetAttr(((JitCall *)op)->python_call, name);
    return PyObject_GenericGetAttr(op, name);
}

static PyMemberDef jc_members[] = {
    {"__wrapped__", Py_T_OBJECT_EX, offsetof(JitCall, python_call), READONLY,
     "the Python __call__ (keyword calls go to it)"},
    {NULL},
};

static PyTypeObject JitCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_em_fast_entry.JitCall",
    .tp_basicsize = sizeof(JitCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "JitFunction.__call__ in C: the fast replay, else the general path.",
    .tp_new = jc_new,
    .tp_dealloc = jc_dealloc,
    .tp_traverse = jc_traverse,
    .tp_clear = jc_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(JitCall, vectorcall),
    .tp_descr_get = jc_descr_get,
    .tp_getattro = jc_getattro,
    .tp_members = jc_members,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_em_fast_entry",
    .m_doc = "The C fast entry of jitted replays (execmode.codegen.fast_entry).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__em_fast_entry(void)
{
    import_array();
    if (PyType_Ready(&FastEntryType) < 0 || PyType_Ready(&JitCallType) < 0)
        return NULL;
    k_fast = PyUnicode_InternFromString(EM_NAME_FAST);
    k_call = PyUnicode_InternFromString(EM_NAME_CALL);
    if (!k_fast || !k_call)
        return NULL;
    k_tracing = PyUnicode_InternFromString(EM_NAME_TRACING);
    k_grad_enabled = PyUnicode_InternFromString(EM_NAME_GRAD_ENABLED);
    k_jit_disabled = PyUnicode_InternFromString(EM_NAME_JIT_DISABLED);
    if (!k_tracing || !k_grad_enabled || !k_jit_disabled)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&FastEntryType);
    if (PyModule_AddObject(m, "FastEntry", (PyObject *)&FastEntryType) < 0) {
        Py_DECREF(&FastEntryType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&JitCallType);
    if (PyModule_AddObject(m, "JitCall", (PyObject *)&JitCallType) < 0) {
        Py_DECREF(&JitCallType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
