/* _em_op_ring: the recorder's per-op path in C (see native.py).
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

#define KEY_WORDS 512           /* a site key longer than this: the Python path */
#define MAX_PTRS 64             /* objects whose addresses one key holds */
#define CHUNK_BITS 10
#define CHUNK (1 << CHUNK_BITS)
#define MAX_CHUNKS 1024         /* at most 1M sites per recording */
#define CODE_CACHE_SLOTS 65536  /* code objects remembered as internal or not */
#define N_TEXTS 6               /* op, scope, inputs, output, device, attrs */

enum { TAG_ARRAY = 1, TAG_FLOAT, TAG_INT, TAG_BOOL, TAG_NONE, TAG_STR, TAG_TUPLE, TAG_LIST,
       TAG_DTYPE, TAG_DICT };

enum { SITE_WAITING = 0, SITE_READY = 1, SITE_MALFORMED = 2 };

typedef struct {
    int64_t seq, site, t0, t1, bytes;
} Record;

typedef struct CpuMemory CpuMemory;  /* the CPU's memory counters (below) */

typedef struct {
    uint64_t hash;
    Py_ssize_t nwords;
    uint64_t *key;
    PyObject *refs;             /* the objects whose addresses the key holds */
    int state;
    char *text[N_TEXTS];        /* UTF-8; NULL stores SQL NULL (attrs only) */
    int64_t location;           /* 0 stores SQL NULL */
} Site;

typedef struct {
    uint64_t w[KEY_WORDS];
    Py_ssize_t n;
    int overflow;
    PyObject *ptrs[MAX_PTRS];   /* borrowed while the op runs */
    int nptrs;
} Key;

typedef struct {
    PyObject *code;             /* a strong reference: its address stays unique */
    int internal;
} CodeEntry;

/* --- SQLite, resolved from the library this process already loaded ------------------ */
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
#define SQLITE_OK 0
#define SQLITE_DONE 101
#define SQLITE_OPEN_READWRITE 0x00000002
#define SQLITE_OPEN_NOMUTEX 0x00008000   /* one thread at a time: no lock per call */

