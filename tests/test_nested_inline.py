"""grad inside differentiated code with the gradient's sweeps inlined into its wrapper
(issue 9, transforms/inline_sweeps.py): the flattening on small functions, then values at
second and third order, in reverse and forward mode, against written-out derivatives and
finite differences, for inner functions with loops, branches, helpers and closures, and for
an inner function reading the outer variable (perturbation confusion, also as a closure).

The functions are module globals: ``srcgrad.grad(f)(x)`` of a global ``f`` is made at
transform time (transforms/gradient_calls.py) and differentiated as a known callee.
"""
import ast
import functools
import os
import sys

import numpy as np
import pytest

import srcgrad
from srcgrad.transforms.inline_sweeps import Sweep, flatten_wrapper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
from bench_nested import rprime, rprime_written  # noqa: E402


def central(f, x, eps=1e-5):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


# -- the flattening on its own -----------------------------------------------------------------
FWD = """
def f_fwd(x, y):
    t = x * y
    u = t + x
    return u, (x, y, t)
"""
BWD = """
def f_bwd(saved, g):
    x, y, t = saved
    gx = g * (y + 1.0)
    gy = g * x
    return gx, gy
"""
WRAPPER = """
def f_grad(x, y):
    value, saved = f_fwd(x, y)
    grads = f_bwd(saved, 1.0)
    return grads[0], grads[1], value
"""


def _flatten(wrapper=WRAPPER, fwd=FWD, bwd=BWD, free=frozenset()):
    namespace: dict = {}
    exec(fwd + bwd, namespace)
    sweeps = {id(namespace["f_fwd"]): ast.parse(fwd).body[0],
              id(namespace["f_bwd"]): ast.parse(bwd).body[0]}

    def inlinable(obj, attribute):
        definition = sweeps.get(id(obj)) if attribute is None else None
        return None if definition is None else Sweep(definition, {}, free, id(obj), "<t>")

    bound = {"f_fwd": namespace["f_fwd"], "f_bwd": namespace["f_bwd"]}
    return flatten_wrapper(ast.parse(wrapper).body[0], bound, inlinable), bound


def test_a_wrapper_becomes_one_function_without_the_tuples_its_sweeps_pass():
    (definition, helpers, _), bound = _flatten()
    text = ast.unparse(definition)
    assert "f_fwd" not in text and "f_bwd" not in text and helpers == {}
    assert not any(isinstance(n, ast.Tuple) for n in ast.walk(definition.body[-1].value.elts[0])) \
        and sum(isinstance(n, ast.Tuple) for n in ast.walk(definition)) == 1  # (the return's)
    namespace: dict = {}
    exec(text, namespace)
    plain: dict = dict(bound)
    exec(WRAPPER, plain)
    for x, y in [(1.5, -2.0), (0.0, 3.0)]:
        assert namespace["f_grad"](x, y) == plain["f_grad"](x, y)


def test_an_unpacking_of_a_display_assigns_after_evaluating_every_item():
    # the inlined return swaps its operands: a, b = (b, a) must not read the new a
    fwd = "def f_fwd(x, y):\n    a = x\n    b = y\n    a, b = (b, a)\n    return a - b, (a, b)\n"
    bwd = "def f_bwd(saved, g):\n    a, b = saved\n    return g * a, g * b\n"
    (definition, _, _), bound = _flatten(fwd=fwd, bwd=bwd)
    namespace: dict = {}
    exec(ast.unparse(definition), namespace)
    plain: dict = dict(bound)
    exec(WRAPPER, plain)
    assert namespace["f_grad"](1.0, 5.0) == plain["f_grad"](1.0, 5.0) == (5.0, 1.0, 4.0)


def test_a_sweep_reading_a_global_named_like_a_local_of_the_wrapper_stays_a_call():
    # the wrapper's local 'value' would shadow the global the sweep reads: not inlined
    fwd = "def f_fwd(x, y):\n    return x * value, (x, y)\n"
    bwd = "def f_bwd(saved, g):\n    x, y = saved\n    return g * value, 0.0\n"
    flat, _ = _flatten(fwd=fwd, bwd=bwd, free=frozenset({"value"}))
    assert flat is None  # (nothing inlinable: the plain wrapper is used)


