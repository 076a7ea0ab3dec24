"""The facts the reverse pass reads (transforms/adjoint_facts.py), on three-line functions.

Each function is normalized as for ``grad`` (anf names its temporaries ``_t1, _t2``), then
analyzed; nothing is generated.
"""
import dataclasses

import gast
import numpy as np
import pytest

import srcgrad
from srcgrad.codegen import to_source
from srcgrad.transforms import normalize, prepare
from srcgrad.transforms.adjoint_facts import AdjointState, analyze


def facts_of(fn, wrt=(0,)):
    ctx = prepare(fn, wrt)
    ctx.entry = True
    tree = normalize(ctx)
    return tree, analyze(tree, ctx, {})


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


def _first_doubled(W):
    return W[0] * 2.0


def _first_tripled(W):
    return W[0] * 3.0


def operand_and_calls(x, W):
    y = x * W
    return np.sum(y) + _first_doubled(W) + _first_tripled(W)


def test_an_operand_handed_to_a_call_is_not_numeric():
    """W may be a list: the calls' adjoints for it are lists, which '+' would concatenate
    (the gradient came out [4.0] instead of [6.0] when it did)."""
    _, facts = facts_of(operand_and_calls, (0, 1))
    assert "x" in facts.numeric and "W" not in facts.numeric
    _, facts = facts_of(shapes, (0, 1))
    assert "x" in facts.numeric  # (np.sin(x): a rule's call)


@pytest.mark.parametrize("W", [[1.0], (1.0,), np.array([1.0])])
def test_a_list_operand_handed_to_two_calls_gets_the_sum_of_their_adjoints(W):
    got = srcgrad.grad(operand_and_calls, wrt=1)(np.ones(1), W)
    assert np.allclose(np.asarray(got, float), [6.0])


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


# -- zero adjoints ----------------------------------------------------------------------------
def test_adjoints_zero_after_the_backward_sweep_of_straight_code():
    _, facts = facts_of(reassigned)
    # bx is the gradient (written), b_t1 and by were used up; nothing may be the lazy zero
    assert facts.end == AdjointState(frozenset({"y", "_t1"}), frozenset())


def one_branch(x, c):
    y = 0.0
    if c > 0:
        y = x * 2.0
    return y


def test_an_adjoint_written_on_one_branch_only_may_be_zero():
    _, facts = facts_of(one_branch)
    assert "x" in facts.end.maybe and "x" not in facts.end.zero


def test_an_adjoint_written_in_a_loop_may_be_zero_at_its_top():
    tree, facts = facts_of(running_product, (0, 1))
    top = facts.loop_top(loops(tree)[0])
    assert "w" in top.maybe  # zero before the first backward iteration, written after
    assert "_t1" in top.zero  # used up in every iteration before the next reads it
    assert "x" not in top.zero | top.maybe  # the seed: a real value throughout


def nested(x, w):
    for i in range(2):
        for j in range(2):
            x = x * w
    return x


def test_nested_loops_get_their_own_tops():
    tree, facts = facts_of(nested, (0, 1))
    outer, inner = loops(tree)
    assert facts.loop_top(outer).maybe == {"w"}
    assert facts.loop_top(inner).maybe == {"w"}
    assert facts.loop_top(inner).zero == {"_t1"}


def test_a_loop_carrying_no_gradient_keeps_the_state_it_is_entered_with():
    def counted(x, n):
        s = 0.0
        for i in range(n):
            s = s + 1.0
        return x * s

    tree, facts = facts_of(counted)
    # s does not depend on x: no adjoint of it exists; b_t1 was used up before the loop
    assert facts.loop_top(loops(tree)[0]) == AdjointState(frozenset({"_t1"}), frozenset())


def test_the_facts_are_frozen():
    _, facts = facts_of(reassigned)
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.overwritten = frozenset()
    with pytest.raises(TypeError):
        facts.shape_root["y"] = "x"


# -- generation reads the facts ---------------------------------------------------------------
def deep(x, w):
    for i in range(2):
        for j in range(2):
            for k in range(2):
                x = x * w
    return x


def test_each_statement_is_differentiated_once(monkeypatch):
    """Loops take their state from the facts: no body is generated again per trial of a
    fixed point (which made transform time double with each nesting level, issue 14)."""
    import srcgrad
    import srcgrad.api
    from srcgrad.transforms.reverse import ReverseGenerator

    visits, alive = {}, []
    original = ReverseGenerator.backward_stmt

    def counting(self, s, state):
        # (kept alive: grad builds a scalar variant too, and a node freed in between could
        # lend its id to one of the other build's)
        alive.append(s)
        visits[id(s)] = visits.get(id(s), 0) + 1
        return original(self, s, state)

    monkeypatch.setattr(ReverseGenerator, "backward_stmt", counting)
    srcgrad.api._CACHE.clear()
    g = srcgrad.grad(deep, wrt=(0, 1))
    assert np.allclose(g(1.5, 0.9), (0.9 ** 8, 8 * 1.5 * 0.9 ** 7))
    assert visits and set(visits.values()) == {1}
