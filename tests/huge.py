"""Big captures for the memory tests: written fast, in the shape of a real OpenAI stream, and
the peak memory of a command run on them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sse_inspect._capture import Request, Response, chunk_line, end_line, header_line

_WORDS = [" Hello", " world", ",", " this", " is", " a", " café", " stream", " of", " tokens", ".", "\n"]
_RSS = """
import sys
from sse_inspect.cli import main
sys.argv = ["sse-inspect", *sys.argv[1:]]
try:
    main()
finally:  # VmHWM: the peak of this program alone (ru_maxrss keeps the forking parent's across exec)
    peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    sys.stderr.write(f"\\npeak-rss-kb {peak.split()[1]}\\n")
"""


def write_openai_capture(path: Path, size: int) -> int:
    """Write an sse-capture/1 file of about `size` bytes: chat chunks 1 ms apart, one a chunk, then
    [DONE]. Returns the length of the answer text."""
    prefix = '{"id":"chatcmpl-huge","object":"chat.completion.chunk","created":1,"model":"gpt-huge","choices":[{"index":0,"delta":{"content":'
    suffix = '},"finish_reason":null}]}'
    response = Response(headers=(("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")), t=0.2)
    request = Request(method="POST", url="https://api.openai.com/v1/chat/completions")
    written = text = 0
    t = 0.3
    with open(path, "w", encoding="utf-8") as f:
        written += f.write(header_line(request=request, response=response, recorded_at=None, recorder="tests/huge.py"))
        lines = []
        n = 0
        while written < size:
            word = _WORDS[n % len(_WORDS)]
            line = chunk_line(t, f"data: {prefix}{json.dumps(word)}{suffix}\n\n".encode())
            lines.append(line)
            written += len(line)
            text += len(word)
            n += 1
            t += 0.001
            if len(lines) == 10000:
                f.write("".join(lines))
                lines.clear()
        f.write("".join(lines))
        f.write(chunk_line(t, b"data: [DONE]\n\n") + end_line("complete", t + 0.001))
    return text


def measured(*args: str | Path, keep_output: bool = False) -> tuple[int, str, str, int]:
    """Run `sse-inspect ARGS` in a process of its own: (exit code, stdout or "", stderr, peak resident bytes)."""
    out = subprocess.PIPE if keep_output else subprocess.DEVNULL
    done = subprocess.run([sys.executable, "-c", _RSS, *map(str, args)], stdout=out, stderr=subprocess.PIPE,
                          text=True, timeout=900, check=False)  # fmt: skip
    err, _, last = done.stderr.rstrip().rpartition("\n")
    assert last.startswith("peak-rss-kb "), done.stderr
    return done.returncode, done.stdout or "", err.strip(), int(last.split()[1]) * 1024


def peak_rss(*args: str | Path) -> int:
    """Peak resident memory in bytes of `sse-inspect ARGS` (output dropped)."""
    return measured(*args)[3]
