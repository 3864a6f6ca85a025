"""Breakpoint conditions typed by a person (or pasted from anywhere): every malformed one is
refused when parsed, with the column of the mistake; none is ever evaluated as Python; a
condition that still fails while evaluating disables its breakpoint, never the script."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from fault_helpers import SCRIPTS, run_execmode

from execmode.debug.breakpoints import parse_breakpoint
from execmode.debug.conditions import MAX_DEPTH, MAX_LENGTH, Condition, ConditionError
from execmode.debug.summary import TensorStats
from execmode.source import SourceLocation

# (condition, what the message must say). Injection, Python that is not the grammar, type
# errors, syntax errors, limits.
REFUSED = [
    ('__import__("os").system("id")', "Call is not allowed"),
    ('open("/etc/passwd")', "Call is not allowed"),
    ('exec("x = 1")', "Call is not allowed"),
    ('eval("1") > 0', "Call is not allowed"),
    ("print(max)", "Call is not allowed"),
    ("breakpoint()", "Call is not allowed"),
    ('getattr(max, "real") > 1', "Call is not allowed"),
    ("globals()", "Call is not allowed"),
    ("len(op) > 1", "Call is not allowed"),
    ("max() > 1", "Call is not allowed"),
    ("lambda: 1", "Lambda is not allowed"),
    # Attributes and subscripts belong to Python values of the script's frame only, and
    # never reach a dunder (conditions read the script's state; they do not explore it).
    ("max.__class__", "'max' has no attributes"),
    ("().__class__.__bases__[0]", "Tuple is not allowed"),
    ("max.real > 0", "'max' has no attributes"),
    ("opt.__class__ == 1", "names starting with __ are not allowed"),
    ("opt.lr.__dict__ == 1", "names starting with __ are not allowed"),
    ("losses[i] > 1", "an index of a Python value must be a number or a string"),
    ("losses[0:2] > 1", "an index of a Python value must be a number or a string"),
    ("step", "'step' is a Python value of the script, not a condition"),
    ("nann", "did you mean nan?"),
    ('step < "a"', "< orders numbers, not strings"),
    ("step > nan", "> orders numbers, not true/false values"),
    ("model.training == False", "expected a number or a string"),
    ("op.__len__() > 1", "Call is not allowed"),
    ("sys.exit()", "Call is not allowed"),
    ('os.system("id")', "Call is not allowed"),
    ("[x for x in ()]", "ListComp is not allowed"),
    ("{1: 2}", "Dict is not allowed"),
    ("{max}", "Set is not allowed"),
    ("(1, 2)", "Tuple is not allowed"),
    ("[max]", "List is not allowed"),
    ("max if nan else min", "IfExp is not allowed"),
    ("max > 1 if True else 0", "IfExp is not allowed"),
    ('f"{max}" == "1"', "JoinedStr is not allowed"),
    ('op == b"add"', "expected a number or a string"),
    ("max @ min", "BinOp is not allowed"),
    ("max ** 1000 > 1", "BinOp is not allowed"),
    ("max + 1 > 2", "BinOp is not allowed"),
    ("max * 2 > 1", "BinOp is not allowed"),
    ('"%s" % op == "add"', "BinOp is not allowed"),
    ('op == "add" + "x"', "BinOp is not allowed"),
    ("~nan", "UnaryOp is not allowed"),
    ("+max > 1", "UnaryOp is not allowed"),
    ("(max := 3) > 1", "NamedExpr is not allowed"),
    ("max > ...", "expected a number or a string"),
    ("...", "expected a number or a string"),
    ("max > 1j", "expected a number or a string"),
    ("True", "expected a number or a string"),
    ("None", "expected a number or a string"),
    ("nan == None", "expected a number or a string"),
    ("nan is True", "operator Is is not allowed"),
    ('op in "add"', "operator In is not allowed"),
    ('op not in "add"', "operator NotIn is not allowed"),
    ('op is not "add"', "operator IsNot is not allowed"),
    ("max[0] > 1", "only shape[i] and Python values can be indexed"),
    ('op[0] == "a"', "only shape[i] and Python values can be indexed"),
    ('shape["a"] > 1', "needs an integer index"),
    ("shape[1.5] > 1", "needs an integer index"),
    ("shape[0:2] > 1", "needs an integer index"),
    ("shape[max] > 1", "needs an integer index"),
    ("shape[True] > 1", "needs an integer index"),
    # Other names are Python values of the script's frame (see test_python_conditions.py)
    ("__builtins__ == 1", "names starting with __ are not allowed"),
    ("__import__", "names starting with __ are not allowed"),
    # type errors: the point of parse-time checking
    ('-op == "add"', "'-' negates a number, but 'op' is a string"),
    ('--op == "add"', "'-' negates a number, but 'op' is a string"),
    ('max > -"1"', "'-' negates a number, but '\"1\"' is a string"),
    ("-nan", "'-' negates a number, but 'nan' is true/false"),
    ("max and 3", "'and' joins conditions, but 'max' is a number"),
    ("nan and 'x'", "'and' joins conditions, but \"'x'\" is a string"),
    ("inf or 1", "'or' joins conditions, but '1' is a number"),
    ("not max", "'not' negates a condition, but 'max' is a number"),
    ('not "x"', "'not' negates a condition"),
    ("op == 3", "== compares 'op' (a string) with '3' (a number)"),
    ('max > "1"', "> compares 'max' (a number) with '\"1\"' (a string)"),
    ("max == nan", "== compares 'max' (a number) with 'nan' (true/false)"),
    ('line > "12"', "> compares 'line' (a number)"),
    ("file == 12", "== compares 'file' (a string)"),
    ('shape[0] == "a"', "== compares 'shape[0]' (a number)"),
    ("shape[0] > nan", "> compares 'shape[0]' (a number) with 'nan' (true/false)"),
    ('0 < max < "3"', "< compares 'max' (a number) with '\"3\"' (a string)"),
    ('dtype < "f"', "< orders numbers, not strings"),
    ('device >= "cpu"', ">= orders numbers, not strings"),
    ("nan < inf", "< orders numbers, not true/false values"),
    ("op > op", "> orders numbers, not strings"),
    ('op == "ad"', "unknown op 'ad'"),
    ('"addd" == op', "unknown op 'addd'"),
    ('op == "add" "sub"', "unknown op 'addsub'"),
    ("shape > 3", "shape is compared by dimension"),
    ("shape == shape", "shape is compared by dimension"),
    ("max", "a condition must be true or false, this is a number"),
    ('"add"', "a condition must be true or false, this is a string"),
    ("shape[0]", "a condition must be true or false, this is a number"),
    ("-max", "a condition must be true or false"),
    ('1 == 1 and op', "'and' joins conditions, but 'op' is a string"),
    # syntax
    ("max >", "unexpected end"),
    ("> 1", "syntax error"),
    ("max > > 1", "syntax error"),
    ("(max > 1", "at column"),
    ("max > 1)", "syntax error"),
    ('"unterminated', "at column"),
    ("max > 1 and", "at column"),
    ("and max", "syntax error"),
    ("max > 1 or or nan", "syntax error"),
    ("import os", "syntax error"),
    ("max > 1; import os", "syntax error"),
    ("max > 1\nimport os", "syntax error"),
    ("del max", "syntax error"),
    ("yield 1", "syntax error" if sys.version_info < (3, 13) else "at column"),
    ("*max", "at column"),
    ("max,", "Tuple is not allowed"),
    ("max > 1 > ", "unexpected end"),
    ("nan\x00", "at column"),
    # limits
    ("(" * 300 + "nan" + ")" * 300, f"at most {MAX_LENGTH} are allowed"),
    ("not " * 100 + "nan", f"at most {MAX_DEPTH} levels"),
    ("-" * 400 + "max > 1", f"at most {MAX_DEPTH} levels"),
    ("(" * 240 + "nan" + ")" * 240, "too many nested parentheses"),  # the parser's limit
    ("max > 1 and " * 60 + "nan", f"at most {MAX_LENGTH} are allowed"),
    ("x" * 100_000, f"at most {MAX_LENGTH} are allowed"),
    ("", "empty condition"),
    ("   ", "empty condition"),
]

ACCEPTED = [
    "nan", "inf", "finite", "not finite", "nan or inf", "max > 1e3", "max > 1e999",
    "abs_max > 100 and op == \"exp\"", "shape[0] > 1024", "shape[-1] == 3",
    'dtype == "float64"', "mean < 0 and not finite", "-max < -3", "0 < max < 10",
    "nan == inf", 'op != "log" or inf', "-(-(-(-max))) > 1", 'line == 12 and file == "t.py"',
    "max > 0x10", "size >= 0 # a comment", "(" * 90 + "nan" + ")" * 90, "1 < 2",
    'scope == ""', "nan_count > 0 or inf_count > 0", "std > 1 and mean < 1 and ndim == 2",
    "max > 1 and " * 12 + "nan",
]


def test_the_corpus_is_large_enough():
    assert len(REFUSED) >= 80


@pytest.mark.parametrize("text, problem", REFUSED, ids=lambda v: repr(v)[:40])
def test_a_hostile_condition_is_refused_when_parsed(text, problem, monkeypatch):
    # Refusing is cheap whatever the text: the checker looks at each node of the parsed
    # text once, so its work is bounded by the text's length. Counted, not timed, so that
    # a loaded machine cannot fail it (nor hide a blow-up behind a fast one).
    checked = []
    check = Condition._check
    monkeypatch.setattr(Condition, "_check",
                        lambda self, node: (checked.append(id(node)), check(self, node))[1])
    with pytest.raises(ConditionError) as caught:
        Condition(text)
    assert len(checked) == len(set(checked)) <= len(text)
    message = str(caught.value)
    assert problem in message, message
    if "at column" in message:  # the caret line points under the column it names
        column = int(message.split("at column ")[1].split()[0])
        caret = message.splitlines()[-1]
        assert caret.index("^") - 2 == column - 1


@pytest.mark.parametrize("text", ACCEPTED)
def test_a_good_condition_parses(text):
    Condition(text)
    parse_breakpoint(f"op:add if {text}")


ARRAYS = [np.zeros((0, 3), np.float32), np.array([True, False]), np.arange(6).reshape(2, 3),
          np.array([np.nan, np.inf, -1.0], np.float32), np.array(5.0),
          np.full((2, 2), np.inf, np.float64), np.arange(4, dtype=np.uint8)]


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype}{list(a.shape)}")
def test_a_good_condition_evaluates_on_any_tensor(array):
    """Missing values (min of an empty tensor, shape[-1] of a scalar) make comparisons false;
    nothing raises."""
    stats = TensorStats(array, "add", "mlp/fc1", SourceLocation("/x/t.py", 12, "f"))
    results = {text: Condition(text).evaluate(stats) for text in ACCEPTED}
    assert results["1 < 2"] is True
    assert results['line == 12 and file == "t.py"'] is True
    if array.size == 0:
        assert results["max > 1e3"] is False and results["-max < -3"] is False
    if array.ndim == 0:
        assert results["shape[-1] == 3"] is False
    assert results["nan or inf"] is (array.dtype.kind == "f" and not bool(
        np.isfinite(array).all()) if array.size else False)


# Slow tier: execmode run in a subprocess.
@pytest.mark.slow
def test_the_run_command_refuses_a_bad_condition_before_any_op():
    script = os.path.join(SCRIPTS, "waits_for_continue.py")
    result = run_execmode("run", "--break", '-op == "add"', script, timeout=60)
    assert result.returncode == 2
    assert "'-' negates a number, but 'op' is a string at column 2" in result.stderr
    assert "done" not in result.stdout  # refused before the script ran
    assert "Traceback" not in result.stderr


# Slow tier: execmode run in a subprocess.
@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="limits the address space with RLIMIT_AS and reads /proc")
def test_a_condition_that_fails_while_evaluating_disables_its_breakpoint():
    """A real failure: the tensor's statistics do not fit in memory (stats_out_of_memory.py).
    The breakpoint is disabled with a message; the script runs to its end."""
    script = os.path.join(SCRIPTS, "stats_out_of_memory.py")
    result = run_execmode("run", "--break", "max > 1e30", script, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "survived (4,)" in result.stdout
    assert "breakpoint 1 (max > 1e30) disabled: its condition failed on op add" in \
        result.stderr
    assert "MemoryError" in result.stderr and "the script goes on" in result.stderr
    assert "Traceback" not in result.stderr


def test_nothing_is_evaluated_as_python(tmp_path):
    """A condition naming a file to create cannot create it: the grammar has no calls."""
    marker = tmp_path / "pwned"
    with pytest.raises(ConditionError):
        Condition(f'open("{marker}", "w")')
    with pytest.raises(ConditionError):
        Condition(f'__import__("pathlib").Path("{marker}").touch()')
    assert not marker.exists()
