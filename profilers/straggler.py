"""Which rank the others waited for, collective by collective.

Every collective starts with a header exchange (execmode/distributed/exchange.py) that no
rank leaves before the last one has arrived, so the ranks leave it together and a rank's
wait in it (``waited_us``) says how long before the last arrival it came. In one
collective, then, the rank that waited least is the one the others waited for, and the
next smallest wait says by how much it kept them (its hold-up); its own wait is what the
exchange costs a rank that waits for nobody.

A rank is named the straggler when it arrived last at most of the collectives where it
kept the others waiting longer than that cost, and at least twice as often as any other
rank. Counting arrivals, not summing waits, is what keeps the name true of the run's
pattern: one long pause of a rank (a kernel compiled at the first step, a checkpoint
written, the machine busy with other work) would otherwise outweigh a rank that is late
at every step. Both measures are relative to the run's own waits, so a loaded machine,
which slows every rank's exchange alike, changes neither. The line also says when no one
rank kept the others waiting.
"""

from __future__ import annotations

import statistics


def held_up_collectives(waits: dict) -> list[tuple[int, int]]:
    """``(last rank, hold-up ns)`` of each collective that every rank recorded (matched by
    its number, ``CollectiveWaits.by_collective``) and in which one rank kept the others
    waiting longer than the exchange cost it: its hold-up over its own wait."""
    per_rank = {r: dict(w.by_collective) for r, w in waits.items()}
    shared = set.intersection(*(set(c) for c in per_rank.values())) if per_rank else set()
    held = []
    for key in sorted(shared):
        arrivals = sorted((per_rank[r][key], r) for r in per_rank)
        (own, last), (next_wait, _) = arrivals[0], arrivals[1]
        hold = next_wait - own
        if hold > own:
            held.append((last, hold))
    return held


def straggler_line(waits: dict) -> str | None:
    """Who the ranks waited for: ``waits`` is {rank: CollectiveWaits}; None without
    collectives on two ranks at least."""
    ranked = {r: w for r, w in waits.items() if w.calls}
    if len(ranked) < 2:
        return None
    held = held_up_collectives(ranked)
    counts = {r: sum(1 for last, _ in held if last == r) for r in ranked}
    order = sorted(ranked, key=lambda r: (-counts[r], r))
    top, rest = order[0], order[1:]
    if not held:
        return ("no rank kept the others waiting: in no collective did the last rank "
                "to arrive come later than the exchange itself takes")
    if 2 * counts[top] <= len(held) or any(2 * counts[r] > counts[top] for r in rest):
        tally = ", ".join(f"rank {r} at {counts[r]}" for r in order if counts[r])
        return (f"no one rank kept the others waiting: of {len(held)} collectives where "
                f"the others waited for the last rank, {tally}")
    holds = [hold for last, hold in held if last == top]
    others = [ranked[r].waited_ns for r in rest]
    spread = _ms(min(others)) if min(others) == max(others) else \
        f"{_ms(min(others))} to {_ms(max(others))}"
    also = ", ".join(f"rank {r} at {counts[r]}" for r in rest if counts[r])
    return (f"the ranks waited for rank {top}: it arrived last at {counts[top]} of "
            f"{len(held)} collectives{f' ({also})' if also else ''}, "
            f"{_ms(statistics.median(holds))} after the others at the median; the others "
            f"waited {spread} in their collectives, rank {top} "
            f"{_ms(ranked[top].waited_ns)}")


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.1f} ms"
