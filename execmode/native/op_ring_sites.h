/* Sites: an op's key (what it ran on), the user's frame, and the table that finds
 * a site by its key or registers a new one.
 * A part of _em_op_ring: op_ring.c includes it, one translation unit. */

static inline void
put(Key *k, uint64_t v)
{
    if (k->n < KEY_WORDS)
        k->w[k->n++] = v;
    else
        k->overflow = 1;
}

static inline void
put_ptr(Key *k, PyObject *obj)
{
    put(k, (uint64_t)(uintptr_t)obj);
    if (k->nptrs < MAX_PTRS)
        k->ptrs[k->nptrs++] = obj;
    else
        k->overflow = 1;
}

static void
put_bytes(Key *k, const char *s, Py_ssize_t len)
{
    Py_ssize_t words = (len + 7) / 8;
    put(k, (uint64_t)len);
    if (k->n + words > KEY_WORDS) {
        k->overflow = 1;
        return;
    }
    if (words)
        k->w[k->n + words - 1] = 0;
    memcpy(&k->w[k->n], s, (size_t)len);
    k->n += words;
}

static int
put_str(Key *k, PyObject *s)
{
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(s, &len);
    if (utf8 == NULL)
        return -1;
    put(k, TAG_STR);
    put_bytes(k, utf8, len);
    return 0;
}

static void
put_array(Key *k, PyArrayObject *a)
{
    int nd = PyArray_NDIM(a);
    npy_intp *dims = PyArray_DIMS(a);
    put(k, TAG_ARRAY | ((uint64_t)nd << 8));
    put_ptr(k, (PyObject *)PyArray_DESCR(a));
    for (int d = 0; d < nd; ++d)
        put(k, (uint64_t)dims[d]);
}

/* A Python number as the op's own operand: its text is str(x), a function of its value.
 * Returns 0, or 1 when the value is not one this encodes (the Python path then). */
static int
put_number(Key *k, PyObject *x)
{
    if (PyFloat_CheckExact(x)) {
        double v = PyFloat_AS_DOUBLE(x);
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        put(k, TAG_FLOAT);
        put(k, bits);
        return 0;
    }
    if (PyBool_Check(x)) {
        put(k, TAG_BOOL | ((uint64_t)(x == Py_True) << 8));
        return 0;
    }
    if (PyLong_CheckExact(x)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 1;
        }
        put(k, TAG_INT);
        put(k, (uint64_t)v);
        return 0;
    }
    return 1;
}

/* An attribute value: numbers, None, strings, dtypes and (nested) tuples/lists of them;
 * their text is str(value). Returns 0, 1 (not encodable: the Python path) or -1. */
static int
put_value(Key *k, PyObject *v, int depth)
{
    if (v == Py_None) {
        put(k, TAG_NONE);
        return 0;
    }
    if (PyUnicode_CheckExact(v))
        return put_str(k, v);
    if (PyArray_DescrCheck(v)) {
        put(k, TAG_DTYPE);
        put_ptr(k, v);
        return 0;
    }
    if ((PyTuple_CheckExact(v) || PyList_CheckExact(v)) && depth < 3) {
        int is_tuple = PyTuple_CheckExact(v);
        Py_ssize_t n = is_tuple ? PyTuple_GET_SIZE(v) : PyList_GET_SIZE(v);
        put(k, (is_tuple ? TAG_TUPLE : TAG_LIST) | ((uint64_t)n << 8));
        for (Py_ssize_t i = 0; i < n && !k->overflow; ++i) {
            PyObject *item = is_tuple ? PyTuple_GET_ITEM(v, i) : PyList_GET_ITEM(v, i);
            int rc = put_value(k, item, depth + 1);
            if (rc)
                return rc;
        }
        return 0;
    }
    return put_number(k, v);
}

static int
put_attrs(Key *k, PyObject *attrs)
{
    if (!PyDict_CheckExact(attrs))
        return 1;
    put(k, TAG_DICT | ((uint64_t)PyDict_GET_SIZE(attrs) << 8));
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(attrs, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key))
            return 1;
        if (put_str(k, key) < 0)
            return -1;
        int rc = put_value(k, value, 0);
        if (rc)
            return rc;
        if (k->overflow)
            return 1;
    }
    return 0;
}

