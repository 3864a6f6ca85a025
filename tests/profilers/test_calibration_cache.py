"""The calibration cached per machine (profilers/calibration_cache.py): measured once,
read back while the machine, versions, measured code and options are the same; nothing
read from a file or folder another user could have written; JSON checked field by field."""

from __future__ import annotations

import json
import os

import pytest
from execmode.profilers import calibration_cache as cc

from execmode.codegen import toolchain

RESULT = {"ops": 2000, "rounds": 7, "no_listener_ns": 1000, "null_listener_ns": 1200,
          "recorder_ns": 3000, "instrumentation_ns": 200, "overhead_ns": 2000,
          "op_path_ns": {"binary0": 300, "binary1": 400, "general1": 350, "general2": 600},
          "site_ns": 2000, "declined_ns": {"nn/functional:linear": 1500},
          "cold_op_ns": [[1048576, 2000], [2097152, 5000]],
          "graph_run_ns": 800, "graph_steps": 6, "kernel_step_ns": 30, "kernel_run_ns": 150,
          "kernel_loop_step_ns": 300, "load_average": 0.5,
          "settled": True, "crowded": [], "disagreeing": [], "memory": True,
          "summaries": False, "kernel_rows": False}


class _Measure:
    """A stand-in for measure_overhead that counts its calls."""

    def __init__(self, result=None):
        self.calls = 0
        self.result = dict(result or RESULT)

    def __call__(self, *, memory, summaries, kernel_rows):
        self.calls += 1
        return dict(self.result, memory=memory, summaries=summaries, kernel_rows=kernel_rows)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("EXECMODE_CACHE_DIR", str(root))
    monkeypatch.delenv("EXECMODE_RECALIBRATE", raising=False)
    return root


def _stored_files(root):
    folder = root / cc.FOLDER
    return sorted(p for p in folder.iterdir() if p.suffix == ".json") if folder.exists() else []


def test_measured_once_then_read_back(private_cache):
    measure = _Measure()
    first = cc.cached_overhead(measure=measure)
    second = cc.cached_overhead(measure=measure)
    assert measure.calls == 1 and first == second == RESULT
    (path,) = _stored_files(private_cache)
    assert json.loads(path.read_text())["calibration"] == RESULT  # JSON, nothing else


@pytest.mark.parametrize("change", ["cpu", "python", "version", "options"])
def test_a_change_of_machine_version_or_options_measures_again(change, monkeypatch):
    measure = _Measure()
    cc.cached_overhead(measure=measure)
    options = {}
    if change == "cpu":
        monkeypatch.setattr(toolchain, "cpu_identity", lambda: "another CPU")
    elif change == "python":
        monkeypatch.setattr(cc.platform, "python_version", lambda: "3.99.0")
    elif change == "version":
        import execmode

        monkeypatch.setattr(execmode, "__version__", "99.0", raising=False)
    else:
        options = {"summaries": True}
    cc.cached_overhead(measure=measure, **options)
    assert measure.calls == 2


def test_recalibrate_measures_and_replaces(monkeypatch):
    cc.cached_overhead(measure=_Measure())
    monkeypatch.setenv("EXECMODE_RECALIBRATE", "1")
    fresh = _Measure(dict(RESULT, overhead_ns=7))
    assert cc.cached_overhead(measure=fresh)["overhead_ns"] == 7
    monkeypatch.delenv("EXECMODE_RECALIBRATE")
    assert cc.cached_overhead(measure=_Measure())["overhead_ns"] == 7


@pytest.mark.parametrize("damage", ["not json", "wrong type", "missing field", "other key",
                                    "group writable", "symlink", "huge"])
def test_a_damaged_or_untrusted_file_is_measured_again_and_replaced(damage, private_cache,
                                                                    tmp_path):
    cc.cached_overhead(measure=_Measure())
    (path,) = _stored_files(private_cache)
    stored = json.loads(path.read_text())
    if damage == "not json":
        path.write_text("{nope")
    elif damage == "wrong type":
        stored["calibration"]["overhead_ns"] = "2000"
        path.write_text(json.dumps(stored))
    elif damage == "missing field":
        del stored["calibration"]["ops"]
        path.write_text(json.dumps(stored))
    elif damage == "other key":
        stored["key"]["cpu"] = "elsewhere"
        path.write_text(json.dumps(stored))
    elif damage == "group writable":
        os.chmod(path, 0o664)
    elif damage == "symlink":
        elsewhere = tmp_path / "planted.json"
        elsewhere.write_text(path.read_text())
        path.unlink()
        path.symlink_to(elsewhere)
    else:
        path.write_text(" " * (cc.MAX_BYTES + 1))
    measure = _Measure()
    assert cc.cached_overhead(measure=measure) == RESULT
    assert measure.calls == 1
    assert not path.is_symlink() and oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert cc.cached_overhead(measure=measure) == RESULT and measure.calls == 1


def test_a_folder_others_can_write_is_neither_read_nor_written(private_cache):
    cc.cached_overhead(measure=_Measure())
    os.chmod(private_cache, 0o777)
    try:
        measure = _Measure()
        cc.cached_overhead(measure=measure)
        cc.cached_overhead(measure=measure)
        assert measure.calls == 2
    finally:
        os.chmod(private_cache, 0o700)


def test_a_skipped_calibration_is_not_stored(private_cache):
    skipped = lambda **_: {"skipped": "other instrumentation listeners were attached"}  # noqa: E731
    assert "skipped" in cc.cached_overhead(measure=skipped)
    assert _stored_files(private_cache) == []


def test_numbers_from_a_busy_machine_are_kept_for_an_hour_only(private_cache, monkeypatch):
    measure = _Measure(dict(RESULT, settled=False))
    first = cc.cached_overhead(measure=measure)
    assert first["settled"] is False and len(_stored_files(private_cache)) == 1
    assert cc.cached_overhead(measure=measure)["settled"] is False
    assert measure.calls == 1  # kept, and said to be rough (settled False)
    monkeypatch.setattr(cc, "UNSETTLED_S", 0.0)  # an hour later: measured again
    cc.cached_overhead(measure=measure)
    assert measure.calls == 2
    settled = _Measure(dict(RESULT, settled=True))
    cc.cached_overhead(measure=settled)  # a quiet machine's numbers replace them
    assert cc.cached_overhead(measure=settled)["settled"] is True and settled.calls == 1


def test_every_measured_source_is_stamped():
    """A C file renamed or moved without MEASURED_SOURCES would be stamped as missing, and
    its edits would no longer invalidate the stored calibration."""
    stamped = {entry[0]: entry[1] for entry in cc._code_stamp()}
    for _, name in cc.MEASURED_SOURCES:
        assert stamped[name] is not None, f"{name} is not where MEASURED_SOURCES says"


def test_what_the_calibration_measures_is_read_back(private_cache):
    """Every field the real calibration returns is one the cache reads (a field it did not
    know made every read fail: each recording measured again, ~2 s at every start)."""
    from execmode.profilers.calibration import measure_overhead

    result = measure_overhead(ops=200)
    key = cc.cache_key(True, False, False)
    path = cc._path(key)
    cc.write(path, key, result)
    assert cc.read(path, key) == result
