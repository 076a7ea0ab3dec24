"""The facts the reverse pass reads (transforms/adjoint_facts.py), on three-line functions.

Each function is normalized as for ``grad`` (anf names its temporaries ``_t1, _t2``), then
analyzed; nothing is generated.
"""
import dataclasses

import gast
import numpy as np
import pytest

from srcgrad.codegen import to_source
from srcgrad.transforms import normalize, prepare
from srcgrad.transforms.adjoint_facts import analyze


def facts_of(fn, wrt=(0,)):
    ctx = prepare(fn, wrt)
    ctx.entry = True
    tree = normalize(ctx)
    return tree, analyze(tree, ctx)


def pushed(tree, facts) -> list[str]:
    """The assignments that push the value they overwrite, as text."""
    return [to_source(n).strip() for n in gast.walk(tree)
            if isinstance(n, gast.Assign) and facts.pushes_value(n)]


def loops(tree) -> list:
    return [n for n in gast.walk(tree) if isinstance(n, (gast.For, gast.While))]


# -- overwrites -------------------------------------------------------------------------------
def reassigned(x):
    y = x * 2.0
    y = np.sin(y)
    return y


def test_a_reassigned_name_pushes_before_the_second_assignment_only():
    tree, facts = facts_of(reassigned)
    assert facts.overwritten == {"y"}
    assert pushed(tree, facts) == ["y = _t1"]  # the first one overwrites nothing
    assert facts.maybe_unbound == set() and facts.none_init == set()


def running_product(x, w):
    for i in range(3):
        x = x * w
    return x


def test_names_assigned_in_a_loop_are_overwritten_and_maybe_unbound():
    tree, facts = facts_of(running_product, (0, 1))
    assert facts.overwritten == {"x", "_t1"}
    assert pushed(tree, facts) == ["_t1 = x * w", "x = _t1"]
    assert facts.maybe_unbound == {"i", "_t1"}  # unbound if the loop never runs
    assert facts.none_init == {"_t1"}
    body = set(map(id, loops(tree)[0].body))
    assert body <= facts.in_loop and body <= facts.nested


def scaled_in_loop(x, w):
    for i in range(3):
        c = w * 2.0
        x = x * c
    return x


def test_a_loop_invariant_assignment_is_not_pushed():
    tree, facts = facts_of(scaled_in_loop, (0, 1))
    assert "c" in facts.overwritten
    assert pushed(tree, facts) == ["_t1 = x * c", "x = _t1"]


def test_an_assignment_reading_what_the_loop_changes_is_pushed():
    def drifting(x, w):
        for i in range(3):
            c = x * 2.0
            x = c * w
        return x

    tree, facts = facts_of(drifting, (0, 1))
    assert "c = x * 2.0" in pushed(tree, facts)


# -- kinds of values --------------------------------------------------------------------------
def lists(x):
    ps = [x, x]
    qs = ps + [x]
    return qs[0]


def test_sequences_and_numeric_names():
    _, facts = facts_of(lists)
    assert facts.sequences == {"ps", "qs", "_t1"}
    assert facts.numeric == set()
    _, facts = facts_of(reassigned)
    assert facts.numeric == {"x", "_t1"}  # y has a non-arithmetic definition (a copy)


def shapes(x, w):
    z = np.sin(x) * 2.0 + x
    v = x @ w
    return np.sum(z) + np.sum(v)


def test_shape_roots_follow_elementwise_operations_only():
    _, facts = facts_of(shapes, (0, 1))
    roots = {k: v for k, v in facts.shape_root.items() if k != v}
    assert roots["z"] == "x"
    assert facts.shape_root["v"] == "v"  # matmul changes the shape
    assert facts.shape_root["w"] == "w"


def test_the_facts_are_frozen():
    _, facts = facts_of(reassigned)
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.overwritten = frozenset()
    with pytest.raises(TypeError):
        facts.shape_root["y"] = "x"
