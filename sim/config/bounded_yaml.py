"""YAML parsing that refuses what PyYAML's ``safe_load`` lets through.

``safe_load`` runs no code, but it will still expand an alias tree ("billion laughs":
ten anchors of ten aliases each are 10^10 nodes once expanded), build a list that contains
itself (``&a [*a]``: every later walk of the config spins or overflows), recurse until the
interpreter's stack gives out on deep nesting, and let a repeated key silently win. Here
each is an ``UnsafeYaml`` naming the line, refused at the node level before any Python
object is built; the limits are in ``sim.config.limits``.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionStartEvent
from yaml.nodes import MappingNode, Node, SequenceNode

from sim.config.limits import MAX_YAML_ALIASES, MAX_YAML_DEPTH, MAX_YAML_NODES

_MERGE_TAG = "tag:yaml.org,2002:merge"


class UnsafeYaml(ValueError):
    """YAML llumsim will not read; ``line`` is 1-based (0: the document as a whole)."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(problem)
        self.line = line


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader counting aliases and depth as it composes, and refusing duplicate keys."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._aliases = 0
        self._depth = 0
        self._open: set[str] = set()  # anchors of the collections being composed

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, AliasEvent):
            if event.anchor in self._open:
                raise UnsafeYaml(line, f"alias *{event.anchor} refers to its own anchor (a cycle)")
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise UnsafeYaml(line, f"more than {MAX_YAML_ALIASES:,} aliases")
            return super().compose_node(parent, index)
        anchor = event.anchor if isinstance(event, CollectionStartEvent) else None
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise UnsafeYaml(line, f"nested more than {MAX_YAML_DEPTH} levels deep")
        if anchor is not None:
            self._open.add(anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._open.discard(anchor)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue  # ``<<: *base`` keys are overridden by design
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            try:
                if key in first_line:
                    raise UnsafeYaml(
                        line, f"key {key!r} appears twice in one mapping (first on line {first_line[key]})"
                    )
            except TypeError:
                continue  # unhashable: PyYAML's own error says so
            first_line[key] = line
        return super().construct_mapping(node, deep=deep)


def _expanded_size(node: Node, sizes: dict[int, int]) -> int:
    """Nodes in the tree ``node`` stands for, aliases expanded (memoised per shared node, so
    this is linear in the document even when the expansion is exponential)."""
    if id(node) in sizes:
        return sizes[id(node)]
    size = 1
    if isinstance(node, SequenceNode):
        size += sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, MappingNode):
        size += sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    sizes[id(node)] = size
    return size


def parse(text: str) -> Any:
    """The one YAML document in ``text`` as Python data (None when empty).

    Raises ``UnsafeYaml`` for a cycle, too many aliases, too deep or too large an expansion,
    or a repeated key; ``yaml.YAMLError`` for text that is not YAML.
    """
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node, {})
        if size > MAX_YAML_NODES:
            raise UnsafeYaml(
                0, f"expands to {size:,} nodes once aliases are followed (at most {MAX_YAML_NODES:,})"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()
