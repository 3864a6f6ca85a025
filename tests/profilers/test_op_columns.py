"""The op row is defined once (profilers/op_columns.py); what is written out by hand in
another language, schema.sql and the C op ring's INSERT, must agree with it."""

from __future__ import annotations

import re
from pathlib import Path

from execmode.profilers import op_columns, store, store_queries, writer
from execmode.profilers.store_rows import OpRow

ROOT = Path(__file__).resolve().parents[2]
NAMES = [c.name for c in op_columns.OP_COLUMNS]


def _schema_block(opening: str) -> str:
    """A statement of schema.sql, without its comments."""
    sql = re.sub(r"--[^\n]*", "", store.schema_sql())
    start = sql.index(opening)
    return sql[start:sql.index(";", start)]


def test_schema_table_has_the_columns_in_order():
    body = _schema_block("CREATE TABLE op_events (")
    body = body.split("(", 1)[1]
    columns = [part.split()[0] for part in body.split(",") if part.strip()]
    assert columns == NAMES


def test_schema_view_and_readers_have_the_view_columns():
    view = _schema_block("CREATE VIEW ops AS")
    selected = view.split("SELECT", 1)[1].split("FROM", 1)[0]
    columns = [c.strip().split(".")[-1] for c in selected.split(",")]
    assert columns == list(op_columns.VIEW_COLUMNS)
    assert OpRow._fields == op_columns.VIEW_COLUMNS
    listed = store_queries.op_columns(store.SCHEMA_VERSION).split(", ")
    assert [c.split(".")[-1] for c in listed] == list(op_columns.VIEW_COLUMNS)
    # Version 1 sessions have no thread column: readers select NULL in its place.
    assert store_queries.op_columns(1).split(", ")[-1] == "NULL"


def test_python_inserts_name_the_written_columns():
    for kind, summary, thread in (("ops", False, False), ("summarized", True, False),
                                  ("threaded", False, True),
                                  ("threaded_summarized", True, True)):
        sql = writer._INSERT[kind]
        columns = re.search(r"op_events \(([^)]*)\)", sql).group(1).split(", ")
        expected = op_columns.written(summary, thread)
        assert columns == [c.name for c in expected], kind
        assert sql.count("?") == len(expected), kind


def test_c_ring_inserts_the_base_columns_in_order():
    header = (ROOT / "execmode/native/op_ring_writer.h").read_text(encoding="utf-8")
    literal = re.search(r"INSERT_SQL\[\] =\s*((?:\"[^\"]*\"\s*)+);", header).group(1)
    insert = "".join(re.findall(r"\"([^\"]*)\"", literal))
    columns = re.search(r"op_events \(([^)]*)\)", insert).group(1).split(", ")
    assert columns == [c.name for c in op_columns.BASE]
    params = int(re.search(r"#define ROW_PARAMS (\d+)", header).group(1))
    row_sql = re.search(r"ROW_SQL\[\] = \"([^\"]*)\"", header).group(1)
    assert params == row_sql.count("?") == len(op_columns.BASE)
    # bind_row binds each of them once, by position: b + 1 .. b + ROW_PARAMS.
    bind = header[header.index("bind_row(sqlite3_stmt"):]
    bind = bind[:bind.index("\n}\n")]
    assert sorted({int(n) for n in re.findall(r"b \+ (\d+)", bind)}) == \
        list(range(1, params + 1))
