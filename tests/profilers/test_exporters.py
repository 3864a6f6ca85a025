"""Every exporter on the fixed session, checked against its format's required shape."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser

import pytest
from execmode.profilers import store
from execmode.profilers.errors import SessionError
from execmode.profilers.exporters import FORMATS, export, format_for_path, suffix_for
from execmode.profilers.exporters.chrome import TRACKS
from execmode.profilers.session import open_session
from profiler_fixtures import BREAK_SOURCE, T0, write_fixed_session


@pytest.fixture(scope="module")
def fixed(tmp_path_factory):
    return write_fixed_session(tmp_path_factory.mktemp("exporters") / "fixed.emsession")


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("reports")


def _export(fixed, out_dir, fmt, **options):
    return export(fixed, out_dir / f"report{suffix_for(fmt)}", fmt, **options)


# --- Chrome trace ---------------------------------------------------------------------------
def test_chrome_trace_events_have_the_required_fields(fixed, out_dir):
    doc = json.loads(_export(fixed, out_dir, "chrome").read_text())
    events = doc["traceEvents"]
    for ev in events:
        assert {"ph", "ts", "pid", "tid", "name"} <= ev.keys(), ev
        assert isinstance(ev["ts"], int | float) and ev["ts"] >= 0
        if ev["ph"] == "X":
            assert isinstance(ev["dur"], int | float) and ev["dur"] >= 0
    phases = {ev["ph"] for ev in events}
    assert {"X", "C", "M", "i"} <= phases

    names = {ev["tid"]: ev["args"]["name"] for ev in events
             if ev["ph"] == "M" and ev["name"] == "thread_name"}
    assert names == TRACKS
    assert set(TRACKS.values()) == {"eager ops", "graph kernels", "compile", "python"}

    ops = [ev for ev in events if ev["ph"] == "X" and ev["cat"] == "op"]
    assert [ev["name"] for ev in ops] == ["random_normal", "matmul", "add", "maximum", "sum",
                                          "log"]
    matmul = ops[1]
    assert matmul["ts"] == 20.0 and matmul["dur"] == 5.0  # microseconds from the start
    assert matmul["args"]["inputs"] == "f32[32,64], f32[64,128]"
    assert matmul["args"]["source"].endswith("profiler_fixtures.py:30")
    assert ops[-1]["args"]["summary"]["nan"] == 2

    kernels = [ev for ev in events if ev.get("cat") == "kernel"]
    assert {ev["tid"] for ev in kernels} == {2} and len(kernels) == 2
    assert kernels[1]["args"]["member_ops"] == ["add", "maximum", "sum"]
    compiles = [ev for ev in events if ev.get("cat") == "compile"]
    assert compiles[0]["tid"] == 3 and compiles[0]["dur"] == 50.0
    assert "source" not in compiles[0]["args"]  # kernel sources stay in the session
    counters = [ev for ev in events if ev["ph"] == "C"]
    assert all(set(ev["args"]) == {"live_bytes", "peak_bytes"} for ev in counters)
    assert {ev["name"] for ev in counters} == {"memory cpu"}
    assert doc["otherData"]["samples_by_category"]["user"] == 40


# --- speedscope -----------------------------------------------------------------------------
def test_speedscope_file_matches_the_schema(fixed, out_dir):
    doc = json.loads(_export(fixed, out_dir, "speedscope").read_text())
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert all(isinstance(f["name"], str) for f in frames)
    by_name = {p["name"]: p for p in doc["profiles"]}
    assert set(by_name) == {"eager ops", "graph kernels", "py-spy thread (1): MainThread"}
    for profile in doc["profiles"]:
        assert {"type", "name", "unit", "startValue", "endValue"} <= profile.keys()
        if profile["type"] == "evented":
            _check_evented(profile, len(frames))
        else:
            assert profile["type"] == "sampled"
            assert len(profile["samples"]) == len(profile["weights"])
            assert all(0 <= i < len(frames) for s in profile["samples"] for i in s)
            assert profile["endValue"] == pytest.approx(sum(profile["weights"]))

    ops = by_name["eager ops"]
    opened = [frames[e["frame"]]["name"] for e in ops["events"] if e["type"] == "O"]
    # Scopes become enclosing frames: mlp > fc1 > matmul, add; then mlp > maximum.
    assert opened == ["random_normal", "mlp", "fc1", "matmul", "add", "maximum", "sum", "log"]
    assert ops["unit"] == "nanoseconds" and ops["endValue"] == 60_500
    sampled = by_name["py-spy thread (1): MainThread"]
    roots = {frames[s[0]]["name"] for s in sampled["samples"]}
    assert roots == {"[user code]", "[execmode dispatch + instrumentation]",
                     "[kernel / library execution]"}
    assert sampled["weights"] == [0.4, 0.25, 0.35]  # counts / 100 Hz, in seconds


def _check_evented(profile, n_frames):
    stack, last = [], profile["startValue"]
    for e in profile["events"]:
        assert e["type"] in ("O", "C") and 0 <= e["frame"] < n_frames
        assert last <= e["at"] <= profile["endValue"]  # time never goes back
        last = e["at"]
        if e["type"] == "O":
            stack.append(e["frame"])
        else:
            assert stack.pop() == e["frame"]  # properly nested
    assert not stack


# --- HTML -----------------------------------------------------------------------------------
class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.attrs = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs

    def handle_data(self, data):
        self.text.append(data)


def test_html_report_is_self_contained_and_complete(fixed, out_dir):
    html = _export(fixed, out_dir, "html").read_text()
    parser = _Collector()
    parser.feed(html)
    text = " ".join(parser.text)
    assert html.startswith("<!DOCTYPE html>")
    # No network: no scripts, stylesheets, images or frames fetched from anywhere.
    assert not {"script", "link", "img", "iframe"} & set(parser.tags)
    assert not [v for k, v in parser.attrs if k in ("src", "href")]
    for heading in ("Top eager ops", "Eager vs graph", "Graph breaks", "Passes",
                    "Memory over time", "Compiles (", "Where the time went"):
        assert heading in text, heading
    assert BREAK_SOURCE in text  # the graph break's source line, read from the file
    assert "2.67x" in text and "fuse_elementwise" in text
    assert parser.tags.count("svg") == 3  # op bars, py-spy bars, memory chart
    assert "polyline" in parser.tags
    assert "warning: <b>not html</b>" in text and "<b>not html</b>" not in html  # escaped


# --- JSON, CSV, Markdown --------------------------------------------------------------------
def test_whole_session_json(fixed, out_dir):
    doc = json.loads(_export(fixed, out_dir, "json").read_text())
    assert doc["format"] == "execmode-session-json" and doc["schema_version"] == store.SCHEMA_VERSION
    assert len(doc["ops"]) == 6 and len(doc["kernels"]) == 2
    assert doc["ops"][1]["inputs"] == "f32[32,64], f32[64,128]"
    assert doc["meta"]["t0_ns"] == T0 and doc["summary"]["ops"] == 6
    assert {e["kind"] for e in doc["events"]} >= {"pass", "graph_break", "compile"}
    assert len(doc["samples"]) == 3 and len(doc["comparisons"]) == 2
    assert doc["output"][0]["text"] == "step 0 loss 1.234"


@pytest.mark.parametrize("table, rows, first", [
    ("ops", 6, "seq"), ("op_totals", 6, "op"), ("kernels", 2, "id"),
    ("memory", 6, "ts_ns_from_session_start"), ("comparisons", 2, "function"),
    ("samples", 3, "thread"),
])
def test_csv_tables(fixed, out_dir, table, rows, first):
    path = export(fixed, out_dir / f"{table}.csv", table=table)
    with open(path, newline="") as f:
        data = list(csv.reader(f))
    assert data[0][0] == first and len(data) == rows + 1
    assert all(len(r) == len(data[0]) for r in data)


def test_csv_ops_start_from_the_session_start(fixed, out_dir):
    with open(_export(fixed, out_dir, "csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[1]["op"] == "matmul" and rows[1]["start_ns_from_session_start"] == "20000"
    with pytest.raises(SessionError, match="unknown CSV table"):
        export(fixed, out_dir / "x.csv", table="nope")


def test_markdown_tables(fixed, out_dir):
    md = _export(fixed, out_dir, "md").read_text()
    assert md.startswith("# execmode profile: train.py")
    assert "| op | calls | total | share | mean | max | allocated |" in md
    assert "| train_step#0 | k0 | fused | add, maximum, sum | 4 us | 1.5 us | 2.67x |" in md
    assert "## Graph breaks" in md and "## Passes" in md
    for line in md.splitlines():
        if line.startswith("|"):
            assert line.endswith("|")


# --- choosing formats; purity ---------------------------------------------------------------
def test_formats_from_file_names():
    assert format_for_path("r.html") == "html"
    assert format_for_path("r.trace.json") == "chrome"
    assert format_for_path("R.SPEEDSCOPE.JSON") == "speedscope"
    assert format_for_path("r.json") == "json"
    assert format_for_path("r.md") == "md" and format_for_path("r.csv") == "csv"
    assert format_for_path("r.pdf") is None
    assert set(FORMATS) == {"html", "chrome", "speedscope", "json", "csv", "md"}


def test_unknown_format_is_a_clear_error(fixed, out_dir):
    with pytest.raises(SessionError, match="cannot tell the format"):
        export(fixed, out_dir / "report.pdf")
    with pytest.raises(SessionError, match="unknown format"):
        export(fixed, out_dir / "report.x", "pdf")
    assert not (out_dir / "report.pdf").exists()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_exports_are_pure_functions_of_the_session(fixed, tmp_path, fmt):
    first = export(fixed, tmp_path / f"a{suffix_for(fmt)}", fmt).read_bytes()
    with open_session(fixed) as s:  # a Session or a path: the same bytes
        second = export(s, tmp_path / f"b{suffix_for(fmt)}", fmt).read_bytes()
    assert first == second


def test_compiles_that_ran_at_the_same_time_get_a_track_each():
    """Translation units compiled in parallel overlap in time: on one track their slices
    would not nest (Perfetto draws them wrong), so each takes the first free track."""
    from execmode.profilers.exporters.chrome import COMPILE, COMPILE_LANES, compile_events
    from execmode.profilers.store_rows import EventRow

    def unit(n, start, end):
        return EventRow(n, "compile", start, end, "f#0:0", {"graph_id": "f#0:0", "kernels": []})

    events = compile_events([unit(1, 100, 900), unit(2, 150, 700), unit(3, 800, 950),
                             unit(4, 960, 990)], t0=0)
    slices = {e["ts"]: e["tid"] for e in events if e.get("ph") == "X"}
    # 1 and 2 overlap: two tracks; 3 starts after 2 ended (on 2's track); 4 after all
    assert slices == {0.1: COMPILE, 0.15: COMPILE_LANES + 1, 0.8: COMPILE_LANES + 1,
                      0.96: COMPILE}
    names = [e["args"]["name"] for e in events if e["name"] == "thread_name"]
    assert names == ["compile (in parallel 2)"]


def test_parallel_compiles_count_their_wall_time_once():
    from execmode.profilers.compiles import Compile, wall_ns

    def unit(start, end):
        return Compile("f#0:0", "kernels", "c", "c", end - start, False, start, end, [])

    # two units at once (100-900, 150-700), then one alone (1000-1100)
    assert wall_ns([unit(100, 900), unit(150, 700), unit(1000, 1100)]) == 900
    assert wall_ns([unit(0, 10), unit(5, 20)]) == 20 and wall_ns([]) == 0
