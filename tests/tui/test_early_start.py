"""The first run's agent is spawned and connected to before Textual loads (launch.py,
EarlyStart): a pause it reached meanwhile is in the app's first frame; one still to come
arrives as any later pause does."""

from __future__ import annotations

import threading

import pytest
from execmode.tui.app import ExecmodeApp
from execmode.tui.debugger import DebugBridge
from execmode.tui.launch import EarlyStart, ScriptLaunch
from execmode.tui.messages import ScriptStarted
from fakes import PausedController
from tui_support import SCRIPTS, SIZE, Waiter, run_async, static_text

from execmode.debug.controller import ControllerError
from execmode.debug.run_events import Event


class GatedController(PausedController):
    """PausedController whose start() (its connection) waits until the gate opens."""

    def __init__(self, *args, fail: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.fail = fail
        self.calls: list[str] = []
        self.initial_breakpoints: list = []

    def start(self):
        self.calls.append("start")
        self.gate.wait(30)
        self.calls.append("started")
        if self.fail:
            raise ControllerError("the script could not start (exit code 1):\nboom")
        return super().start()

    def stop(self):
        self.calls.append("stop")


def gated_launch(tmp_path, **options) -> tuple[ScriptLaunch, GatedController]:
    """A launch as `execmode tui` leaves it after prestart(), with a fake agent."""
    launch = ScriptLaunch(str(tmp_path / "train.py"), session_dir=str(tmp_path))
    controller = GatedController(launch.script, **options)
    launch.prestarted = controller
    launch.early_start = EarlyStart(controller)
    return launch, controller


def test_events_published_before_anyone_listens_are_kept_and_handed_over_in_order():
    controller = GatedController("train.py")
    early = EarlyStart(controller)
    publish = controller.listeners[0]
    publish(Event("hello"))
    publish(Event("output", {"line": "a"}))
    got = []
    assert early.listen(got.append) is None
    publish(Event("output", {"line": "b"}))
    assert [(e.type, e.get("line")) for e in got] == [("hello", None), ("output", "a"),
                                                      ("output", "b")]
    controller.gate.set()
    early.wait()
    assert early.connected


def test_a_kept_pause_is_taken_only_while_it_is_all_that_happened():
    controller = GatedController("train.py")
    early = EarlyStart(controller)
    publish = controller.listeners[0]
    for event in ("hello", "paused", "output"):
        publish(Event(event))
    got = []
    taken = early.listen(got.append, take_pause=True)
    assert taken.type == "paused" and [e.type for e in got] == ["hello", "output"]

    later = EarlyStart(controller)  # a pause, then the run went on: nothing is taken
    publish = controller.listeners[-1]
    for event in ("paused", "running", "exited"):
        publish(Event(event))
    got = []
    assert later.listen(got.append, take_pause=True) is None
    assert [e.type for e in got] == ["paused", "running", "exited"]
    controller.gate.set()


def test_a_failed_connection_is_raised_by_wait():
    controller = GatedController("train.py", fail=True)
    early = EarlyStart(controller)
    controller.gate.set()
    try:
        early.wait()
    except ControllerError as exc:
        assert "boom" in str(exc)
    else:
        raise AssertionError("wait() did not raise")
    assert not early.connected


@run_async
async def test_a_pause_reached_while_textual_loaded_is_in_the_first_frame(tmp_path):
    launch, controller = gated_launch(tmp_path)
    controller.gate.set()
    launch.early_start.wait()                  # connected, and paused, before the app runs
    app = ExecmodeApp(launch)
    async with app.run_test(size=SIZE):
        # on_mount took that start itself (no worker, no message): before any frame.
        assert app.run_state.phase == "paused" and app.run_state.paused.op_index == 11
        assert "paused at op 11" in static_text(app.screen.query_one("StatusBar"))
        assert app.session_path == controller.session


@run_async
async def test_a_pause_still_to_come_at_mount_arrives_through_the_worker(tmp_path):
    launch, controller = gated_launch(tmp_path)
    app = ExecmodeApp(launch)
    async with app.run_test(size=SIZE) as pilot:
        assert app.run_state.phase == "starting"
        controller.gate.set()
        paused = await Waiter(pilot).paused()
        assert paused.op_index == 11 and app.session_path == controller.session


@run_async
async def test_a_connection_that_failed_while_textual_loaded_says_why(tmp_path):
    launch, controller = gated_launch(tmp_path, fail=True)
    controller.gate.set()
    app = ExecmodeApp(launch)
    async with app.run_test(size=SIZE) as pilot:
        await Waiter(pilot).until(lambda: app.run_state.phase == "failed", what="failed")
        assert "boom" in app.run_state.message


@pytest.mark.slow  # a real agent process, then the app around it
@run_async
async def test_the_real_agent_paused_before_the_app_mounts_steps_on(tmp_path):
    launch = ScriptLaunch(str(SCRIPTS / "three_ops.py"),
                          session_dir=str(tmp_path / "sessions"))
    launch.prestart()
    launch.early_start.wait()
    launch.prestarted.wait_for("paused")       # the agent waits at its first op
    app = ExecmodeApp(launch)
    async with app.run_test(size=SIZE) as pilot:
        assert app.run_state.phase == "paused" and app.run_state.paused.op_index == 1
        paused = await Waiter(pilot).step("s")  # the events after it reach the pump
        assert (paused.op, paused.op_index) == ("multiply", 2)


def test_a_restart_before_any_start_took_the_early_connection_waits_for_it(tmp_path):
    launch, controller = gated_launch(tmp_path)
    posted = []
    bridge = DebugBridge(launch, posted.append)
    bridge.request_restart()
    restart = threading.Thread(target=bridge.restart)
    restart.start()
    controller.gate.set()
    restart.join(30)
    # The early start ended before the restart stopped the controller and started anew.
    assert controller.calls == ["start", "started", "stop", "start", "started"]
    started = [m for m in posted if isinstance(m, ScriptStarted)]
    assert [m.run for m in started] == [1] and bridge.run == 1
