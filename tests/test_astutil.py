"""The AST helpers the passes share (srcgrad/transforms/astutil.py)."""
import ast

import gast
import pytest

from srcgrad.transforms import astutil as A


@pytest.mark.parametrize("parse", [gast.parse, ast.parse], ids=["gast", "ast"])
@pytest.mark.parametrize("source, owner, expected", [
    ("_rt.densify(g, x)", "_rt", "densify"),
    ("_tape.pop()", "_tape", "pop"),
    ("_rt.densify(g, x)", "rt", None),      # another name
    ("a._rt.densify(g, x)", "_rt", None),   # not a plain name: an attribute of a
    ("_rt.densify", "_rt", None),           # the attribute, not called
    ("densify(g, x)", "_rt", None),         # a plain call
    ("_rt().densify(g)", "_rt", None),      # the owner is a call's result
])
def test_called_attr(parse, source, owner, expected):
    node = parse(source, mode="eval").body
    assert A.called_attr(node, owner) == expected


def test_called_attr_of_no_node():
    assert A.called_attr(None, "_rt") is None
