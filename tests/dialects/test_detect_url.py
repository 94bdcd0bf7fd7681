"""`url_path` reads a plain http(s) URL itself (start-up: no urllib.parse): the same path as urlsplit's."""

from __future__ import annotations

import subprocess
import sys
from urllib.parse import urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from sse_inspect.dialects._detect import url_path


def urlsplit_path(url: str | None) -> str:
    """The reference: what `url_path` said when it always asked urlsplit."""
    if not url:
        return ""
    try:
        path = urlsplit(url).path
    except ValueError:
        return ""
    return path.lower().rstrip("/")


PIECE = st.text(alphabet=st.sampled_from("aZ09-._~/?#[]:@!$&'()*+,;=% \t\r\n\x00\x7f\u00e9\uff0f\u2100"), max_size=12)
URLS = st.builds(
    "".join,
    st.tuples(
        st.sampled_from(["http", "https", "HTTP", "Https", "ftp", "", " http", "\thttp", "ht\ntp"]),
        st.sampled_from(["://", ":/", ":", "", "://["]),
        PIECE,  # the host and port, or what stands in for them
        st.sampled_from(["", "/", "/v1/chat/completions", "/V1/Messages/", "?", "#", "]"]),
        PIECE,
    ),
)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(URLS, st.text(max_size=40)))
def test_url_path_is_urlsplit_s_path(url: str) -> None:
    assert url_path(url) == urlsplit_path(url)


def test_plain_urls_are_read_without_urllib() -> None:
    """The counterpart: a plain URL's path is read without loading urllib.parse (it would be 2 ms of start-up)."""
    code = (
        "import sys\nfrom sse_inspect.dialects._detect import url_path\n"
        "print(url_path('https://api.openai.com/v1/chat/completions/?stream=1#x'), 'urllib.parse' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["/v1/chat/completions", "False"]
