"""One test per mismatch class the differential fuzzer found around em.jit's symbolic
sizes (a function called at many sizes of one dimension, jit_driver/symbolic_dims.py)
and the classes found beside them; each names its seed and program."""

from __future__ import annotations

import pytest
from fuzz.check import assert_agrees

import execmode as em
from execmode.errors import BackwardError


def test_a_retrace_whose_backward_reaches_a_freed_earlier_call_raises_eagers_error():
    # 20261170-4093: f's backward reaches obj.buf's history, which the first call left
    # (obj.buf *= loss) and an outer backward freed. Eager refuses (multiply's input was
    # overwritten); jit, tracing the second call (a new size), first asked the earlier
    # call's node whether the backward reads freed values, which traced that call's
    # backward graph into the new trace: a GraphBreakError instead of the BackwardError.
    assert_agrees("""
import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---
class Obj: pass
obj = Obj()
obj.buf = em.tensor([-0.25, 0.5, 1.0, 2.0], dtype=em.float32)
w = em.tensor([[1.75, 2.0, -0.75], [0.5, 1.0, 1.25], [1.0, 3.0, 1.0], [-2.0, 2.0, -0.75]], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x, y):
    v1 = (obj.buf * w[:, 0]).sum()
    v1.backward(retain_graph=True)
    obj.buf *= v1
    v4 = em.minimum(x, x)
    return v4, y

F = em.jit(f, passes=[])
# --- call 1 ---
x1 = em.tensor([[0.75, -0.0, 2.25, -0.75], [2.25, -0.75, 1.75, -0.5]], dtype=em.float32, requires_grad=True)
y1 = em.tensor([-3.0, -1.5, -1.0, 2.5], dtype=em.float32)
out1 = F(x1, y1)

# --- call 2 ---
(out1[0].sum()).backward()
x2 = em.zeros(0, 4, dtype=em.float32, requires_grad=True)
out2 = F(x2, obj.buf)
""")


@pytest.mark.parametrize("second_batch", [0, 2, 5])
@pytest.mark.parametrize("loss, write", [("(obj.buf * w).sum()", "obj.buf *= loss"),
                                         ("(obj.buf * w).sum()", "obj.buf -= 2.0 * loss"),
                                         ("(w * w).sum() + obj.buf.sum()", "obj.buf += loss")])
def test_a_backward_into_a_freed_call_while_tracing_raises_as_eager_does(second_batch, loss,
                                                                        write):
    # The class around it: the second call (a retrace at another size) walks back into
    # the first call's freed graph, with and without an overwrite for eager to refuse.
    # Where eager refuses (multiply's input overwritten) jit raises eager's BackwardError;
    # where eager walks on (sum and add save no input) jit refuses a backward into an earlier
    # call's graph while tracing with a BackwardError saying so (the documented
    # limitation of features.CHECKS["jit_result_backward"]), never a graph break.
    def run(mode):
        class Obj:
            pass

        obj = Obj()
        obj.buf = em.tensor([1.0, 2.0, 3.0, 4.0])
        w = em.tensor([0.5, 1.0, 1.5, 2.0], requires_grad=True)
        namespace = {"obj": obj, "w": w, "em": em}
        exec(f"def f(x):\n    loss = {loss}\n"  # noqa: S102 - our own text
             f"    loss.backward(retain_graph=True)\n    {write}\n    return x * 2.0\n",
             namespace)
        f = namespace["f"]
        g = em.jit(f, passes=[]) if mode == "jit" else f
        out = g(em.ones(2, 4, requires_grad=True))
        out.sum().backward()
        try:
            g(em.ones(second_batch, 4, requires_grad=True))
        except Exception as exc:  # noqa: BLE001
            return type(exc)
        return None

    eager = run("eager")
    jit = run("jit")
    assert jit is eager or (jit is BackwardError and eager is None), (eager, jit)


SUM_OF_CANCELLING_EXTREMES = """
import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---
g1 = em.tensor([[2.0, -0.25, 1.5], [0.0, 2.5, 1.7e+38], [-1.7e+38, -0.75, -1.25], [1.75, 3.0, 0.5]], dtype=em.float32)

# --- function ---
def f():
    v0 = g1 + -1.5
    v2 = v0.reshape(-1)
    v3 = em.sum(em.unique_values(em.reshape(v0, (-1,))))
    v4 = v3 > v2
    return v4

F = em.jit(f, passes=[])
# --- call 1 ---
out1 = F()

# --- call 2 ---
out2 = F()
"""


