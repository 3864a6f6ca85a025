/* The producer: an op recorded into the ring on the script's thread (binary, general).
 * A part of _em_op_ring: op_ring.c includes it, one translation unit. */

/* A full ring: the writer is behind the script. Wait for it, the GIL released, rather
 * than hand the op to the Python path, which costs several times an op in the ring and
 * then waits for the writer anyway. The wait is the recording's cost and is summed
 * (waited_ns: the report states it as measured). After WAIT_LIMIT_NS without room (a
 * writer that stopped) the op takes the Python path, which knows how to drop rows.
 * Returns 1 when there is room, 0 when not, -1 on error. */
#define WAIT_LIMIT_NS 2000000000LL

static int
wait_for_room(OpRing *self, uint64_t head)
{
    if (self->wake != NULL) {
        PyObject *ret = PyObject_CallNoArgs(self->wake);
        if (ret == NULL)
            return -1;
        Py_DECREF(ret);
    }
    int64_t start = em_clock_ns(), now = start;
    int room = 0;
    Py_BEGIN_ALLOW_THREADS
    while (!(room = head - __atomic_load_n(&self->tail, __ATOMIC_ACQUIRE) < self->capacity)
           && now - start < WAIT_LIMIT_NS) {
        struct timespec pause = {0, 20000};  /* 20 us: a batch of rows takes longer */
        nanosleep(&pause, NULL);
        now = em_clock_ns();
    }
    Py_END_ALLOW_THREADS
    self->waited_ns += em_clock_ns() - start;
    return room;
}

/* Record one op whose key (op, inputs, output) is in k; adds scope, line and attrs.
 * Returns Py_True (recorded), Py_False (the Python path must record it) or NULL. */
static PyObject *
record(OpRing *self, Key *k, PyObject *name, PyObject *const *inputs, Py_ssize_t n_inputs,
       PyObject *out, PyObject *attrs, PyObject *t0_obj, int64_t nbytes, int skip)
{
    uint64_t head = self->head;
    if (head - __atomic_load_n(&self->tail, __ATOMIC_ACQUIRE) >= self->capacity) {
        int room = wait_for_room(self, head);
        if (room < 0)
            return NULL;
        if (!room)
            goto decline;
    }
    int64_t t1 = em_clock_ns();
    long long t0 = PyLong_AsLongLong(t0_obj);
    if (t0 == -1 && PyErr_Occurred())
        return NULL;
    PyObject *scope = em_scope_current(&self->scope);
    if (scope == NULL)
        return NULL;
    if (!PyUnicode_CheckExact(scope)) {
        Py_DECREF(scope);
        goto decline;
    }
    PyFrameObject *frame;
    PyObject *code;
    int lasti = 0;
    if (user_frame(self, skip, &frame, &code, &lasti) < 0) {
        Py_DECREF(scope);
        return NULL;
    }
    PyObject *result = NULL;
    if (put_str(k, scope) < 0)
        goto done;
    put(k, (uint64_t)(uintptr_t)code);
    put(k, (uint64_t)lasti);
    int rc = put_attrs(k, attrs);
    if (rc < 0)
        goto done;
    if (rc > 0 || k->overflow) {
        result = Py_False;
        goto done;
    }
    uint64_t hash = hash_key(k);
    Py_ssize_t site = find_site(self, k, hash);
    if (site < 0) {
        site = register_site(self, k, hash, name, inputs, n_inputs, out, scope, frame, code,
                             attrs);
        if (site == -1)
            goto done;
        if (site == -2) {
            result = Py_False;
            goto done;
        }
    }
    PyObject *seq_obj = PyIter_Next(self->seq);
    if (seq_obj == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the op sequence counter ended");
        goto done;
    }
    long long seq = PyLong_AsLongLong(seq_obj);
    Py_DECREF(seq_obj);
    if (seq == -1 && PyErr_Occurred())
        goto done;
    Record *r = &self->records[head & self->mask];
    r->seq = seq - self->seq_base;
    r->site = site;
    r->t0 = t0;
    r->t1 = t1;
    r->bytes = nbytes;
    __atomic_store_n(&self->head, head + 1, __ATOMIC_RELEASE);
    if (nbytes > 0 && self->memory != NULL && memory_track(self->memory, out, nbytes, t1) < 0)
        goto done;
    if (head + 1 - __atomic_load_n(&self->tail, __ATOMIC_ACQUIRE) == self->capacity / 2
            && self->wake != NULL) {
        PyObject *ret = PyObject_CallNoArgs(self->wake);
        if (ret == NULL)
            goto done;
        Py_DECREF(ret);
    }
    result = Py_True;
done:
    Py_DECREF(scope);
    Py_XDECREF(frame);
    Py_XINCREF(result);
    return result;
decline:
    self->declined++;
    Py_RETURN_FALSE;
}

