"""The pdb-like rule of ``next`` (debug/stops.py NextRule), on real frames, without an agent
or a socket: where ``next`` given in one frame stops again.

Each test begins ``next`` in a frame and asks ``hit`` from where an op would run: the same
frame (on a later line, later on the same line, in a new pass over the line), a call made
from it, its caller once it returned, and a function that caller calls next.
"""

from __future__ import annotations

import sys

from execmode.debug.stops import NextRule


def _frame():
    return sys._getframe(1)


def _hit_from_here(rule):
    """``hit`` from a frame called by the caller (an op inside a function it calls)."""
    return rule.hit(sys._getframe())


def test_no_next_given_stops_anywhere():
    assert NextRule().hit(_frame())


def test_a_new_line_of_the_frame_stops():
    rule, frame = NextRule(), _frame()
    rule.begin(frame)
    assert rule.hit(frame)  # a line after the one next was given on


def test_later_on_the_same_line_does_not_stop():
    rule, frame = NextRule(), _frame()
    rule.begin(frame); later = rule.hit(frame)  # noqa: E702 - one line is the point
    assert not later


def test_a_new_pass_over_the_line_stops():
    # The loop jumps back before the instruction next was given at: a new pass.
    rule, frame = NextRule(), _frame()
    outcomes = []
    for i in range(2): outcomes.append(rule.hit(frame) if i else rule.begin(frame))  # noqa: E701
    assert outcomes == [None, True]


def _at(rule, frame, begin):
    return rule.begin(frame) if begin else rule.hit(frame)


def test_the_same_instruction_stops_when_a_variable_was_rebound():
    # The same call site again (the same f_lasti): a new pass only if the frame's variables
    # changed in between, as a loop variable does.
    rule, frame = NextRule(), _frame()
    outcomes = []
    for begin in (True, False):
        outcomes.append(_at(rule, frame, begin))
    assert outcomes == [None, True]


def test_the_same_instruction_with_the_same_variables_does_not_stop():
    # Several ops of one call (a composite) run at one instruction of the frame.
    rule, frame = NextRule(), _frame()
    outcomes, calls = [], [True, False]
    while calls:
        outcomes.append(_at(rule, frame, calls.pop(0)))
    assert outcomes == [None, False]


def test_a_call_made_from_the_frame_does_not_stop():
    rule, frame = NextRule(), _frame()
    rule.begin(frame)
    assert not _hit_from_here(rule)


def test_the_caller_stops_once_the_frame_returned():
    rule = NextRule()

    def called():
        rule.begin(sys._getframe())

    called()
    assert rule.hit(_frame())  # back in the caller (this test)


def test_a_function_the_caller_calls_next_does_not_stop():
    rule = NextRule()

    def called():
        rule.begin(sys._getframe())

    called()
    assert not _hit_from_here(rule)  # not above the returned frame: stepped over


def test_end_forgets_the_frame():
    rule, frame = NextRule(), _frame()
    rule.begin(frame)
    rule.end()
    assert rule.frame is None and rule.callers == {} and rule.locals == {}
    assert _hit_from_here(rule)