def test_a_comparison_with_a_sum_of_cancelling_extremes_is_rounding():
    # 20261181-1054: the sum of 1.7e38, -1.7e38 and small terms is rounding noise (0 in
    # NumPy's order, -9 in a C kernel's that adds the small terms before the extremes
    # cancel, both within 2 eps of sum |x| = 8e31), and `sum > x` differs where x lies
    # in between. The rounding oracle (tests/fuzz/rounding.py) says so: the eager runs
    # with the sum nudged by its terms' rounding give jit's bools.
    from fuzz.check import check_runs, check_source
    from fuzz.compare import compare_runs
    from fuzz.program import parse
    from fuzz.rounding import drop_rounding
    from fuzz.runner import run_both, run_mode

    program = parse(SUM_OF_CANCELLING_EXTREMES)
    assert not program.exact
    eager, others = run_both(program)
    raw = [m for other in others for m in compare_runs(program, eager, other)]
    # (where the C kernels run, their order differs from NumPy's: values mismatches)
    assert all(m.check == "values" for m in raw), raw
    assert drop_rounding(program, eager, others, raw, run_mode) == []
    assert check_runs(program, matrix=False)[0] == []
    assert check_source(SUM_OF_CANCELLING_EXTREMES) == []
    # ... and only the elements the rounding flips are forgiven: a jit that gets one
    # comparison the nudged runs agree on wrong is still a mismatch.
    import numpy as np
    from fuzz.rounding import _flipped_by_rounding

    eager = np.array([False, True, False, True, False, False, True, True])
    up = np.array([True, True, True, True, True, False, True, True])
    down = np.array([False, False, False, False, False, False, True, False])
    assert _flipped_by_rounding(eager, down, [up, down])
    wrong = down.copy()
    wrong[6] = False  # every run says True here
    assert not _flipped_by_rounding(eager, wrong, [up, down])


def test_a_rerun_at_a_symbolic_size_reads_a_size_as_a_number():
    # 20261180-3435: f writes a global with a history (g1 += w, w requires grad), so its
    # calls re-run the Python over the segments of their first trace; the trace at the
    # second size had its batch symbolic, and the re-run at that size matched those
    # segments (shapes holding SymInts) with a tracer that did not know the symbols:
    # mean's count, a SymInt, reached the divide as an operand: "divide(f32[], 15
    # (python SymInt)): expected a Tensor or a Python number". The re-run now traces
    # with the symbols its first trace had.
    assert_agrees("""
import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---
g1 = em.tensor([[-0.0, -2.5, -0.25], [0.0, 0.0, -1.5], [3.0, -3.0, 0.5], [-1.5, -2.25, 1.0]], dtype=em.float32)
w = em.tensor([[-1.0, 0.75, 1.5], [0.0, 0.5, 2.75], [-0.0, 1.5, -2.25], [-1.5, -2.25, 0.25]], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x):
    global g1
    g1 += w
    v1 = (x @ w).mean()
    return v1, (x * 2.0).mean(axis=0)

F = em.jit(f, passes=[])
# --- call 1 ---
x1 = em.tensor([[2.25, 1.0, 0.25, -2.0]], dtype=em.float32)
out1 = F(x1)

# --- call 2 ---
x2 = em.tensor([[2.5, 0.5, -0.75, 0.75], [2.25, -2.25, -2.75, -0.75], [-2.0, -0.25, 1.5, -1.0], [1.0, -0.25, -1.5, 1.5], [0.0, 2.75, 0.5, -1.0]], dtype=em.float32)
out2 = F(x2)

# --- call 3 ---
x3 = em.tensor([[-1.5, 1.0, 2.75, 1.75], [-1.0, -0.75, 2.25, -0.75], [-1.75, -2.75, -2.0, 2.25], [-2.75, -2.5, -3.0, -2.0], [-3.0, 2.75, -2.75, 1.75]], dtype=em.float32)
out3 = F(x3)

# --- call 4 ---
x4 = em.tensor([[-1.5, 1.0, 2.75, 1.75], [-1.0, -0.75, 2.25, -0.75], [-1.75, -2.75, -2.0, 2.25]], dtype=em.float32)
out4 = F(x4)

# --- call 5 ---
x5 = em.tensor([[0.5, 1.0, 2.75, 1.75], [-1.0, -0.75, 2.25, -0.75], [-1.75, -2.75, -2.0, 2.25]], dtype=em.float32)
out5 = F(x5)
""")


