"""The fuzzer reaches em.jit's one graph for every size (feature ``symbolic_sizes``).

A program with symbolic sizes calls f at 4-6 distinct batch sizes >= 2; once two traces
at two sizes agree, one size-generic plan serves the further calls
(jit_driver/symbolic_dims.py), and every such call is compared with eager like any other.
These tests keep the feature from silently stop reaching that plan (a generator change
that makes every program trace per size would leave the plan unfuzzed).
"""

from __future__ import annotations

import warnings

from fuzz.check import check
from fuzz.features import features
from fuzz.generator import generate
from fuzz.runner import run_mode

SEED = 20261180


def _symbolic_programs(n: int, feats=None):
    for i in range(n):
        program = generate(f"{SEED}-{i}", feats)
        if "symbolic_sizes" in program.tags():
            yield program


def test_programs_with_symbolic_sizes_call_at_four_distinct_sizes_of_two_or_more():
    programs = list(_symbolic_programs(60))
    assert len(programs) >= 15
    for program in programs:
        assert len(program.calls) >= 4
        firsts = [s.text for c in program.calls for s in c.before if s.text.startswith("x")]
        # x is (B, 4): its literal's rows are the batch size of the call
        sizes = {text.count("], [") + 1 for text in firsts if "em.zeros" not in text}
        assert len(sizes) >= 3 and min(sizes) >= 2, (sizes, program.render())


def test_off_the_feature_leaves_the_calls_as_they_were():
    off = features(symbolic_sizes=False)
    for i in range(30):
        program = generate(f"{SEED}-{i}", off)
        assert "symbolic_sizes" not in program.tags()
        plain = generate(f"{SEED}-{i}")
        if "symbolic_sizes" not in plain.tags():
            assert plain.render() == program.render()


def test_a_good_share_of_the_programs_reach_the_one_graph_for_every_size():
    reached, served, total = [], 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for program in _symbolic_programs(160):
            total += 1
            run = run_mode(program, "jit")
            if run.generic_calls:
                reached.append(program)
                served += run.generic_calls
    # About four in ten of them do (the others trace per size for a reason
    # symbolic_dims._unservable gives: a backward, a view result, a graph break).
    assert total >= 50
    assert len(reached) >= total // 5, (len(reached), total)
    assert served > len(reached)  # some reach it at more than one call
    # ... and those calls agree with eager (the fast and slow tiers compare all of them).
    for program in reached[:8]:
        assert check(program) == [], program.render()


def test_counts_from_the_batch_size_are_generated_and_returned():
    # (tests/fuzz/size_counts.py) About a quarter of the programs count from the batch
    # size once, after the body, and return what they counted; turning the feature off
    # leaves every program as it was without it.
    off = features(size_counts=False)
    counted = 0
    for i in range(80):
        program = generate(f"{SEED}-{i}")
        if "size_counts" not in program.tags():
            assert program.render() == generate(f"{SEED}-{i}", off).render()
            continue
        counted += 1
        last = program.body[-1]
        assert "size_counts" in last.tags and ".shape[0] //" in last.text
        assert program.returns[-1].text == last.text.split(" = ")[0]
    assert counted >= 10, counted
