"""The debugger's commands as app actions: n s c p r b B e, each checked, each in a worker.

A mixin of :class:`~execmode.tui.app.ExecmodeApp` (it uses the app's ``bridge``,
``run_state`` and workers), kept apart so that app.py stays about state and routing.
Every command that talks to the agent blocks until it replies, so it runs in a worker
thread; a failure becomes a notification, never an exception in the UI.
"""

from __future__ import annotations

import os
import re

from execmode.tui.debugger import CommandError, DebugBridge
from execmode.tui.messages import CommandFailed
from execmode.tui.state import RunState

_LOCATION_SPEC = re.compile(r"^\s*(?:line:)?(?P<file>[^\s:][^:]*):(?P<line>\d+)\s*$")


class DebuggerCommands:
    def _control(self, fn, name: str) -> None:
        """Run ``fn`` (which talks to the agent) in a worker; failures become notices."""
        def run() -> None:
            try:
                fn()
            except CommandError as exc:
                self.post_message(CommandFailed(name, str(exc)))

        self.run_worker(run, thread=True, group="control", exit_on_error=False)

    def _live(self, needs: str) -> DebugBridge | None:
        """The bridge, if the script can take this command now; else say why not."""
        if self.bridge is None:
            self.notify("a recorded session: stepping needs a live script "
                        "(execmode tui SCRIPT)", severity="warning")
            return None
        phase = self.run_state.phase
        if needs == "paused" and phase != "paused":
            why = {"running": "the script is running: press p to pause it",
                   "finished": "the script has finished: press r to run it again"}
            self.notify(why.get(phase, f"the script is {phase}"), severity="warning")
            return None
        if needs == "running" and phase != "running":
            self.notify(f"the script is not running ({phase})", severity="warning")
            return None
        return self.bridge

    def _resume(self, command: str) -> None:
        bridge = self._live("paused")
        if bridge is not None:
            self._control(lambda: bridge.call(command), command)

    def action_step(self) -> None:
        self._resume("step")

    def action_next(self) -> None:
        self._resume("next")

    def action_continue(self) -> None:
        self._resume("cont")

    def action_pause(self) -> None:
        bridge = self._live("running")
        if bridge is not None:
            self._control(lambda: bridge.call("pause"), "pause")

    def action_next_rank(self) -> None:
        """A run folder of ranks (execmode open FOLDER): show the next rank's session."""
        launch = self.launch
        ranks = getattr(launch, "ranks", ())
        if len(ranks) < 2:
            self.notify("one session: R goes through the ranks of a run folder (execmode "
                        "launch --profile, then execmode open FOLDER)", severity="warning")
            return
        rank = launch.rank_of(launch.path)
        launch.path = ranks[((rank or 0) + 1) % len(ranks)]
        self.sources.clear()
        self._open_recorded(launch.path)
        self.notify(f"rank {launch.rank_of(launch.path)} of {len(ranks)}: "
                    f"{launch.path.rsplit('/', 1)[-1]}", timeout=4)

    def action_restart(self) -> None:
        if self.bridge is None:
            self.notify("a recorded session cannot be restarted", severity="warning")
            return
        self.bridge.request_restart()  # from now on, the old run's news is stale
        self.hide_stdin_line()
        self.run_state = RunState("restarting")
        self.output_lines.clear()
        self.output_count = 0
        self.sources.clear()
        self._control(self.bridge.restart, "restart")

    def set_breakpoint(self, spec: str) -> None:
        """Send a breakpoint to the agent (it replies with its id, or why it is wrong)."""
        if self.bridge is None:
            self.notify("breakpoints need a live script", severity="warning")
            return
        bridge = self.bridge

        def send() -> None:
            bp = bridge.breakpoint_call("set_breakpoint", spec)
            note = f" · {bp['note']}" if bp.get("note") else ""
            self.call_from_thread(self.notify, f"breakpoint {bp['id']}: {bp['spec']}{note}")

        self._control(send, "set breakpoint")

    def breakpoint_command(self, command: str, *args) -> None:
        """clear_breakpoint / enable_breakpoint / update_breakpoint, then refresh the list
        (with no script running: the next run's list)."""
        if self.bridge is None:
            self.notify("breakpoints need a live script", severity="warning")
            return
        bridge = self.bridge

        def send() -> None:
            bridge.breakpoint_call(command, *args)

        self._control(send, command.replace("_", " "))

    def action_breakpoint_here(self) -> None:
        """``b``: a breakpoint on the line under the cursor, or off again (pudb's toggle)."""
        where = getattr(self.screen, "breakpoint_location", lambda: None)()
        if where is None:
            self.notify("no source line under the cursor here: press B to type a "
                        "breakpoint", severity="warning")
            return
        for bp in self.breakpoints:
            m = _LOCATION_SPEC.match(bp.get("spec", ""))
            if m and int(m["line"]) == where.lineno and \
                    os.path.basename(m["file"]) == os.path.basename(where.filename):
                self.breakpoint_command("clear_breakpoint", bp["id"])
                self.notify(f"breakpoint {bp['id']} at {where.short} removed")
                return
        self.set_breakpoint(where.short)

    def action_breakpoint_dialog(self) -> None:
        from execmode.tui.screens.breakpoint_dialog import BreakpointDialog

        def added(spec: str | None) -> None:
            if spec:
                self.set_breakpoint(spec)

        self.push_screen(BreakpointDialog(), added)

    def show_stdin_line(self, prompt: str | None = None) -> None:
        """The input line (the script waits on stdin): Enter sends what was typed."""
        from execmode.tui.screens.stdin_dialog import EOF, StdinDialog

        if isinstance(self.screen, StdinDialog) or self.bridge is None:
            return
        if prompt is not None:
            self.stdin_prompt = prompt
        bridge = self.bridge

        def typed(line: str | None) -> None:
            self.stdin_line_shown = False  # the status bar tells how to bring it back
            if line is None:
                if self.stdin_prompt is None:
                    return  # hidden because the run ended or restarts
                self.notify("the script still waits for stdin: ctrl+p, \"stdin\" brings "
                            "the input line back", severity="warning")
                return
            self.stdin_prompt = None  # the agent echoes the line on the script's stdout
            self._control(lambda: bridge.send_stdin(None if line == EOF else line), "stdin")

        self.stdin_line_shown = True
        self.push_screen(StdinDialog(self.stdin_prompt or ""), typed)

    def action_stdin_line(self) -> None:
        """Palette: the input line again (after Esc hid it)."""
        if self.stdin_prompt is None:
            self.notify("the script is not reading stdin", severity="warning")
            return
        self.show_stdin_line()

    def hide_stdin_line(self) -> None:
        """The run that waited ended (or restarts): its input line goes."""
        from execmode.tui.screens.stdin_dialog import StdinDialog

        self.stdin_prompt = None
        if isinstance(self.screen, StdinDialog):
            self.screen.dismiss(None)

    def action_hunt(self) -> None:
        """Palette: re-run the paused segment op by op to find the first NaN/Inf."""
        self._report("hunt", "NaN hunt")

    def action_differential_check(self) -> None:
        """Palette: compare the paused segment's eager and optimised values node by node."""
        self._report("differential_check", "differential check")

    def _report(self, command: str, title: str) -> None:
        bridge = self._live("paused")
        if bridge is None:
            return

        def run() -> None:
            report = bridge.call(command)
            text = report.get("text") if isinstance(report, dict) else None
            self.call_from_thread(self.notify, text or str(report), title=title, timeout=30)

        self._control(run, title)