static uint64_t
hash_key(const Key *k)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)k->n;
    for (Py_ssize_t i = 0; i < k->n; ++i) {
        h ^= k->w[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    return h;
}

static inline Site *
site_at(OpRing *self, int64_t index)
{
    return &self->chunks[index >> CHUNK_BITS][index & (CHUNK - 1)];
}

/* Whether a code object is execmode's own (source.is_internal_file of its file). */
static int
code_is_internal(OpRing *self, PyObject *code)
{
    uint64_t mask = CODE_CACHE_SLOTS * 2 - 1;
    uint64_t i = ((uint64_t)(uintptr_t)code >> 4) & mask;
    while (self->codes[i].code != NULL) {
        if (self->codes[i].code == code)
            return self->codes[i].internal;
        i = (i + 1) & mask;
    }
    PyObject *filename = PyObject_GetAttrString(code, "co_filename");
    if (filename == NULL)
        return -1;
    PyObject *answer = PyObject_CallOneArg(self->is_internal, filename);
    Py_DECREF(filename);
    if (answer == NULL)
        return -1;
    int internal = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    if (internal < 0)
        return -1;
    if (self->ncodes >= CODE_CACHE_SLOTS) {  /* generated code: start over */
        for (uint64_t j = 0; j <= mask; ++j)
            Py_CLEAR(self->codes[j].code);
        self->ncodes = 0;
        i = ((uint64_t)(uintptr_t)code >> 4) & mask;
    }
    Py_INCREF(code);
    self->codes[i].code = code;
    self->codes[i].internal = internal;
    self->ncodes++;
    return internal;
}

/* The user's frame: the innermost one outside execmode (source.user_location's walk),
 * starting ``skip`` frames out from the Python function that called the ring (frames that
 * are execmode's own in any case). sys._getframe(skip) reaches it without making frame
 * objects of the frames in between, which PyFrame_GetBack would (and CPython then copies
 * each one out when its function returns). Sets *frame to a new reference or NULL (no
 * user frame); -1 on error. */
static PyObject *getframe;      /* sys._getframe */
static PyObject *skip_objs[3];  /* 0, 1, 2 as ints */

static int
user_frame(OpRing *self, int skip, PyFrameObject **frame, PyObject **code_out, int *lasti)
{
    PyFrameObject *f = (PyFrameObject *)PyObject_Vectorcall(getframe, &skip_objs[skip], 1,
                                                            NULL);
    if (f == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError))
            return -1;
        PyErr_Clear();  /* a shallower stack than expected: walk from the caller */
        f = PyEval_GetFrame();
        Py_XINCREF(f);
    }
    while (f != NULL) {
        PyObject *code = (PyObject *)PyFrame_GetCode(f);
        int internal = code_is_internal(self, code);
        if (internal < 0) {
            Py_DECREF(code);
            Py_DECREF(f);
            return -1;
        }
        if (!internal) {
#if PY_VERSION_HEX >= 0x030B0000
            *lasti = PyFrame_GetLasti(f);
#else
            *lasti = f->f_lasti;
#endif
            Py_DECREF(code);  /* the frame keeps it alive; the site will hold its own */
            *frame = f;
            *code_out = code;
            return 0;
        }
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    *frame = NULL;
    *code_out = NULL;
    return 0;
}

/* --- sites -------------------------------------------------------------------------- */

static int
grow_table(OpRing *self)
{
    uint64_t size = self->table_size ? self->table_size * 2 : 1024;
    uint32_t *table = PyMem_Calloc(size, sizeof(uint32_t));
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t s = 0; s < self->nsites; ++s) {
        uint64_t i = site_at(self, s)->hash & (size - 1);
        while (table[i])
            i = (i + 1) & (size - 1);
        table[i] = (uint32_t)(s + 1);
    }
    PyMem_Free(self->table);
    self->table = table;
    self->table_size = size;
    return 0;
}

/* The description the writer formats: what an OpEvent would carry, minus the numbers. */
static PyObject *
describe_array(OpRing *self, PyArrayObject *a)
{
    PyObject *shape = PyObject_GetAttrString((PyObject *)a, "shape");
    if (shape == NULL)
        return NULL;
    PyObject *out = PyTuple_Pack(3, shape, (PyObject *)PyArray_DESCR(a), self->cpu);
    Py_DECREF(shape);
    return out;
}

