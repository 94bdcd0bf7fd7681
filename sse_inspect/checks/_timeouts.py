"""The well-known time limits of hops, which cut event streams: idle and total limits.

An idle limit: the hop closes a connection that sent no byte for so long; a total limit: the hop ends
a request that lasted so long, however busy. `idle-timeout-cut` and `total-timeout-cut` name the hops
whose limit a cut matched.

Sources: /work/shared/research/buffering-culprits.md (S5, S6), the vendors' docs it cites, and the
configuration files Debian ships. A limit marked unverified comes from a secondary source; all of
them are defaults that a configuration can change: a match names a likely hop, it proves nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["IDLE_LIMITS", "TOTAL_LIMITS", "Limit", "Match", "match_limit", "tolerance"]


# NamedTuples, not frozen dataclasses: values of this module alone, and a dataclass costs every start of
# `check` ~1 ms to define (it compiles the methods it writes: 4.5 M instructions), a NamedTuple a quarter.
class Limit(NamedTuple):
    """One hop's default limit."""

    hop: str
    """A catalogue name (docs/signatures.md): "nginx", "aws-alb", ..."""
    seconds: float
    setting: str
    """What sets it, in the hop's own words."""
    verified: bool = True
    """False: from a secondary source, not checked against the vendor's own docs."""


IDLE_LIMITS: tuple[Limit, ...] = (
    Limit("azure-app-gateway", 20, "request timeout", verified=False),
    Limit("azure-front-door", 30, "origin response timeout", verified=False),
    Limit("cloudfront", 30, "origin response timeout", verified=False),
    Limit("haproxy", 50, "`timeout server` of Debian's haproxy.cfg"),
    Limit("heroku", 55, "router's rolling window"),
    Limit("nginx", 60, "`proxy_read_timeout`"),
    Limit("aws-alb", 60, "idle timeout"),
    Limit("apache", 60, "`ProxyTimeout`, by default `Timeout`"),
    Limit("varnish", 60, "`between_bytes_timeout`", verified=False),
    Limit("cloudflare", 100, "proxy read timeout, then a 524"),
    Limit("apache", 300, "`Timeout 300` of Debian's apache2.conf"),
    Limit("envoy", 300, "`stream_idle_timeout`", verified=False),
)
"""Limits on a silence: the hop closes a connection that sent no byte for so long."""

TOTAL_LIMITS: tuple[Limit, ...] = (
    Limit("vercel", 10, "function duration on some plans"),
    Limit("envoy", 15, "route `timeout`", verified=False),
    Limit("aws-api-gateway", 29, "integration timeout", verified=False),
    Limit("gunicorn", 30, "sync worker `--timeout`"),
    Limit("vercel", 60, "function duration on paid plans", verified=False),
    Limit("cloud-run", 300, "request timeout"),
)
"""Limits on a whole request: the hop ends it after so long, however busy the stream."""


def tolerance(limit: float, tolerance_s: float) -> float:
    """How far from `limit` a measured time may be and still match it: `tolerance_s`, or 1% of the
    limit when that is more (a long request's total also counts the hop's own queueing and start:
    Cloud Run's 300 s limit cut a stream 302 s after the request)."""
    return max(tolerance_s, limit / 100)


class Match(NamedTuple):
    """The limit closest to a measured time, and every hop whose limit is within the tolerance."""

    limit_s: float
    limits: tuple[Limit, ...]
    """Closest first."""

    @property
    def hops(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(limit.hop for limit in self.limits))

    def words(self) -> str:
        """The hops and their settings: "nginx (`proxy_read_timeout`, 60 s), aws-alb (idle timeout, 60 s)"."""
        return ", ".join(
            f"{limit.hop} ({limit.setting}, {limit.seconds:g} s{'' if limit.verified else ', unverified'})"
            for limit in self.limits
        )


def match_limit(seconds: float, limits: Sequence[Limit], tolerance_s: float) -> Match | None:
    """The limits within tolerance of `seconds` (see `tolerance`), closest first; None when none is."""
    near = sorted(
        (limit for limit in limits if abs(seconds - limit.seconds) <= tolerance(limit.seconds, tolerance_s)),
        key=lambda limit: abs(seconds - limit.seconds),
    )
    return Match(near[0].seconds, tuple(near)) if near else None