def test_fftshift_rolls_each_size_by_its_own_half():
    # Seed 20261219, program 3859: ifftshift at sizes 6 and 7 rolls by 6 // 2 == 7 // 2 == 3,
    # so the two traces gave one graph and the size-generic plan rolled size 8 by 3 too
    # (roll made its shift a plain int). The shift now stays the size's expression.
    assert_agrees("""
import execmode as em

# --- setup ---

# --- function ---
def f(x):
    return em.fft.ifftshift(x, axes=(0,)) * 1.0

F = em.jit(f, passes=[])
# --- call 1 ---
x1 = em.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=em.float32)
out1 = F(x1)
# --- call 2 ---
x2 = em.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0], [11.0, 12.0]], dtype=em.float32)
out2 = F(x2)
# --- call 3 ---
x3 = em.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0], [11.0, 12.0], [13.0, 14.0]], dtype=em.float32)
out3 = F(x3)
# --- call 4 ---
x4 = em.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0], [11.0, 12.0], [13.0, 14.0], [15.0, 16.0]], dtype=em.float32)
out4 = F(x4)
""")


@pytest.mark.parametrize("body", [
    "em.broadcast_to(x[:1], (x.shape[0] // 2, x.shape[1])) * 1.0",
    "em.reshape(x[:(x.shape[0] // 2) * 2], (x.shape[0] // 2, -1)) * 1.0",
    # The same through expand's sizes, tile's repetitions, repeat's count and pad's
    # widths: sizes 10 and 11 got size 8's shape, silently.
    "x[:1].expand(x.shape[0] // 2, x.shape[1]) * 1.0",
    "em.tile(x[:1], (x.shape[0] // 2, 1)) * 1.0",
    "em.repeat(x[:1], x.shape[0] // 2, axis=0) * 1.0",
    "em.nn.functional.pad(x, (0, 0, 0, x.shape[0] // 2)) * 1.0",
    # ... and through an int argument (linspace's num, topk's k) or a new tensor's shape
    "x.new_zeros(x.shape[0] // 2, x.shape[1]) + 1.0",
    "em.linspace(0.0, 1.0, x.shape[0] // 2) * 1.0",
    "em.topk(x[:, 0], x.shape[0] // 2)[0] * 1.0",
    # ... and through float() of it, read as a number (a correction, an end point)
    "em.std(x, axis=0, correction=x.shape[0] // 2 - 2) * 1.0",
    "em.linspace(0.0, float(x.shape[0] // 2), 5) * 1.0",
])
def test_a_shape_computed_from_a_size_is_evaluated_at_each_size(body):
    # Beside 20261219-3859: a shape argument that is a size's floor division was made a
    # plain int (broadcast_to's shape, reshape's -1 resolved), so sizes 6 and 7 gave one
    # graph and size 8 got size 6's shape: broadcast_to silently, reshape by raising.
    rows = [[float(2 * i), float(2 * i + 1)] for i in range(11)]
    calls = "".join(f"# --- call {k} ---\nx{k} = em.tensor({rows[:n]}, dtype=em.float32)\n"
                    f"out{k} = F(x{k})\n" for k, n in enumerate((3, 6, 7, 8, 10, 11), start=1))
    assert_agrees(f"""
import execmode as em

# --- setup ---

# --- function ---
def f(x):
    return {body}

F = em.jit(f, passes=[])
{calls}""")


def test_a_constant_with_a_symbolic_attribute_is_not_folded():
    # Beside the above: eye's k = t // 2 - 3 stayed symbolic, but constant folding (the
    # default passes) computed eye(4, k) * 1.0 at the traced k, so sizes 10 and 11 got
    # size 8's k, silently.
    rows = [[float(2 * i), float(2 * i + 1)] for i in range(11)]
    calls = "".join(f"# --- call {k} ---\nx{k} = em.tensor({rows[:n]}, dtype=em.float32)\n"
                    f"out{k} = F(x{k})\n" for k, n in enumerate((6, 7, 8, 9, 10, 11), start=1))
    assert_agrees(f"""
import execmode as em

# --- setup ---

# --- function ---
def f(x):
    return em.eye(4, k=x.shape[0] // 2 - 3) * 1.0

F = em.jit(f)
{calls}""")


