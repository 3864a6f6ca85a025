"""Faster NumPy implementations of ops against the NumPy calls they replace: the same bits,
shapes, strides and dtypes (issue 32's eager speed work)."""

import warnings

import numpy as np
import pytest

import execmode as em
from execmode.ops import elementwise
from execmode.ops.elementwise import _where_by_bits, _where_impl
from execmode.ops.movement import _add_rows_by_rank
from execmode.ops.reductions import _short_axis_arg

_SPECIALS = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.5, -2.5, 1e-45, 3e38])


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.strides == want.strides
    assert np.array_equal(np.ascontiguousarray(got).view(np.uint8),
                          np.ascontiguousarray(want).view(np.uint8))


def _same_but_nan_signs(got, want):
    """_same, but a NaN may differ in sign: NumPy's own result for a NaN depends on where
    the element lies (its vector loop gives +NaN, the remainder after it -NaN: gelu's
    gradient at NaN, float64, 255 elements), which one C loop cannot follow."""
    nan = np.isnan(want)
    assert np.array_equal(nan, np.isnan(got))
    _same(np.where(nan, 0, got), np.where(nan, 0, want))


def _operand(rng, shape, dtype):
    kind = rng.integers(0, 4)
    if kind == 0:
        return float(rng.choice([0.0, -0.0, 1.5, -np.inf, np.nan, 1e300, 0.1]))
    if kind == 1:
        return int(rng.choice([0, 1, -3, 2**40]))
    sub = tuple(d if rng.random() < 0.7 else 1 for d in shape)
    x = rng.choice(_SPECIALS, size=sub).astype(dtype if rng.random() < 0.9 else np.float32)
    if x.ndim >= 2 and rng.random() < 0.3:  # a Fortran-ordered operand: np.where's layout
        x = np.ascontiguousarray(x.swapaxes(0, 1)).swapaxes(0, 1)
    elif rng.random() < 0.3:  # a broadcast view (stride 0), as a sum's gradient is
        x = np.broadcast_to(x, shape)
    elif x.ndim >= 1 and x.shape[-1] > 1 and rng.random() < 0.2:  # a strided view
        x = np.repeat(x, 2, axis=-1)[..., ::2]
    return x


def test_where_by_bits_is_np_where(monkeypatch):
    monkeypatch.setattr(elementwise, "_BY_BITS_MIN", 0)  # small operands, every layout
    rng = np.random.default_rng(32)
    taken = 0
    for _ in range(3000):
        dtype = rng.choice([np.float32, np.float64])
        shape = tuple(rng.integers(1, 4, size=rng.integers(0, 4)))
        a, b = _operand(rng, shape, dtype), _operand(rng, shape, dtype)
        c = rng.random(tuple(d if rng.random() < 0.7 else 1 for d in shape)) < 0.5
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.where(c, a, b)
            got = _where_by_bits(c, a, b)
        if got is not None:
            taken += 1
            _same(got, want)
        _same(_where_impl(np, c, a, b), want)
    assert taken > 1000


def test_where_by_bits_leaves_small_operands_to_np_where_and_takes_large_ones():
    rng = np.random.default_rng(5)
    for n in (16, elementwise._BY_BITS_MIN - 1, elementwise._BY_BITS_MIN, 50_000):
        c = rng.random(n) < 0.5
        a, b = rng.standard_normal(n).astype(np.float32), float("-inf")
        got = _where_by_bits(c, a, b)
        assert (got is None) == (n < elementwise._BY_BITS_MIN), n
        _same(_where_impl(np, c, a, b), np.where(c, a, np.float32(b)))
    # Small operands that broadcast to many elements are many elements.
    c = rng.random((1000, 1)) < 0.5
    assert _where_by_bits(c, np.ones((1, 1000), np.float32), 0.0) is not None


