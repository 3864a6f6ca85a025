#!/usr/bin/env bash
# The GPU checks in one command, for a machine with a CUDA GPU and CuPy (the lent device
# machines run it from the repository root; see docs/performance.md, "GPU"):
#   1. install execmode without its dependencies (those machines reach no registry; the
#      engine needs only NumPy there, and CuPy for the device),
#   2. the GPU tests (pytest -m gpu),
#   3. benchmarks/bench_gpu.py (its table is the last thing printed; the same table, stamped,
#      in bench_gpu.md: `python benchmarks/run_all.py --write-docs --table gpu=PATH` puts it
#      into docs/performance.md).
# Logs go to $OUT when it is set (the device tool brings that folder back), else /tmp.
set -uo pipefail
out="${OUT:-/tmp}"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
# The kernel cache's default folder comes from platformdirs, which --no-deps leaves out
# (the device image has none): a folder of this run's own instead.
export EXECMODE_CACHE_DIR="${EXECMODE_CACHE_DIR:-$(mktemp -d /tmp/execmode-cache-XXXXXX)}"
py="${PYTHON:-python3}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$py" -c "import sys, numpy, cupy; print(sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__)"
"$py" -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 \
    || { echo "install failed:"; tail -20 "$out/install.log"; exit 1; }
timeout "${GPU_TEST_TIMEOUT:-300}" "$py" -m pytest -m gpu tests/engine tests/codegen -q \
    -p no:cacheprovider -o addopts="-ra --import-mode=importlib" 2>&1 | tee "$out/gpu_tests.log" | tail -60
echo "pytest rc=${PIPESTATUS[0]}"
timeout "${GPU_BENCH_TIMEOUT:-240}" "$py" benchmarks/bench_gpu.py "$@" --markdown "$out/bench_gpu.md" \
    2>&1 | tee "$out/bench_gpu.log"
echo "bench rc=${PIPESTATUS[0]}"