def test_a_sweep_with_a_nested_function_is_not_inlined():
    fwd = "def f_fwd(x, y):\n    h = lambda v: v * y\n    return h(x), (x, y)\n"
    flat, _ = _flatten(fwd=fwd, bwd=BWD.replace("x, y, t = saved", "x, y = saved"))
    text = ast.unparse(flat[0])
    assert "f_fwd(" in text and "f_bwd(" not in text  # (the backward sweep alone is inlined)


# -- the benchmark's functions ------------------------------------------------------------------
def test_the_inner_gradient_is_differentiated_as_one_flat_function():
    """Fails before the inlining: grad(loglike)'s wrapper called loglike's sweeps, and its
    adjoint called their adjoints (loglike_fwd_adj, loglike_bwd_adj__saved, ...)."""
    from srcgrad.api_forward import source_function
    wrapper = source_function(srcgrad.grad(__import__("bench_nested").loglike), flat=True)
    assert "flat gradient" in wrapper.__code__.co_filename
    shown = srcgrad.source(wrapper)
    assert "_fwd_adj" not in shown and "_bwd_adj" not in shown
    assert "gammaln" in shown and "digamma" in shown  # (the inner function's own statements)


def test_at_third_order_the_flattened_inner_wrapper_is_inlined_too():
    """grad(rprime)'s wrapper inlines rprime's sweeps, and the sweeps of grad(loglike)'s
    flattened wrapper they call (a closure over its factory's objects, which nothing
    rebinds): no sweep of a sweep is left to call. Before, loglike_grad_adj was called."""
    from inspect import getsource
    from srcgrad.api_forward import source_function
    text = getsource(source_function(srcgrad.grad(rprime), flat=True))
    assert "loglike_grad" not in text.split('"""')[-1]
    assert "_adj" not in text and ".fwd(" not in text and ".bwd(" not in text


@pytest.mark.parametrize("r", [0.7, 2.0, 5.5])
def test_rprime_at_second_third_and_fourth_order(r):
    g, w = rprime, rprime_written
    for order in range(1, 4):
        g, w = srcgrad.grad(g), srcgrad.grad(w)
        assert g(r) == pytest.approx(w(r), rel=1e-9)
    g2, w1 = srcgrad.grad(srcgrad.grad(rprime)), srcgrad.grad(rprime_written)
    assert g2(r) == pytest.approx(central(w1, r), rel=1e-6)


def test_rprime_in_forward_mode_and_its_hessian():
    _, t = srcgrad.jvp(rprime, (2.0,), (1.0,))
    assert t == pytest.approx(srcgrad.grad(rprime_written)(2.0), rel=1e-9)
    first = srcgrad.grad(rprime)
    _, t2 = srcgrad.jvp(first, (2.0,), (1.0,))
    assert t2 == pytest.approx(srcgrad.grad(srcgrad.grad(rprime_written))(2.0), rel=1e-9)
    h = srcgrad.hessian(rprime)(np.float64(2.0))
    assert float(h) == pytest.approx(srcgrad.grad(srcgrad.grad(rprime_written))(2.0), rel=1e-8)


# -- inner functions with loops, branches, helpers -----------------------------------------------
C = np.array([0.5, -1.0, 2.0])


def smooth_step(v, k):
    if k > 1:
        return np.tanh(v) * v
    return np.sin(v)


def looped(x, y):
    acc = 0.0
    for k in range(3):
        acc = acc + smooth_step(x * C[k] + y, k) * y
    while acc > 10.0:
        acc = acc / 2.0
    return acc + np.sum(np.exp(C * x))


