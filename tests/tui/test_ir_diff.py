"""tui/ir_diff.py, without an app: how the Passes view lines up the graph before and after a
pass and marks each line. The IR texts are written as the engine prints them (copied from
a real pass record of ``relu(x*2+1) * (x*2)``); the expected marks are worked out by hand."""

from __future__ import annotations

from execmode.tui.ir_diff import IrLine, diff_lines, node_locations, parse_ir
from execmode.tui.records import SourceRef

TRACED = """\
{ lambda %0:f32[4] .
  let %1:f32[4] = multiply %0 2.0
      %2:f32[4] = add %1 1.0
      %3:f32[4] = relu %2
      %4:f32[4] = multiply %0 2.0
      %5:f32[4] = multiply %3 %4
  in ( %5 ) }
  # inputs: %0=x"""

AFTER_CSE = """\
{ lambda %0:f32[4] .
  let %1:f32[4] = multiply %0 2.0
      %2:f32[4] = add %1 1.0
      %3:f32[4] = relu %2
      %5:f32[4] = multiply %3 %1
  in ( %5 ) }
  # inputs: %0=x"""
CSE = {"kept": [0, 1, 2, 3, 5], "changed": [5], "removed": [], "added": [],
       "merged": {"4": 1}, "fused": {}}

AFTER_FUSE = """\
{ lambda %0:f32[4] .
  let %6:f32[4] = fused[k0: multiply add relu multiply] %0
        | %1:f32[4] = multiply %0 2.0
        | %2:f32[4] = add %1 1.0
        | %3:f32[4] = relu %2
        | %5:f32[4] = multiply %3 %1
  in ( %6 ) }
  # inputs: %0=x"""
FUSE = {"kept": [0], "changed": [], "removed": [], "added": [6], "merged": {},
        "fused": {"1": 6, "2": 6, "3": 6, "5": 6}}

HEADER = "{ lambda %0:f32[4] ."


def _marks(lines):
    """(node, status, note) per line: what the view colours, without the text."""
    return [(line.node, line.status, line.note) for line in lines]


def test_parse_ir_knows_the_node_of_each_line_and_which_lines_are_fused_members():
    lines = parse_ir(AFTER_FUSE)
    assert [(line.node, line.body) for line in lines] == [
        (None, False), (6, False), (1, True), (2, True), (3, True), (5, True),
        (None, False), (None, False)]
    assert lines[0] == IrLine(HEADER, None)


def test_a_merged_node_stays_in_view_and_says_where_it_went():
    lines = diff_lines(TRACED, AFTER_CSE, CSE)
    assert _marks(lines) == [
        (None, "plain", ""),
        (1, "plain", ""), (2, "plain", ""), (3, "plain", ""),
        (4, "merged", "merged into %1"),
        (5, "changed", ""),
        (None, "plain", ""), (None, "plain", "")]
    # A changed node shows its new form; a merged one its old form.
    assert lines[5].text == "      %5:f32[4] = multiply %3 %1"
    assert lines[4].text == "      %4:f32[4] = multiply %0 2.0"
    assert lines[0].text == HEADER and lines[-1].text == "  # inputs: %0=x"


def test_fusion_shows_the_new_kernel_added_and_its_members_fused_under_it():
    lines = diff_lines(AFTER_CSE, AFTER_FUSE, FUSE)
    assert _marks(lines) == [
        (None, "plain", ""),
        (6, "added", ""),
        (1, "fused", ""), (2, "fused", ""), (3, "fused", ""), (5, "fused", ""),
        (None, "plain", ""), (None, "plain", "")]
    assert lines[2].text == "        | %1:f32[4] = multiply %0 2.0"


def test_part_way_through_a_pass_only_applied_rewrites_take_their_new_form():
    # Only the rewrite of %5 applied so far: %4 is not merged yet and keeps its line.
    lines = diff_lines(TRACED, AFTER_CSE, CSE, applied={5})
    assert _marks(lines)[1:-2] == [
        (1, "plain", ""), (2, "plain", ""), (3, "plain", ""), (4, "plain", ""),
        (5, "changed", "")]
    assert lines[4].text == "      %4:f32[4] = multiply %0 2.0"
    # The frame (header and footer) is the graph's before the pass.
    assert lines[0].text == HEADER and lines[-2].text == "  in ( %5 ) }"


def test_a_kernel_counts_as_applied_once_one_of_its_members_is():
    lines = diff_lines(AFTER_CSE, AFTER_FUSE, FUSE, applied={1})
    assert _marks(lines)[1:-2] == [
        (6, "added", ""), (1, "fused", ""),
        # Not fused yet: shown as they were before the pass.
        (2, "plain", ""), (3, "plain", ""), (5, "plain", "")]
    assert lines[3].text == "      %2:f32[4] = add %1 1.0"


def test_nothing_applied_shows_the_graph_before_the_pass_unmarked():
    lines = diff_lines(TRACED, AFTER_CSE, CSE, applied=set())
    assert [line.text for line in lines] == TRACED.splitlines()
    assert {line.status for line in lines} == {"plain"}


def test_a_removed_node_is_marked_removed_and_highlight_flags_the_rewrite_looked_at():
    before = "let %1:f32[2] = exp %0\n    %2:f32[2] = neg %0\nin ( %2 )"
    after = "let %2:f32[2] = neg %0\nin ( %2 )"
    lines = diff_lines(before, after, {"removed": [1]}, highlight={1})
    assert [(line.node, line.status, line.note, line.highlight) for line in lines] == [
        (1, "removed", "removed", True), (2, "plain", "", False), (None, "plain", "", False)]


def test_a_node_that_moved_shows_once_where_it_now_is():
    before = "let %1:f32[2] = exp %0\n    %2:f32[2] = neg %0\n    %3:f32[2] = add %1 %2"
    after = "let %2:f32[2] = neg %0\n    %1:f32[2] = exp %0\n    %3:f32[2] = add %1 %2"
    lines = diff_lines(before, after, {})
    assert [(line.node, line.status) for line in lines] == [
        (2, "plain"), (1, "plain"), (3, "plain")]


def test_node_locations_include_fused_members_and_skip_nodes_without_a_file():
    ir_json = {"nodes": [
        {"id": 0, "op": "input"},
        {"id": 6, "loc": {"filename": "/w/t.py", "lineno": 4, "function": "f"}, "body": [
            {"id": 1, "loc": {"filename": "/w/t.py", "lineno": 2}},
            {"id": 2, "loc": {"filename": ""}},      # no file: not a location
        ]},
        "not a node",
    ]}
    assert node_locations(ir_json) == {6: SourceRef("/w/t.py", 4, "f"),
                                       1: SourceRef("/w/t.py", 2, "")}
    assert node_locations({}) == {}