def test_relu_gradient_through_where():
    x = np.array([[-1.0, 0.0, -0.0, 2.0, np.nan, -np.inf, np.inf]], np.float32)
    t = em.tensor(x, requires_grad=True)
    em.sum(em.relu(t) * em.tensor(np.arange(7, dtype=np.float32))).backward()
    _same(t.grad.numpy(), np.where(x > 0, np.arange(7, dtype=np.float32), 0.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_add_rows_by_rank_is_np_add_at(dtype):
    rng = np.random.default_rng(7)
    for _ in range(300):
        rows = int(rng.integers(1, 50))
        inner = tuple(rng.integers(1, 4, size=rng.integers(0, 3)))
        index = rng.integers(-rows, rows, size=tuple(rng.integers(1, 6, size=rng.integers(1, 3))))
        g = rng.choice(_SPECIALS, size=index.shape + inner).astype(dtype)
        want = np.zeros((rows,) + inner, dtype)
        np.add.at(want, (index,), g)
        got = np.zeros_like(want)
        assert _add_rows_by_rank(got, (index,), g)
        # The same bits, but for which NaN's payload survives where two NaNs add up
        # (np.add.at's scalar loop keeps the first operand's, SIMD adds may not).
        nan = np.isnan(want)
        assert np.array_equal(nan, np.isnan(got))
        _same(np.where(nan, 0, got), np.where(nan, 0, want))


def test_add_rows_by_rank_leaves_the_rest_to_np_add_at():
    out = np.zeros((4, 2), np.float32)
    assert not _add_rows_by_rank(out, (np.array([4]),), np.ones((1, 2), np.float32))
    assert not _add_rows_by_rank(out, (np.zeros(100, np.int64),), np.ones((100, 2), np.float32))
    assert not _add_rows_by_rank(out, (slice(None), np.array([0])), np.ones((4, 1), np.float32))
    assert not out.any()


def test_embedding_gradient_adds_repeated_rows_in_order():
    weight = em.tensor(np.zeros((5, 3), np.float32), requires_grad=True)
    ids = np.array([[1, 3, 1], [1, 0, 3]])
    g = np.random.default_rng(1).standard_normal((2, 3, 3)).astype(np.float32)
    em.sum(weight[em.tensor(ids)] * em.tensor(g)).backward()
    want = np.zeros((5, 3), np.float32)
    np.add.at(want, (ids,), g)
    _same(weight.grad.numpy(), want)


def test_argmax_argmin_over_a_short_axis_are_numpys():
    rng = np.random.default_rng(3)
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, 1.0, -2.0])
    for _ in range(300):
        ndim = int(rng.integers(1, 5))
        shape = tuple(rng.integers(1, 6, size=ndim))
        axis = int(rng.integers(0, ndim))
        if shape[axis] < 2:
            continue
        values = special if rng.random() < 0.5 else np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
        a = rng.choice(values, size=shape).astype(rng.choice([np.float32, np.float64]))
        if a.ndim >= 2 and rng.random() < 0.3:
            a = a.swapaxes(0, -1)
        for name, extremum in (("argmax", np.maximum), ("argmin", np.minimum)):
            for keepdims in (False, True):
                want = getattr(np, name)(a, axis=axis, keepdims=keepdims)
                got = _short_axis_arg(extremum, a, axis, keepdims)
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_array_equal(got, want)


def test_max_min_over_many_short_rows_are_numpys():
    # Many short rows reduce as columns (ops/reductions.py): NumPy's values, NaN where
    # NumPy has NaN; a tie between 0.0 and -0.0 may keep either (as NumPy's lanes may).
    from execmode.ops import OPS
    rng = np.random.default_rng(4)
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -2.5, 3.0])
    for shape in [(64, 2), (65, 3), (100, 64), (16, 4, 32, 32), (2, 300, 7), (64, 65)]:
        for dtype in (np.float32, np.float64, np.int32, np.int64):
            values = special if dtype in (np.float32, np.float64) else np.arange(-4, 5)
            a = rng.choice(values, size=shape).astype(dtype)
            for name in ("max", "min"):
                for keepdims in (False, True):
                    want = getattr(np, name)(a, axis=-1, keepdims=keepdims)
                    got = OPS[name].impl(np, a, axis=(a.ndim - 1,), keepdims=keepdims)
                    assert got.dtype == want.dtype and got.shape == want.shape
                    assert got.flags.c_contiguous
                    np.testing.assert_array_equal(got, want)


