"""Second derivatives: forward over reverse (hessian, hvp, jvp of a gradient), reverse over
reverse (grad of grad), against finite differences of gradients and against PyTorch."""
import numpy as np
import pytest

import srcgrad
from srcgrad import runtime
from corpus import CASES
from fdcheck import flatten, perturb
from srcgrad.rules import all_rules
from test_forward import random_like, zero_like


def fd_hvp(g, args, directions, eps=1e-5):
    """Central differences of the gradient function ``g`` along ``directions``."""
    plus, minus = list(args), list(args)
    for i, leaves in directions.items():
        plus[i] = perturb(args[i], leaves, eps)
        minus[i] = perturb(args[i], leaves, -eps)
    return g(*plus), g(*minus), 2 * eps


def assert_hvp_matches(product, g, args, directions, wrt):
    gp, gm, h = fd_hvp(g, args, directions)
    if len(wrt) == 1:
        product, gp, gm = (product,), (gp,), (gm,)
    for k in range(len(wrt)):
        for hv, a, b in zip(flatten(product[k]), flatten(gp[k]), flatten(gm[k])):
            numeric = (a - b) / h
            scale = max(1.0, float(np.max(np.abs(numeric), initial=0.0)))
            assert np.allclose(hv, numeric, rtol=1e-5, atol=1e-6 * scale), (hv, numeric)


# -- corpus: jvp of the generated gradient against finite differences of the gradient ---------
# Cases whose second derivative goes through a rule vjp that cannot itself be transformed
# (a non-inlined vjp with *args/**kwargs or a generator expression) would be listed here: the
# rules need a transformable vjp (or an inlinable one) for second order.
RULE_LIMITS: dict[str, str] = {}


def _corpus_params():
    out = []
    for c in CASES:
        marks = ()
        if c.id in RULE_LIMITS:
            marks = pytest.mark.xfail(reason=RULE_LIMITS[c.id], strict=False)
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


@pytest.mark.parametrize("case", _corpus_params())
def test_hessian_vector_product_on_corpus(case):
    rng = np.random.default_rng(3)
    tangents, directions = [], {}
    for i, a in enumerate(case.args):
        if i in case.wrt:
            t, directions[i] = random_like(a, rng)
        else:
            t = zero_like(a) if not isinstance(a, (int, str)) else 0
        tangents.append(t)
    g = srcgrad.grad(case.fn, wrt=tuple(case.wrt) if len(case.wrt) > 1 else case.wrt[0])
    _, product = srcgrad.jvp(g, case.args, tangents)
    assert_hvp_matches(product, g, case.args, directions, case.wrt)


# -- rules: second order through their inlined or transformed vjps ---------------------------
REPRESENTATIVE = [
    "operator.mul", "operator.truediv", "operator.pow", "operator.matmul", "numpy.sin",
    "numpy.exp", "numpy.log", "numpy.tanh", "numpy.sqrt", "numpy.sum", "numpy.mean",
    "numpy.max", "numpy.dot", "numpy.reshape", "numpy.transpose", "numpy.maximum",
    "numpy.linalg.norm", "numpy.linalg.inv", "numpy.linalg.det",
]


RULE_VJP_LIMITS: dict[str, str] = {}


def _representative_rules():
    by_name = {r.name: r for r in all_rules()}
    return [pytest.param(by_name[n], id=n, marks=[pytest.mark.xfail(
        reason=RULE_VJP_LIMITS[n], strict=False)] if n in RULE_VJP_LIMITS else [])
        for n in REPRESENTATIVE if n in by_name]


# The rule arrives as an argument, so generated code calls it through the runtime's
# dispatch (call_fwd/call_bwd), whose forward mode transforms the rule's vjp itself.
def scalar_of_first(x, fn, w):
    return np.sum(fn(x) * w)


def scalar_of_first_of_two(x, y, fn, w):
    return np.sum(fn(x, y) * w)


def scalar_of_second_of_two(x, y, fn, w):
    return np.sum(fn(y, x) * w)


