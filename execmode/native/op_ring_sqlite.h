/* SQLite for the writer, resolved from the library this process already loaded
 * (only through its symbols: no SQLite headers, no second copy of the library).
 * A part of _em_op_ring: op_ring.c includes it, one translation unit. */

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
