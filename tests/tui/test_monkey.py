"""A monkey at the keyboard: random keys and random text (``[``, ``[/``, ``[bold]``,
unicode, control keys, long strings) in every view, dialog and field, on a live script and
on a recorded session. The UI must not crash (issue 34).

The CI tier runs 40 events per target (~0.3-0.5 s each with the Pilot: the suite's ten
minutes are tight); ``EXECMODE_MONKEY_EVENTS=10000 pytest
tests/tui/test_monkey.py`` is the long tier. A failure names the seed and the last keys.
"""

from __future__ import annotations

import os
import random

import pytest
from fixture_session import build_session
from tui_support import run_async, script_app, session_app

EVENTS = int(os.environ.get("EXECMODE_MONKEY_EVENTS", "40"))
SEED = int(os.environ.get("EXECMODE_MONKEY_SEED", "34"))
# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
# ~0.4-0.6 s an event with the Pilot on a loaded machine: the long tier needs its time.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(max(300, 2 * EVENTS))]

# Every key but the ones that end the app (q, ctrl+q, ctrl+c): the monkey must stay in.
COMMAND_KEYS = [*"1234567890", *"nscpbBrRtiwxdvomy]![", "question_mark", "slash", "colon",
                "enter", "escape", "tab", "shift+tab", "up", "down", "left", "right",
                "pageup", "pagedown", "home", "end", "ctrl+end", "ctrl+p", "ctrl+n",
                "ctrl+d", "backspace", "delete", "space", "e", "E", "f", "g", "h", "l"]
TEXT = ["[", "]", "[/", "[/x]", "[bold]", "[/bold]", "/", "\\", ":", "=", '"', "'", "é", "✓",
        "中", "😀", "0", "3", ",", "-", "%", "$", "{", "}", "ctrl+a", "ctrl+e", "ctrl+k",
        "ctrl+u", "ctrl+w", "x" * 300]
_NAMES = {"[": "left_square_bracket", "]": "right_square_bracket", "/": "slash",
          "\\": "backslash", ":": "colon", "=": "equals_sign", '"': "quotation_mark",
          "'": "apostrophe", ",": "comma", "-": "minus", "%": "percent_sign",
          "$": "dollar_sign", "{": "left_curly_bracket", "}": "right_curly_bracket",
          "!": "exclamation_mark"}


def _keys(token: str) -> list[str]:
    if token in COMMAND_KEYS or token.startswith("ctrl+") or len(token) == 1 and \
            token not in _NAMES:
        return [token]
    return [_NAMES.get(c, c) for c in token]


def events(rng: random.Random, count: int):
    """Mostly command keys, bursts of typed text now and then."""
    for _ in range(count):
        if rng.random() < 0.3:
            yield [k for _ in range(rng.randint(1, 4)) for k in _keys(rng.choice(TEXT))]
        else:
            yield [rng.choice(COMMAND_KEYS)]


async def _monkey(app, rng: random.Random, count: int) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        done = []
        try:
            for keys in events(rng, count):
                await pilot.press(*keys)
                done.append(keys)
                if not app.is_running:
                    break
        except Exception as exc:
            raise AssertionError(f"seed {SEED}: after {done[-30:]}") from exc
        assert app.is_running, f"seed {SEED}: the app ended after {done[-30:]}"
    # run_test re-raises an exception the app died of: reaching here is the test passing.


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build_session(tmp_path_factory.mktemp("demo"))


@run_async
async def test_random_keys_on_a_recorded_session_never_crash_the_ui(demo, tmp_path,
                                                                    monkeypatch):
    monkeypatch.chdir(tmp_path)  # exports and screenshots land here
    await _monkey(session_app(demo), random.Random(SEED), EVENTS)


@run_async
async def test_random_keys_on_a_live_script_never_crash_the_ui(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = script_app("monkey_target.py", tmp_path, breakpoints=["nan"])
    await _monkey(app, random.Random(SEED + 1), EVENTS)