@pytest.mark.parametrize("rule", _representative_rules())
def test_rule_second_order(rule):
    rng = np.random.default_rng(4)
    checked = 0
    for args, kwargs in rule.domain(rng)[:4]:
        for i in rule.diff_args:
            if kwargs or len(args) > 2 or i >= len(args) \
                    or not isinstance(args[i], (float, np.ndarray)):
                continue
            w = rng.standard_normal(np.shape(rule.fn(*args)))
            if len(args) == 1:
                f, primals = scalar_of_first, (args[0], rule.fn, w)
            elif i == 0:
                f, primals = scalar_of_first_of_two, (args[0], args[1], rule.fn, w)
            else:
                f, primals = scalar_of_second_of_two, (args[1], args[0], rule.fn, w)
            x = primals[0]
            v = rng.standard_normal(np.shape(x))
            v = float(v) if isinstance(x, float) else v
            tangents = (v,) + tuple(zero_like(p) if not callable(p) else 0.0
                                    for p in primals[1:])
            g = srcgrad.grad(f)
            _, product = srcgrad.jvp(g, primals, tangents)
            assert_hvp_matches(product, g, primals, {0: [np.asarray(v)]}, (0,))
            checked += 1
    assert checked


# -- hessians ----------------------------------------------------------------------------------
def norm_doubling(x, v):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return np.sum(y * v)


def smooth(x):
    return np.sum(np.sin(x) * x ** 2) + np.prod(x[:2]) + np.log(1 + x @ x)


def mlp_loss(W1, b1, W2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)


def fd_hessian(f, x, eps=1e-5):
    g = srcgrad.grad(f)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        e = e.reshape(x.shape)
        cols.append(((g(x + e) - g(x - e)) / (2 * eps)).ravel())
    return np.stack(cols, axis=-1).reshape(x.shape + x.shape)


def test_hessian_is_symmetric_and_matches_finite_differences():
    x = np.random.default_rng(5).uniform(-1, 1, size=4)
    H = srcgrad.hessian(smooth)(x)
    assert H.shape == (4, 4)
    assert np.allclose(H, H.T, rtol=1e-12, atol=1e-12)
    assert np.allclose(H, fd_hessian(smooth, x), rtol=1e-6, atol=1e-7)


def test_hessian_of_norm_doubling_loop():
    """The tutorial's loop: y = 2^k x with k fixed near x, so the Hessian is zero (the
    function is linear in x where the trip count does not change)."""
    x = np.array([0.3, -0.2, 0.5])
    v = np.array([0.1, 1.0, 0.0001])
    H = srcgrad.hessian(norm_doubling)(x, v)
    assert H.shape == (3, 3)
    assert np.array_equal(H, np.zeros((3, 3)))
    # with respect to v, too: the gradient 2^k x is linear in x, constant in v
    Hv = srcgrad.hessian(norm_doubling, wrt=1)(x, v)
    assert np.array_equal(Hv, np.zeros((3, 3)))


def test_hessian_of_mlp_loss_matches_finite_differences():
    rng = np.random.default_rng(6)
    W1, b1 = rng.standard_normal((3, 4)) * 0.5, rng.standard_normal(4) * 0.1
    W2 = rng.standard_normal((4, 2)) * 0.5
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    H = srcgrad.hessian(mlp_loss)(W1, b1, W2, x, y)
    assert H.shape == (3, 4, 3, 4)
    flat = H.reshape(12, 12)
    assert np.allclose(flat, flat.T, rtol=1e-10, atol=1e-12)
    numeric = fd_hessian(lambda w: mlp_loss(w, b1, W2, x, y), W1)
    assert np.allclose(H, numeric, rtol=1e-6, atol=1e-7)


def test_hvp_matches_hessian_times_vector():
    rng = np.random.default_rng(7)
    x, v = rng.uniform(-1, 1, size=4), rng.standard_normal(4)
    assert np.allclose(srcgrad.hvp(smooth, (x,), (v,)), srcgrad.hessian(smooth)(x) @ v,
                       rtol=1e-12, atol=1e-12)


def test_hvp_with_several_arguments():
    rng = np.random.default_rng(8)
    W1, b1 = rng.standard_normal((3, 4)) * 0.5, rng.standard_normal(4) * 0.1
    W2 = rng.standard_normal((4, 2)) * 0.5
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    vs = tuple(rng.standard_normal(a.shape) for a in (W1, b1, W2))
    zeros = (np.zeros_like(x), np.zeros_like(y))
    f = srcgrad.grad(mlp_loss, wrt=(0, 1, 2))
    _, product = srcgrad.jvp(f, (W1, b1, W2, x, y), vs + zeros)
    directions = {i: [vs[i]] for i in range(3)}
    assert_hvp_matches(product, f, (W1, b1, W2, x, y), directions, (0, 1, 2))


