/* The writer's side: the writer thread takes the sites and the records up to the
 * ring's head, and writes them through its own SQLite connection (or takes them as rows).
 * A part of _em_op_ring: op_ring.c includes it, one translation unit. */

/* The columns every op row carries, as profilers/op_columns.py's BASE defines them, in its
 * order (tests/profilers/test_op_columns.py checks this statement and bind_row). */
static const char INSERT_SQL[] =
    "INSERT INTO op_events (seq, op, scope, location, start_ns, dur_ns, bytes, inputs, "
    "output, device, attrs) VALUES ";
static const char ROW_SQL[] = "(?,?,?,?,?,?,?,?,?,?,?)";
#define ROW_PARAMS 11
/* Rows per statement for full chunks: one step inserts them all, which costs SQLite about
 * a third less per row than a statement per row (the rest go one by one). 32 x 11
 * parameters stay under SQLite's oldest limit of 999. */
#define ROWS_PER_STEP 32


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
