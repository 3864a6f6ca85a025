"""The op row: the columns of ``op_events``, one eager op each, defined once.

Everything that writes or reads an op's row takes its columns from :data:`OP_COLUMNS`,
in its order:

* the Python writer's INSERTs (``writer.py``) are built from it, and ``rows.py``'s
  ``RowFormatter.op_row`` makes its tuples in this order (the summary and the thread
  appended);
* the readers' select list over the schema's ``ops`` view (``store_queries.op_columns``)
  is :data:`VIEW_COLUMNS`, the same columns with ``location`` spelled out as its source
  line; ``store_rows.OpRow`` has those fields;
* ``schema.sql`` (the table and the ``ops`` view) and the C op ring's INSERT
  (``execmode/native/op_ring_writer.h``, the columns of :data:`BASE`) are written out by
  hand, in SQL and in C; ``tests/profilers/test_op_columns.py`` checks that they agree
  with this table, name for name and in order.

A column added here is added to schema.sql (with ``store.SCHEMA_VERSION`` bumped), to the
row ``rows.py`` makes and, if every op carries it, to the C ring's records.
"""

from __future__ import annotations

from typing import NamedTuple


class OpColumn(NamedTuple):
    name: str
    # Which rows carry it: "base" every row (the C ring writes only these), "summary"
    # rows recorded with value summaries, "thread" ops of a thread other than the main one.
    group: str
    # How the writer binds it: rows carry "" and 0 where the table holds NULL, and NULLIF
    # turns them back (rows.py says why).
    placeholder: str = "?"


OP_COLUMNS: tuple[OpColumn, ...] = (
    OpColumn("seq", "base"),                  # the instrumentation's sequence number
    OpColumn("op", "base"),
    OpColumn("scope", "base"),
    OpColumn("location", "base", "NULLIF(?,0)"),  # a locations row; 0: none
    OpColumn("start_ns", "base"),
    OpColumn("dur_ns", "base"),
    OpColumn("bytes", "base"),
    OpColumn("inputs", "base"),
    OpColumn("output", "base"),
    OpColumn("device", "base"),
    OpColumn("attrs", "base", "NULLIF(?,'')"),    # "": the op has none
    # The output's value summary (execmode/stats.py ValueStats, in its order).
    OpColumn("v_min", "summary"),
    OpColumn("v_max", "summary"),
    OpColumn("v_mean", "summary"),
    OpColumn("v_std", "summary"),
    OpColumn("v_nan", "summary"),
    OpColumn("v_inf", "summary"),
    OpColumn("thread", "thread"),
)

BASE = tuple(c for c in OP_COLUMNS if c.group == "base")

# The ops view (schema.sql): op_events with its location as the source line's columns.
LOCATION_COLUMNS = ("file", "line", "function")
VIEW_COLUMNS: tuple[str, ...] = tuple(
    name for c in OP_COLUMNS
    for name in (LOCATION_COLUMNS if c.name == "location" else (c.name,)))


def written(summary: bool, thread: bool) -> tuple[OpColumn, ...]:
    """The columns a row of that kind carries, in the order its tuple holds them."""
    return tuple(c for c in OP_COLUMNS
                 if c.group == "base" or (c.group == "summary" and summary)
                 or (c.group == "thread" and thread))