static struct {
    int loaded;
    int (*open_v2)(const char *, sqlite3 **, int, const char *);
    int (*close_v2)(sqlite3 *);
    int (*exec)(sqlite3 *, const char *, void *, void *, char **);
    int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
    int (*bind_int64)(sqlite3_stmt *, int, long long);
    int (*bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
    int (*bind_null)(sqlite3_stmt *, int);
    int (*bind_double)(sqlite3_stmt *, int, double);
    int (*bind_blob)(sqlite3_stmt *, int, const void *, int, void (*)(void *));
    int (*step)(sqlite3_stmt *);
    int (*reset)(sqlite3_stmt *);
    int (*finalize)(sqlite3_stmt *);
    const char *(*errmsg)(sqlite3 *);
    int (*busy_timeout)(sqlite3 *, int);
} sq;

static const char INSERT_SQL[] =
    "INSERT INTO op_events (seq, op, scope, location, start_ns, dur_ns, bytes, inputs, "
    "output, device, attrs) VALUES ";
static const char ROW_SQL[] = "(?,?,?,?,?,?,?,?,?,?,?)";
#define ROW_PARAMS 11
/* Rows per statement for full chunks: one step inserts them all, which costs SQLite about
 * a third less per row than a statement per row (the rest go one by one). 32 x 11
 * parameters stay under SQLite's oldest limit of 999. */
#define ROWS_PER_STEP 32

typedef struct {
    PyObject_HEAD
    /* the ring */
    Record *records;
    uint64_t capacity, mask;
    uint64_t head, tail;        /* atomics: head written by the producer, tail by the writer */
    /* sites */
    Site *chunks[MAX_CHUNKS];
    Py_ssize_t nsites;
    uint32_t *table;            /* site index + 1; 0 is empty */
    uint64_t table_size;
    CodeEntry *codes;
    Py_ssize_t ncodes;
    /* what the producer reads and calls */
    PyObject *seq;              /* instrument's itertools.count */
    long long seq_base;         /* subtracted: a record holds the op's number in its session */
    EmScope scope;              /* scope._state, read on the main thread (em_native.h) */
    PyObject *is_internal;      /* source.is_internal_file(filename) */
    PyObject *location_of;      /* source.location_of(frame) */
    PyObject *cpu;              /* backend.CPU */
    PyTypeObject *tensor_type;
    Py_ssize_t off_data;
    PyObject *new_sites;        /* list of site descriptions the writer has not taken */
    CpuMemory *memory;          /* the CPU's memory counters, or NULL */
    PyObject *wake;             /* callable() run when the ring becomes half full, or NULL */
    unsigned long main_ident;
    /* counters */
    Py_ssize_t declined;        /* ops handed back to the Python path */
    Py_ssize_t recorded[2][3];  /* ops recorded by [binary, general][frames skipped] */
    int64_t waited_ns;          /* the script's time waiting for room (wait_for_room) */
    /* the writer's connection */
    sqlite3 *db;
    sqlite3_stmt *insert;       /* one row */
    sqlite3_stmt *insert_many;  /* ROWS_PER_STEP rows */
} OpRing;


/* --- small helpers ---------------------------------------------------------------- */

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

/* --- CPU memory: what MemoryTracker counts, in C ------------------------------------ */

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

/* --- the producer ------------------------------------------------------------------- */

/* Record one op whose key (op, inputs, output) is in k; adds scope, line and attrs.
 * Returns Py_True (recorded), Py_False (the Python path must record it) or NULL. */
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

/* --- the writer's side ---------------------------------------------------------------- */

static PyObject *
OpRing_head(OpRing *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(__atomic_load_n(&self->head, __ATOMIC_ACQUIRE));
}

static PyObject *
OpRing_pending(OpRing *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(
        __atomic_load_n(&self->head, __ATOMIC_ACQUIRE)
        - __atomic_load_n(&self->tail, __ATOMIC_ACQUIRE));
}

static PyObject *
OpRing_take_sites(OpRing *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *fresh = PyList_New(0);
    if (fresh == NULL)
        return NULL;
    PyObject *taken = self->new_sites;
    self->new_sites = fresh;
    return taken;
}

static char *
copy_text(PyObject *s)
{
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(s, &len);
    if (utf8 == NULL)
        return NULL;
    char *copy = PyMem_Malloc((size_t)len + 1);
    if (copy == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(copy, utf8, (size_t)len + 1);
    return copy;
}

/* set_site(index, texts): texts = (op, scope, location id, inputs, output, device, attrs)
 * as the op_events row holds them (location 0 and attrs "" store NULL), or None: the
 * site could not be formatted and its records are counted as malformed. */
static PyObject *
OpRing_set_site(OpRing *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_site(index, texts)");
        return NULL;
    }
    Py_ssize_t index = PyLong_AsSsize_t(args[0]);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    if (index < 0 || index >= self->nsites) {
        PyErr_SetString(PyExc_IndexError, "no such site");
        return NULL;
    }
    Site *site = site_at(self, index);
    PyObject *texts = args[1];
    if (texts == Py_None) {
        site->state = SITE_MALFORMED;
        Py_RETURN_NONE;
    }
    if (!PyTuple_Check(texts) || PyTuple_GET_SIZE(texts) != 7) {
        PyErr_SetString(PyExc_TypeError, "texts: (op, scope, location, inputs, output, "
                        "device, attrs)");
        return NULL;
    }
    static const int positions[N_TEXTS] = {0, 1, 3, 4, 5, 6};
    char *copies[N_TEXTS] = {NULL};
    for (int i = 0; i < N_TEXTS; ++i) {
        PyObject *s = PyTuple_GET_ITEM(texts, positions[i]);
        if (!PyUnicode_Check(s)) {
            PyErr_SetString(PyExc_TypeError, "site texts must be str");
            goto fail;
        }
        if (i == N_TEXTS - 1 && PyUnicode_GET_LENGTH(s) == 0)
            continue;  /* attrs "": NULL */
        if ((copies[i] = copy_text(s)) == NULL)
            goto fail;
    }
    long long location = PyLong_AsLongLong(PyTuple_GET_ITEM(texts, 2));
    if (location == -1 && PyErr_Occurred())
        goto fail;
    for (int i = 0; i < N_TEXTS; ++i) {
        PyMem_Free(site->text[i]);
        site->text[i] = copies[i];
    }
    site->location = location;
    site->state = SITE_READY;
    Py_RETURN_NONE;
fail:
    for (int i = 0; i < N_TEXTS; ++i)
        PyMem_Free(copies[i]);
    return NULL;
}

static int
parse_upto(OpRing *self, PyObject *arg, uint64_t *upto)
{
    unsigned long long value = PyLong_AsUnsignedLongLong(arg);
    if (value == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    uint64_t head = __atomic_load_n(&self->head, __ATOMIC_ACQUIRE);
    uint64_t tail = __atomic_load_n(&self->tail, __ATOMIC_ACQUIRE);
    if (value > head || value < tail) {
        PyErr_SetString(PyExc_ValueError, "upto must lie between the ring's tail and head");
        return -1;
    }
    *upto = value;
    return 0;
}

/* take(upto): the records before ``upto`` as (seq, site, start_ns, end_ns, bytes) tuples,
 * consumed (the Python writer's way, when SQLite's library is not available to C). */
static PyObject *
OpRing_take(OpRing *self, PyObject *arg)
{
    uint64_t upto;
    if (parse_upto(self, arg, &upto) < 0)
        return NULL;
    uint64_t tail = self->tail;
    PyObject *list = PyList_New((Py_ssize_t)(upto - tail));
    if (list == NULL)
        return NULL;
    for (uint64_t t = tail; t < upto; ++t) {
        Record *r = &self->records[t & self->mask];
        PyObject *item = Py_BuildValue("(LLLLL)", (long long)r->seq, (long long)r->site,
                                       (long long)r->t0, (long long)r->t1,
                                       (long long)r->bytes);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)(t - tail), item);
    }
    __atomic_store_n(&self->tail, upto, __ATOMIC_RELEASE);
    return list;
}

