"""The execmode TUI application: holds the run's state and routes keys to the debugger.

Thin on purpose. The views are screens (one app mode each, see :mod:`.views`); the data
comes from workers: the debugger bridge's event pump, the store tailer, each view's
loader. Workers post messages; the handlers here only update the reactive state that the
screens watch. Commands that talk to the agent run in worker threads (they block).
"""

from __future__ import annotations

from collections.abc import Iterable

from execmode.tui import keys
from execmode.tui.commands import DebuggerCommands
from execmode.tui.data import SessionReader, SessionUnreadable
from execmode.tui.debugger import DebugBridge
from execmode.tui.launch import ScriptLaunch, SessionLaunch
from execmode.tui.messages import (
    AgentReported,
    BreakpointsChanged,
    CommandFailed,
    InputRequested,
    OutputArrived,
    RunMessage,
    ScriptCouldNotStart,
    ScriptExited,
    ScriptPaused,
    ScriptResumed,
    ScriptStarted,
    SourceRevealRequested,
    StoreGrew,
    StoreUnreadable,
)
from execmode.tui.pages import PageFetcher
from execmode.tui.records import EMPTY_SNAPSHOT, SourceRef, StoreSnapshot
from execmode.tui.screens import modes
from execmode.tui.session_facts import exit_from_meta
from execmode.tui.sharing import SharingCommands
from execmode.tui.source_cache import SourceCache
from execmode.tui.state import STARTING, RunState
from execmode.tui.stylesheet import KeptStylesheet
from execmode.tui.tail import StoreTailer
from execmode.tui.variables import VariablesModel
from execmode.tui.views import VIEW_BY_NAME, VIEWS
from textual.app import App, SystemCommand
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import get_current_worker

from execmode.debug.reach import never_hit_lines

# Every stylesheet is loaded at start, in this order (a screen's own CSS_PATH would be read
# after responsive.tcss, and its rules would win over the size rules). Parsed once per theme
# (stylesheet.py).
STYLESHEETS = ["app.tcss", "screens/dialogs.tcss", *(f"screens/{name}.tcss" for name in (
    "ops", "tensor", "graph", "breaks", "passes", "kernels", "profile", "breakpoints",
    "ranks")),
    "screens/responsive.tcss"]  # last: its size rules win over the views' own


# Workers that live as long as a run (the others finish: commands, loaders).
SERVICE_GROUPS = ("pump", "tail", "pages")
# Seconds after the launch before a worker imports the other views' modules: after the
# first paused frame (launch.py), so that it never competes with the launch.
IMPORT_VIEWS_AFTER_S = 1.5


