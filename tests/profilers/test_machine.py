"""What a session stores about its machine (meta "machine"), read cheaply at every start."""

from __future__ import annotations

import os
import platform

import numpy as np
from execmode.profilers.machine import _os_text, machine_info


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