/* drop(upto): consume the records before ``upto`` unwritten; returns how many. */
static PyObject *
OpRing_drop(OpRing *self, PyObject *arg)
{
    uint64_t upto;
    if (parse_upto(self, arg, &upto) < 0)
        return NULL;
    uint64_t tail = self->tail;
    __atomic_store_n(&self->tail, upto, __ATOMIC_RELEASE);
    return PyLong_FromUnsignedLongLong(upto - tail);
}

static int
load_sqlite(const char *path)
{
    if (sq.loaded)
        return 0;
    /* Only a library this process already has: a second copy of SQLite in one process
     * would not see the first one's POSIX locks on the session file. */
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL) {
        PyErr_Format(PyExc_OSError, "SQLite library %s is not loaded in this process", path);
        return -1;
    }
#define SYM(field, name)                                                                  \
    if ((*(void **)&sq.field = dlsym(lib, name)) == NULL) {                                 \
        PyErr_Format(PyExc_OSError, "%s has no %s", path, name);                          \
        return -1;                                                                         \
    }
    SYM(open_v2, "sqlite3_open_v2");
    SYM(close_v2, "sqlite3_close_v2");
    SYM(exec, "sqlite3_exec");
    SYM(prepare_v2, "sqlite3_prepare_v2");
    SYM(bind_int64, "sqlite3_bind_int64");
    SYM(bind_text, "sqlite3_bind_text");
    SYM(bind_null, "sqlite3_bind_null");
    SYM(bind_double, "sqlite3_bind_double");
    SYM(bind_blob, "sqlite3_bind_blob");
    SYM(step, "sqlite3_step");
    SYM(reset, "sqlite3_reset");
    SYM(finalize, "sqlite3_finalize");
    SYM(errmsg, "sqlite3_errmsg");
    SYM(busy_timeout, "sqlite3_busy_timeout");
#undef SYM
    sq.loaded = 1;
    return 0;
}

static void
close_db(OpRing *self)
{
    if (self->insert != NULL) {
        sq.finalize(self->insert);
        self->insert = NULL;
    }
    if (self->insert_many != NULL) {
        sq.finalize(self->insert_many);
        self->insert_many = NULL;
    }
    if (self->db != NULL) {
        sq.close_v2(self->db);
        self->db = NULL;
    }
}

/* open_writer(library, session, pragmas): a connection of its own to the session file,
 * through ``library`` (SQLite as this process loaded it), with ``pragmas`` (the writer's
 * connection settings) run first. */
