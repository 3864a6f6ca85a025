/* CpuMemory: the CPU's live and peak bytes as MemoryTracker counts them, in C.
 * A part of _em_op_ring: op_ring.c includes it, one translation unit. */

/* The live/peak bytes of the CPU device as profilers/memory.py's MemoryTracker counts
 * them (each op output that allocated, until the array is freed), without a Python call
 * or object per op. The tracker uses this object as the CPU's DeviceMemory (name, live,
 * peak, window, pool) and calls ``track`` for the ops of the Python path, so both paths
 * count into the same tables. Two ways to see an array go:
 *
 * - **buffers**: while recording, NumPy allocates through a wrapper of its current
 *   allocator (PyDataMem_SetHandler, NumPy's documented hook; the wrapper hands every
 *   call to the allocator it wraps). An op output that owns a buffer from the wrapper is
 *   counted by its data pointer, and the wrapper's free subtracts it: an owned buffer
 *   is freed when its array dies, where the tracker's weak reference would fire.
 * - **objects**: any other array (allocated before, in another thread, by another
 *   allocator) gets a weak reference (a subtype that remembers the array's address and
 *   size) whose callback is C, as the tracker's own _Ref. */

typedef struct {
    PyWeakReference ref;
    void *addr;
    int64_t nbytes;
} TrackedRef;

static PyTypeObject TrackedRefType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_em_op_ring.TrackedRef",
    .tp_basicsize = sizeof(TrackedRef),
    .tp_flags = Py_TPFLAGS_DEFAULT,  /* the GC flag and its functions come from the base */
    .tp_doc = "A weak reference to a tracked array (its address and bytes).",
};

typedef struct {
    void *key;                  /* an array's address (objects) or data pointer (buffers) */
    PyObject *ref;              /* objects: a strong reference (the callback fires while it
                                 * lives); buffers: NULL */
    int64_t nbytes;
} Tracked;

typedef struct {
    Tracked *slots;             /* open addressing, linear probing; malloc'd (the wrapper's
                                 * free may run without the GIL) */
    uint64_t size;              /* a power of two, or 0 */
    Py_ssize_t count;
} Table;

typedef struct Wrapper Wrapper;

struct CpuMemory {
    PyObject_HEAD
    PyObject *name;
    int64_t live, peak, window, last_emit, interval;
    PyObject *sample;           /* callable(ts): the tracker's _sample */
    PyObject *freed;            /* the weak references' callback (bound to this object) */
    Table objects, buffers;
    Wrapper *wrapper;           /* the allocator wrapper counting into this, or NULL */
    PyObject *restore;          /* the allocator to put back at uninstall */
};

/* One lock for every buffers table: frees can come from any thread. Never held across a
 * call out of this file. A fork resets it (a child may inherit it held). */
static char buffers_lock;

static inline void
lock_buffers(void)
{
    while (__atomic_test_and_set(&buffers_lock, __ATOMIC_ACQUIRE))
        ;
}

static inline void
unlock_buffers(void)
{
    __atomic_clear(&buffers_lock, __ATOMIC_RELEASE);
}

static void
reset_buffers_lock(void)
{
    __atomic_clear(&buffers_lock, __ATOMIC_RELAXED);
}

static inline uint64_t
addr_slot(void *addr, uint64_t size)
{
    uint64_t h = (uint64_t)(uintptr_t)addr >> 4;
    h *= 0x9E3779B97F4A7C15ULL;
    return (h >> 17) & (size - 1);
}

/* Where ``key`` is, or the empty slot where it would go. */
static inline uint64_t
table_probe(const Table *t, void *key)
{
    uint64_t i = addr_slot(key, t->size);
    while (t->slots[i].key != NULL && t->slots[i].key != key)
        i = (i + 1) & (t->size - 1);
    return i;
}

