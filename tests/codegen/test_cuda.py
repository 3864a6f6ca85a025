"""The CUDA renderer: its output compiles with ``nvcc -ptx`` wherever nvcc exists (no GPU
needed), differs from the C rendering only where the dialects differ, and - on a machine
with a GPU - computes what CuPy eager computes."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from kernel_helpers import call_args, eager, fused_case, nvcc_path

import execmode as em
from execmode.backend import cuda_problem, cupy_module
from execmode.codegen.lower import lower_fused
from execmode.codegen.render_c import CRenderer
from execmode.codegen.render_cuda import CUDARenderer


def _cases():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 33)).astype(np.float32)
    b = rng.standard_normal(33).astype(np.float32)
    d = rng.standard_normal((5, 7)).astype(np.float64)
    i = rng.integers(-50, 50, size=(8, 33)).astype(np.int32)
    w = rng.standard_normal((33, 6)).astype(np.float32)
    big = rng.standard_normal(1 << 17).astype(np.float32)
    return [
        (lambda x, b: em.tanh(x * 0.5 + b) + em.relu(x), (x, b)),
        (lambda x: em.erf(x) * em.expm1(x) - em.log1p(em.abs(x)), (x,)),
        (lambda i, x: em.floor_divide(i, 7) + em.remainder(i, -3) * x, (i, x)),
        (lambda x: em.astype(x * 100, em.int64) // 3, (x,)),
        (lambda x, i: em.where(x > 0, i, em.astype(em.sign(x), em.int32)), (x, i)),
        (lambda d: em.power(d, 2.5) + em.sqrt(em.abs(d)), (d,)),
        (lambda x, b: em.sum(em.exp(x - b), axis=1), (x, b)),
        (lambda x: em.max(x * 2, axis=0, keepdims=True), (x,)),
        (lambda i: em.sum(i, axis=(0, 1)), (i,)),
        (lambda d: em.prod(d + 1, axis=1), (d,)),
        (lambda big: em.min(em.log(em.abs(big))), (big,)),
        (lambda x, w, c: em.relu(em.matmul(x, w) + c), (x, w, b[:6].copy())),
        (lambda s: em.exp(s) + 1, (np.array(2.0, np.float32),)),
    ]


def _kernels():
    kernels = []
    for n, (fn, arrs) in enumerate(_cases()):
        g, f = fused_case(fn, *arrs, label=f"k{n}")
        kernels.append((lower_fused(f, g.node_map()), g, f, fn, arrs))
    return kernels


# Slow tier: nvcc compiles the source.
@pytest.mark.slow
def test_cuda_source_compiles_with_nvcc(tmp_path):
    nvcc = nvcc_path()
    if nvcc is None:
        pytest.skip("nvcc is not installed: the CUDA rendering is not compiled here")
    source = CUDARenderer().translation_unit([k for k, *_ in _kernels()])
    path = tmp_path / "kernels.cu"
    path.write_text(source)
    proc = subprocess.run([nvcc, "-ptx", "--std=c++14", "-diag-suppress=177", str(path), "-o",
                           str(tmp_path / "kernels.ptx")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ptx = (tmp_path / "kernels.ptx").read_text()
    assert ".entry k0" in ptx and ".entry k10" in ptx


def test_renderers_differ_only_in_dialect():
    """Same statements, comments and index expressions; different prefix, types, thread
    layout."""
    kernel = _kernels()[0][0]
    c, cuda = CRenderer().kernel(kernel), CUDARenderer().kernel(kernel)
    statements = [line.strip() for line in c.splitlines() if line.strip().startswith(
        ("const float v", "/* %", "out["))]
    for line in statements:
        assert line in cuda, line
    assert cuda.count('extern "C" __global__') == 1 and "__restrict__" in cuda
    assert "#pragma omp" in c and "#pragma omp" not in cuda
    assert "blockIdx.x" in cuda and "blockIdx.x" not in c


@pytest.mark.gpu
def test_cuda_kernels_match_cupy_eager():
    cp = cupy_module()
    if cp is None:
        pytest.skip(f"needs a CUDA GPU with CuPy: {cuda_problem()}")
    from execmode.codegen.cuda_runtime import CudaKernel, build_module

    items = _kernels()
    module, _, _, _ = build_module([k for k, *_ in items if not (
        k.matmul is not None and k.matmul.library and not k.body)])
    for kernel, g, f, fn, arrs in items:
        cuda_kernel = CudaKernel(kernel, module)
        got = cuda_kernel(*call_args(f, g, [cp.asarray(a) for a in arrs]))
        want = eager(fn, *arrs)
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=2e-5, atol=1e-5,
                                   equal_nan=True, err_msg=kernel.describe())
        _, ms = cuda_kernel.timed(*call_args(f, g, [cp.asarray(a) for a in arrs]))
        assert ms >= 0
