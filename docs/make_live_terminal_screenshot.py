"""Remake docs/live-terminal.png: `sse-inspect record`'s live table (needs chromium).

    python docs/make_live_terminal_screenshot.py

The picture is drawn by the table view itself (`cli._live.TableView`) over a live session fed by real
recorders writing real capture files (tests/live_helpers.py, on a test clock, so the picture does not
change from run to run but for the capture file names): two streams already over (their lines above the
table, with the verdicts `show` gives their files), one in focus with its answer growing, one stalled.
rich exports the terminal as SVG (a temporary file); headless chromium takes a PNG of it.
"""

from __future__ import annotations

import io
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from sse_inspect import load_capture  # noqa: E402
from sse_inspect.cli._live import TableView  # noqa: E402
from sse_inspect.live import LiveSession  # noqa: E402
from tests.live_helpers import Clock, chat, chat_recording, replay  # noqa: E402

ANSWER = ("Server-Sent Events arrive as a stream of small `data:` lines; when a proxy buffers them, the "
          "client sees nothing for seconds and then the whole answer at once. Turning buffering off for "
          "this location (or sending X-Accel-Buffering: no from the app) lets each token through as it is "
          "written.").split(" ")  # fmt: skip


def main() -> None:
    width = 100
    console = Console(record=True, width=width, force_terminal=True, color_system="truecolor", file=io.StringIO())
    clock = Clock()
    session = LiveSession(clock=clock, stall_s=2.0)
    view = TableView(console, session)
    session.views.append(view)
    view._keys = True  # type: ignore[assignment]  # (as on a terminal: the keys' hint under the table)
    os.chdir(tempfile.mkdtemp(prefix="sse-inspect-shot-"))  # the captures go to ./captures, as `record` writes them
    folder = Path("captures")
    for name in ("nginx-unbuffered", "nginx-buffered"):  # (their lines print above the table as they end)
        replay(load_capture(ROOT / "captures" / f"{name}.jsonl"), session, clock, folder)
    base = clock.now
    stalled = chat_recording(session, clock, folder, "https://api.openai.com/v1/chat/completions")
    for i, event in enumerate(chat("Let", " me", " think")):
        stalled.chunk(0.35 + 0.04 * i, event)
    focus = chat_recording(session, clock, folder, "https://openrouter.ai/api/v1/chat/completions")
    events = chat(*(w + " " for w in ANSWER))
    for i, event in enumerate(events[:48]):
        focus.chunk(0.42 + 0.035 * i, event)
    clock.now = base + 3.9
    session.tick()
    console.print(view.render(view.rows()))
    svg = Path.cwd() / "live-terminal.svg"
    console.save_svg(str(svg), title="sse-inspect record")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit(f"no chromium to take the PNG (apt-get install chromium); the SVG is {svg}")
    png = ROOT / "docs" / "live-terminal.png"
    box = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg.read_text(encoding="utf-8"))
    size = f"{math.ceil(float(box[1]))},{math.ceil(float(box[2]))}" if box else "1240,760"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={profile}", f"--screenshot={png}", f"--window-size={size}",
                        svg.as_uri()], check=True, capture_output=True, timeout=60)  # fmt: skip
    print(f"wrote {png.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
