-- execmode session store: one SQLite file per run. Schema version 3 (1 lacked
-- op_events.thread, 2 the kernel_totals and graph_runs tables: store.OLDER_VERSIONS).
-- docs/session-store.md explains every table; bump store.SCHEMA_VERSION on any change.
-- Timestamps are time.perf_counter_ns() of the recording process (meta "t0_ns" is the
-- session start on that clock); durations are nanoseconds; sizes are bytes.

-- Session facts, one JSON value per key: schema_version, script, argv, machine, pyspy,
-- calibration, exit, ...
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- User source lines, interned: ops and kernels point here instead of repeating paths.
CREATE TABLE locations (
    id       INTEGER PRIMARY KEY,
    file     TEXT NOT NULL,
    line     INTEGER NOT NULL,
    function TEXT NOT NULL
);

-- One row per eager op. seq is the instrumentation sequence number (monotonic). The
-- columns are profilers/op_columns.py's, in its order (tests/profilers/test_op_columns.py).
CREATE TABLE op_events (
    seq      INTEGER PRIMARY KEY,
    op       TEXT NOT NULL,
    scope    TEXT NOT NULL,
    location INTEGER REFERENCES locations (id),
    start_ns INTEGER NOT NULL,
    dur_ns   INTEGER NOT NULL,
    bytes    INTEGER NOT NULL,
    inputs   TEXT NOT NULL,      -- "f32[64,512], f32[512,256]"; Python scalars as numbers
    output   TEXT NOT NULL,      -- "f32[64,256]"
    device   TEXT NOT NULL,      -- "cpu", "cuda:0"
    attrs    TEXT,               -- "axis=1, keepdims=True", NULL when the op has none
    -- Value summary of the output, NULL unless recorded with summaries on.
    v_min    REAL,
    v_max    REAL,
    v_mean   REAL,
    v_std    REAL,
    v_nan    INTEGER,
    v_inf    INTEGER,
    -- NULL for the script's main thread; else the thread's number in the order threads
    -- first ran an op (meta "threads" names them: {"1": "Thread-1 (worker)"}).
    thread   INTEGER
);

-- The ops with their source lines spelled out: what most readers want.
CREATE VIEW ops AS
SELECT e.seq, e.op, e.scope, l.file, l.line, l.function, e.start_ns, e.dur_ns, e.bytes,
       e.inputs, e.output, e.device, e.attrs,
       e.v_min, e.v_max, e.v_mean, e.v_std, e.v_nan, e.v_inf, e.thread
FROM op_events AS e LEFT JOIN locations AS l ON l.id = e.location;

-- One row per executed step of a compiled plan (graph mode).
CREATE TABLE kernels (
    id           INTEGER PRIMARY KEY,
    graph_id     TEXT NOT NULL,
    kernel       TEXT NOT NULL,
    step_kind    TEXT NOT NULL,  -- "fused", "library", "op", ... as the plan names it
    member_nodes TEXT NOT NULL,  -- JSON list of graph node ids
    member_ops   TEXT NOT NULL,  -- JSON list of op names
    start_ns     INTEGER NOT NULL,
    dur_ns       INTEGER NOT NULL,
    bytes        INTEGER NOT NULL,
    output       TEXT,
    device       TEXT,
    scope        TEXT,
    location     INTEGER REFERENCES locations (id)
);

