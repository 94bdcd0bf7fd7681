"""Record Server-Sent Events streams passing through mitmproxy into sse-capture/1 files.

    mitmdump --listen-host 127.0.0.1 -s addons/sse_capture.py --set sse_capture_dir=./captures

Options: sse_capture_dir, sse_capture_filter, sse_capture_types, sse_redact,
sse_redact_extra, sse_capture_request_body, sse_capture_attach_body, sse_capture_attach_limit
(see README).
"""

from sse_inspect.mitm_addon import SSECapture

addons = [SSECapture()]
