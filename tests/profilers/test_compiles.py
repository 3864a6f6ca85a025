"""Compile events as readers show them (profilers/compiles.py): one compile per translation
unit, its time once, from this schema's events and from older per-kernel ones."""

from __future__ import annotations

from execmode.profilers.compiles import compiles


def _kernel(name):
    return {"kernel": name, "source": f"/* {name} */", "member_nodes": [1],
            "member_ops": ["exp"]}


def test_a_unit_with_its_kernels_as_children_is_one_compile():
    events = [(10, 60, {"graph_id": "f#0:0", "what": "kernels", "language": "c",
                        "backend": "c", "compile_ns": 50, "cache_hit": False,
                        "kernels": [_kernel("k0"), _kernel("k1")]}),
              (70, 90, {"graph_id": "f#0:0", "what": "program", "language": "c",
                        "backend": "c", "compile_ns": 20, "cache_hit": True,
                        "kernels": [_kernel("program_1")]})]
    got = compiles(events)
    assert [(c.what, c.compile_ns, [k.kernel for k in c.kernels]) for c in got] == \
        [("kernels", 50, ["k0", "k1"]), ("program", 20, ["program_1"])]


def test_older_per_kernel_events_of_one_build_are_one_compile():
    # Schema 2: a build of two kernels emitted two events, stamped microseconds apart,
    # each with the whole build's 54 ms; then another graph's build.
    old = [(0, 54_000_000, {"graph_id": "f#0:0", "kernel": "k0", "compile_ns": 54_000_000,
                            "cache_hit": False, "language": "c", "source": "a"}),
           (45_000, 54_045_000, {"graph_id": "f#0:0", "kernel": "k1", "compile_ns": 54_000_000,
                                 "cache_hit": False, "language": "c", "source": "b"}),
           (60_000_000, 61_000_000, {"graph_id": "g#0:0", "kernel": "k0",
                                     "compile_ns": 1_000_000, "cache_hit": True})]
    got = compiles(old)
    assert [(c.graph_id, c.compile_ns, len(c.kernels)) for c in got] == \
        [("f#0:0", 54_000_000, 2), ("g#0:0", 1_000_000, 1)]
    assert sum(c.compile_ns for c in got) == 55_000_000  # not 109 ms
