"""backends._pyast.SyntaxIndex answers for a subtree what ast.walk would, without walking it again."""

import ast

from backends._pyast import SyntaxIndex, parse_python

SOURCE = '''
import torch as t


def f(x):
    import numpy as t
    y = [a + 1 for a in x] if x.is_cuda else (lambda q: q)(x)
    if not x.is_cuda:
        return t.relu(x)
    return y


class ModelNew:
    def forward(self, x):
        return f(x)
'''


def test_subtree_holds_the_nodes_of_ast_walk():
    tree = parse_python(SOURCE)
    index = SyntaxIndex(tree)
    assert index.nodes[0] is tree and len(index.nodes) == len(list(ast.walk(tree)))
    for node in ast.walk(tree):
        assert sorted(map(id, index.subtree(node))) == sorted(map(id, ast.walk(node)))
    body = tree.body[1].body
    assert sorted(map(id, index.subtrees(body))) == sorted(id(n) for stmt in body for n in ast.walk(stmt))


def test_breadth_first_is_ast_walks_order():
    tree = parse_python(SOURCE)
    kinds = (ast.Import, ast.Name, ast.Call)
    assert SyntaxIndex(tree).breadth_first(kinds) == [n for n in ast.walk(tree) if isinstance(n, kinds)]

