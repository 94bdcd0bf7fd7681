"""Text that streams in named parts (the AI SDK's text parts, A2A's artifacts), shown in the order the parts began.

A client keeps each part by its id and shows the parts in the order they began, whatever the order of their
pieces on the wire. `OrderedParts` writes the pieces into one `Channel` in that order: the pieces of the
earliest part still open go straight in (`direct`), those of a later part are held until every part before
it has closed. A grammar whose part may be replaced whole (A2A's artifact sent again without `append`)
holds every part until it closes (`direct=False`), since text once in a channel cannot be taken back.
"""

from __future__ import annotations

from collections.abc import Hashable

from ._accumulate import Channel

__all__ = ["OrderedParts"]


class _Part:
    __slots__ = ("closed", "held")

    def __init__(self) -> None:
        self.held: list[str] = []
        self.closed = False


class OrderedParts:
    """The parts of one channel, by key, in the order they began; `flush` writes what is due into the channel."""

    def __init__(self, channel: Channel, *, direct: bool = True) -> None:
        self.channel = channel
        self.direct = direct
        self._parts: dict[Hashable, _Part] = {}
        """The parts not yet written whole into the channel, in the order they began (dicts keep it)."""
        self._done: set[Hashable] = set()
        """The keys of the parts written whole (a late piece of one goes straight in)."""
        self.replaced = 0
        """Parts sent again whole after some of their text was written (the channel keeps the first text)."""

    def begin(self, key: Hashable) -> None:
        """A part starts (again, when it is already open: nothing changes)."""
        if key not in self._parts and key not in self._done:
            self._parts[key] = _Part()

    def piece(self, key: Hashable, text: str) -> None:
        """A piece of a part (one never begun begins here)."""
        if key in self._done:
            self.channel.append(text)
            return
        self.begin(key)
        if self.direct and next(iter(self._parts)) == key:
            self.channel.append(text)
        else:
            self._parts[key].held.append(text)

    def replace(self, key: Hashable) -> None:
        """The part's text so far is dropped: its next pieces are the whole of it."""
        part = self._parts.get(key)
        if key in self._done or (part is not None and self.direct and next(iter(self._parts)) == key):
            self.replaced += 1  # some of it is in the channel already
        elif part is not None:
            part.held.clear()

    def close(self, key: Hashable) -> None:
        """The part is whole: it, and the closed parts after it, are written once every earlier one is."""
        part = self._parts.get(key)
        if part is not None:
            part.closed = True
            self.flush()

    def flush(self, *, all_parts: bool = False) -> None:
        """Write the closed parts at the head (every part, closed or not, when `all_parts`: the stream ended)."""
        while self._parts:
            key, part = next(iter(self._parts.items()))
            whole = part.closed or all_parts
            if whole or self.direct:  # an open head's pieces go straight in from now on (direct)
                for text in part.held:
                    self.channel.append(text)
                part.held.clear()
            if not whole:
                return
            del self._parts[key]
            self._done.add(key)
