"""The hop lab's Django app: a `StreamingHttpResponse` of `data: <delta>` events read from an
OpenAI-style upstream (the Flask proxy's `deltas`), behind Django's `GZipMiddleware`.

- `/chat/stream`: the plain streaming response: GZipMiddleware compresses it (the client accepts
  gzip) through a gzip file that is never flushed, so the events wait in the compressor;
- `/chat/identity`: the fix, `Content-Encoding: identity` on the response, which the middleware
  leaves alone.

Run by gunicorn: `tests.lab_apps.django_app:application` (one module: settings, views, URLs).
"""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="hop-lab",  # noqa: S106 (a loopback test app)
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=["django.middleware.gzip.GZipMiddleware"],
)

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import HttpRequest, StreamingHttpResponse  # noqa: E402
from django.urls import path  # noqa: E402

from .flask_proxy import deltas, text_event  # noqa: E402


def events() -> Iterator[str]:
    for delta in deltas():
        yield text_event(delta)


def chat_stream(request: HttpRequest) -> StreamingHttpResponse:
    return StreamingHttpResponse(events(), content_type="text/event-stream")


def chat_identity(request: HttpRequest) -> StreamingHttpResponse:
    response = StreamingHttpResponse(events(), content_type="text/event-stream")
    response["Content-Encoding"] = "identity"  # GZipMiddleware leaves an encoded response alone
    return response


urlpatterns = [path("chat/stream", chat_stream), path("chat/identity", chat_identity)]
application = get_wsgi_application()
