"""Differentiating with respect to objects of user-defined vector spaces (srcgrad/vspace.py):
``srcgrad.register_vspace(cls, zeros=, add=)`` plus derivative rules on the functions
the objects flow through. Checked against central differences along the objects' own
directions (``f + eps v``), paired with the gradient by the space's inner product.
"""
import numpy as np
import pytest

import srcgrad
from srcgrad import runtime
from srcgrad.errors import NonDifferentiableError, SrcgradError, UnsupportedFeatureError


# -- a kernel expansion: the function x -> sum_c w_c k(x, c), held as {c: w_c} --------------
def gauss(a, b):
    return np.exp(-0.5 * (a - b) ** 2)


class Expansion:
    def __init__(self, weights=None, kernel=gauss):
        self.weights = dict(weights or {})
        self.kernel = kernel

    def __call__(self, x):
        total = 0.0
        for c, w in self.weights.items():
            total = total + w * self.kernel(x, c)
        return total

    def value_at(self, x):  # (a method with its own rule, below)
        return self(x)

    def __add__(self, other):  # (its own operators: unregistered, srcgrad refuses it)
        return expansion_add(self, other)

    def __mul__(self, a):
        return expansion_scale(self, a)


def expansion_add(a, b):
    out = dict(a.weights)
    for c, w in b.weights.items():
        out[c] = out.get(c, 0.0) + w
    return Expansion(out, a.kernel)


def expansion_scale(a, s):
    return Expansion({c: s * w for c, w in a.weights.items()}, a.kernel)


def expansion_inner(a, b):
    """The RKHS inner product <a, b>: the pairing of a gradient with a direction."""
    return sum(wa * wb * a.kernel(ca, cb) for ca, wa in a.weights.items()
               for cb, wb in b.weights.items())


CALLS = {"add": 0, "zeros": 0}


def counted_add(a, b):
    CALLS["add"] += 1
    return expansion_add(a, b)


def counted_zeros(a):
    CALLS["zeros"] += 1
    return Expansion({}, a.kernel)


srcgrad.register_vspace(Expansion, zeros=counted_zeros, add=counted_add)


@srcgrad.rule(Expansion.__call__, diff_args=(0, 1))
def _expansion_call_vjp(g, ans, f, x):
    # d f(x) / d f is the representer k(., x); d f(x) / dx sums the kernel's slope
    slope = 0.0
    for c, w in f.weights.items():
        slope = slope + w * f.kernel(x, c) * (c - x)
    return Expansion({x: g}, f.kernel), g * slope


@_expansion_call_vjp.defjvp
def _expansion_call_jvp(df, dx, ans, f, x):
    slope = 0.0
    for c, w in f.weights.items():
        slope = slope + w * f.kernel(x, c) * (c - x)
    return df(x), dx * slope


def deriv_at(f, x):
    """f'(x), a second function of the object (a plain function with its own rule)."""
    total = 0.0
    for c, w in f.weights.items():
        total = total + w * f.kernel(x, c) * (c - x)
    return total


@srcgrad.rule(deriv_at, diff_args=(0,))
def _deriv_at_vjp(g, ans, f, x):
    # f'(x) = sum_c w_c k(x, c) (c - x) is linear in f: its representer is d/dx k(., x)
    return Expansion({x + 1e-4: g / 2e-4, x - 1e-4: -g / 2e-4}, f.kernel)


@srcgrad.rule(Expansion.value_at, diff_args=(0,))
def _value_at_vjp(g, ans, f, x):
    return Expansion({x: g}, f.kernel)


# -- checks ------------------------------------------------------------------------------
def directional(loss, f, v, args=(), eps=1e-6):
    up = loss(expansion_add(f, expansion_scale(v, eps)), *args)
    down = loss(expansion_add(f, expansion_scale(v, -eps)), *args)
    return (up - down) / (2 * eps)


def random_expansion(rng, n=4):
    return Expansion({float(c): float(w) for c, w in zip(rng.normal(size=n) * 2,
                                                         rng.normal(size=n))})