def looped_x(x, y):
    """d looped / dx, written out."""
    acc = 0.0
    for k in range(3):
        v = x * C[k] + y
        if k > 1:
            d = (1 - np.tanh(v) ** 2) * v + np.tanh(v)
        else:
            d = np.cos(v)
        acc = acc + d * C[k] * y
    return acc + np.sum(C * np.exp(C * x))


def outer_looped(x):
    return srcgrad.grad(looped)(x, 0.3 * x) * x


def outer_looped_written(x):
    return looped_x(x, 0.3 * x) * x


@pytest.mark.parametrize("x", [-0.4, 0.8])
def test_an_inner_function_with_loops_branches_and_helpers(x):
    g, w = outer_looped, outer_looped_written
    for order in range(1, 4):
        g, w = srcgrad.grad(g), srcgrad.grad(w)
        assert g(x) == pytest.approx(w(x), rel=1e-9, abs=1e-12)
    assert srcgrad.grad(outer_looped)(x) == pytest.approx(central(outer_looped_written, x),
                                                          rel=1e-6)
    assert srcgrad.grad(srcgrad.grad(outer_looped))(x) == pytest.approx(
        central(srcgrad.grad(outer_looped_written), x), rel=1e-6)
    _, t = srcgrad.jvp(srcgrad.grad(outer_looped), (x,), (1.0,))
    assert t == pytest.approx(srcgrad.grad(srcgrad.grad(outer_looped_written))(x), rel=1e-9)


def with_default(x, scale=2.0):
    return scale * x ** 3


def outer_default(x):
    return srcgrad.grad(with_default)(x) * x  # 3 * 2 x^3 = 6 x^3


_value = 3.0  # a global named like the wrapper's local


def reads_value_global(x):
    return _value * x ** 2


def outer_value_global(x):
    return srcgrad.grad(reads_value_global)(x) * x  # 2 * 3 x^2 = 6 x^2


def make_closure(c):
    def inner(x):
        return c * x ** 3
    return inner


CLOSED = make_closure(2.0)


def outer_closure(x):
    return srcgrad.grad(CLOSED)(x) * x  # 6 x^3


def test_defaults_closures_and_a_global_named_like_a_wrapper_local():
    x = 0.7
    for f, third in [(outer_default, 36.0), (outer_closure, 36.0), (outer_value_global, 0.0)]:
        g3 = srcgrad.grad(srcgrad.grad(srcgrad.grad(f)))
        assert g3(x) == pytest.approx(third, abs=1e-9)
    assert srcgrad.grad(outer_value_global)(x) == pytest.approx(12.0 * x, rel=1e-12)
    assert srcgrad.grad(outer_default)(x) == pytest.approx(18.0 * x ** 2, rel=1e-12)


# -- perturbation confusion --------------------------------------------------------------------
def times(y, x):
    return x * y


def outer_reads_its_variable(x):
    # d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x: the inner derivative is x, not 1
    return x * srcgrad.grad(times)(1.5, x)


def outer_closure_reads(x):
    def inner(y):
        return x * y
    return x * srcgrad.grad(inner)(1.5)


@pytest.mark.parametrize("x", [0.5, -2.0])
def test_an_inner_gradient_of_a_function_reading_the_outer_variable(x):
    f = outer_reads_its_variable
    assert srcgrad.grad(f)(x) == pytest.approx(2 * x, rel=1e-12)
    assert srcgrad.grad(srcgrad.grad(f))(x) == pytest.approx(2.0, rel=1e-12)
    assert srcgrad.grad(srcgrad.grad(srcgrad.grad(f)))(x) == pytest.approx(0.0, abs=1e-12)
    _, t = srcgrad.jvp(f, (x,), (1.0,))
    assert t == pytest.approx(2 * x, rel=1e-12)


def outer_lambda_reads(x):
    return x * srcgrad.grad(lambda y: x * y)(1.5)


def outer_partial_reads(x):
    return x * srcgrad.grad(functools.partial(times, x=x))(1.5)


