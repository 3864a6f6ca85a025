"""The app's stylesheet parses each CSS source once per theme (tui/stylesheet.py): not
again when a view opens for the first time, and all again when the theme changes."""

from __future__ import annotations

from collections import Counter

import pytest
import textual.css.stylesheet as textual_stylesheet
from execmode.tui.views import VIEWS
from fixture_session import build_session
from tui_support import SIZE, Waiter, run_async, session_app


def count_parses(monkeypatch) -> Counter:
    """How often Textual's CSS parser ran on each source: its file or class, and the tie
    breaker and scope it was added with (a widget's DEFAULT_CSS comes again, with another
    tie breaker, from a subclass further down: that is a new source)."""
    parses: Counter = Counter()
    parse = textual_stylesheet.parse

    def counted(scope, css, read_from, *args, **kwargs):
        parses[read_from, kwargs.get("tie_breaker"), scope] += 1
        return parse(scope, css, read_from, *args, **kwargs)

    monkeypatch.setattr(textual_stylesheet, "parse", counted)
    return parses


@pytest.mark.slow  # the app runs under the Pilot once per theme
@run_async
async def test_each_css_source_is_parsed_once_per_theme(tmp_path, monkeypatch):
    parses = count_parses(monkeypatch)
    app = session_app(build_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await Waiter(pilot).until(lambda: app.snapshot.ops.count > 0, what="the session")
        for view in VIEWS:                                   # each view's first opening
            await pilot.press(view.key)
            await pilot.pause()
        assert parses and set(parses.values()) == {1}, [s for s, n in parses.items() if n > 1]
        first = dict(parses)

        bar = app.screen.query_one("StatusBar")
        dark = bar.styles.background
        app.theme = "textual-light"                          # new variables: all again
        await pilot.pause()
        await pilot.pause()
        assert bar.styles.background != dark
        again = [(read_from, source.tie_breaker, source.scope)
                 for read_from, source in app.stylesheet.source.items()]
        assert all(parses[key] == first.get(key, 0) + 1 for key in again), parses