def check_against_fd(loss, f, args=(), n_dirs=3, seed=0, rtol=1e-6):
    rng = np.random.default_rng(seed)
    g = srcgrad.grad(loss)(f, *args)
    assert type(g) is Expansion
    for _ in range(n_dirs):
        v = random_expansion(rng)
        assert np.isclose(expansion_inner(g, v), directional(loss, f, v, args), rtol=rtol,
                          atol=1e-8)
    return g


XS = [0.0, 0.5, 1.0, 2.0, 3.5]
YS = [1.0, 2.0, 3.0, 2.0, 1.0]


def rkhs_logprob(f, xs, ys):
    # the rkhs example's objective: a sum over a generator of calls of the object
    return -sum((f(x) - y) ** 2 for x, y in zip(xs, ys))


def test_rkhs_objective_against_central_differences():
    rng = np.random.default_rng(1)
    for seed in range(3):
        check_against_fd(rkhs_logprob, random_expansion(rng, 5), (XS, YS), seed=seed)


def test_rkhs_fit_by_gradient_ascent():
    """The rkhs example's loop; each gradient checked against the one written by hand,
    sum_i -2 (f(x_i) - y_i) k(., x_i), and added to f by the class's own '+'."""
    f = Expansion()
    for _ in range(100):
        g = srcgrad.grad(rkhs_logprob)(f, XS, YS)
        assert type(g) is Expansion and g.kernel is gauss
        assert g.weights == pytest.approx({x: -2.0 * (f(x) - y) for x, y in zip(XS, YS)},
                                          rel=1e-14, abs=1e-15)
        f = f + g * 0.05
    assert -rkhs_logprob(f, XS, YS) < 0.1  # (19 at the start)


def test_value_and_grad_and_vjp():
    f = random_expansion(np.random.default_rng(2))
    value, g = srcgrad.value_and_grad(rkhs_logprob)(f, XS, YS)
    assert value == pytest.approx(rkhs_logprob(f, XS, YS), rel=1e-14)
    out, pullback = srcgrad.vjp(rkhs_logprob, f, XS, YS)
    assert out == pytest.approx(value, rel=1e-14)
    g3 = pullback(3.0)[0]
    assert type(g3) is Expansion
    v = random_expansion(np.random.default_rng(3))
    assert expansion_inner(g3, v) == pytest.approx(3.0 * expansion_inner(g, v), rel=1e-12)


def loop_and_branch(f, xs, scale):
    total = 0.0
    for x in xs:
        if x > 0.7:
            total = total + scale * f(x) ** 2
        else:
            total = total - f(x)
    return total


def test_inside_a_loop_and_a_branch():
    f = random_expansion(np.random.default_rng(4))
    check_against_fd(loop_and_branch, f, (XS, 1.5))
    check_against_fd(loop_and_branch, f, ([0.1, 0.2], 1.5))  # the else branch only


def two_calls(f, a, b):
    return f(a) * f(b) + np.sin(deriv_at(f, a))


def test_contributions_accumulate_with_the_registered_add():
    f = random_expansion(np.random.default_rng(5))
    before = CALLS["add"]
    g = check_against_fd(two_calls, f, (0.3, 1.7), rtol=1e-5)
    assert CALLS["add"] > before  # the three contributions were added by the space's add
    assert set(g.weights) == {0.3, 1.7, 0.3 + 1e-4, 0.3 - 1e-4}


def unused(f, x, use):
    if use:
        return f(x)
    return x * x


def test_a_zero_cotangent_is_the_registered_zero():
    f = random_expansion(np.random.default_rng(6))
    before = CALLS["zeros"]
    g = srcgrad.grad(unused)(f, 0.5, False)
    assert type(g) is Expansion and g.weights == {} and g.kernel is f.kernel
    assert CALLS["zeros"] > before
    g = srcgrad.grad(unused)(f, 0.5, True)
    assert g.weights == {0.5: 1.0}


def helper(f, x):
    return f(x) * x


def through_a_helper(f, xs):
    total = 0.0
    for x in xs:
        total = total + helper(f, x)
    return total


def test_through_a_user_helper():
    check_against_fd(through_a_helper, random_expansion(np.random.default_rng(7)), (XS,))


def through_a_method(f, xs):
    total = 0.0
    for x in xs:
        total = total + np.cos(f.value_at(x)) * f(x)
    return total