def test_argmax_over_a_short_middle_axis_is_numpys():
    x = np.random.default_rng(0).standard_normal((4, 8, 16, 16)).astype(np.float32)
    x[0, 0, :2, :2] = np.nan
    got = em.argmax(em.tensor(x.reshape(4, 8, 4, 64)), axis=2).numpy()
    np.testing.assert_array_equal(got, np.argmax(x.reshape(4, 8, 4, 64), axis=2))


def _col2im_by_strided_adds(cols, size, kernel):
    """col2im as the op computes windows that overlap: zeros, then one add per offset."""
    n, rows, _ = cols.shape
    kh, kw = kernel
    c = rows // (kh * kw)
    oh, ow = size[0] // kh, size[1] // kw
    blocks = cols.reshape(n, c, kh, kw, oh, ow)
    out = np.zeros((n, c) + tuple(size), cols.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i:i + kh * (oh - 1) + 1:kh, j:j + kw * (ow - 1) + 1:kw] += blocks[:, :, i, j]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_col2im_of_tiling_windows_is_the_strided_adds(dtype):
    from execmode.ops.conv import _col2im_impl
    rng = np.random.default_rng(5)
    special = np.array([0.0, -0.0, np.nan, -np.nan, 1.5, -np.inf])
    for _ in range(200):
        kernel = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        size = (int(rng.integers(kernel[0], 10)), int(rng.integers(kernel[1], 10)))
        oh, ow = size[0] // kernel[0], size[1] // kernel[1]
        cols = rng.choice(special, size=(2, 3 * kernel[0] * kernel[1], oh * ow)).astype(dtype)
        got = _col2im_impl(np, cols, size=size, kernel=kernel, stride=kernel, dilation=(1, 1))
        _same(got, _col2im_by_strided_adds(cols, size, kernel))


def _col2im_by_offsets(cols, size, kernel):
    """The op's stride-1 col2im: zeros, then one strided add per window offset."""
    n, rows, _ = cols.shape
    kh, kw = kernel
    c = rows // (kh * kw)
    oh, ow = size[0] - kh + 1, size[1] - kw + 1
    blocks = cols.reshape(n, c, kh, kw, oh, ow)
    out = np.zeros((n, c) + tuple(size), cols.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i:i + oh, j:j + ow] += blocks[:, :, i, j]
    return out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_col2im_of_stride_1_windows_is_the_strided_adds(dtype):
    from execmode.ops.conv import _col2im_impl
    rng = np.random.default_rng(6)
    special = np.array([0.0, -0.0, np.nan, 1.5, -np.inf, np.inf, 2.25, -1e-45])
    for _ in range(200):
        kernel = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
        size = (int(rng.integers(kernel[0], 10)), int(rng.integers(kernel[1], 10)))
        length = (size[0] - kernel[0] + 1) * (size[1] - kernel[1] + 1)
        cols = rng.choice(special, size=(2, 3 * kernel[0] * kernel[1], length)).astype(dtype)
        got = _col2im_impl(np, cols, size=size, kernel=kernel, stride=(1, 1), dilation=(1, 1))
        want = _col2im_by_offsets(cols, size, kernel)
        nan = np.isnan(want)  # which NaN's payload survives may differ (see _col2im_rows)
        assert np.array_equal(nan, np.isnan(got))
        _same(np.where(nan, 0, got), np.where(nan, 0, want))