static int
on_main_thread(OpRing *self)
{
    return PyThread_get_thread_ident() == self->main_ident;
}

/* ``result`` of record(), counting the ops recorded by entry (0: binary, 1: general) and
 * by frames skipped (how many of execmode's Python frames the call came through: its cost
 * differs by that, and the calibration measures each kind: profilers/calibration.py). */
static PyObject *
counted(OpRing *self, int entry, int skip, PyObject *result)
{
    if (result == Py_True)
        self->recorded[entry][skip]++;
    return result;
}

/* binary(name, a, b, out, t0, skip=1): the operators' path (a, out: ndarrays; b: an
 * ndarray or a Python number). bytes = out.nbytes, as that path counts them. skip: the
 * frames from the caller's out to the operator's caller (1 from the Python operator, whose
 * frame is dispatch's own; 0 from the C operators, which have none). */
static PyObject *
OpRing_binary(OpRing *self, PyObject *const *args, Py_ssize_t nargs)
{
    long skip = nargs == 6 ? PyLong_AsLong(args[5]) : 1;
    if ((nargs != 5 && nargs != 6) || skip < 0 || skip > 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "binary(name, a, b, out, t0, skip=1): skip 0 or 1");
        return NULL;
    }
    PyObject *name = args[0], *a = args[1], *b = args[2], *out = args[3];
    if (!on_main_thread(self) || !PyArray_CheckExact(a) || !PyArray_CheckExact(out))
        goto decline;
    Key k;
    k.n = 0;
    k.overflow = 0;
    k.nptrs = 0;
    put_ptr(&k, name);
    put(&k, 2);
    put_array(&k, (PyArrayObject *)a);
    if (PyArray_CheckExact(b))
        put_array(&k, (PyArrayObject *)b);
    else if (put_number(&k, b))
        goto decline;
    put_array(&k, (PyArrayObject *)out);
    PyObject *inputs[2] = {a, b};
    static PyObject *no_attrs;
    if (no_attrs == NULL && (no_attrs = PyDict_New()) == NULL)
        return NULL;
    return counted(self, 0, (int)skip,
                   record(self, &k, name, inputs, 2, out, no_attrs, args[4],
                          (int64_t)PyArray_NBYTES((PyArrayObject *)out), (int)skip));
decline:
    self->declined++;
    Py_RETURN_FALSE;
}

/* general(name, inputs, attrs, out, t0, device, skip=2): run_eager's path (inputs: a
 * tuple of Tensors and Python numbers). bytes = 0 for a view of another array, as
 * _emit_op. skip: the frames from the caller's out to the op's caller (2 from run_eager:
 * past it and apply, or the tracer, dispatch's own; 2 from a unary function's Python body
 * as well, past it and make_unary_function's `fn`; 1 from its C version, past `fn`). */
static PyObject *
OpRing_general(OpRing *self, PyObject *const *args, Py_ssize_t nargs)
{
    long skip = nargs == 7 ? PyLong_AsLong(args[6]) : 2;
    if ((nargs != 6 && nargs != 7) || skip < 0 || skip > 2) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError,
                            "general(name, inputs, attrs, out, t0, device, skip=2): skip 0-2");
        return NULL;
    }
    PyObject *name = args[0], *inputs = args[1], *attrs = args[2], *out = args[3];
    if (!on_main_thread(self) || args[5] != self->cpu || !PyArray_CheckExact(out)
            || !PyTuple_CheckExact(inputs) || PyTuple_GET_SIZE(inputs) > 16)
        goto decline;
    Py_ssize_t n = PyTuple_GET_SIZE(inputs);
    PyObject *operands[16];
    Key k;
    k.n = 0;
    k.overflow = 0;
    k.nptrs = 0;
    put_ptr(&k, name);
    put(&k, (uint64_t)n);
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *x = PyTuple_GET_ITEM(inputs, i);
        if (PyObject_TypeCheck(x, self->tensor_type)) {
            PyObject *data = *(PyObject **)((char *)x + self->off_data);
            if (data == NULL || !PyArray_CheckExact(data))
                goto decline;
            put_array(&k, (PyArrayObject *)data);
            operands[i] = data;
        } else {
            if (put_number(&k, x))
                goto decline;
            operands[i] = x;
        }
    }
    put_array(&k, (PyArrayObject *)out);
    int64_t nbytes = PyArray_BASE((PyArrayObject *)out) == NULL
        ? (int64_t)PyArray_NBYTES((PyArrayObject *)out) : 0;
    return counted(self, 1, (int)skip,
                   record(self, &k, name, operands, n, out, attrs, args[4], nbytes, (int)skip));
decline:
    self->declined++;
    Py_RETURN_FALSE;
}