class ExecmodeApp(DebuggerCommands, SharingCommands, App):
    TITLE = "execmode"
    CSS_PATH = STYLESHEETS
    MODES = modes()  # each view's module is imported when it first opens
    DEFAULT_MODE = "ops"
    BINDINGS = keys.bindings()

    run_state: reactive[RunState] = reactive(STARTING, init=False)
    snapshot: reactive[StoreSnapshot] = reactive(EMPTY_SNAPSHOT, init=False)
    breakpoints: reactive[tuple] = reactive((), init=False)
    output_count: reactive[int] = reactive(0, init=False)
    session_path: reactive[str | None] = reactive(None, init=False)
    stdin_prompt: reactive[str | None] = reactive(None, init=False)  # waits on stdin
    stdin_line_shown: reactive[bool] = reactive(False, init=False)  # or hidden by Esc

    def __init__(self, launch: ScriptLaunch | SessionLaunch, controller_factory=None):
        super().__init__()
        # Before any source is read into it (at run): stylesheet.py says why.
        self.stylesheet = KeptStylesheet(variables=self.get_css_variables())
        self.launch = launch
        self.bridge: DebugBridge | None = None
        if isinstance(launch, ScriptLaunch):
            options = {"controller_factory": controller_factory} if controller_factory else {}
            self.bridge = DebugBridge(launch, self.post_message, **options)
        self.pages: PageFetcher | None = None      # reads list rows in a worker thread
        self.store_status = "waiting for the session store…"
        self.output_lines: list[tuple[str, str]] = []
        self.session_meta: dict = {}           # a recorded session's meta (post-mortem)
        self.selected_op = None                # the op under the Ops view's cursor
        self.inspected_op = None               # the past op Enter opened in the Tensor view
        self.sources = SourceCache()
        self.variables = VariablesModel()      # watches and open rows, kept across runs
        self._tailer: StoreTailer | None = None
        self._reveal: SourceRef | None = None

    @property
    def rank_label(self) -> str:
        """"rank 1/2" in a run folder of ranks (execmode open FOLDER), else ""."""
        rank = self.launch.rank_of(self.launch.path) \
            if isinstance(self.launch, SessionLaunch) else None
        return "" if rank is None else f"rank {rank}/{len(self.launch.ranks)}"

    @property
    def session_label(self) -> str:
        if isinstance(self.launch, SessionLaunch):
            return self.launch.path.rsplit("/", 1)[-1]
        return self.launch.script.rsplit("/", 1)[-1]

    # --- start ----------------------------------------------------------------------------
    def on_mount(self) -> None:
        if self.bridge is not None:
            bridge = self.bridge
            self.run_worker(lambda: bridge.pump(self._cancelled), thread=True, group="pump")
            early = bridge.take_early_start()
            if early is None:
                self._control(bridge.start, "start")
                return
            # The agent spawned before Textual loaded is connected (and maybe paused): the
            # first frame, drawn after this handler, shows it (launch.py, EarlyStart).
            started, paused = early
            self.on_script_started(started)
            if paused is not None:
                self.on_script_paused(paused)  # it asks for the breakpoints too
            else:
                self._control(bridge.refresh_breakpoints, "breakpoints")
        else:
            self._open_recorded(self.launch.path)
        # The other views' modules, while the person reads the first screen: their first
        # opening then pays only for the compose (0.1-0.5 s of imports each otherwise).
        self.set_timer(IMPORT_VIEWS_AFTER_S, self._import_views)

    def _import_views(self) -> None:
        from execmode.tui.screens import import_views

        self.run_worker(import_views, thread=True, group="import-views", exit_on_error=False)

    def _cancelled(self) -> bool:
        return not self.is_running

    @staticmethod
    def _worker_cancelled() -> bool:
        """For a worker's loop: its worker was cancelled (a new run) or the app ends."""
        worker = get_current_worker()
        return worker.is_cancelled or not worker.node.is_running

    def _open_recorded(self, path: str) -> None:
        try:
            with SessionReader(path) as reader:
                meta = reader.meta()
        except SessionUnreadable as exc:
            self.store_status = str(exc)
            self.run_state = RunState("failed", message=str(exc))
            self.notify(str(exc), title="cannot open the session", severity="error",
                        timeout=30)
            return
        self.session_meta = meta
        self.run_state = RunState("post-mortem", exit=exit_from_meta(meta))
        early = getattr(self.launch, "early", None)  # once: a later reopen reads afresh
        if early is not None:
            self.launch.early = None
        self._watch_store(path, early)

    def _watch_store(self, path: str, early=None) -> None:
        self.workers.cancel_group(self, "tail")  # the old run's: its news is stale
        self.workers.cancel_group(self, "pages")
        self.pages = pages = PageFetcher(path)
        self.snapshot = EMPTY_SNAPSHOT
        self.session_path = path
        tailer = self._tailer = StoreTailer(path, self.post_message, early=early)
        self.run_worker(lambda: tailer.run(self._worker_cancelled), thread=True, group="tail",
                        exit_on_error=False)
        self.run_worker(lambda: pages.run(self._worker_cancelled), thread=True,
                        group="pages", exit_on_error=False)

    # --- what the workers report ----------------------------------------------------------
    def _stale(self, message: RunMessage) -> bool:
        """A message of a run that a restart (pressed since) replaces: dropped."""
        return self.bridge is not None and message.run != self.bridge.requested_run

    def on_script_started(self, message: ScriptStarted) -> None:
        if self._stale(message):
            return
        if message.session:
            self._watch_store(message.session)
        if self.run_state.phase in ("starting", "restarting"):
            self.run_state = RunState("running", mode=self.run_state.mode)

    def on_script_could_not_start(self, message: ScriptCouldNotStart) -> None:
        if self._stale(message):
            return
        self.run_state = RunState("failed", message=message.message)
        self.output_lines.append(("stderr", message.message))
        self.output_count = len(self.output_lines)
        self.notify(message.message, title="the script could not start", severity="error",
                    timeout=30)

    def on_script_paused(self, message: ScriptPaused) -> None:
        if self._stale(message):
            return
        self.inspected_op = None  # a new pause: the Tensor view opens on its own tensors
        self.run_state = RunState("paused", paused=message.info, mode=message.info.mode)
        if self._tailer is not None:
            self._tailer.poke()
        self._control(self.bridge.refresh_breakpoints, "breakpoints")

    def on_script_resumed(self, message: ScriptResumed) -> None:
        if self._stale(message):
            return
        if self.run_state.phase == "paused":
            self.run_state = RunState("running", mode=self.run_state.mode)

    def on_script_exited(self, message: ScriptExited) -> None:
        if self._stale(message):
            return
        self.run_state = RunState("finished", exit=message.exit, mode=self.run_state.mode)
        if self._tailer is not None:
            self._tailer.poke()
        if message.exit.failed:
            self.notify(message.exit.description, title="the script ended", severity="error")
        self.hide_stdin_line()
        never_hit = never_hit_lines(self.breakpoints)
        if never_hit:  # said, not forgotten: a typo'd file, a line without ops (reach.py)
            self.notify("\n".join(never_hit), title="breakpoints that never hit",
                        severity="warning", timeout=20)

    def on_input_requested(self, message: InputRequested) -> None:
        if not self._stale(message):
            self.show_stdin_line(message.prompt)

    def on_output_arrived(self, message: OutputArrived) -> None:
        if self._stale(message):
            return
        self.output_lines.extend(message.lines)
        self.output_count = len(self.output_lines)

    def on_store_grew(self, message: StoreGrew) -> None:
        if message.path != self.session_path:
            return
        self.store_status = ""
        self.snapshot = message.snapshot

    def on_store_unreadable(self, message: StoreUnreadable) -> None:
        self.store_status = message.message
        self.notify(message.message, title="session store", severity="error", timeout=15)

    def on_breakpoints_changed(self, message: BreakpointsChanged) -> None:
        self.breakpoints = tuple(message.breakpoints)

    def on_command_failed(self, message: CommandFailed) -> None:
        self.notify(message.message, title=f"{message.command} failed", severity="error")

    def on_agent_reported(self, message: AgentReported) -> None:
        self.notify(message.text, severity=message.severity)

    def notify(self, message: str, *, title: str = "", severity="information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every message here holds text from the script or the person (a prompt, a path,
        an error naming what was typed): shown as it is, never read as markup."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def action_help(self) -> None:
        from execmode.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen())

    def action_show_view(self, name: str) -> None:
        if name in VIEW_BY_NAME:
            self.switch_mode(name)

    def show_source(self, ref: SourceRef) -> None:
        """Open the Ops view with ``ref``'s line in the source pane (Enter in other views)."""
        self._reveal = ref
        if self.current_mode == "ops":
            self.screen.post_message(SourceRevealRequested())
        self.switch_mode("ops")

    def take_reveal_request(self) -> SourceRef | None:
        ref, self._reveal = self._reveal, None
        return ref

    def on_unmount(self) -> None:
        """However the app ends, the script does not outlive it."""
        if self.bridge is not None:
            self.bridge.stop()

    async def action_quit(self) -> None:
        if self.bridge is not None:
            bridge = self.bridge
            self.notify("stopping the script…")
            await self.run_worker(bridge.stop, thread=True, group="quit").wait()
        self.exit()

    # --- the command palette --------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for view in VIEWS:
            yield SystemCommand(f"View: {view.title} ({view.key})", view.about,
                                lambda name=view.name: self.action_show_view(name))
        for key in keys.DEBUGGER_KEYS:
            if key.action == "quit":
                continue
            method = getattr(self, f"action_{key.action}")
            yield SystemCommand(f"{key.description} ({keys.display(key.key)})",
                                f"debugger: {key.description.lower()}", method)
        yield SystemCommand("Type a line for the script's stdin", "the input line, when the "
                            "script waits on input()", self.action_stdin_line)
        yield SystemCommand("NaN hunt (graph mode)", "re-run the paused segment op by op and "
                            "name the first op that made a NaN or Inf", self.action_hunt)
        yield SystemCommand("Differential check (graph mode)", "compare the paused segment "
                            "eager vs optimised, node by node", self.action_differential_check)
        yield from super().get_system_commands(screen)
