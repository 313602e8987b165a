"""Parsing Python source, one thread at a time.

CPython 3.11 (and 3.12 before its fix) keeps the AST constructor's recursion
depth in interpreter-wide state, so two threads in `ast.parse` at once can fail
with "SystemError: AST constructor recursion depth mismatch" (CPython issue
106905). The loop proposes and checks several steps at once in threads, and a
run died of it; every parse in the library goes through this lock instead.
"""

from __future__ import annotations

import ast
import functools
import threading

__all__ = ["SyntaxIndex", "indexed_module", "parse_python"]

_LOCK = threading.Lock()


def parse_python(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse`, serialised across the process's threads."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)


class SyntaxIndex:
    """A parsed module's nodes, listed by one walk, so that the static rules' many questions
    about a subtree ("which names does this body load?", "is there a conditional expression
    in it?") slice a list instead of walking the subtree again: a generated candidate has
    thousands of lines, and its functions' bodies were walked once per question, and nested
    blocks once per enclosing block.

    `subtree(node)` holds the same nodes as `ast.walk(node)` (for a node of this tree), in
    source order (depth first) rather than breadth first: for counts and sets, not where the
    order matters. Callers only read the tree."""

    def __init__(self, tree: ast.AST) -> None:
        self.tree = tree
        self.nodes: list[ast.AST] = []  # every node of the tree, depth first
        self._parents: list[int] = []  # self._parents[i]: where self.nodes[i]'s parent is (the tree: -1)
        # Depth first with a stack (ast.walk keeps a queue, never recursing either); the children in
        # ast.iter_child_nodes' order, its loop inlined: the generator was most of the index's time.
        pending: list[tuple[ast.AST, int]] = [(tree, -1)]
        while pending:
            node, parent = pending.pop()
            position = len(self.nodes)
            self.nodes.append(node)
            self._parents.append(parent)
            children: list[tuple[ast.AST, int]] = []
            for field in node._fields:
                value = getattr(node, field, None)
                if isinstance(value, ast.AST):
                    children.append((value, position))
                elif isinstance(value, list):
                    children.extend((item, position) for item in value if isinstance(item, ast.AST))
            children.reverse()  # popped first to last
            pending.extend(children)
        # A subtree is the slice from its root to past its last descendant: sizes summed from the leaves up.
        sizes = [1] * len(self.nodes)
        for position in range(len(self.nodes) - 1, 0, -1):
            sizes[self._parents[position]] += sizes[position]
        # Keyed by id: a node object that occurs several times (CPython shares one ast.Load, one
        # ast.Add...) keeps its last slice, which holds the same one node.
        self._spans = {id(node): (position, position + size) for position, (node, size) in enumerate(zip(self.nodes, sizes))}

    def subtree(self, node: ast.AST) -> list[ast.AST]:
        """`node` and everything below it (the nodes of `ast.walk(node)`, depth first)."""
        start, stop = self._spans[id(node)]
        return self.nodes[start:stop]

    def subtrees(self, nodes: list[ast.AST] | list[ast.stmt]) -> list[ast.AST]:
        """The nodes of every one of `nodes`' subtrees (a body, or the parts of a definition that run)."""
        return [n for node in nodes for n in self.subtree(node)]

    def breadth_first(self, kinds: type | tuple[type, ...]) -> list[ast.AST]:
        """The tree's nodes of `kinds` in `ast.walk(tree)`'s order (where a later one wins, as for
        imports of the same name): breadth first visits by depth, each depth in source order."""
        found = [(self._depth(position), position) for position, n in enumerate(self.nodes) if isinstance(n, kinds)]
        return [self.nodes[position] for _, position in sorted(found)]

    def _depth(self, position: int) -> int:
        depth = 0
        while self._parents[position] >= 0:
            position = self._parents[position]
            depth += 1
        return depth


@functools.lru_cache(maxsize=4)
def indexed_module(source: str) -> SyntaxIndex:
    """The parse of `source` and its `SyntaxIndex`, kept for the next call on the same text: the
    static rules and the backend's own static check both read a candidate's tree. Callers must
    not change the tree. A SyntaxError is raised again on every call (lru_cache keeps no exceptions)."""
    return SyntaxIndex(parse_python(source))