static int
table_reserve(Table *t)
{
    if ((uint64_t)(t->count + 1) * 2 <= t->size)
        return 0;
    uint64_t size = t->size ? t->size * 2 : 4096;
    Tracked *slots = calloc(size, sizeof(Tracked));
    if (slots == NULL)
        return -1;
    for (uint64_t j = 0; j < t->size; ++j) {
        if (t->slots[j].key == NULL)
            continue;
        uint64_t i = addr_slot(t->slots[j].key, size);
        while (slots[i].key != NULL)
            i = (i + 1) & (size - 1);
        slots[i] = t->slots[j];
    }
    free(t->slots);
    t->slots = slots;
    t->size = size;
    return 0;
}

/* Remove slot i; backward-shift deletion keeps every probe sequence unbroken. */
static void
table_remove(Table *t, uint64_t i)
{
    uint64_t hole = i, j = i;
    for (;;) {
        j = (j + 1) & (t->size - 1);
        if (t->slots[j].key == NULL)
            break;
        uint64_t home = addr_slot(t->slots[j].key, t->size);
        if (((j - home) & (t->size - 1)) >= ((j - hole) & (t->size - 1))) {
            t->slots[hole] = t->slots[j];
            hole = j;
        }
    }
    t->slots[hole].key = NULL;
    t->slots[hole].ref = NULL;
    t->slots[hole].nbytes = 0;
    t->count--;
}

static int
memory_sample(CpuMemory *m, int64_t ts)
{
    if (ts - m->last_emit < m->interval)
        return 0;
    m->last_emit = ts;  /* the tracker's _sample sets it too (and for every device) */
    if (m->sample == NULL)
        return 0;
    PyObject *arg = PyLong_FromLongLong(ts);
    if (arg == NULL)
        return -1;
    PyObject *ret = PyObject_CallOneArg(m->sample, arg);
    Py_DECREF(arg);
    if (ret == NULL)
        return -1;
    Py_DECREF(ret);
    return 0;
}

static inline void
memory_add(CpuMemory *m, int64_t nbytes)
{
    int64_t live = m->live += nbytes;
    if (live > m->window) {
        m->window = live;
        if (live > m->peak)
            m->peak = live;
    }
}

/* --- the allocator wrapper --- */

struct Wrapper {
    PyDataMem_Handler handler;  /* ours; its allocator's ctx is this wrapper */
    PyDataMem_Handler *inner;   /* the one it wraps (kept alive by ``inner_capsule``) */
    PyObject *inner_capsule;
    PyObject *capsule;          /* ours, as NumPy keeps handlers */
    CpuMemory *memory;          /* NULL once that object is gone (changed under the lock) */
};

static void *
wrapper_malloc(void *ctx, size_t size)
{
    PyDataMem_Handler *inner = ((Wrapper *)ctx)->inner;
    return inner->allocator.malloc(inner->allocator.ctx, size);
}

static void *
wrapper_calloc(void *ctx, size_t nelem, size_t elsize)
{
    PyDataMem_Handler *inner = ((Wrapper *)ctx)->inner;
    return inner->allocator.calloc(inner->allocator.ctx, nelem, elsize);
}

static void *
wrapper_realloc(void *ctx, void *ptr, size_t new_size)
{
    Wrapper *w = ctx;
    void *moved = w->inner->allocator.realloc(w->inner->allocator.ctx, ptr, new_size);
    if (moved != NULL && moved != ptr && ptr != NULL) {
        /* A counted buffer keeps its count under its new address (as the array does). */
        lock_buffers();
        CpuMemory *m = w->memory;
        if (m != NULL && m->buffers.size) {
            uint64_t i = table_probe(&m->buffers, ptr);
            if (m->buffers.slots[i].key != NULL) {
                int64_t nbytes = m->buffers.slots[i].nbytes;
                table_remove(&m->buffers, i);
                if (table_reserve(&m->buffers) == 0) {
                    uint64_t j = table_probe(&m->buffers, moved);
                    m->buffers.slots[j].key = moved;
                    m->buffers.slots[j].nbytes = nbytes;
                    m->buffers.count++;
                } else {
                    m->live -= nbytes;  /* no room to follow it: count it as freed */
                }
            }
        }
        unlock_buffers();
    }
    return moved;
}