# -- nesting ---------------------------------------------------------------------------------
def cubic(x):
    return np.sin(x) * x * x


def test_grad_of_grad_scalar():
    x = 0.7
    expected = -np.sin(x) * x * x + 4 * x * np.cos(x) + 2 * np.sin(x)
    assert srcgrad.grad(srcgrad.grad(cubic))(x) == pytest.approx(expected, rel=1e-12)


def test_grad_of_grad_differs_per_function():
    """Gradients of different functions are different functions when transformed again."""
    g1 = srcgrad.grad(srcgrad.grad(cubic))
    g2 = srcgrad.grad(srcgrad.grad(lambda x: x ** 4))
    assert g2(0.5) == pytest.approx(12 * 0.25)
    assert g1(0.5) != pytest.approx(g2(0.5))


def test_grad_of_gradient_dot_vector():
    """Reverse over reverse on a vector input: grad of <grad f(x), v> is H v."""
    rng = np.random.default_rng(9)
    x, v = rng.uniform(-1, 1, size=3), rng.standard_normal(3)
    gf = srcgrad.grad(lambda x: np.sum(np.exp(x) * x) + x @ x)

    def directional(x):
        return np.sum(gf(x) * v)

    expected = srcgrad.hvp(lambda x: np.sum(np.exp(x) * x) + x @ x, (x,), (v,))
    assert np.allclose(srcgrad.grad(directional)(x), expected, rtol=1e-12, atol=1e-12)


def looped(x):
    y = x
    for i in range(3):
        if np.sum(y) > 0:
            y = np.sin(y) * x
        else:
            y = y * y + x
    return np.sum(y)


def test_grad_of_grad_through_loops_and_branches():
    """Reverse over reverse through the generated sweeps' tapes (pushes and pops get
    adjoints on a tape of adjoints), scalar and vector."""
    g = srcgrad.grad(looped)
    gg = srcgrad.grad(g)
    eps = 1e-6
    assert gg(0.7) == pytest.approx((g(0.7 + eps) - g(0.7 - eps)) / (2 * eps), rel=1e-7)
    rng = np.random.default_rng(12)
    x, v = rng.uniform(0.1, 1, size=3), rng.standard_normal(3)

    def directional(x):
        return np.sum(g(x) * v)

    expected = srcgrad.hvp(looped, (x,), (v,))
    assert np.allclose(srcgrad.grad(directional)(x), expected, rtol=1e-10, atol=1e-12)
    assert np.allclose(srcgrad.hessian(looped)(x) @ v, expected, rtol=1e-10, atol=1e-12)


def _directional(g, v):
    def directional(x):
        return np.sum(g(x) * v)
    return directional


SINGLE_ARGUMENT = [c for c in CASES if len(c.args) == 1 and not c.kwargs
                   and isinstance(c.args[0], (float, np.ndarray))]


# Reverse over reverse does not reach these yet (forward over reverse does).
REVERSE_OVER_REVERSE_LIMITS: dict[str, str] = {}  # none left; kept for the next one found


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(
    reason={**RULE_LIMITS, **REVERSE_OVER_REVERSE_LIMITS}[c.id], strict=False)]
    if c.id in RULE_LIMITS or c.id in REVERSE_OVER_REVERSE_LIMITS else [])
    for c in SINGLE_ARGUMENT])
def test_reverse_over_reverse_on_corpus(case):
    """grad of <grad f(x), v> equals the forward-over-reverse H v."""
    rng = np.random.default_rng(13)
    x = case.args[0]
    v, _ = random_like(x, rng)
    directional = _directional(srcgrad.grad(case.fn), v)
    expected = srcgrad.hvp(case.fn, (x,), (v,))
    result = srcgrad.grad(directional)(x)
    assert np.allclose(result, expected, rtol=1e-9, atol=1e-11), (result, expected)


def test_jacrev_of_grad_is_the_hessian():
    """Reverse over reverse for the whole Hessian: one backward sweep of the generated
    gradient per row, on copies of its tape."""
    x = np.random.default_rng(10).uniform(-1, 1, size=3)
    H = srcgrad.jacrev(srcgrad.grad(smooth))(x)
    assert np.allclose(H, srcgrad.hessian(smooth)(x), rtol=1e-10, atol=1e-12)