def outer_closure_loop(x):
    # a closure with a loop, a branch and a helper, over two of the caller's variables
    c = np.cos(x)

    def inner(y):
        s = 0.0
        for i in range(3):
            if y > 0:
                s = s + np.sin(c * y) * x * i
            else:
                s = s - y * c
        return s * x
    return np.exp(0.3 * x) * srcgrad.grad(inner)(0.7 + 0.1 * x)


def outer_closure_array(x):
    v = np.array([1.0, 2.0, 3.0]) * x

    def inner(y):
        return np.sum(np.tanh(v * y) ** 2)
    return np.sum(srcgrad.grad(inner)(np.array([0.3, -0.2, 0.5])) * v)


def outer_value_and_grad_at_once(x):
    return srcgrad.value_and_grad(lambda y, z: x * y * y * z + np.sin(x * z),
                                  argnums=1)(1.2, x)[1] * x


def written_value_and_grad(x):
    return (x * 1.2 * 1.2 + x * np.cos(x * x)) * x


CLOSURE_CASES = {
    "def": (outer_closure_reads, lambda x: 2 * x, lambda x: 2.0),
    "lambda": (outer_lambda_reads, lambda x: 2 * x, lambda x: 2.0),
    "partial": (outer_partial_reads, lambda x: 2 * x, lambda x: 2.0),
    "loop": (outer_closure_loop, None, None),
    "array": (outer_closure_array, None, None),
    "value_and_grad": (outer_value_and_grad_at_once, srcgrad.grad(written_value_and_grad),
                       srcgrad.grad(srcgrad.grad(written_value_and_grad))),
}


@pytest.mark.parametrize("which", sorted(CLOSURE_CASES))
@pytest.mark.parametrize("x", [0.5, -1.3])
def test_an_inner_gradient_of_a_closure_over_the_outer_variable(which, x):
    """The closure form of perturbation confusion: the inner derivative is taken with the
    outer variable held, then differentiated with respect to it (was refused, differentiating
    grad() itself: MissingRuleError 'getattr')."""
    f, first, second = CLOSURE_CASES[which]
    g1 = srcgrad.grad(f)
    g2 = srcgrad.grad(g1)
    assert g1(x) == pytest.approx(central(f, x), rel=1e-7, abs=1e-9)
    assert g2(x) == pytest.approx(central(g1, x), rel=1e-7, abs=1e-8)
    if first is not None:
        assert g1(x) == pytest.approx(first(x), rel=1e-12)
        assert g2(x) == pytest.approx(second(x), rel=1e-12)
    _, t = srcgrad.jvp(f, (x,), (1.0,))
    assert t == pytest.approx(g1(x), rel=1e-12)
    _, t2 = srcgrad.jvp(g1, (x,), (1.0,))
    assert t2 == pytest.approx(g2(x), rel=1e-12)


def outer_closure_reads_a_constant_too(x):
    s = 2.0
    def inner(y):
        return s * x * y
    return x * srcgrad.grad(inner)(1.5)


def outer_closure_reads_a_function(x):
    def square(t):
        return t * t
    def inner(y):
        return square(x) * y
    return x * srcgrad.grad(inner)(1.5)


def test_a_closure_gradient_at_third_order():
    """``inner`` reading nothing of ``outer_closure_reads`` but ``x`` is compiled once at
    module level taking ``x`` as a keyword (gradient_calls._call_closed_twin): a known
    callee, at any order (x * x: 2, then 0). One reading another local (``s``) too, passed
    at the call as a keyword (was refused at third order: 2 s x^2, 4 s, 0). One calling
    another nested function is called at run time, and refused at third order at the
    user's line."""
    assert srcgrad.grad(srcgrad.grad(outer_closure_reads))(0.5) == pytest.approx(2.0)
    assert srcgrad.grad(srcgrad.grad(srcgrad.grad(outer_closure_reads)))(0.5) == 0.0
    f = outer_closure_reads_a_constant_too
    assert srcgrad.grad(srcgrad.grad(f))(0.5) == pytest.approx(4.0, rel=1e-12)
    assert srcgrad.grad(srcgrad.grad(srcgrad.grad(f)))(0.5) == 0.0
    with pytest.raises(srcgrad.SrcgradError, match=r"third derivative through a gradient of "
                       r"inner\(\).*srcgrad.grad\(f\)\(\.\.\.\) of a module-level f") as e:
        srcgrad.grad(srcgrad.grad(srcgrad.grad(outer_closure_reads_a_function)))(0.5)
    assert "test_nested_inline.py" in "\n".join(getattr(e.value, "__notes__", [])) + str(e.value)