static void
wrapper_free(void *ctx, void *ptr, size_t size)
{
    Wrapper *w = ctx;
    CpuMemory *m = NULL;
    if (ptr != NULL) {
        lock_buffers();
        CpuMemory *owner = w->memory;
        if (owner != NULL && owner->buffers.size) {
            uint64_t i = table_probe(&owner->buffers, ptr);
            if (owner->buffers.slots[i].key != NULL) {
                owner->live -= owner->buffers.slots[i].nbytes;
                table_remove(&owner->buffers, i);
                m = owner;
            }
        }
        unlock_buffers();
    }
    w->inner->allocator.free(w->inner->allocator.ctx, ptr, size);
    if (m != NULL && PyGILState_Check()) {
        /* As the tracker's _on_freed: a memory row when the interval has passed. A
         * failure cannot be raised from here: it is reported as unraisable. */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (memory_sample(m, em_clock_ns()) < 0)
            PyErr_WriteUnraisable(m->sample);
        PyErr_Restore(type, value, tb);
    }
}

/* --- tracking --- */

/* Count ``data`` (nbytes > 0) as live until it is freed; an array already counted is
 * not counted twice (an op that hands back its input). */
static int
memory_track(CpuMemory *m, PyObject *data, int64_t nbytes, int64_t end_ns)
{
    Wrapper *w = m->wrapper;
    if (w != NULL && PyArray_CheckExact(data)
            && (PyArray_FLAGS((PyArrayObject *)data) & NPY_ARRAY_OWNDATA)
            && PyArray_HANDLER((PyArrayObject *)data) == w->capsule) {
        void *buffer = PyArray_DATA((PyArrayObject *)data);
        int counted = 0;
        lock_buffers();
        if (table_reserve(&m->buffers) < 0) {
            unlock_buffers();
            PyErr_NoMemory();
            return -1;
        }
        uint64_t i = table_probe(&m->buffers, buffer);
        if (m->buffers.slots[i].key == NULL) {
            m->buffers.slots[i].key = buffer;
            m->buffers.slots[i].nbytes = nbytes;
            m->buffers.count++;
            memory_add(m, nbytes);
            counted = 1;
        }
        unlock_buffers();
        return counted ? memory_sample(m, end_ns) : 0;
    }
    if (table_reserve(&m->objects) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    uint64_t i = table_probe(&m->objects, data);
    if (m->objects.slots[i].key != NULL)
        return 0;
    PyObject *args[2] = {data, m->freed};
    PyObject *ref = PyObject_Vectorcall((PyObject *)&TrackedRefType, args, 2, NULL);
    if (ref == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError))
            return -1;
        PyErr_Clear();  /* an array type without weak references: not tracked */
        return 0;
    }
    ((TrackedRef *)ref)->addr = data;
    ((TrackedRef *)ref)->nbytes = nbytes;
    m->objects.slots[i].key = data;
    m->objects.slots[i].ref = ref;
    m->objects.slots[i].nbytes = nbytes;
    m->objects.count++;
    memory_add(m, nbytes);
    return memory_sample(m, end_ns);
}

