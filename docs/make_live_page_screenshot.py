"""Remake docs/live-page.png: the live page of `record --ui` with a few streams (run from the repo root).

    python docs/make_live_page_screenshot.py [OUT.png]

Real recorders write real capture files (in a temporary folder) with the bytes of captures/, fed at a
model's pace on the session's own loop, as tests/test_live_page.py does; a headless Chromium (Debian's
`chromium`) shows the page, and the DevTools protocol takes its picture while one stream is still open
and growing, after a stall, and another, cut, is in focus with its verdict and report.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sse_inspect import load_capture  # noqa: E402
from sse_inspect.recorder import StreamRecorder  # noqa: E402
from tests.cdp import Browser  # noqa: E402
from tests.live_lab import CAPTURES, LiveLab, events_of  # noqa: E402



def paced(lab: LiveLab, rec: StreamRecorder, chunks: list[bytes], every: float) -> None:
    for chunk in chunks:
        lab.feed(rec, chunk)
        time.sleep(every)


def main(out: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("chromium is not installed (apt-get install chromium)")
    words = events_of("nginx-unbuffered.jsonl")  # a role, 20 words, the finish, [DONE]
    with tempfile.TemporaryDirectory() as tmp, LiveLab(Path(tmp) / "captures", stall_s=1.0) as lab, \
            Browser(chromium, Path(tmp) / "profile") as browser:  # fmt: skip
        tab = browser.open(lab.url, width=1200, height=800)
        tab.wait_for("document.getElementById('conn').textContent === 'live'")

        done = lab.open("openai-chat-text.jsonl")
        paced(lab, done, events_of("openai-chat-text.jsonl"), 0.04)
        lab.finish(done)

        tools = lab.open("anthropic-text-then-tooluse.jsonl")
        paced(lab, tools, events_of("anthropic-text-then-tooluse.jsonl"), 0.03)
        lab.finish(tools)

        cut = lab.open("nginx-unbuffered.jsonl")
        paced(lab, cut, words[:9], 0.05)
        time.sleep(1.4)  # a stall; four events more, then the connection is cut
        paced(lab, cut, words[9:13], 0.05)
        cut_off = load_capture(CAPTURES / "nginx-cut.jsonl").end  # how a real cut was recorded
        assert cut_off is not None
        lab.finish(cut, cut_off.kind, cut_off.error)

        growing = lab.open("lab-flask-good-gunicorn.jsonl")
        feeding = threading.Thread(target=paced, args=(lab, growing, events_of("lab-flask-good-gunicorn.jsonl"), 0.1))
        feeding.start()  # open while the picture is taken: three seconds of words
        time.sleep(1.5)

        tab.evaluate("document.querySelector('#rows tr[data-id=\"3\"]').click()")
        tab.wait_for("!document.getElementById('f-report-box').hidden")
        report = tab.frame("/report/3")
        report.wait_for("document.readyState === 'complete' && !!document.querySelector('h1')")
        time.sleep(1.0)  # the frame's first paint (another process) and a redraw of the open stream
        tab.screenshot(out)
        feeding.join()
        lab.finish(growing)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "live-page.png")