def made_not_called(x):
    g = srcgrad.grad(lambda y: x * y)
    return g(1.0)


def made_then_differentiated_again(x):
    g = srcgrad.grad(lambda y: x * y ** 2)
    gg = srcgrad.grad(g)  # (a gradient of g, whose value carries x)
    return gg(1.0)


def test_a_closure_gradient_made_and_called_later():
    """Made at its calls (transforms/gradient_values.py; tests/test_closure_gradients.py):
    d/dx of (d/dy x y at y=1) is 1. A gradient of that gradient is refused at its line."""
    assert srcgrad.grad(made_not_called)(0.5) == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(srcgrad.SrcgradError, match=r"test_nested_inline.py:\d+: a gradient "
                       r"of a function value carrying differentiable values"):
        srcgrad.grad(made_then_differentiated_again)(0.5)


# -- inner functions updating arrays in place -----------------------------------------------------
def doubles_first(x):
    x[0] = 2.0 * x[0]  # (its own parameter: grad's entry sweeps may update it)
    return np.sum(x ** 2)


def outer_in_place(x):
    return np.sum(srcgrad.grad(doubles_first)(x * 1.0) * x)  # sum((8, 2, 2) * x * x)


def updates_copy(x):
    y = x * 1.0
    for i in range(2):
        if y[i] > 0:
            y[i] = np.sin(y[i]) * y[i + 1]
    return np.sum(y ** 3)


def outer_updates_copy(x):
    return np.sum(np.cos(srcgrad.grad(updates_copy)(x)) * x)


def test_inner_functions_updating_arrays_in_place():
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(srcgrad.grad(outer_in_place)(x.copy()),
                               2 * np.array([8.0, 2.0, 2.0]) * x, rtol=1e-12)
    g = srcgrad.grad(outer_updates_copy)(x.copy())
    fd = [central(lambda t: outer_updates_copy(x + t * e), 0.0) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    second = srcgrad.grad(lambda v: np.sum(srcgrad.grad(outer_updates_copy)(v) * x))
    fd2 = [central(lambda t: np.sum(srcgrad.grad(outer_updates_copy)(x + t * e) * x), 0.0)
           for e in np.eye(3)]
    np.testing.assert_allclose(second(x.copy()), fd2, rtol=1e-5)


# -- a gradient's generated wrapper is its own -------------------------------------------------
def cubic(x):
    return x ** 3 + np.sin(x)


def test_a_gradient_of_a_gradient_differentiated_before_makes_its_own_wrapper():
    """grad(d1) copies d1's __dict__ (functools.wraps), where d1 keeps its generated wrapper
    once differentiated: grad(grad(d1)) took d1's wrapper for grad(d1)'s, and gave the second
    derivative for the third (a silent wrong value before)."""
    d1 = srcgrad.grad(cubic)

    def twice(x):
        return 2.0 * d1(x)
    x = 0.5
    assert srcgrad.grad(twice)(x) == pytest.approx(2 * (6 * x - np.sin(x)), rel=1e-12)
    d2 = srcgrad.grad(d1)  # (made after d1 was differentiated)
    assert srcgrad.grad(d2)(x) == pytest.approx(6.0 - np.cos(x), rel=1e-12)
    _, t = srcgrad.jvp(d2, (x,), (1.0,))
    assert t == pytest.approx(6.0 - np.cos(x), rel=1e-12)
