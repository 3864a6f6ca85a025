"""Turning instrumentation events into session rows.

Runs on the writer thread, not in the user's op loop: the recorder queues the events as
they are and this module spells them out. Shapes, devices and source lines repeat across
millions of ops, so their text forms are cached.

Rows carry "" and 0 where the tables hold NULL: the INSERTs turn them back with NULLIF,
because binding None in Python's sqlite3 takes a slow adapter lookup (~0.3 us each).
"""

from __future__ import annotations

import numpy as np
from execmode.profilers.store import to_json

from execmode.dtypes import short_name, type_text
from execmode.stats import ValueStats

_CACHE_LIMIT = 50_000  # distinct shapes/locations kept; cleared beyond (generated code)
_ATTR_TEXT_LIMIT = 200


# The v_min .. v_inf columns of op_events are an output's value statistics as they come
# (min, max, mean, std, nan, inf): the row appends the tuple itself, with no copy per op.
Summary = ValueStats


class RowFormatter:
    """Formats events into table rows and interns source locations.

    New locations are collected in :attr:`new_locations`; the writer inserts them in the
    same transaction as the rows that point at them.
    """

    def __init__(self) -> None:
        self._tensor_text: dict = {}
        self._device_text: dict = {}
        self._loc_by_id: dict = {}
        self._loc_by_value: dict = {}
        self._next_loc = 1
        self.new_locations: list[tuple] = []
        self.devices: set[str] = set()
        # An op's row holds its number in the session, from 1: its event's seq (dispatch's
        # process-wide counter) minus the counter's value when recording began.
        self.seq_base = 0

    # --- pieces ---------------------------------------------------------------------------
    def tensor_text(self, shape, dtype) -> str:
        key = (shape, dtype)
        text = self._tensor_text.get(key)
        if text is None:
            if len(self._tensor_text) > _CACHE_LIMIT:
                self._tensor_text.clear()
            text = self._tensor_text[key] = type_text(shape, dtype)
        return text

    def device_text(self, device) -> str:
        # Devices are interned objects; keep the object so its id stays unique.
        entry = self._device_text.get(id(device))
        if entry is None:
            entry = self._device_text[id(device)] = (device, str(device))
            self.devices.add(entry[1])
        return entry[1]

    def location_id(self, loc) -> int:
        """The locations row id of a SourceLocation (or its JSON dict); 0 for None."""
        if loc is None:
            return 0
        entry = self._loc_by_id.get(id(loc))
        if entry is not None:
            return entry[1]
        if isinstance(loc, dict):
            value = (str(loc.get("filename", "?")), int(loc.get("lineno") or 0),
                     str(loc.get("function", "?")))
        else:
            value = (loc.filename, loc.lineno, loc.function)
        lid = self._loc_by_value.get(value)
        if lid is None:
            lid = self._loc_by_value[value] = self._next_loc
            self._next_loc += 1
            self.new_locations.append((lid, *value))
        if len(self._loc_by_id) > _CACHE_LIMIT:
            self._loc_by_id.clear()
        if not isinstance(loc, dict):  # dicts are fresh per event: not worth keying by id
            self._loc_by_id[id(loc)] = (loc, lid)  # holding loc keeps its id unique
        return lid

    def op_row(self, ev, summary=None) -> tuple:
        """The op_events row (without the summary columns unless ``summary`` is given), in
        the order of op_columns.py."""
        texts = self._tensor_text
        parts = []
        for x in ev.inputs:
            if x.__class__ is tuple:
                text = texts.get((x[0], x[1]))
                parts.append(text if text is not None else self.tensor_text(x[0], x[1]))
            else:
                parts.append(str(x))
        out = ev.output
        output = texts.get((out[0], out[1]))
        if output is None:
            output = self.tensor_text(out[0], out[1])
        device = self._device_text.get(id(out[2]))
        device = device[1] if device is not None else self.device_text(out[2])
        loc = ev.location
        entry = self._loc_by_id.get(id(loc))
        row = (
            ev.seq - self.seq_base, ev.op, ev.scope,
            entry[1] if entry is not None else self.location_id(loc),
            ev.start_ns, ev.end_ns - ev.start_ns, ev.bytes_allocated, ", ".join(parts), output,
            device, attrs_text(ev.attrs) if ev.attrs else "",
        )
        return row if summary is None else row + tuple(summary)

    def kernel_row(self, ev) -> tuple:
        d = ev.data
        shape, dtype = d.get("output_shape"), d.get("output_dtype")
        output = self.tensor_text(tuple(shape), dtype) if shape is not None else None
        device = d.get("device")
        if device is not None:
            device = self.device_text(device) if not isinstance(device, str) else device
            self.devices.add(device)
        return (
            str(d.get("graph_id", "")), str(d.get("kernel", "")), str(d.get("step_kind", "")),
            to_json(list(d.get("member_nodes") or ())), to_json(list(d.get("member_ops") or ())),
            ev.start_ns, ev.end_ns - ev.start_ns, int(d.get("bytes") or 0), output or "",
            device or "", str(d.get("scope") or ""), self.location_id(d.get("location")),
        )


    def kernel_total_row(self, t) -> tuple:
        """A kernel_totals row of a :class:`~execmode.profilers.kernel_totals.KernelTotalRow`."""
        output = self.tensor_text(tuple(t.shape), t.dtype)
        self.devices.add(t.device)
        return (t.clock, t.step_index, t.graph_id, t.kernel, t.step_kind,
                to_json(list(t.member_nodes)), to_json(list(t.member_ops)), t.calls,
                t.loop_calls, t.total_ns, t.min_ns, t.max_ns, t.bytes, output, t.device,
                t.scope, self.location_id(t.location), t.backend)


def event_row(ev) -> tuple:
    """(kind, start_ns, end_ns, graph_id or "", data_json) for any non-op event."""
    graph_id = ev.data.get("graph_id")
    return (ev.kind, ev.start_ns, ev.end_ns, "" if graph_id is None else str(graph_id),
            to_json(ev.data))


def memory_row_from_event(ev) -> tuple:
    d = ev.data
    ts = ev.end_ns or ev.start_ns
    return (ts, str(d.get("device", "cpu")), int(d.get("live_bytes") or 0),
            int(d.get("peak_bytes") or 0), str(d.get("source", "graph")))


def attrs_text(attrs: dict) -> str:
    """"axis=1, keepdims=True": short and never the repr of a large array."""
    parts = []
    for key, value in attrs.items():
        if isinstance(value, np.ndarray):
            text = f"<array {short_name(value.dtype)}{list(value.shape)}>"
        else:
            text = str(value)
        parts.append(f"{key}={text}")
    text = ", ".join(parts)
    return text if len(text) <= _ATTR_TEXT_LIMIT else text[: _ATTR_TEXT_LIMIT - 1] + "…"
