/* _em_ufunc_loop: a NumPy ufunc's own 1-d loop, called directly (ufunc_loop.py says why).
 *
 * A Loop object wraps one elementwise ufunc (np.add, np.exp, ...) and one dtype (float32
 * or float64). Called with the ufunc's operands, it takes the call itself when every array
 * operand is an exact, aligned, C-contiguous, native-order ndarray of that dtype and the
 * same shape, and every other operand a Python float (or an int the dtype holds exactly):
 * it allocates the output and runs the loop from the ufunc's `functions` table for
 * that dtype, the function the ufunc itself runs, so the bits are NumPy's. What it leaves
 * out is the ufunc's per-call machinery: argument parsing, type resolution and the
 * error-state context (whose floating-point warnings execmode silences anyway).
 *
 * Any other call goes to the ufunc itself: the same answers either way, only the time
 * differs. A 0-d result is a 0-d array (as the plan's steps return), not a NumPy scalar.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <fenv.h>
#include <string.h>

#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#define MAX_OPERANDS 3
/* NumPy releases the GIL for loops over more elements than this; so do we. */
#define RELEASE_GIL_ELEMENTS 500

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

/* A Python number as the loop's dtype, as NumPy converts a weak scalar (NEP 50); 0 when
 * it is not one (the ufunc decides then). */
static int
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
    npy_intp n = PyArray_SIZE(shape_of);
    loop_args[nargs] = PyArray_BYTES((PyArrayObject *)out);
    steps[nargs] = itemsize;
    if (n > RELEASE_GIL_ELEMENTS) {
        /* The caller holds the operands: another thread cannot free them meanwhile. */
        Py_BEGIN_ALLOW_THREADS
        self->loop(loop_args, &n, steps, self->loop_data);
        Py_END_ALLOW_THREADS
    }
    else {
        self->loop(loop_args, &n, steps, self->loop_data);
    }
    /* NumPy clears the floating-point status after each ufunc: leave it as one would. */
    if (fetestexcept(FE_ALL_EXCEPT))
        feclearexcept(FE_ALL_EXCEPT);
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
    /* The loop whose every operand is this dtype: what the ufunc resolves such a call to. */
    for (int i = 0; i < u->ntypes; ++i) {
        const char *t = u->types + i * u->nargs;
        int all = u->functions[i] != NULL;
        for (int j = 0; j < u->nargs && all; ++j)
            all = t[j] == (char)typenum;
        if (!all)
            continue;
        Loop *self = (Loop *)cls->tp_alloc(cls, 0);
        if (self == NULL)
            return NULL;
        self->vectorcall = loop_vectorcall;
        Py_INCREF(ufunc);
        self->ufunc = ufunc;
        self->nin = u->nin;
        self->type = typenum;
        self->loop = u->functions[i];
        self->loop_data = u->data == NULL ? NULL : u->data[i];
        return (PyObject *)self;
    }
    PyErr_Format(PyExc_ValueError, "ufunc %s has no loop for type %d", u->name, typenum);
    return NULL;
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
    .tp_name = "_em_ufunc_loop.Loop",
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

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_em_ufunc_loop",
    "A NumPy ufunc's own loop, called directly (execmode/codegen/ufunc_loop.py).", -1,
};

PyMODINIT_FUNC
PyInit__em_ufunc_loop(void)
{
    import_array();
    import_umath();
    if (PyType_Ready(&LoopType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&LoopType);
    if (PyModule_AddObject(m, "Loop", (PyObject *)&LoopType) < 0) {
        Py_DECREF(&LoopType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