-- Graph mode's steps summed while recording (profilers/kernel_totals.py): one row per step
-- of each compiled plan that ran, rewritten in place as its sums grow. ``clock`` numbers
-- the plan (two plans may share a graph id). Per-run rows (table kernels) exist only when
-- asked for (execmode profile --kernel-rows); these sums exist in both cases.
CREATE TABLE kernel_totals (
    clock        INTEGER NOT NULL,
    step_index   INTEGER NOT NULL,
    graph_id     TEXT NOT NULL,
    kernel       TEXT NOT NULL,
    step_kind    TEXT NOT NULL,
    member_nodes TEXT NOT NULL,  -- JSON list of graph node ids
    member_ops   TEXT NOT NULL,  -- JSON list of op names
    calls        INTEGER NOT NULL,
    loop_calls   INTEGER NOT NULL, -- of those, timed in Python (plan loops, the replay)
    total_ns     INTEGER NOT NULL,
    min_ns       INTEGER NOT NULL,
    max_ns       INTEGER NOT NULL,
    bytes        INTEGER NOT NULL, -- new buffers over all calls: views, planned, pooled: 0
    output       TEXT,
    device       TEXT,
    scope        TEXT,
    location     INTEGER REFERENCES locations (id),
    backend      TEXT,
    PRIMARY KEY (clock, step_index)
);

-- Whole runs of each compiled plan while recording: the time its steps' rows leave out
-- (write-backs, copies, the loop between steps) is total_ns minus their sum.
CREATE TABLE graph_runs (
    clock     INTEGER PRIMARY KEY,
    graph_id  TEXT NOT NULL,
    runs      INTEGER NOT NULL,
    loop_runs INTEGER NOT NULL, -- of those, timed in Python
    total_ns  INTEGER NOT NULL,
    min_ns    INTEGER NOT NULL,
    max_ns    INTEGER NOT NULL
);

-- Every other instrumentation event (trace, retrace, graph_break, graph, pass, compile,
-- memory_plan, mark, ...): its fields as a JSON object.
CREATE TABLE events (
    id       INTEGER PRIMARY KEY,
    kind     TEXT NOT NULL,
    start_ns INTEGER NOT NULL,
    end_ns   INTEGER NOT NULL,
    graph_id TEXT,
    data     TEXT NOT NULL
);
CREATE INDEX events_by_kind ON events (kind);

-- Live and peak bytes per device over time.
CREATE TABLE memory (
    id          INTEGER PRIMARY KEY,
    ts_ns       INTEGER NOT NULL,
    device      TEXT NOT NULL,
    live_bytes  INTEGER NOT NULL,
    peak_bytes  INTEGER NOT NULL,
    source      TEXT NOT NULL    -- "eager" (tracked tensors), "graph" (plan), "pool" (CuPy)
);

-- py-spy samples folded by stack: frames root first, "function (file:line)" joined by ";".
CREATE TABLE samples (
    id       INTEGER PRIMARY KEY,
    thread   TEXT NOT NULL,
    stack    TEXT NOT NULL,
    count    INTEGER NOT NULL,
    category TEXT NOT NULL       -- user, execmode, tracing, compiling, kernels, other
);

-- The script's stdout and stderr, line by line.
CREATE TABLE output (
    id     INTEGER PRIMARY KEY,
    ts_ns  INTEGER NOT NULL,
    stream TEXT NOT NULL,        -- "stdout" or "stderr"
    text   TEXT NOT NULL
);

-- Eager vs graph rows from em.compare: one compiled step next to the eager ops it replaced.
CREATE TABLE comparisons (
    id            INTEGER PRIMARY KEY,
    function      TEXT NOT NULL,
    graph_id      TEXT NOT NULL,
    kernel        TEXT NOT NULL,
    step_kind     TEXT NOT NULL,
    eager_ops     TEXT NOT NULL, -- JSON list of op names
    eager_count   INTEGER NOT NULL,
    eager_ns      INTEGER NOT NULL,
    kernel_ns     INTEGER NOT NULL,
    eager_bytes   INTEGER NOT NULL,
    planned_bytes INTEGER NOT NULL,
    repeat        INTEGER NOT NULL, -- calls per round
    -- em.compare's medians are over this many interleaved rounds (NULL before schema 3);
    -- the verdict is the ratio only when the rounds' spreads separate: "1.84x", or
    -- "undecided (overlap)", "undecided (rounds disagree)"; NULL for a removed op.
    rounds        INTEGER,
    verdict       TEXT
);
