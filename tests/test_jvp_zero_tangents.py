"""Forward-mode rules with several differentiable arguments, called the way generated code
calls them when only some arguments are varied: every other tangent is the lazy zero 0.0
(``forward.rule_tangent`` and ``api_forward._rule_jvp`` pass ``runtime.ZERO`` for an
argument that is constant or absent). Each non-empty proper subset of the given operands is
left without a tangent in turn, and the sum of the active contributions is compared with a
central difference along the active directions only."""
from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest

import srcgrad

from srcgrad.rules import all_rules
from srcgrad.rules.registry import load_deferred

from rule_checks import Point, check_jvp
from test_rules import rng_for

load_deferred()
SEVERAL = [r for r in all_rules(builtin_only=True)
           if r.jvp is not None and r.domain is not None and len(r.diff_args) > 1]


def active_subsets(given):
    """Every subset of ``given`` that leaves at least one operand varied and one not."""
    for n in range(1, len(given)):
        yield from itertools.combinations(given, n)


@pytest.mark.parametrize("rule", SEVERAL, ids=[r.name for r in SEVERAL])
def test_jvp_with_zero_tangents(rule):
    rng = rng_for(rule.name)
    for args, kwargs in rule.domain(rng):
        given = Point(rule, tuple(args), dict(kwargs), rng).given
        for active in active_subsets(given):
            check_jvp(Point(rule, tuple(args), dict(kwargs), rng, active=active))


def test_some_rules_have_several_differentiable_arguments():
    assert len(SEVERAL) > 50


# -- what users met: a rule called whole, with the lazy zero for the constant operand ---------
_W = np.linspace(-1.0, 1.0, 6).reshape(3, 2)


def apply_op(x, op):
    # op is known only at run time: its rule is called whole (api_forward._rule_jvp)
    return np.sum(np.tanh(op(x, _W)))


@pytest.mark.parametrize("op", [np.matmul, operator.matmul, np.dot, np.vdot])
def test_forward_mode_of_a_rule_known_at_run_time(op):
    x = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
    v = np.array([[1.0, 0.5, -0.5], [0.2, -0.3, 0.7]])
    _, t = srcgrad.jvp(lambda x: apply_op(x, op), (x,), (v,))
    eps = 1e-6
    numeric = (apply_op(x + eps * v, op) - apply_op(x - eps * v, op)) / (2 * eps)
    assert np.isclose(t, numeric, rtol=1e-6, atol=1e-9)


def matmul_loss(x):
    return np.sum(np.tanh(x @ _W))


def test_inlined_contributions_carry_no_lazy_zero_guard():
    # the active tangent is dense where a rule is inlined: its guard would only be noise
    # (and numba has no lazy zero)
    srcgrad.jvp(matmul_loss, (np.ones((2, 3)),), (np.ones((2, 3)),))
    text = srcgrad.source(matmul_loss, "jvp")
    assert "np.matmul(dx, _W)" in text and "is_zero" not in text