static PyObject *
OpRing_open_writer(OpRing *self, PyObject *args)
{
    const char *library, *path, *pragmas;
    if (!PyArg_ParseTuple(args, "sss", &library, &path, &pragmas))
        return NULL;
    if (self->db != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the writer connection is already open");
        return NULL;
    }
    if (load_sqlite(library) < 0)
        return NULL;
    int rc = sq.open_v2(path, &self->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK) {
        sq.busy_timeout(self->db, 5000);
        rc = sq.exec(self->db, pragmas, NULL, NULL, NULL);
    }
    char sql[sizeof INSERT_SQL + ROWS_PER_STEP * sizeof ROW_SQL];
    if (rc == SQLITE_OK) {
        snprintf(sql, sizeof sql, "%s%s", INSERT_SQL, ROW_SQL);
        rc = sq.prepare_v2(self->db, sql, -1, &self->insert, NULL);
    }
    if (rc == SQLITE_OK) {
        size_t n = (size_t)snprintf(sql, sizeof sql, "%s%s", INSERT_SQL, ROW_SQL);
        for (int i = 1; i < ROWS_PER_STEP; ++i)
            n += (size_t)snprintf(sql + n, sizeof sql - n, ",%s", ROW_SQL);
        rc = sq.prepare_v2(self->db, sql, -1, &self->insert_many, NULL);
    }
    if (rc != SQLITE_OK) {
        PyErr_Format(PyExc_OSError, "cannot open %s for the op writer: %s", path,
                     self->db ? sq.errmsg(self->db) : "out of memory");
        close_db(self);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
OpRing_close_writer(OpRing *self, PyObject *Py_UNUSED(ignored))
{
    if (self->db != NULL) {
        Py_BEGIN_ALLOW_THREADS
        close_db(self);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

/* Bind one record's row as the row-th row of ``st`` (NULL text: SQL NULL). */
static void
bind_row(sqlite3_stmt *st, int row, const Record *r, const Site *s)
{
    int b = row * ROW_PARAMS;
    sq.bind_int64(st, b + 1, r->seq);
    sq.bind_text(st, b + 2, s->text[0], -1, NULL);
    sq.bind_text(st, b + 3, s->text[1], -1, NULL);
    if (s->location)
        sq.bind_int64(st, b + 4, s->location);
    else
        sq.bind_null(st, b + 4);
    sq.bind_int64(st, b + 5, r->t0);
    sq.bind_int64(st, b + 6, r->t1 - r->t0);
    sq.bind_int64(st, b + 7, r->bytes);
    sq.bind_text(st, b + 8, s->text[2], -1, NULL);
    sq.bind_text(st, b + 9, s->text[3], -1, NULL);
    sq.bind_text(st, b + 10, s->text[4], -1, NULL);
    if (s->text[5])
        sq.bind_text(st, b + 11, s->text[5], -1, NULL);
    else
        sq.bind_null(st, b + 11);
}

static int
step_once(sqlite3_stmt *st)
{
    int step = sq.step(st);
    sq.reset(st);
    return step == SQLITE_DONE ? SQLITE_OK : step;
}

/* Bind a Python value as SQLite's parameter i, as Python's sqlite3 would: int, float,
 * str, bytes, None. Text and blobs are bound without a copy: the caller's list keeps the
 * objects alive until the statement is finalized. */
static int
bind_value(sqlite3 *db, sqlite3_stmt *st, int i, PyObject *v)
{
    int rc;
    if (v == Py_None) {
        rc = sq.bind_null(st, i);
    } else if (PyLong_Check(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow) {
            PyErr_SetString(PyExc_OverflowError,
                            "Python int too large to convert to SQLite INTEGER");
            return -1;
        }
        if (x == -1 && PyErr_Occurred())
            return -1;
        rc = sq.bind_int64(st, i, x);
    } else if (PyFloat_Check(v)) {
        rc = sq.bind_double(st, i, PyFloat_AS_DOUBLE(v));
    } else if (PyUnicode_Check(v)) {
        Py_ssize_t len;
        const char *utf8 = PyUnicode_AsUTF8AndSize(v, &len);
        if (utf8 == NULL)
            return -1;
        rc = sq.bind_text(st, i, utf8, (int)len, NULL);
    } else if (PyBytes_Check(v)) {
        rc = sq.bind_blob(st, i, PyBytes_AS_STRING(v), (int)PyBytes_GET_SIZE(v), NULL);
    } else {
        PyErr_Format(PyExc_TypeError, "cannot store a %.100s in the session",
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    if (rc != SQLITE_OK) {
        PyErr_Format(PyExc_ValueError, "cannot bind parameter %d: %s", i, sq.errmsg(db));
        return -1;
    }
    return 0;
}

/* The (sql, params) pairs of ``statements`` prepared and bound (with the GIL). */
static sqlite3_stmt **
prepare_statements(sqlite3 *db, PyObject *statements, Py_ssize_t *count)
{
    Py_ssize_t n = PyList_GET_SIZE(statements);
    sqlite3_stmt **prepared = calloc((size_t)(n ? n : 1), sizeof(sqlite3_stmt *));
    if (prepared == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; ++k) {
        PyObject *item = PyList_GET_ITEM(statements, k);
        const char *sql;
        PyObject *params;
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "sO", &sql, &params)
                || !PyList_Check(params)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "statements: a list of (sql, [params])");
            goto fail;
        }
        if (sq.prepare_v2(db, sql, -1, &prepared[k], NULL) != SQLITE_OK) {
            PyErr_Format(PyExc_ValueError, "cannot prepare a statement: %s", sq.errmsg(db));
            goto fail;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(params); ++i)
            if (bind_value(db, prepared[k], (int)i + 1, PyList_GET_ITEM(params, i)) < 0)
                goto fail;
    }
    *count = n;
    return prepared;
fail:
    for (Py_ssize_t k = 0; k < n; ++k)
        if (prepared[k] != NULL)
            sq.finalize(prepared[k]);
    free(prepared);
    return NULL;
}

/* write(upto, statements): one transaction, with the GIL released, that runs
 * ``statements`` (a list of (sql, params), bound first: the writer's other rows) and then
 * inserts the ring's records before ``upto``. Returns (consumed, written, malformed,
 * error): error is None, or SQLite's message when the transaction failed (rolled back:
 * nothing of it was written). The records are consumed either way. */
static PyObject *
OpRing_write(OpRing *self, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t upto;
    if (nargs != 2 || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "write(upto, statements)");
        return NULL;
    }
    if (parse_upto(self, args[0], &upto) < 0)
        return NULL;
    if (self->db == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "open_writer() first");
        return NULL;
    }
    uint64_t t = self->tail;
    long long written = 0, malformed = 0;
    const char *error = NULL;
    char *error_copy = NULL;
    long long consumed = (long long)(upto - t);
    if (t == upto && PyList_GET_SIZE(args[1]) == 0)
        return Py_BuildValue("(LLLO)", consumed, written, malformed, Py_None);
    sqlite3 *db = self->db;
    Py_ssize_t n_statements = 0;
    sqlite3_stmt **statements = prepare_statements(db, args[1], &n_statements);
    if (statements == NULL)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    int rc = sq.exec(db, "BEGIN", NULL, NULL, NULL);
    for (Py_ssize_t k = 0; rc == SQLITE_OK && k < n_statements; ++k)
        rc = step_once(statements[k]);
    const Record *chunk[ROWS_PER_STEP];
    const Site *sites[ROWS_PER_STEP];
    int n = 0;
    for (; rc == SQLITE_OK && t < upto; ++t) {
        const Record *r = &self->records[t & self->mask];
        const Site *s = site_at(self, r->site);
        if (s->state != SITE_READY) {
            malformed++;
            continue;
        }
        chunk[n] = r;
        sites[n] = s;
        if (++n == ROWS_PER_STEP) {
            for (int i = 0; i < n; ++i)
                bind_row(self->insert_many, i, chunk[i], sites[i]);
            rc = step_once(self->insert_many);
            written += rc == SQLITE_OK ? n : 0;
            n = 0;
        }
    }
    for (int i = 0; rc == SQLITE_OK && i < n; ++i) {
        bind_row(self->insert, 0, chunk[i], sites[i]);
        rc = step_once(self->insert);
        written += rc == SQLITE_OK;
    }
    if (rc == SQLITE_OK)
        rc = sq.exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        const char *message = sq.errmsg(db);
        error_copy = malloc(strlen(message) + 1);
        if (error_copy != NULL)
            strcpy(error_copy, message);
        error = error_copy ? error_copy : "SQLite error";
        sq.exec(db, "ROLLBACK", NULL, NULL, NULL);
        written = 0;
    }
    for (Py_ssize_t k = 0; k < n_statements; ++k)
        sq.finalize(statements[k]);
    Py_END_ALLOW_THREADS
    free(statements);
    __atomic_store_n(&self->tail, upto, __ATOMIC_RELEASE);
    PyObject *result = error == NULL
        ? Py_BuildValue("(LLLO)", consumed, written, malformed, Py_None)
        : Py_BuildValue("(LLLs)", consumed, written, malformed, error);
    free(error_copy);
    return result;
}

static PyObject *
OpRing_stats(OpRing *self, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t (*r)[3] = self->recorded;
    return Py_BuildValue("{s:n,s:n,s:L,s:K,s:O,s:{s:(nnn),s:(nnn)}}", "sites", self->nsites,
                         "declined", self->declined, "waited_ns", (long long)self->waited_ns,
                         "capacity", (unsigned long long)self->capacity,
                         "writer", self->db != NULL ? Py_True : Py_False,
                         "recorded", "binary", r[0][0], r[0][1], r[0][2],
                         "general", r[1][0], r[1][1], r[1][2]);
}

/* --- the type ----------------------------------------------------------------------- */

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
    self->new_sites = PyList_New(0);
    if (self->records == NULL || self->codes == NULL || self->new_sites == NULL) {
        PyErr_NoMemory();
        return -1;
    }
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
