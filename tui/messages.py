"""Messages the workers post to the app: each named for what happened.

Workers (the controller's event pump, the store tailer, the views' loaders) run in
threads; ``post_message`` is thread-safe, so this is the only way data reaches the UI.
"""

from __future__ import annotations

from execmode.tui.records import StoreSnapshot
from execmode.tui.state import ExitSummary, PausedInfo
from textual.message import Message


class RunMessage(Message):
    """Something that happened to one run of the script (``run``: 0, then one more per
    restart); the app drops a message of a run that a restart has replaced."""

    def __init__(self, run: int = 0) -> None:
        self.run = run
        super().__init__()


class ScriptStarted(RunMessage):
    def __init__(self, pid: int | None, session: str | None, run: int = 0) -> None:
        self.pid = pid
        self.session = session
        super().__init__(run)


class ScriptCouldNotStart(RunMessage):
    def __init__(self, message: str, run: int = 0) -> None:
        self.message = message
        super().__init__(run)


class ScriptPaused(RunMessage):
    def __init__(self, info: PausedInfo, run: int = 0) -> None:
        self.info = info
        super().__init__(run)


class ScriptResumed(RunMessage):
    pass


class ScriptExited(RunMessage):
    def __init__(self, exit: ExitSummary, run: int = 0) -> None:
        self.exit = exit
        super().__init__(run)


class InputRequested(RunMessage):
    """The script is about to wait on stdin (``input()``); ``prompt`` is what it printed."""

    def __init__(self, prompt: str, run: int = 0) -> None:
        self.prompt = prompt
        super().__init__(run)


class OutputArrived(RunMessage):
    """Lines the script printed since the last message (batched: one per ~50 ms)."""

    def __init__(self, lines: list[tuple[str, str]], run: int = 0) -> None:
        self.lines = lines
        super().__init__(run)


class AgentReported(Message):
    """The agent said something that is not a state change (an error, a graph break)."""

    def __init__(self, text: str, severity: str = "information") -> None:
        self.text = text
        self.severity = severity
        super().__init__()


class CommandFailed(Message):
    def __init__(self, command: str, message: str) -> None:
        self.command = command
        self.message = message
        super().__init__()


class BreakpointsChanged(Message):
    def __init__(self, breakpoints: list[dict]) -> None:
        self.breakpoints = breakpoints
        super().__init__()


class StoreGrew(Message):
    """The session file has new rows (or appeared): the snapshot says how many."""

    def __init__(self, path: str, snapshot: StoreSnapshot) -> None:
        self.path = path
        self.snapshot = snapshot
        super().__init__()


class StoreUnreadable(Message):
    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__()


class ViewDataLoaded(Message):
    """A view's loader finished; ``data`` is whatever that view's loader returns."""

    def __init__(self, view: str, data, generation: tuple = ()) -> None:
        self.view = view
        self.data = data
        self.generation = generation
        super().__init__()


class ViewDataFailed(Message):
    def __init__(self, view: str, message: str) -> None:
        self.view = view
        self.message = message
        super().__init__()


class SourceRevealRequested(Message):
    """Another view asked the Ops view to show a source line (see App.show_source)."""


class PythonStateLoaded(Message):
    """The agent described a paused frame's Python values (the Variables pane)."""

    def __init__(self, state) -> None:
        self.state = state
        super().__init__()
