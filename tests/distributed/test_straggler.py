"""The straggler rule of a merged run (profilers/straggler.py) on the waits each rank's
session holds: the rank the others waited for is found collective by collective, so one
long pause of another rank, or a machine slower at everything, does not move the name."""

from __future__ import annotations

import pytest
from execmode.profilers.ranks import CollectiveWaits, straggler_line
from execmode.profilers.straggler import held_up_collectives

MS = 1_000_000


def _waits(per_rank: dict) -> dict:
    """{rank: [wait ns of collective 1, 2, ...]} -> {rank: CollectiveWaits}."""
    return {r: CollectiveWaits(len(ws), sum(ws), sum(ws) + len(ws) * MS,
                               tuple(enumerate(ws, 1)))
            for r, ws in per_rank.items()}


def test_the_rank_last_at_most_collectives_is_named_though_another_paused_longer_once():
    # rank 0 compiled for 400 ms before the first collective; rank 1 was 50 ms late at
    # the other two: rank 1 is the straggler although rank 1 waited longer in all
    waits = _waits({0: [0.1 * MS, 50 * MS, 50 * MS], 1: [400 * MS, 0.1 * MS, 0.1 * MS]})
    assert waits[1].waited_ns > waits[0].waited_ns
    line = straggler_line(waits)
    assert line.startswith("the ranks waited for rank 1: it arrived last at 2 of 3 "
                           "collectives (rank 0 at 1), 49.9 ms after the others")


def test_the_name_does_not_change_when_every_wait_grows_with_the_load():
    quiet = {0: [50 * MS, 51 * MS, 49 * MS, 0.2 * MS], 1: [0.1 * MS, 0.1 * MS, 0.2 * MS, 30 * MS]}
    loaded = {r: [w * 7 + 3 * MS for w in ws] for r, ws in quiet.items()}
    for per_rank in (quiet, loaded):
        line = straggler_line(_waits(per_rank))
        assert line.startswith("the ranks waited for rank 1: it arrived last at 3 of 4 "
                               "collectives (rank 0 at 1)"), line


def test_ranks_late_in_turn_are_no_straggler():
    waits = _waits({0: [20 * MS, 0.1 * MS] * 5, 1: [0.1 * MS, 20 * MS] * 5})
    assert straggler_line(waits) == ("no one rank kept the others waiting: of 10 collectives "
                                     "where the others waited for the last rank, rank 0 at "
                                     "5, rank 1 at 5")
    # a majority, but not twice any other rank's count: still no one rank
    waits = _waits({0: [20 * MS] * 3 + [0.1 * MS] * 2, 1: [0.1 * MS] * 3 + [20 * MS] * 2})
    assert straggler_line(waits).startswith("no one rank kept the others waiting: of 5 ")


def test_waits_no_longer_than_the_exchange_itself_name_nobody():
    # every rank arrived about together: the last one's hold-up is within what the
    # exchange costs it
    waits = _waits({0: [0.3 * MS, 0.2 * MS], 1: [0.2 * MS, 0.3 * MS], 2: [0.25 * MS] * 2})
    assert held_up_collectives(waits) == []
    assert straggler_line(waits).startswith("no rank kept the others waiting")


def test_with_more_ranks_the_hold_up_is_the_next_arrival_s_wait():
    # rank 2 last each time; rank 0 came 80 ms before it, rank 1 30 ms before it
    waits = _waits({0: [80 * MS] * 3, 1: [30 * MS] * 3, 2: [1 * MS] * 3})
    assert held_up_collectives(waits) == [(2, 29 * MS)] * 3
    assert straggler_line(waits) == ("the ranks waited for rank 2: it arrived last at 3 of 3 "
                                     "collectives, 29.0 ms after the others at the median; "
                                     "the others waited 90.0 ms to 240.0 ms in their "
                                     "collectives, rank 2 3.0 ms")


def test_collectives_are_matched_by_their_number_and_one_rank_alone_has_no_line():
    # rank 1's session lacks collective 1 (recorded from the second on): only the
    # collectives both ranks hold are compared
    waits = {0: CollectiveWaits(3, 0, 0, ((1, 90 * MS), (2, 0.1 * MS), (3, 0.1 * MS))),
             1: CollectiveWaits(2, 0, 0, ((2, 40 * MS), (3, 40 * MS)))}
    assert held_up_collectives(waits) == [(0, pytest.approx(39.9 * MS))] * 2
    assert straggler_line(waits).startswith("the ranks waited for rank 0: it arrived last "
                                            "at 2 of 2 collectives")
    assert straggler_line({0: waits[0], 1: CollectiveWaits(0, 0, 0)}) is None