def test_through_a_ruled_method():
    check_against_fd(through_a_method, random_expansion(np.random.default_rng(16)), (XS,))


def in_a_list(fs, x):
    return fs[0](x) * fs[1](x + 1.0)


def test_inside_a_list_argument():
    rng = np.random.default_rng(8)
    fs = [random_expansion(rng), random_expansion(rng)]
    g = srcgrad.grad(in_a_list)(fs, 0.4)
    assert [type(gi) for gi in g] == [Expansion, Expansion]
    v = random_expansion(rng)
    for i in range(2):
        def partial(fi, i=i):
            return in_a_list([fi if j == i else fs[j] for j in range(2)], 0.4)
        assert expansion_inner(g[i], v) == pytest.approx(directional(partial, fs[i], v),
                                                          rel=1e-6)


def product(f, a, b):
    return f(a) * f(b) * a


def test_with_respect_to_the_object_and_a_float():
    f = random_expansion(np.random.default_rng(9))
    gf, ga = srcgrad.grad(product, (0, 1))(f, 0.3, 1.7)
    eps = 1e-6
    fd = (product(f, 0.3 + eps, 1.7) - product(f, 0.3 - eps, 1.7)) / (2 * eps)
    assert ga == pytest.approx(fd, rel=1e-6)
    assert gf.weights == pytest.approx(srcgrad.grad(product)(f, 0.3, 1.7).weights, rel=1e-15)
    check_against_fd(product, f, (0.3, 1.7))


def test_forward_mode_with_the_rules_jvp():
    rng = np.random.default_rng(10)
    f, v = random_expansion(rng), random_expansion(rng)
    value, tangent = srcgrad.jvp(rkhs_logprob, (f, XS, YS), (v, None, None))
    assert value == pytest.approx(rkhs_logprob(f, XS, YS), rel=1e-14)
    assert tangent == pytest.approx(directional(rkhs_logprob, f, v, (XS, YS)), rel=1e-6)
    _, tangent = srcgrad.jvp(loop_and_branch, (f, XS, 1.5), (v, None, 0.0))
    assert tangent == pytest.approx(directional(loop_and_branch, f, v, (XS, 1.5)), rel=1e-6)


# -- what stays refused ------------------------------------------------------------------
class Unregistered:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return self.w * x

    def __add__(self, other):
        return Unregistered(self.w + other.w)


def test_an_unregistered_class_with_operators_is_still_refused():
    with pytest.raises(NonDifferentiableError, match="with its own __add__.*register_vspace"):
        srcgrad.grad(lambda f, x: f(x))(Unregistered(2.0), 3.0)


def reads_an_attribute(f, x):
    return f.weights[0.5] * x


def test_reading_an_attribute_is_refused_at_the_line():
    f = Expansion({0.5: 2.0})
    with pytest.raises(UnsupportedFeatureError, match="attribute 'weights' of an object of Expansion") \
            as info:
        srcgrad.grad(reads_an_attribute)(f, 3.0)
    assert "test_vspace.py" in str(info.value) + "".join(getattr(info.value, "__notes__", []))


def adds_two(f, h, x):
    return (f + h)(x)


def test_operators_on_registered_objects_are_refused():
    rng = np.random.default_rng(11)
    with pytest.raises(UnsupportedFeatureError, match="arithmetic operator applied to an "
                                                      "object of Expansion"):
        srcgrad.grad(adds_two)(random_expansion(rng), random_expansion(rng), 0.5)


def scales_by(f, w, x):
    return (f * w)(x)


def test_an_operator_with_a_differentiated_number_is_refused():
    f = random_expansion(np.random.default_rng(14))
    with pytest.raises(UnsupportedFeatureError,
                       match="operator applied to an object of Expansion"):
        srcgrad.grad(scales_by, (0, 1))(f, 2.0, 0.5)


def in_a_dict(fs, x):
    return fs["a"](x) - 2.0 * fs["b"](x)