# -- peer oracle ---------------------------------------------------------------------------
def test_hessians_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, size=4)

    def smooth_torch(t):
        return torch.sum(torch.sin(t) * t ** 2) + torch.prod(t[:2]) + torch.log(1 + t @ t)

    expected = torch.autograd.functional.hessian(smooth_torch, torch.tensor(x)).numpy()
    assert np.allclose(srcgrad.hessian(smooth)(x), expected, rtol=1e-10, atol=1e-12)

    W1, b1 = rng.standard_normal((3, 4)) * 0.5, rng.standard_normal(4) * 0.1
    W2 = rng.standard_normal((4, 2)) * 0.5
    xb, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    tb1, tW2, txb, ty = (torch.tensor(a) for a in (b1, W2, xb, y))

    def mlp_torch(w):
        return torch.mean((torch.tanh(txb @ w + tb1) @ tW2 - ty) ** 2)

    expected = torch.autograd.functional.hessian(mlp_torch, torch.tensor(W1)).numpy()
    H = srcgrad.hessian(mlp_loss)(W1, b1, W2, xb, y)
    assert np.allclose(H, expected, rtol=1e-10, atol=1e-12)


# -- regressions -----------------------------------------------------------------------------
def nested_lists(x):
    grid = [[x, 2 * x], [x * x, 1.0]]
    grid[1][1] = grid[0][0] * 3
    return grid[0][1] * grid[1][0] + grid[1][1]


def test_grad_of_grad_accumulates_list_adjoints_with_add():
    """A list adjoint made by a runtime helper (``_rt.unbroadcast`` of a list) gets two
    contributions in the transformed sweep: they are added item by item, not concatenated."""
    # f = 2 x^3 + 3 x, so f'' = 12 x
    assert srcgrad.grad(srcgrad.grad(nested_lists))(0.8) == pytest.approx(12 * 0.8, rel=1e-12)


def reshaped(x):
    return np.sum(np.sin(x.reshape(3, 2)).transpose(1, 0) * x.reshape((2, 3)))


def test_rule_vjps_with_star_args_are_inlined():
    """``reshape_method_vjp(g, ans, a, *shape, order)`` binds ``*shape`` to a tuple: the vjp is
    inlined, so generated code can be transformed again (the vjp itself cannot)."""
    x = np.random.default_rng(14).uniform(-1, 1, size=(2, 3))
    g = srcgrad.grad(reshaped)
    g(x)
    assert "_vjp(" not in srcgrad.source(g)
    v = np.random.default_rng(15).standard_normal((2, 3))
    assert_hvp_matches(srcgrad.hvp(reshaped, (x,), (v,)), g, (x,), {0: [v]}, (0,))


def through_a_lambda(x):
    cube = lambda v: v * v * v  # noqa: E731
    return cube(x) + cube(2 * x)


def test_grad_of_grad_through_a_dynamic_call():
    """The sweeps call the lambda through ``_rt.call_fwd``/``call_bwd``, which reverse mode
    differentiates again through their own records."""
    # f = 9 x^3, f'' = 54 x
    assert srcgrad.grad(srcgrad.grad(through_a_lambda))(0.7) == pytest.approx(54 * 0.7,
                                                                               rel=1e-12)


# -- third order and up: the tapes of adjoints are tapes too ----------------------------------
# A backward sweep keeps the adjoints of its tape's pops on a tape of adjoints
# (runtime.adjoint_push/adjoint_pop). Differentiated again, those are stack operations: they
# used to be transformed as ordinary calls, whose functional list.pop left the stack unpopped
# (IndexError at fourth order), and two sweeps' adjoints of one shared tape were added with a
# zip that dropped entries.

def _tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def _tanh_derivatives(x):
    """tanh' ... tanh^(5), written out with t = tanh(x) and s = 1 - t**2."""
    t = np.tanh(x)
    s = 1.0 - t * t
    return [s, -2 * t * s, s * (6 * t * t - 2), 8 * t * s * (2 - 3 * t * t),
            8 * (s * s * (2 - 3 * t * t) - 2 * t * t * s * (2 - 3 * t * t) - 6 * t * t * s * s)]


