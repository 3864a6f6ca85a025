"""The bit-level matmul tests again, in a child pytest under the other OpenBLAS core type.

NumPy's OpenBLAS picks its sgemm kernel by the CPU, unless ``OPENBLAS_CORETYPE`` names a
core: some machines set ``OPENBLAS_CORETYPE=Haswell`` on an AVX-512 CPU. The two kernels
sum a float32 product in different orders, so each decision that rests on NumPy's bits goes
one way under one and the other way under the other: em_gemm.h is chosen only where its
bits equal NumPy's (codegen/gemm_kernel.py), a product is turned round only where NumPy
gives the turned one the same bits (matmul_bits.py). The tests below assert that the engine
follows those decisions and keeps eager's bits, whichever way they go; this one runs them
again with the core type flipped (Haswell when this process runs without the variable, the
CPU's own choice when it has it), so one run of ``python -m pytest`` covers both.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# Slow tier: the bit-level matmul tests again in a child pytest, OpenBLAS's core type flipped.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

# Only the tests whose outcome depends on the bits of NumPy's matmul: a short child run.
BIT_LEVEL_TESTS = [
    "tests/codegen/test_gemm_kernel.py",
    "tests/codegen/test_program_steps.py::test_blas_matmul_in_a_program_equals_numpy_bit_for_bit",
    "tests/codegen/test_program_steps.py::test_a_matmul_turned_round_equals_numpy_bit_for_bit",
    "tests/codegen/test_program_steps.py::test_an_mlp_layer_is_turned_round_where_its_bits_stay",
    "tests/codegen/test_program_steps.py::test_the_weight_gradients_reach_the_update_contiguous",
    "tests/passes/test_passes.py::test_simplify_turns_a_product_read_only_through_its_transpose",
]

# OpenBLAS's own settings of its kernel and blocking (absent: it asks the CPU).
CORE_SETTINGS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

# Printed by the child before its tests: the sgemm core its OpenBLAS runs.
_RUN_AND_NAME_THE_CORE = """
import sys
import numpy
try:
    from threadpoolctl import threadpool_info
    cores = [i.get("architecture") for i in threadpool_info() if i.get("internal_api") == "openblas"]
except ImportError:
    cores = []
print("openblas core:", cores[0] if cores else "unknown", flush=True)
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def _numpy_blas() -> str:
    try:
        return np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except (KeyError, TypeError, ValueError):
        return "unknown"


def _cpu_runs_haswell_kernels() -> bool:
    # OpenBLAS does not check a forced core against the CPU: Haswell's kernels need AVX2 and
    # FMA, and would stop a CPU without them on an illegal instruction.
    umath = getattr(getattr(np, "_core", None), "_multiarray_umath", None)
    features = getattr(umath, "__cpu_features__", None) or {}
    return bool(features.get("AVX2") and features.get("FMA3"))


def _flipped_environment() -> tuple[dict, str]:
    env = dict(os.environ)
    if env.get("OPENBLAS_CORETYPE"):
        for name in CORE_SETTINGS:
            env.pop(name, None)
        return env, "without OPENBLAS_CORETYPE (the CPU's own choice)"
    env["OPENBLAS_CORETYPE"] = "Haswell"
    return env, "with OPENBLAS_CORETYPE=Haswell"


def test_the_bit_level_tests_pass_under_the_other_openblas_core_type():
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip(f"OpenBLAS's x86-64 core types do not apply on {platform.machine()}")
    if "openblas" not in _numpy_blas().lower():
        pytest.skip(f"NumPy's BLAS is {_numpy_blas()}, not OpenBLAS: no core type to flip")
    env, setting = _flipped_environment()
    if "OPENBLAS_CORETYPE" in env and not _cpu_runs_haswell_kernels():
        pytest.skip("this CPU lacks AVX2/FMA: OpenBLAS's Haswell kernels cannot run on it")
    done = subprocess.run(
        # -n 0: in the child itself, a short run beside the suite's own workers.
        [sys.executable, "-c", _RUN_AND_NAME_THE_CORE, "-q", "-n", "0", "-p", "no:cacheprovider",
         *BIT_LEVEL_TESTS],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=280)
    report = f"child pytest {setting}:\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, report
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "error" not in summary, report
