"""What a session stores about its machine (meta "machine"), read cheaply at every start."""

from __future__ import annotations

import os
import platform

import numpy as np
from execmode.profilers.machine import _os_text, machine_info
from execmode.profilers.recorder import Recorder
from execmode.profilers.report import build_report
from execmode.profilers.session import open_session

import execmode as em
from execmode.codegen import threads


def test_the_os_text_is_what_platform_platform_says():
    # Built from os.uname and the C library's own answer, not platform.platform(), which
    # reads the Python binary to find the C library's version.
    assert _os_text() == platform.platform()


def test_machine_info_names_the_versions_and_sizes():
    info = machine_info()
    assert info["numpy"] == np.__version__
    assert info["cpus"] == os.cpu_count()
    assert info["arch"] == platform.machine()
    assert info["memory_bytes"] is None or info["memory_bytes"] > 0


def test_machine_info_has_the_load_and_asked_for_them_the_thread_settings():
    info = machine_info(threads=True)
    assert len(info["load_average"]) == 3 and min(info["load_average"]) >= 0
    assert info["threads"] == threads.thread_settings()
    assert "threads" not in machine_info()


def test_a_recorded_session_reports_its_threads_and_load(tmp_path):
    """The report's header states what the numbers were measured under (recorder.py
    stores it at the start, report.py prints it)."""
    with Recorder(tmp_path / "threads.emsession", calibrate=False) as rec:
        em.ones(3) + 1
    with open_session(rec.path) as session:
        stored = session.meta["machine"]
        facts = dict(build_report(session).facts)
    assert stored["threads"] == threads.thread_settings()
    assert facts["threads"] == threads.thread_settings_text().removeprefix("threads: ")
    one_minute = stored["load_average"][0]
    assert facts["load average"].startswith(f"{one_minute:.2f} (1 min), ")
