"""Forward mode by source transformation: srcgrad.jvp on the corpus against finite
differences and against the reverse mode (<u, J v> == <J^T u, v>), jacfwd/jacrev, the
generated code's shape, and a meta-test that every rule has a forward (jvp) part."""
import numpy as np
import pytest

import srcgrad
from corpus import CASES
from fdcheck import flatten, perturb
from srcgrad.api_forward import get_forward
from srcgrad.rules import all_rules


def random_like(x, rng):
    """A tangent structured like ``x`` (dicts, lists, tuples, objects of arrays/floats)."""
    leaves = [rng.standard_normal(leaf.shape) for leaf in flatten(x)]
    return with_leaves(x, iter(leaves)), leaves


def zero_like(x):
    return with_leaves(x, iter([np.zeros(leaf.shape) for leaf in flatten(x)]))


def with_leaves(x, it):
    """``x`` with its leaves replaced, in ``flatten`` order, by the items of ``it``."""
    if isinstance(x, dict):
        return {k: with_leaves(x[k], it) for k in sorted(x, key=str)}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[with_leaves(v, it) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(with_leaves(v, it) for v in x)
    if hasattr(x, "__dict__") and not isinstance(x, np.ndarray):
        import copy
        out = copy.copy(x)
        for k in sorted(vars(x)):
            setattr(out, k, with_leaves(vars(x)[k], it))
        return out
    leaf = next(it)
    return leaf if isinstance(x, np.ndarray) else float(leaf)


def case_tangents(case, rng):
    """Tangents for every argument: random for wrt arguments, zero for the others."""
    tangents, directions = [], {}
    for i, a in enumerate(case.args):
        if i in case.wrt:
            t, leaves = random_like(a, rng)
            directions[i] = leaves
        else:
            t = zero_like(a) if not isinstance(a, (int, str)) else 0.0
        tangents.append(t)
    return tuple(tangents), directions


def numeric_jvp(f, args, directions, kwargs, eps=1e-6):
    plus, minus = list(args), list(args)
    for i, leaves in directions.items():
        plus[i] = perturb(args[i], leaves, eps)
        minus[i] = perturb(args[i], leaves, -eps)
    return (np.asarray(f(*plus, **kwargs), dtype=float)
            - np.asarray(f(*minus, **kwargs), dtype=float)) / (2 * eps)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_jvp_matches_finite_differences(case):
    rng = np.random.default_rng(0)
    tangents, directions = case_tangents(case, rng)
    f = case.fn if not case.kwargs else (lambda *a: case.fn(*a, **case.kwargs))
    value, tangent = srcgrad.jvp(f, case.args, tangents)
    assert np.allclose(value, case.fn(*case.args, **case.kwargs))
    numeric = numeric_jvp(case.fn, case.args, directions, case.kwargs)
    assert np.shape(tangent) == np.shape(numeric)
    scale = max(1.0, float(np.max(np.abs(numeric))))
    assert np.allclose(tangent, numeric, rtol=1e-6, atol=1e-8 * scale), (tangent, numeric)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_jvp_and_vjp_agree(case):
    """<u, J v> from forward mode equals <J^T u, v> from reverse mode."""
    rng = np.random.default_rng(1)
    tangents, directions = case_tangents(case, rng)
    _, jv = srcgrad.jvp(case.fn, case.args, tangents)
    u = rng.standard_normal()
    grads = srcgrad.grad(case.fn, wrt=tuple(case.wrt))(*case.args)
    forward_side = u * float(np.sum(jv))
    reverse_side = 0.0
    for k, i in enumerate(case.wrt):
        for g, d in zip(flatten(grads[k]), directions[i]):
            reverse_side += u * float(np.sum(g * d))
    assert forward_side == pytest.approx(reverse_side, rel=1e-9, abs=1e-10)


# -- generated code ------------------------------------------------------------------------
def poly(x, y):
    z = x * y
    return z * z + y


def test_generated_code_is_labelled_and_readable():
    text = get_forward(poly, (0,)).source
    assert "def poly_jvp(dx, x, y):" in text
    assert "# forward mode" in text
    assert "test_forward.py:" in text and "z = x * y" in text
    assert "dy" not in text.replace("dy =", "")  # y has no tangent: wrt is x only
    assert text == get_forward(poly, (0,)).source


def branchy(x, n):
    s = 0.0
    for i in range(n):
        if i % 2:
            s = s + x * i
    return s


def test_zero_tangents_are_lazy():
    """A tangent that starts zero is the lazy 0.0 where control flow merges, never an array
    of zeros, and a value not depending on x gets no tangent at all."""
    text = get_forward(branchy, (0,)).source
    assert "zeros" not in text
    assert "di =" not in text
    value, tangent = srcgrad.jvp(branchy, (0.5, 4), (1.0, 0))
    assert tangent == pytest.approx(1 + 3)


def test_jvp_tangent_structure_checked():
    with pytest.raises(srcgrad.SrcgradError, match="structure and shape"):
        srcgrad.jvp(poly, (np.ones(3), 1.0), (np.ones(2), 0.0))


def test_jvp_of_integer_argument_ignores_its_tangent():
    value, tangent = srcgrad.jvp(branchy, (0.5, 4), (1.0, 7))
    assert tangent == pytest.approx(4.0)


# -- Jacobians -----------------------------------------------------------------------------
def vec_fn(x):
    return np.tanh(x[:3] * x[1:]) + np.sum(x ** 2)


def mat_fn(a):
    return np.sin(a @ a.T) * 2.0


def loop_fn(x):
    y = x
    for i in range(3):
        y = np.cos(y) * x + y[::-1]
    return y


def reduce_axis_fn(x):
    return np.sum(x, axis=0) * np.exp(x[0])


@pytest.mark.parametrize("f, shape", [(vec_fn, (4,)), (mat_fn, (2, 3)), (loop_fn, (3,)),
                                      (reduce_axis_fn, (3,))])
def test_jacfwd_equals_jacrev_equals_finite_differences(f, shape):
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, size=shape)
    jf = srcgrad.jacfwd(f)(x)
    jr = srcgrad.jacrev(f)(x)
    out = f(x)
    assert jf.shape == jr.shape == np.shape(out) + x.shape
    eps = 1e-6
    numeric = np.zeros_like(jf)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        numeric[(Ellipsis,) + idx] = (f(x + e) - f(x - e)) / (2 * eps)
    assert np.allclose(jf, jr, rtol=1e-12, atol=1e-12)
    assert np.allclose(jf, numeric, rtol=1e-6, atol=1e-8)
    assert srcgrad.jacobian is srcgrad.jacrev


def test_jacfwd_of_scalar_input():
    j = srcgrad.jacfwd(lambda t: np.array([np.sin(t), t * t]))(0.3)
    assert np.allclose(j, [np.cos(0.3), 0.6])


# -- every rule has a forward part ---------------------------------------------------------
def test_every_rule_has_a_jvp():
    # srcgrad's own rules (tests register user rules with a vjp only, which is allowed)
    missing = sorted(r.name for r in all_rules(builtin_only=True) if r.jvp is None)
    assert not missing, f"rules without a forward-mode (jvp) part: {', '.join(missing)}"
