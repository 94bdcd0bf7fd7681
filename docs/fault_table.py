"""What each fault looks like to curl and to the SDKs: the README's table (run from the repo root)."""
import subprocess, sys, time
import anthropic, openai
from sse_inspect import load_capture
from sse_inspect.server import ReplayServerThread

FAULTS = ["", "cut:event=50%", "cut:event=50%,reset", "cut:byte=50%", "no-end-marker", "error:after-event=50%",
          "keepalive:every=50ms", "stall:after-event=50%,for=2s", "slow:bytes-per-s=2000", "status:429,retry-after=1", "status:529"]

def oai(base):
    c = openai.OpenAI(api_key="x", base_url=base + "/v1", max_retries=0, timeout=openai.Timeout(30, read=1.0))
    text = ""
    try:
        for ch in c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True):
            if ch.choices and ch.choices[0].delta.content:
                text += ch.choices[0].delta.content
    except Exception as e:
        return f"`{type(e).__name__}`"
    return f"returns {len(text)} chars"

def ant(base):
    c = anthropic.Anthropic(api_key="x", base_url=base, max_retries=0, timeout=anthropic.Timeout(30, read=1.0))
    try:
        with c.messages.stream(model="m", max_tokens=9, messages=[{"role": "user", "content": "hi"}]) as s:
            text = "".join(s.text_stream)
    except Exception as e:
        return f"`{type(e).__name__}`"
    return f"returns {len(text)} chars"

rows = []
for f in FAULTS:
    faults = [f] if f else []
    with ReplayServerThread([load_capture("captures/openai-chat-text.jsonl")], speed=None, faults=faults) as s:
        t = time.monotonic()
        curl = subprocess.run(["curl", "-sN", "-o", "/dev/null", "-w", "%{http_code}", s.url + "/v1/chat/completions"], capture_output=True, text=True)
        took = time.monotonic() - t
        o = oai(s.url)
    with ReplayServerThread([load_capture("captures/anthropic-text-then-tooluse.jsonl")], speed=None, faults=faults) as s:
        a = ant(s.url)
    rows.append(f"| `{f or '(none)'}` | {curl.stdout}, exit {curl.returncode} ({took:.1f} s) | {o} | {a} |")
print(f"openai {openai.__version__}, anthropic {anthropic.__version__}")
print("| fault | curl | openai SDK (chat, stream) | anthropic SDK (messages.stream) |")
print("| --- | --- | --- | --- |")
print("\n".join(rows))