def test_diagonal_of_an_offset_computed_from_a_size_follows_the_size():
    # linalg.diagonal made its positions as a Python list from the offset: an offset of
    # t // 3 - 2 is 0 at sizes 6, 7 and 8, the graphs agreed (every comparison on the way
    # held at 9 too) and size 9 got offset 0's diagonal, silently.
    rows = [[float(4 * i + j) for j in range(4)] for i in range(10)]
    calls = "".join(f"# --- call {k} ---\nx{k} = em.tensor({rows[:n]}, dtype=em.float32)\n"
                    f"out{k} = F(x{k})\n" for k, n in enumerate((6, 7, 8, 9, 10), start=1))
    assert_agrees(f"""
import execmode as em

# --- setup ---

# --- function ---
def f(x):
    return em.linalg.diagonal(x, offset=x.shape[0] // 3 - 2) * 1.0

F = em.jit(f)
{calls}""")


@pytest.mark.parametrize("body", [
    "em.sum(em.repeat(x[:1], x.shape[0] // 3, axis=0), axis=0)",
    # 20261225-2522, -84: broadcast_to the shape the tensor has returns it as it is: at
    # sizes 3 and 4 the count is 1, so no broadcast in either graph
    "em.sum(em.broadcast_to(x[:1], (x.shape[0] // 3,) + tuple(x.shape[1:])), axis=0)",
])
def test_a_shortcut_on_a_count_equal_to_one_is_a_decision(body):
    # 20261225-196 (the size_counts family): repeat's count x.shape[0] // 3 is 1 at sizes
    # 3 and 4, where repeat returned its input as it is (a shortcut on r != 1, which the
    # symbols did not record: an equality with a plain number is not recorded), so the
    # two graphs agreed and size 6 got a count of 1 where eager repeats twice.
    rows = [[float(4 * i + j) for j in range(4)] for i in range(6)]
    calls = "".join(f"# --- call {k} ---\nx{k} = em.tensor({rows[:n]}, dtype=em.float32)\n"
                    f"out{k} = F(x{k})\n" for k, n in enumerate((2, 3, 4, 6, 2), start=1))
    assert_agrees(f"""
import execmode as em

# --- setup ---

# --- function ---
def f(x):
    return {body}

F = em.jit(f, passes=[])
{calls}""")


def test_a_size_used_as_a_number_before_a_break_is_this_calls_number_in_backward():
    # 20261235-519: mean's count at a symbolic size is a SymbolicScalar operand of its
    # divide; a graph break (unique_values) left that segment's tape to eager's backward,
    # which called divide(f32[], SymbolicScalar) and raised where eager divides by an int.
    assert_agrees("""
import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---
w = em.tensor([[-1.75, -0.398, 2.5], [-0.25, -3.0, 0.25], [2.75, -1.835, -2.25], [-1.25, 1.255, -1.545]], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x, z):
    v0 = (z @ w).mean()
    v1 = em.sum(em.unique_values(em.reshape(x, (-1,))))
    return (v0, v1)

F = em.jit(f, passes=[])
# --- call 1 ---
x1 = em.tensor([[-0.25, -1.25, -0.413, 1.593], [0.058, -0.75, 3.0, -2.0]], dtype=em.float32)
out1 = F(x1, x1)

# --- call 2 ---
x2 = em.tensor([[0.75, 0.75, 1.75, 1.5], [1.636, -2.75, -1.75, 2.4], [2.0, -0.046, 2.75, -0.75], [-0.876, -0.75, 2.5, 1.0], [1.25, 0.0, 0.5, -0.25]], dtype=em.float32)
out2 = F(x2, x2 * 0.5)

# --- call 3 ---
x3 = em.tensor([[-2.0, -0.25, 0.5, -2.25], [1.75, -2.531, -0.25, -0.653], [-0.75, -1.75, 1.5, 2.25], [-0.5, -1.5, 1.75, -0.75], [-1.5, 0.25, -0.5, -2.75], [-3.0, 2.25, 1.5, 1.0], [1.076, 0.25, 2.25, 2.0], [0.5, -1.321, 2.5, 1.25]], dtype=em.float32)
out3 = F(x3, x3 - 1.0)

# --- call 4 ---
(out3[0] * out3[0]).sum().backward()
out4 = F(x3, x3)
""")