def test_erf_in_c_is_the_numpy_versions_bits():
    # float64, every interval: the inner two in C, the tails' exponents in C, NumPy's exp,
    # C again (float32 is the kernels' erf: tests/engine/test_erf_float32.py)
    from execmode.codegen import eager_erf
    from execmode.ops import erf as erf_module
    kernels = eager_erf.load()
    if kernels is None:
        pytest.skip("no C compiler (or EXECMODE_EAGER_OPERATORS=0): erf stays in NumPy")
    rng = np.random.default_rng(11)
    edges = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 0.84375, -0.84375,
                      np.nextafter(0.84375, 0), 1.25, np.nextafter(1.25, 0), -1.25, 1 / 0.35,
                      np.nextafter(1 / 0.35, 0), -np.nextafter(1 / 0.35, 9), 6.0,
                      np.nextafter(6.0, 0), -6.0, 5e-324, -1e-300, 1e-9, 3e38])
    for values in (rng.standard_normal(50_000), rng.uniform(-7, 7, 50_000),
                   0.3 * rng.standard_normal(50_000), np.tile(edges, 300)):
        a = values.reshape(-1, 2)
        _same(erf_module._erf_native(kernels, a), erf_module.erf_float64(a))


def test_erf_in_c_scans_every_length_alike():
    # The tails are found a vector at a time where the machine has AVX-512 or AVX2 and one
    # element at a time for what is left: every length up to a few vectors past 16, tails
    # and outer values (NaN, inf, |x| >= 6) at every position of a vector.
    from execmode.codegen import eager_erf
    from execmode.ops import erf as erf_module
    kernels = eager_erf.load()
    if kernels is None:
        pytest.skip("no C compiler (or EXECMODE_EAGER_OPERATORS=0): erf stays in NumPy")
    rng = np.random.default_rng(12)
    values = np.array([0.1, -0.5, 0.9, 1.25, -2.0, 3.5, -5.9, 6.0, -7.0, np.inf, np.nan,
                       -0.0, np.nextafter(1.25, 0), np.nextafter(6.0, 0)])
    for n in [*range(1, 50), 1023, 4097]:
        a = rng.choice(values, n)
        _same(erf_module._erf_native(kernels, a), erf_module.erf_float64(a))


def test_gelu_in_c_is_the_numpy_versions_bits(monkeypatch):
    # GELU's forward (what nn/plain.py's gelu_saving keeps) and its gradients
    # (nn/one_node_layers.py) in C, against the NumPy arithmetic they replace.
    from execmode.codegen import eager_erf
    from execmode.nn import one_node_layers, plain
    from execmode.ops import erf as erf_module
    kernels = eager_erf.load()
    if kernels is None:
        pytest.skip("no C compiler (or EXECMODE_EAGER_OPERATORS=0): GELU stays in NumPy")
    monkeypatch.setattr(erf_module.NATIVE, "_kernels", kernels)

    def forward_and_grads(x, g):
        out, saved = plain.gelu_saving(x)
        with np.errstate(all="ignore"):
            grads = one_node_layers.gelu_grads(one_node_layers._ArrayKit, g, None, None,
                                                saved=saved)
        return [out, *saved, *grads]

    rng = np.random.default_rng(13)
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.8, -3.0, 8.5, -9.0, 1e-30])
    for n in (1, 16, 255, 4096, 4099, 20_011):  # once loaded, small arrays take the C too
        for dtype in (np.float32, np.float64):
            for x in (rng.standard_normal(n) * 3, rng.choice(special, n)):
                x, g = x.astype(dtype), rng.standard_normal(n).astype(dtype)
                assert erf_module.gelu_native(x) is not None  # the C path is taken
                with erf_module.NATIVE.withheld():
                    assert erf_module.gelu_native(x) is None
                    want = forward_and_grads(x, g)
                for got, expected in zip(forward_and_grads(x, g), want):
                    _same_but_nan_signs(got, expected)


def test_erf_in_c_keeps_its_tail_indices_per_thread():
    # The tails' indices live in a buffer kept per thread and grown: sizes up and down,
    # and four threads at once, each get erf_float64's bits.
    from concurrent.futures import ThreadPoolExecutor

    from execmode.codegen import eager_erf
    from execmode.ops import erf as erf_module
    kernels = eager_erf.load()
    if kernels is None:
        pytest.skip("no C compiler (or EXECMODE_EAGER_OPERATORS=0): erf stays in NumPy")

    def check(seed):
        rng = np.random.default_rng(seed)
        for n in (70_000, 5_000, 200_000, 9_000):
            a = rng.uniform(-7, 7, n)
            _same(erf_module._erf_native(kernels, a), erf_module.erf_float64(a))

    check(0)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(check, range(1, 9)))