def test_fourth_derivative_of_tanh_through_elementwise_grad():
    x = np.linspace(-2.0, 2.0, 5)
    f = _tanh
    expected = _tanh_derivatives(x)
    for k in range(4):
        f = srcgrad.elementwise_grad(f)
        np.testing.assert_allclose(f(x), expected[k], rtol=1e-10, atol=1e-12)


@pytest.mark.slow  # the generated code grows about 5x per order: ~40 s of transformation
def test_fifth_derivative_of_tanh():
    x = np.linspace(-2.0, 2.0, 5)
    f = _tanh
    for _ in range(5):
        f = srcgrad.elementwise_grad(f)
    np.testing.assert_allclose(f(x), _tanh_derivatives(x)[4], rtol=1e-9, atol=1e-12)


def _septic(x):
    return x ** 7 + np.sin(x)


def test_a_cotangent_of_an_unread_saved_slot_is_zero():
    """At fifth order a saved slot no adjoint reads holds None, and its cotangent is None
    too; generated code adds such parts with ``+``, so ``part`` reads None as zero (it was
    ``None + None`` at the fifth nested grad)."""
    assert runtime.part((1.0, None), 1) is runtime.ZERO
    assert runtime.part({"a": None}, "a") is runtime.ZERO


@pytest.mark.slow  # ~5 s of transformation (the sixth order takes ~20 s, the seventh ~3 min)
def test_fifth_order_nested_grad():
    f, x = _septic, 0.7
    for _ in range(5):
        f = srcgrad.grad(f)
    assert f(x) == pytest.approx(2520 * x * x + np.cos(x), rel=1e-12)


def _product(x, y):
    return x * y * x * x


@pytest.mark.slow  # ~6 s of transformation
def test_fourth_order_nested_grad_of_scalar_polynomials():
    g4 = srcgrad.grad(srcgrad.grad(srcgrad.grad(srcgrad.grad(lambda x: x * x * x * x))))
    assert g4(1.5) == pytest.approx(24.0, abs=1e-12)
    cubic = srcgrad.grad(srcgrad.grad(srcgrad.grad(lambda x: _product(x, 2.0))))
    assert cubic(1.5) == pytest.approx(12.0, abs=1e-12)


@pytest.mark.slow  # ~15 s of transformation: four levels through a helper call
def test_fourth_order_nested_grad_through_a_helper():
    quartic = srcgrad.grad(srcgrad.grad(srcgrad.grad(srcgrad.grad(lambda x: _product(x, x)))))
    assert quartic(0.7) == pytest.approx(24.0, abs=1e-12)


def test_third_order_forward_over_reverse_over_reverse():
    """jvp of a second derivative (forward mode over two reverse sweeps, whose tape of
    adjoints then carries a tape of tangents)."""
    d2 = srcgrad.elementwise_grad(srcgrad.elementwise_grad(_tanh))
    x = np.linspace(-1.5, 1.5, 4)
    v = np.array([0.3, -1.0, 0.5, 2.0])
    value, tangent = srcgrad.jvp(d2, (x,), (v,))
    np.testing.assert_allclose(value, _tanh_derivatives(x)[1], rtol=1e-10)
    np.testing.assert_allclose(tangent, _tanh_derivatives(x)[2] * v, rtol=1e-10, atol=1e-12)


def test_adjoints_of_one_tape_from_two_sweeps_line_up_from_the_top():
    from srcgrad import runtime
    full, partial = runtime.Tape([1.0, 2.0, 3.0]), runtime.Tape([10.0, 20.0])
    total = runtime.add(full, partial)
    assert isinstance(total, runtime.Tape) and list(total) == [1.0, 12.0, 23.0]
    assert list(runtime.add(partial, full)) == [1.0, 12.0, 23.0]


# -- Jacobians differentiated again (jacfwd(jacrev(f)) is JAX's hessian) ----------------------
def _separable(x):
    return np.sum(np.sin(x) * x ** 2)


def _separable_derivatives(x):
    """g', g'', g''' of g(t) = t**2 sin t, the term of _separable at each element."""
    s, c = np.sin(x), np.cos(x)
    return (2 * x * s + x * x * c, 2 * s + 4 * x * c - x * x * s,
            6 * c - 6 * x * s - x * x * c)


def _diagonal3(d):
    t = np.zeros((d.size,) * 3)
    t[np.arange(d.size), np.arange(d.size), np.arange(d.size)] = d
    return t