def test_inside_a_dict_argument():
    rng = np.random.default_rng(15)
    fs = {"a": random_expansion(rng), "b": random_expansion(rng)}
    g = srcgrad.grad(in_a_dict)(fs, 0.4)
    assert g["a"].weights == pytest.approx({0.4: 1.0})
    assert g["b"].weights == pytest.approx({0.4: -2.0})


def test_forward_mode_through_a_rule_without_jvp_is_refused_at_its_vjp():
    """Forward mode transposes a vjp by differentiating it, and value_at's builds an
    Expansion from the cotangent: refused at that line, never a number."""
    rng = np.random.default_rng(17)
    f, v = random_expansion(rng), random_expansion(rng)
    with pytest.raises(SrcgradError, match="test_vspace.py:[0-9]+: constructing 'Expansion' "
                                           "from differentiable"):
        srcgrad.jvp(through_a_method, (f, XS), (v, None))


def test_second_order_is_refused_at_the_vjp():
    """hvp differentiates the rule's vjp, which builds an Expansion from the cotangent."""
    rng = np.random.default_rng(12)
    f, v = random_expansion(rng), random_expansion(rng)
    with pytest.raises(SrcgradError, match="constructing 'Expansion' from differentiable"):
        srcgrad.hvp(rkhs_logprob, (f, XS, YS), (v, None, None))


def test_jacobians_are_refused():
    f = random_expansion(np.random.default_rng(13))
    for api in (srcgrad.jacrev, srcgrad.jacfwd, srcgrad.hessian):
        with pytest.raises(NonDifferentiableError, match="registered vector space"):
            api(rkhs_logprob)(f, XS, YS)


class Other:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return self.w * x


srcgrad.register_vspace(Other, zeros=lambda o: Other(0.0), add=lambda a, b: Other(a.w + b.w))


@srcgrad.rule(Other.__call__, diff_args=(0,))
def _other_call_vjp(g, ans, o, x):
    return g * x  # wrong: a number for an Other


def test_a_rule_returning_another_type_is_refused():
    with pytest.raises(UnsupportedFeatureError, match="registered vector space.*came out as "
                                                      "a float"):
        srcgrad.grad(lambda o, x: o(x) * 2.0)(Other(1.5), 3.0)


def test_register_vspace_checks_its_arguments():
    with pytest.raises(SrcgradError, match="takes a class"):
        srcgrad.register_vspace(Other(1.0), zeros=len, add=len)
    with pytest.raises(SrcgradError, match="cannot register float"):
        srcgrad.register_vspace(float, zeros=len, add=len)
    with pytest.raises(SrcgradError, match="add= must be a function"):
        srcgrad.register_vspace(Other, zeros=len, add=2.0)


# -- the call of an object whose class has a rule on __call__ -------------------------------
class Ruled:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return self.w * x


RULED_CALLS = []


@srcgrad.rule(Ruled.__call__, diff_args=(0, 1))
def _ruled_vjp(g, ans, r, x):
    RULED_CALLS.append(x)
    return Ruled(g * x), g * r.w


def squared_call(m, x):
    return m(x) ** 2


def test_calling_a_differentiated_object_uses_the_rule_on_its_class_call():
    """``m(x)`` of an argument ``m`` differentiated with respect to runs the rule of
    ``type(m).__call__`` (it read the method's source before, with ``m`` a constant inside
    it: the gradient of ``m.w`` was a silent 0.0)."""
    del RULED_CALLS[:]
    gm, gx = srcgrad.grad(squared_call, (0, 1))(Ruled(2.0), 3.0)
    assert type(gm) is Ruled and gm.w == pytest.approx(2 * 6.0 * 3.0)
    assert gx == pytest.approx(2 * 6.0 * 2.0)
    assert RULED_CALLS == [3.0]


def test_runtime_add_and_densify_of_registered_objects():
    a, b = Expansion({1.0: 2.0}), Expansion({1.0: 0.5, 2.0: 1.0})
    assert runtime.add(a, runtime.ZERO) is a and runtime.add(runtime.ZERO, b) is b
    assert runtime.add(a, b).weights == {1.0: 2.5, 2.0: 1.0}
    assert runtime.densify(runtime.ZERO, a).weights == {}
    assert runtime.densify(b, a) is b
    assert runtime.zeros_like(a).kernel is a.kernel