def test_erf_switches_to_c_after_a_few_large_calls(monkeypatch):
    from execmode.ops import erf as erf_module
    calls = []
    native = erf_module.NATIVE
    monkeypatch.setattr(native, "loader", lambda: calls.append(1))
    monkeypatch.setattr(native, "_kernels", None)  # as if never asked
    monkeypatch.setattr(native, "_calls_left", native.after_calls)
    x = np.linspace(-3, 3, erf_module.NATIVE_MIN_SIZE, dtype=np.float32)
    erf_module.erf_array(x[:10])  # small arrays never ask
    for _ in range(erf_module.NATIVE_AFTER_CALLS + 2):
        erf_module.erf_array(x)
    assert calls == [1]  # asked once; it said no (None): NumPy from then on
    assert native.gave_none


def test_erf_of_a_small_array_takes_c_kernels_already_there_and_never_compiles_them(
        monkeypatch):
    from execmode.ops import erf as erf_module
    native = erf_module.NATIVE
    asked = []

    def loader(build=True):
        asked.append(build)
        assert not build, "a small call compiled the kernels"
        return None  # none built on this machine yet

    monkeypatch.setattr(native, "loader", loader)
    monkeypatch.setattr(native, "_kernels", None)
    monkeypatch.setattr(native, "_calls_left", native.after_calls)
    monkeypatch.setattr(native, "_looked_for_built", False)
    small = np.linspace(-3, 3, 16, dtype=np.float32)
    for _ in range(erf_module.NATIVE_AFTER_CALLS + 2):
        assert erf_module._native_for(small) is None
    assert asked == [False]  # looked for a build once, compiled nothing
    built = object()  # a build from an earlier process on this machine
    monkeypatch.setattr(native, "loader", lambda build=True: built)
    monkeypatch.setattr(native, "_looked_for_built", False)
    assert erf_module._native_for(small) is built
    assert erf_module._native_for(small[:0]) is None  # nothing to compute: NumPy


def test_a_build_already_on_this_machine_loads_without_the_compiler(monkeypatch, tmp_path):
    from execmode.codegen import eager_erf, native_library
    if eager_erf.load() is None:
        pytest.skip("no C compiler (or EXECMODE_EAGER_OPERATORS=0): erf stays in NumPy")

    def no_compiler(*args, **kwargs):
        raise AssertionError("compiled again")

    from execmode.codegen import toolchain
    monkeypatch.setattr(native_library, "run_compiler", no_compiler)
    monkeypatch.setattr(toolchain, "try_compile", no_compiler)  # nor the compiler's probe
    monkeypatch.setattr(toolchain, "_version", no_compiler)
    assert eager_erf.load(build=False) is not None
    monkeypatch.setenv("EXECMODE_CACHE_DIR", str(tmp_path))  # a machine that built none,
    assert eager_erf.load(build=False) is None               # nor probed its compiler


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_pad_is_np_pad():
    from execmode.ops.conv import _pad_impl
    rng = np.random.default_rng(8)
    special = np.array([0.0, -0.0, np.nan, np.inf, 1.5])
    for _ in range(400):
        ndim = int(rng.integers(1, 5))
        a = rng.choice(special, size=tuple(rng.integers(0, 4, size=ndim)))
        a = a.astype(rng.choice([np.float32, np.float64]))
        if a.ndim >= 2 and rng.random() < 0.3:
            a = a.swapaxes(0, 1)  # np.pad keeps an F-ordered layout: np.pad itself then
        widths = tuple((int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(ndim))
        value = [0.0, -0.0, -np.inf, np.nan, 1e300, 3, 0.1, -2][int(rng.integers(0, 8))]
        want = np.pad(a, widths, mode="constant", constant_values=value)
        _same(_pad_impl(np, a, widths=widths, value=value), want)