@pytest.mark.parametrize("make", [
    lambda f: srcgrad.jacfwd(srcgrad.jacrev(f)),
    lambda f: srcgrad.jacrev(srcgrad.jacrev(f)),
    lambda f: srcgrad.jacrev(srcgrad.jacfwd(f)),
    lambda f: srcgrad.jacfwd(srcgrad.jacfwd(f)),
], ids=["jacfwd-jacrev", "jacrev-jacrev", "jacrev-jacfwd", "jacfwd-jacfwd"])
def test_jacobian_of_a_jacobian_is_the_hessian(make):
    x = np.array([0.3, -0.5, 1.2])
    np.testing.assert_allclose(make(_separable)(x), np.diag(_separable_derivatives(x)[1]),
                               rtol=1e-12, atol=1e-12)


def test_third_derivative_tensors_through_jacobians():
    x = np.array([0.3, -0.5, 1.2])
    third = _diagonal3(_separable_derivatives(x)[2])
    np.testing.assert_allclose(srcgrad.jacfwd(srcgrad.hessian(_separable))(x), third,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(srcgrad.jacrev(srcgrad.jacfwd(srcgrad.grad(_separable)))(x),
                               third, rtol=1e-12, atol=1e-12)
    summed = srcgrad.grad(lambda x: np.sum(srcgrad.jacfwd(srcgrad.grad(_separable))(x)))
    np.testing.assert_allclose(summed(x), _separable_derivatives(x)[2], rtol=1e-12)


def _coupled(x, y):
    return np.tanh(x @ y) * np.sum(y ** 2) + np.sum(np.sin(x) * y)


def test_jacobian_of_a_jacobian_with_two_arguments_matches_finite_differences():
    rng = np.random.RandomState(3)
    x, y = rng.normal(size=3), rng.normal(size=3)
    mixed = srcgrad.jacrev(srcgrad.jacfwd(_coupled, wrt=0), wrt=1)(x, y)  # d/dy d/dx
    gx = srcgrad.grad(_coupled, wrt=0)
    h = 1e-6
    numeric = np.stack([(gx(x, y + h * e) - gx(x, y - h * e)) / (2 * h) for e in np.eye(3)],
                       axis=-1)
    np.testing.assert_allclose(mixed, numeric, rtol=1e-6, atol=1e-8)
    both = srcgrad.jacrev(srcgrad.jacrev(_coupled, wrt=(0, 1)))(x, y)  # d/dx of (gx, gy)
    np.testing.assert_allclose(both[0], srcgrad.hessian(_coupled)(x, y), rtol=1e-10)


def test_differentiating_a_jacobian_with_aux_is_refused():
    jac = srcgrad.jacfwd(lambda x: (np.sin(x), 1.0), has_aux=True)
    with pytest.raises(srcgrad.SrcgradError, match="has_aux=True.*again is not supported"):
        srcgrad.jacfwd(lambda x: jac(x)[0])(np.array([0.1, 0.2]))


# -- third order through a call known only at run time: refused at the user's line ------------
# A call of a parameter, a closure variable or a method runs through runtime.call_fwd; its
# second derivative calls call_fwd through call_fwd (dispatch.py's redispatch). A third would
# differentiate dispatch.py's own Python: it used to fail inside srcgrad's transformation of
# runtime.call_fwd ("'*args' ... not supported (in call_fwd())", located in runtime.py).

def _sine_times_x(x):
    return np.sin(x) * x


def _calls_its_argument(x, h):
    return h(x) * 2.0  # the line the refusal names


class _Scaled:
    def __init__(self, k):
        self.k = k

    def run(self, x):
        return np.sin(x) * self.k


def _calls_a_method(x, m):
    return m.run(x) * x  # the line the refusal names


def _refusal(f, *args):
    with pytest.raises(srcgrad.SrcgradError) as info:
        f(*args)
    return str(info.value), "\n".join(getattr(info.value, "__notes__", []))


def test_second_order_through_a_function_argument_against_the_closed_form():
    x = 0.7
    second = srcgrad.grad(srcgrad.grad(_calls_its_argument))(x, _sine_times_x)
    assert second == pytest.approx(2 * (2 * np.cos(x) - x * np.sin(x)), rel=1e-12)


@pytest.mark.parametrize("make", [
    lambda f: srcgrad.grad(srcgrad.grad(srcgrad.grad(f))),
    lambda f: srcgrad.grad(srcgrad.grad(srcgrad.grad(srcgrad.grad(f)))),
    lambda f: srcgrad.jacfwd(srcgrad.grad(srcgrad.grad(f))),
    lambda f: srcgrad.jacfwd(srcgrad.hessian(f)),
], ids=["grad3", "grad4", "jacfwd-grad2", "jacfwd-hessian"])
def test_third_order_through_a_function_argument_is_refused_at_the_users_line(make):
    message, notes = _refusal(make(_calls_its_argument), 0.7, _sine_times_x)
    assert "third derivative through _sine_times_x()" in message
    assert "call a module-level function by its name" in message
    assert "runtime.py" not in message
    assert "test_higher_order.py" in notes and "return h(x) * 2.0" in notes


def test_third_order_through_a_method_is_refused_naming_the_method():
    g3 = srcgrad.grad(srcgrad.grad(srcgrad.grad(_calls_a_method)))
    message, notes = _refusal(g3, 0.7, _Scaled(3.0))
    assert "third derivative through _Scaled.run()" in message
    assert "return m.run(x) * x" in notes


def _calls_it_by_name(x):
    return _sine_times_x(x) * 2.0


@pytest.mark.slow  # ~5 s of transformation
def test_the_suggested_rewrite_gives_the_fourth_derivative():
    g4 = srcgrad.grad(srcgrad.grad(srcgrad.grad(srcgrad.grad(_calls_it_by_name))))
    x = 0.7
    assert g4(x) == pytest.approx(2 * (x * np.sin(x) - 4 * np.cos(x)), rel=1e-10)


def _mismatched(x, w):
    return np.sum(np.dot(x * x, w))  # the line the note names at second order


def test_an_error_inside_a_second_order_sweep_names_the_users_line():
    """A sweep of a sweep maps its lines to the sweep it differentiates, which maps them to
    the user's file: the traceback's note follows that chain (it stopped at the first
    generated file, and named nothing)."""
    g2 = srcgrad.grad(lambda x: srcgrad.grad(_mismatched)(x, np.ones(3)).sum())
    with pytest.raises(ValueError) as info:
        g2(np.ones(2))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "test_higher_order.py" in notes and "np.sum(np.dot(x * x, w))" in notes


def _cubic(x, c=1.0, *, k=0.0):
    return c * x ** 3 + k * x ** 2


def test_a_gradient_differentiated_again_reads_the_functions_defaults_as_they_are_now():
    """grad(grad(f)) used the defaults f had when its gradient was first differentiated:
    after ``f.__defaults__ = (2.0,)`` it gave 6 where 12 is right (grad(f) gave the new
    value: its wrapper for differentiating again copied the defaults when made)."""
    saved = _cubic.__defaults__, dict(_cubic.__kwdefaults__)
    try:
        first, second = srcgrad.grad(_cubic), srcgrad.grad(srcgrad.grad(_cubic))
        assert (first(1.0), second(1.0)) == (3.0, 6.0)
        _cubic.__defaults__ = (2.0,)
        assert (first(1.0), second(1.0)) == (6.0, 12.0)
        assert srcgrad.hessian(_cubic)(np.array(1.0)) == pytest.approx(12.0)
        _cubic.__kwdefaults__["k"] = 1.0
        assert second(1.0) == 14.0
    finally:
        _cubic.__defaults__, _cubic.__kwdefaults__ = saved


def test_fourth_order_through_stack_rules_against_the_closed_form():
    """jacfwd nested four times (and grad(grad(jacfwd(f)))) stopped inside the stack rule
    (rules/numpy_shape.unstack: an index computed from np.ndim(g) counted as differentiable
    once the rule itself was differentiated again), found by the nested-grad helper."""
    def f(x):
        return np.sin(x) * x
    x = np.array([0.3, 0.5])
    J = srcgrad.jacfwd
    fourth = J(J(J(J(f))))(x)
    expected = np.zeros((2,) * 5)
    for i in range(2):
        expected[i, i, i, i, i] = -4 * np.cos(x[i]) + x[i] * np.sin(x[i])
    assert np.allclose(fourth, expected, rtol=1e-10, atol=1e-12)
    third = srcgrad.grad(srcgrad.grad(J(lambda t: np.sin(t) * t)))(0.3)
    assert third == pytest.approx(-3 * np.sin(0.3) - 0.3 * np.cos(0.3), rel=1e-12)
