"""Write the README's screenshots: ``python tests/tui/screenshots.py`` -> docs/screenshots/.

The same fixed session and paused stand-in as the snapshot tests, so the pictures show
real graphs, passes and kernels and change only when the TUI does.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from execmode.tui.app import ExecmodeApp  # noqa: E402
from execmode.tui.launch import ScriptLaunch  # noqa: E402
from fakes import PausedController  # noqa: E402
from fixture_session import build_session  # noqa: E402
from tui_support import SIZE, Waiter, session_app, settle  # noqa: E402

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

SHOTS = {  # file name -> (paused stand-in?, keys)
    "ops-paused": (True, ()),
    "tensor": (True, ("2",)),
    "breakpoint-dialog": (True, ("B", *"max >")),
    "graph": (False, ("3",)),
    "breaks": (False, ("4",)),
    "passes": (False, ("5", "right_square_bracket", "right_square_bracket")),
    "kernels": (False, ("6",)),
    "profile": (False, ("7",)),
    "ops-kernels": (False, ("t",)),
}


async def shoot(name: str, session: Path, paused: bool, keys) -> None:
    if paused:
        app = ExecmodeApp(ScriptLaunch(str(session.parent / "train.py"), session=str(session),
                                       breakpoints=["nan"]),
                          controller_factory=PausedController)
    else:
        app = session_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await Waiter(pilot).until(lambda: app.snapshot.ops.count > 0, what="the session")
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        app.save_screenshot(f"{name}.svg", str(OUT))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        session = build_session(Path(tmp))
        for name, (paused, keys) in SHOTS.items():
            asyncio.run(shoot(name, session, paused, keys))
            print(OUT / f"{name}.svg")


if __name__ == "__main__":
    main()