static Py_ssize_t
register_site(OpRing *self, Key *k, uint64_t hash, PyObject *name, PyObject *const *inputs,
              Py_ssize_t n_inputs, PyObject *out, PyObject *scope, PyFrameObject *frame,
              PyObject *code, PyObject *attrs)
{
    Py_ssize_t index = self->nsites;
    if (index >= (Py_ssize_t)MAX_CHUNKS * CHUNK)
        return -2;  /* full: the Python path */
    if ((uint64_t)(index + 1) * 2 > self->table_size && grow_table(self) < 0)
        return -1;
    PyObject *described = NULL, *output = NULL, *location = NULL, *attrs_copy = NULL;
    PyObject *refs = NULL, *entry = NULL;
    uint64_t *key = NULL;
    described = PyTuple_New(n_inputs);
    if (described == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n_inputs; ++i) {
        PyObject *x = inputs[i], *d;
        if (PyArray_CheckExact(x))
            d = describe_array(self, (PyArrayObject *)x);
        else {
            Py_INCREF(x);
            d = x;
        }
        if (d == NULL)
            goto fail;
        PyTuple_SET_ITEM(described, i, d);
    }
    output = describe_array(self, (PyArrayObject *)out);
    if (output == NULL)
        goto fail;
    if (frame != NULL) {
        location = PyObject_CallOneArg(self->location_of, (PyObject *)frame);
        if (location == NULL)
            goto fail;
    } else {
        Py_INCREF(Py_None);
        location = Py_None;
    }
    attrs_copy = PyDict_Copy(attrs);
    if (attrs_copy == NULL)
        goto fail;
    refs = PyList_New(0);
    if (refs == NULL || PyList_Append(refs, name) < 0)
        goto fail;
    if (code != NULL && PyList_Append(refs, code) < 0)
        goto fail;
    for (int i = 0; i < k->nptrs; ++i)
        if (PyList_Append(refs, k->ptrs[i]) < 0)
            goto fail;
    key = PyMem_Malloc(sizeof(uint64_t) * (size_t)(k->n ? k->n : 1));
    if (key == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(key, k->w, sizeof(uint64_t) * (size_t)k->n);
    int chunk = (int)(index >> CHUNK_BITS);
    if (self->chunks[chunk] == NULL) {
        self->chunks[chunk] = PyMem_Calloc(CHUNK, sizeof(Site));
        if (self->chunks[chunk] == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    /* The last step that can fail: the writer sees the description only of an installed
     * site. */
    entry = Py_BuildValue("(nOOOOOO)", index, name, described, output, scope, location,
                          attrs_copy);
    if (entry == NULL || PyList_Append(self->new_sites, entry) < 0)
        goto fail;
    Site *site = site_at(self, index);
    site->hash = hash;
    site->nwords = k->n;
    site->key = key;
    site->refs = refs;
    site->state = SITE_WAITING;
    uint64_t i = hash & (self->table_size - 1);
    while (self->table[i])
        i = (i + 1) & (self->table_size - 1);
    self->table[i] = (uint32_t)(index + 1);
    self->nsites = index + 1;
    Py_DECREF(described);
    Py_DECREF(output);
    Py_DECREF(location);
    Py_DECREF(attrs_copy);
    Py_DECREF(entry);
    return index;
fail:
    PyMem_Free(key);
    Py_XDECREF(described);
    Py_XDECREF(output);
    Py_XDECREF(location);
    Py_XDECREF(attrs_copy);
    Py_XDECREF(refs);
    Py_XDECREF(entry);
    return -1;
}

static Py_ssize_t
find_site(OpRing *self, const Key *k, uint64_t hash)
{
    if (self->table_size == 0)
        return -1;
    uint64_t i = hash & (self->table_size - 1);
    uint32_t slot;
    while ((slot = self->table[i]) != 0) {
        Site *s = site_at(self, slot - 1);
        if (s->hash == hash && s->nwords == k->n
                && memcmp(s->key, k->w, sizeof(uint64_t) * (size_t)k->n) == 0)
            return slot - 1;
        i = (i + 1) & (self->table_size - 1);
    }
    return -1;
}
