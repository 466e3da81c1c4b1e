"""What a request's tokens are, as far as a prefix cache can tell.

The simulator carries token counts, not token ids, so a block's identity — vLLM hashes each
full block's 16 token ids chained to its parent's hash — is written here as a path in a
tree of streams. A ``Content`` is a stream of tokens; one that begins with another's first
``shared`` tokens names that one as its ``parent``. Block ``index`` of a stream is the
parent's block of that index when it lies wholly inside the shared tokens, and the stream's
own otherwise, so two requests share a block key exactly when they share every token up to
that block's end: the property chained hashes give vLLM.

* A multi-turn conversation is one stream: every turn's prompt is a prefix of it (the history
  and the new message) and its answer continues it, so turn n + 1 finds turn n's blocks.
* A shared system prompt is a stream its requests' streams fork from at its length.
* A request with no ``Content`` shares nothing (the paper's workloads).
"""

from __future__ import annotations

from typing import Hashable, Optional


class Content:
    """A stream of tokens; forked from ``parent``'s first ``shared`` tokens, if it has one."""

    __slots__ = ("name", "parent", "shared")

    def __init__(self, name: Hashable, parent: Optional[Content] = None, shared: int = 0) -> None:
        if parent is None and shared:
            raise ValueError(f"content {name!r}: shares {shared} tokens with no parent")
        self.name = name
        self.parent = parent
        self.shared = shared

    def block_key(self, index: int, block_size: int) -> tuple[Hashable, int]:
        """The identity of the stream's block ``index`` (tokens ``index * block_size`` up to
        the block's end): the stream nearest the root whose tokens hold all of them."""
        end = (index + 1) * block_size
        content = self
        while content.parent is not None and end <= content.shared:
            content = content.parent
        return (content.name, index)

    def __repr__(self) -> str:
        parent = f", forked from {self.parent.name!r} at {self.shared}" if self.parent is not None else ""
        return f"Content({self.name!r}{parent})"
