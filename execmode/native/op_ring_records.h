/* The ring's records, the sites' layout and the OpRing object every part works on.
 * A part of _em_op_ring: op_ring.c includes it, one translation unit. */

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
