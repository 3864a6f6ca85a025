"""For a single execution eager can be faster: graph mode pays tracing and compiling once.

    python examples/single_call.py
"""

from _common import single_calls
from execmode.profilers.measure import Spread, context_line, decide

import execmode as em

print(context_line())  # what the times below were measured on
em.random.seed(0)
net = em.nn.MLP([256, 256, 10])
x = em.randn(32, 256)
warm = em.jit(net)
net(x), warm(x)  # the first eager call and the kernels' first build, outside the timing

compile_ns = []


def new_jit():
    """A new jitted function: its first call traces, runs the passes, builds its kernels
    (from the disk cache after the first build: a cold cache adds the C compiler's time)
    and runs."""
    fast = em.jit(net)

    def first_call():
        fast(x)
        compile_ns.append(fast.concrete_functions[0].segments[0].compiled.compile_ns)
    return first_call


# One call per round: a first call can happen only once per jitted function, so each
# round makes a new one, and the eager call and the replay are timed the same way.
times = single_calls({"eager, one call": lambda: lambda: net(x),
                      "jit, first call": new_jit,
                      "jit, a later call": lambda: lambda: warm(x)})
passes_and_build = Spread.of(compile_ns)
print("one call each, per round (median and IQR of the rounds):")
for name, spread in times.items():
    print(f"  {name + ':':<20} {spread.text(1e6, 'ms')}")
print(f"  (of the first call, passes + kernel build: {passes_and_build.text(1e6, 'ms')})")

eager, first, later = (times[k] for k in ("eager, one call", "jit, first call",
                                           "jit, a later call"))
saving = decide(eager, later, a_name="one eager call", b_name="a later jitted call")
if saving.decided and saving.ratio > 1:
    calls = (first.median - later.median) / (eager.median - later.median)
    print(f"jit pays off after about {calls:.0f} calls (by the medians)")
else:
    print(f"one eager call / a later jitted call: {saving}")
# A ratio only when the rounds carry one; otherwise the reason (a busy machine, overlap).
cost = decide(first, eager, a_name="jit's first call", b_name="one eager call")
if not cost.decided:
    print(f"VERDICT: undecided - {cost.reason}")
else:
    verdict = "confirmed" if cost.ratio > 1 else "refuted"
    print(f"VERDICT: {verdict} - the first jitted call takes {cost.ratio:.0f}x the time of "
          "one eager call by the medians: for a single execution, tracing and compiling "
          "cost more than graph mode saves.")