/* The weak references' callback: the array at ref->addr was freed. */
static PyObject *
memory_freed(PyObject *self, PyObject *ref)
{
    CpuMemory *m = (CpuMemory *)self;
    if (!PyObject_TypeCheck(ref, &TrackedRefType) || m->objects.size == 0)
        Py_RETURN_NONE;
    uint64_t i = table_probe(&m->objects, ((TrackedRef *)ref)->addr);
    if (m->objects.slots[i].key == NULL || m->objects.slots[i].ref != ref)
        Py_RETURN_NONE;
    PyObject *held = m->objects.slots[i].ref;
    table_remove(&m->objects, i);
    m->live -= ((TrackedRef *)ref)->nbytes;
    int rc = memory_sample(m, em_clock_ns());
    Py_DECREF(held);  /* the caller holds ref too */
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef freed_def = {"freed", memory_freed, METH_O, NULL};

static PyObject *
CpuMemory_track(CpuMemory *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "track(data, nbytes, end_ns)");
        return NULL;
    }
    long long nbytes = PyLong_AsLongLong(args[1]);
    long long end_ns = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (memory_track(self, args[0], nbytes, end_ns) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static int
CpuMemory_init(CpuMemory *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"name", "interval_ns", "sample", NULL};
    PyObject *name, *sample;
    long long interval;
    if (self->freed != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a CpuMemory is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ULO", names, &name, &interval, &sample))
        return -1;
    self->freed = PyCFunction_New(&freed_def, (PyObject *)self);
    if (self->freed == NULL)
        return -1;
    Py_INCREF(name);
    self->name = name;
    if (sample != Py_None) {
        Py_INCREF(sample);
        self->sample = sample;
    }
    self->interval = interval;
    return 0;
}

static int
CpuMemory_traverse(CpuMemory *self, visitproc visit, void *arg)
{
    Py_VISIT(self->sample);
    Py_VISIT(self->freed);
    Py_VISIT(self->restore);
    for (uint64_t j = 0; j < self->objects.size; ++j)
        Py_VISIT(self->objects.slots[j].ref);
    return 0;
}

static int
CpuMemory_clear(CpuMemory *self)
{
    Py_CLEAR(self->sample);
    Py_CLEAR(self->freed);
    Py_CLEAR(self->restore);
    Table objects = self->objects;
    memset(&self->objects, 0, sizeof(Table));
    for (uint64_t j = 0; j < objects.size; ++j)
        Py_XDECREF(objects.slots[j].ref);
    free(objects.slots);
    return 0;
}

static void
CpuMemory_dealloc(CpuMemory *self)
{
    PyObject_GC_UnTrack(self);
    lock_buffers();
    if (self->wrapper != NULL)
        self->wrapper->memory = NULL;  /* buffers it still counts are freed uncounted */
    free(self->buffers.slots);
    memset(&self->buffers, 0, sizeof(Table));
    unlock_buffers();
    CpuMemory_clear(self);
    Py_XDECREF(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* install_allocator() -> bool: NumPy allocates through a wrapper of its current allocator
 * from now on, in the calling thread's context (NumPy keeps the allocator in a context
 * variable). False when one is installed already or the allocator's version is unknown. */
static PyObject *
CpuMemory_install(CpuMemory *self, PyObject *Py_UNUSED(ignored))
{
    if (self->restore != NULL)
        Py_RETURN_FALSE;
    PyObject *current = PyDataMem_GetHandler();
    if (current == NULL)
        return NULL;
    PyDataMem_Handler *inner = PyCapsule_GetPointer(current, "mem_handler");
    if (inner == NULL || inner->version != 1) {
        Py_DECREF(current);
        if (inner == NULL)
            return NULL;
        Py_RETURN_FALSE;
    }
    /* Never freed: arrays allocated through it hold its capsule and may outlive this
     * object, the recording and the module's other state. */
    Wrapper *w = calloc(1, sizeof(Wrapper));
    if (w == NULL) {
        Py_DECREF(current);
        return PyErr_NoMemory();
    }
    snprintf(w->handler.name, sizeof(w->handler.name), "execmode_op_ring");
    w->handler.version = 1;
    w->handler.allocator.ctx = w;
    w->handler.allocator.malloc = wrapper_malloc;
    w->handler.allocator.calloc = wrapper_calloc;
    w->handler.allocator.realloc = wrapper_realloc;
    w->handler.allocator.free = wrapper_free;
    w->inner = inner;
    w->inner_capsule = current;
    w->capsule = PyCapsule_New(&w->handler, "mem_handler", NULL);
    if (w->capsule == NULL) {
        Py_DECREF(current);
        free(w);
        return NULL;
    }
    PyObject *previous = PyDataMem_SetHandler(w->capsule);
    if (previous == NULL) {
        Py_DECREF(w->capsule);
        Py_DECREF(current);
        free(w);
        return NULL;
    }
    lock_buffers();
    if (self->wrapper != NULL)
        self->wrapper->memory = NULL;  /* an earlier install: its buffers go uncounted */
    w->memory = self;
    self->wrapper = w;
    unlock_buffers();
    self->restore = previous;
    Py_RETURN_TRUE;
}

/* uninstall_allocator() -> bool: put back the allocator that install_allocator found (in
 * the calling thread's context, if the wrapper is still the current one there). Buffers
 * counted so far stay counted until they are freed. */
static PyObject *
CpuMemory_uninstall(CpuMemory *self, PyObject *Py_UNUSED(ignored))
{
    if (self->restore == NULL)
        Py_RETURN_FALSE;
    PyObject *current = PyDataMem_GetHandler();
    if (current == NULL)
        return NULL;
    int ours = current == self->wrapper->capsule;
    Py_DECREF(current);
    if (ours) {
        PyObject *previous = PyDataMem_SetHandler(self->restore);
        if (previous == NULL)
            return NULL;
        Py_DECREF(previous);
    }
    Py_CLEAR(self->restore);
    return PyBool_FromLong(ours);
}

static PyMemberDef CpuMemory_members[] = {
    {"name", Py_T_OBJECT_EX, offsetof(CpuMemory, name), READONLY, "the device's name"},
    {"live", T_LONGLONG, offsetof(CpuMemory, live), 0, "live bytes"},
    {"peak", T_LONGLONG, offsetof(CpuMemory, peak), 0, "peak live bytes"},
    {"window", T_LONGLONG, offsetof(CpuMemory, window), 0,
     "the peak since the innermost open region began"},
    {"last_emit", T_LONGLONG, offsetof(CpuMemory, last_emit), 0,
     "when a memory row was last emitted (perf_counter ns)"},
    {"interval", T_LONGLONG, offsetof(CpuMemory, interval), 0,
     "the least time between two memory rows (ns)"},
    {NULL},
};

static PyObject *
CpuMemory_pool(PyObject *self, void *closure)
{
    Py_RETURN_NONE;
}

static PyObject *
CpuMemory_tracked(CpuMemory *self, void *closure)
{
    lock_buffers();
    Py_ssize_t buffers = self->buffers.count;
    unlock_buffers();
    return Py_BuildValue("(nn)", buffers, self->objects.count);
}

static PyGetSetDef CpuMemory_getset[] = {
    {"pool", CpuMemory_pool, NULL, "no memory pool (DeviceMemory's field)", NULL},
    {"tracked", (getter)CpuMemory_tracked, NULL,
     "arrays counted as live: (by their buffer, by a weak reference)", NULL},
    {NULL},
};

static PyMethodDef CpuMemory_methods[] = {
    {"track", (PyCFunction)(void (*)(void))CpuMemory_track, METH_FASTCALL,
     "track(data, nbytes, end_ns): count an op output that allocated nbytes > 0"},
    {"install_allocator", (PyCFunction)CpuMemory_install, METH_NOARGS,
     "NumPy allocates through a counting wrapper of its allocator (this context)"},
    {"uninstall_allocator", (PyCFunction)CpuMemory_uninstall, METH_NOARGS,
     "put back the allocator install_allocator found"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CpuMemoryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_em_op_ring.CpuMemory",
    .tp_basicsize = sizeof(CpuMemory),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "CpuMemory(name, interval_ns, sample): the CPU's live and peak bytes.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)CpuMemory_init,
    .tp_dealloc = (destructor)CpuMemory_dealloc,
    .tp_traverse = (traverseproc)CpuMemory_traverse,
    .tp_clear = (inquiry)CpuMemory_clear,
    .tp_members = CpuMemory_members,
    .tp_getset = CpuMemory_getset,
    .tp_methods = CpuMemory_methods,
};
