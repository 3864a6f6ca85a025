"""The op and kernel-run numbers a session's exports carry, read back from the files.

docs/session-store.md, "How ops and kernels are numbered": op N is ``op_events.seq`` N and
kernel run N is ``kernels.id`` N, and every export says so in its own field. These
helpers read each export back as ``{number: name}`` so a test can check that they agree
with the store, and with what the TUI and ``execmode run`` showed.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

from execmode.profilers.exporters import export


def numbers_in_store(session: Path) -> dict[str, dict[int, str]]:
    conn = sqlite3.connect(f"file:{session}?mode=ro", uri=True)
    try:
        return {"ops": dict(conn.execute("SELECT seq, op FROM op_events")),
                "kernels": dict(conn.execute("SELECT id, kernel FROM kernels"))}
    finally:
        conn.close()


def numbers_in_exports(session: Path, folder: Path) -> dict[str, dict[str, dict[int, str]]]:
    """{export: {"ops": {number: op}, "kernels": {number: kernel name}}}."""
    found = {}
    doc = json.loads(export(session, folder / "numbers.json").read_text())
    found["json"] = {"ops": {r["seq"]: r["op"] for r in doc["ops"]},
                     "kernels": {r["id"]: r["kernel"] for r in doc["kernels"]}}
    with open(export(session, folder / "ops.csv", table="ops"), newline="") as f:
        ops = {int(r["seq"]): r["op"] for r in csv.DictReader(f)}
    with open(export(session, folder / "kernels.csv", table="kernels"), newline="") as f:
        kernels = {int(r["id"]): r["kernel"] for r in csv.DictReader(f)}
    found["csv"] = {"ops": ops, "kernels": kernels}
    trace = json.loads(export(session, folder / "numbers.trace.json").read_text())
    events = trace["traceEvents"]
    found["chrome"] = {
        "ops": {e["args"]["seq"]: e["name"] for e in events if e.get("cat") == "op"},
        "kernels": {e["args"]["id"]: e["name"] for e in events if e.get("cat") == "kernel"},
    }
    return found
