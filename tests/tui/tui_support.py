"""Helpers for the TUI tests: launching the app, awaiting its state, reading its widgets.

Waiting is done on the app's reactive attributes (a watcher sets an asyncio event), never
by sleeping: each wait returns as soon as the state it waits for is reached.
"""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
from pathlib import Path

from execmode.tui.app import SERVICE_GROUPS, ExecmodeApp
from execmode.tui.launch import ScriptLaunch, SessionLaunch
from rich.console import Console

SCRIPTS = Path(__file__).parent / "scripts"
SIZE = (120, 40)
WATCHED = ("run_state", "snapshot", "breakpoints", "output_count", "session_path")


def run_async(test):
    """Run an async test with asyncio (no async pytest plugin is needed)."""

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return wrapper


async def settle(pilot, rounds: int = 10) -> None:
    """Wait for every finite worker (loaders, commands) and the messages they post."""
    app = pilot.app
    for _ in range(rounds):
        busy = [w for w in app.workers if w.group not in SERVICE_GROUPS and
                not w.is_finished]
        if not busy:
            break
        await app.workers.wait_for_complete(busy)
        await pilot.pause()
    await pilot.pause()


def script_app(name: str, tmp_path, **options) -> ExecmodeApp:
    launch = ScriptLaunch(str(SCRIPTS / name), session_dir=str(tmp_path / "sessions"),
                          **options)
    return ExecmodeApp(launch)


def session_app(path) -> ExecmodeApp:
    return ExecmodeApp(SessionLaunch(str(path)))


# Predicates may read plain attributes (a screen's ``inspected``) that no watcher sees.
POLL_S = 0.05


class Waiter:
    """Awaits conditions on an app: re-checked whenever one of its reactives changes, and
    every ``POLL_S``."""

    def __init__(self, pilot, *extra: tuple):
        self.pilot = pilot
        self.app = pilot.app
        self.changed = asyncio.Event()
        for name in WATCHED:
            self.app.watch(self.app, name, self._poke, init=False)
        for node, name in extra:
            self.watch(node, name)

    def watch(self, node, name: str) -> None:
        """Also re-check when ``node.name`` (a reactive) changes."""
        self.app.watch(node, name, self._poke, init=False)

    def _poke(self, *_):
        self.changed.set()

    async def until(self, predicate, timeout: float = 30.0, what: str = ""):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {what or predicate}: "
                                     f"state {self.app.run_state}")
            self.changed.clear()
            try:  # a reactive's change wakes it at once; a plain attribute, by the poll
                await asyncio.wait_for(self.changed.wait(), min(remaining, POLL_S))
            except asyncio.TimeoutError:
                pass
        await self.pilot.pause()  # let the screens' own watchers and messages run
        return predicate()

    async def paused(self, timeout: float = 30.0):
        await self.until(lambda: self.app.run_state.phase == "paused", timeout, "a pause")
        return self.app.run_state.paused

    async def step(self, key: str = "s"):
        """Press a resume key and wait for the next pause (or the end)."""
        before = self.app.run_state
        await self.pilot.press(key)
        await self.until(lambda: self.app.run_state is not before and
                         self.app.run_state.phase in ("paused", "finished"),
                         what=f"the pause after {key}")
        return self.app.run_state.paused

    async def view_loaded(self, screen, timeout: float = 30.0):
        """Wait until a store-backed view shows the store as it is now."""
        await self.until(lambda: screen._shown_generation == screen._generation(), timeout,
                         f"{screen.VIEW} to load")


async def press_view(pilot, key: str):
    await pilot.press(key)
    await pilot.pause()
    return pilot.app.screen


def text_of(renderable, width: int = 200) -> str:
    """Plain text of a rich renderable (a Static's content, a Text, a Table)."""
    console = Console(width=width, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(renderable)
    return console.export_text()


def static_text(widget) -> str:
    """What a Static (or a TextPane, a StatusBar) shows, as plain text."""
    content = widget.content if hasattr(widget, "content") else widget.render()
    if isinstance(content, str):
        from rich.text import Text

        content = Text.from_markup(content)
    return text_of(content)


def row_texts(row_list) -> list[str]:
    source = row_list.source
    return [source.line(i).plain for i in range(len(source))] if source is not None else []


def table_cells(table) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def record_session(script: str, session: Path, *args: str, kernel_rows: bool = False) -> Path:
    """Record ``script`` into ``session`` in a child process (the profilers' runner);
    ``kernel_rows``: a row per kernel run, not only each step's sums."""
    options = ["--kernel-rows"] if kernel_rows else []
    subprocess.run([sys.executable, "-m", "execmode.profilers.runner", "--session",
                    str(session), *options, "--", str(SCRIPTS / script), *args],
                   check=False, capture_output=True, timeout=120)
    assert session.exists(), f"no session recorded for {script}"
    return session
