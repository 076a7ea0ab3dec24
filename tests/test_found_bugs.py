"""Bugs found by ad-hoc user-style testing, each as a strict xfail until it is fixed.

Ordered by severity: silent wrong values first, then raw Python exceptions, then unclear errors.
When a fix lands, its test starts passing (XPASS) and strict=True fails the suite: drop the
marker then.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import SrcgradError
from fdcheck import check_grad

X3 = np.array([0.3, -0.5, 0.8])
X4 = np.array([0.3, -0.5, 0.8, 0.4])
M23 = np.array([[0.3, -0.5, 0.8], [0.1, 0.7, -0.2]])


def xfail(reason):
    return pytest.mark.xfail(strict=True, reason=reason)


# == silent wrong gradients: numpy aliasing (in-place ops seen through another name) ===========

def alias_chained_inplace(x):
    a = b = x * 1.0
    a += x                       # numpy: b is the same array, so b changes too
    return np.sum(a * b)


def alias_assign_inplace(x):
    a = x * 2
    b = a
    b *= x                       # mutates a as well
    return np.sum(a)


def slice_view_inplace(x):
    y = x * 1.0
    v = y[1:]                    # a view of y
    v *= 3
    return np.sum(y * y)


def reshape_view_setitem(x):
    y = x * 1.0
    z = y.reshape(3, 1)          # a view of y
    z[0, 0] = 5.0
    return np.sum(y * x)


def row_view_inplace_loop(m):
    y = m * 1.0
    for row in y:                # rows are views: y is scaled in place
        row *= 2
    return np.sum(y ** 2)


def list_alias_append(x):
    a = [x[0]]
    b = a
    b.append(x[1] * 2)           # a sees the new element (dict stores like this are refused)
    return a[0] * a[-1]


@pytest.mark.parametrize("fn, args", [
    (alias_chained_inplace, (X3,)), (alias_assign_inplace, (X3,)),
    (slice_view_inplace, (X3,)), (reshape_view_setitem, (X3,)),
    (row_view_inplace_loop, (M23,)), (list_alias_append, (X3,))],
    ids=["chained-alias", "alias", "slice-view", "reshape-view", "row-views", "list-alias"])
def test_updates_through_shared_data_are_refused(fn, args):
    """In-place updates that numpy would apply to another name too: refused with the line,
    never differentiated as if they were copies (they once gave wrong gradients)."""
    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="another|share its data"):
        srcgrad.grad(fn)(*args)


# == silent wrong gradients: repeated fancy indices in stores ===================================

def repeated_fancy_augassign(x):
    y = x * 1.0
    idx = np.array([0, 0, 2])
    y[idx] += x[1:4]             # numpy: y[0] = x[0] + x[2] (last write wins, no accumulation)
    return np.sum(y * y)


def repeated_fancy_setitem(x):
    y = x * 1.0
    y[[1, 1]] = x[2:4] ** 2      # numpy: y[1] = x[3] ** 2 only
    return np.sum(y * x)


def test_repeated_fancy_augassign():
    check_grad(repeated_fancy_augassign, (X4,))


def test_repeated_fancy_setitem():
    check_grad(repeated_fancy_setitem, (X4,))


# == silent wrong gradients: objects ===========================================================

class _Scaled:
    def __init__(self, w):
        self.w = w

    @property
    def w2(self):
        return self.w ** 2


class _CallableModel:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.tanh(self.w * x)

    def apply(self, x):
        return np.tanh(self.w * x)


def property_read(m, x):
    return m.w2 * np.sum(x)


def method_of_callable_param(m, x):
    return np.sum(m.apply(x))


def test_property_read_on_a_differentiated_object_is_refused_not_zero():
    # it once gave a silent zero gradient for the object
    with pytest.raises(SrcgradError, match="property 'w2'"):
        srcgrad.grad(property_read, wrt=(0, 1))(_Scaled(0.7), X3)


def test_jvp_tangent_of_callable_object():
    w, x = np.array([0.5, -0.2, 0.9]), np.array([0.1, 0.2, 0.3])
    dw = np.array([0.3, 1.0, -2.0])
    _, t = srcgrad.jvp(method_of_callable_param, (_CallableModel(w), x),
                       (_CallableModel(dw), np.zeros(3)))
    assert np.isclose(t, np.sum(dw * x / np.cosh(w * x) ** 2))   # actual: 0.0


# == silent wrong gradients: functions marked non-differentiable that take values ===============

def full_fill(x):
    return np.sum(np.full(3, x) * np.arange(3.0))


def full_like_fill(x):
    return np.sum(np.full_like(x, x[0]) * np.arange(3.0))


def linspace_ends(x):
    return np.sum(np.linspace(x[0], x[1], 5) ** 2)


def logspace_end(a):
    return np.sum(np.logspace(0.0, a, 4))


def meshgrid_of_input(x):
    a, b = np.meshgrid(x, x)
    return np.sum(a * np.arange(9.0).reshape(3, 3)) + np.sum(b ** 2)


def random_normal_reparam(mu, sigma):
    np.random.seed(0)
    z = np.random.normal(mu, sigma, size=4)
    return np.sum(z ** 2)


def test_full_fill_value():
    check_grad(full_fill, (0.7,))


def test_full_like_fill_value():
    check_grad(full_like_fill, (X3,))


def test_linspace_ends():
    check_grad(linspace_ends, (X3,))


def test_logspace_end():
    check_grad(logspace_end, (0.3,))


def test_meshgrid_of_differentiable_values_is_differentiated_not_zero():
    # it used to be marked non-differentiable (zeros), then refused; it has a rule now
    g = check_grad(meshgrid_of_input, (X3,))[0]
    # a = x along columns, b = x along rows: d/dx_j sum(a * M) = column sums of M, and
    # d/dx_i sum(b**2) = 2 * 3 * x_i
    np.testing.assert_allclose(g, np.arange(9.0).reshape(3, 3).sum(axis=0) + 6 * X3,
                               rtol=1e-12)


def test_random_draw_with_differentiable_parameters_is_refused_not_zero():
    # loc + scale * randn() is the way to reparameterize; normal(loc, scale) has no rule
    with pytest.raises(srcgrad.MissingRuleError, match="normal"):
        srcgrad.grad(random_normal_reparam, wrt=(0, 1))(0.3, 0.9)


# == silent wrong values: stale transformation cache ===========================================
# Notebook users redefine helpers and rebind globals; grad() keeps the first version.

def _exec_module(src, tmp_path, name):
    import importlib.util
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_redefined_helper_is_used(tmp_path):
    mod = _exec_module(
        "def helper(v):\n    return v * 2\n\n"
        "def f(x):\n    return helper(x) * x\n\n"
        "def redefine():\n    global helper\n"
        "    def helper(v):\n        return v * 3\n", tmp_path, "redef_helper")
    assert srcgrad.value_and_grad(mod.f)(1.0) == (2.0, 4.0)
    mod.redefine()
    assert mod.f(1.0) == 3.0
    assert srcgrad.value_and_grad(mod.f)(1.0) == (3.0, 6.0)   # actual (2.0, 4.0)


def test_rebound_global_function(tmp_path):
    mod = _exec_module(
        "import numpy as np\nfn = np.sin\n\n"
        "def f(x):\n    return fn(x)\n", tmp_path, "rebound_fn")
    assert srcgrad.grad(mod.f)(0.0) == 1.0
    mod.fn = np.cos
    assert srcgrad.grad(mod.f)(0.0) == 0.0   # actual 1.0


def mutable_default(x, opts={"s": 2.0}):
    return opts["s"] * x * x


def test_mutated_default_argument():
    assert srcgrad.grad(mutable_default)(1.0) == 4.0
    mutable_default.__defaults__[0]["s"] = 9.0
    try:
        assert srcgrad.grad(mutable_default)(1.0) == 18.0   # actual 4.0
    finally:
        mutable_default.__defaults__[0]["s"] = 2.0


# == crashes with raw Python exceptions ========================================================

def einsum_trace(a):
    return np.einsum('ii', a)


def einsum_square(a):
    return np.sum(np.einsum('i,i->i', a, a) ** 2)


def test_einsum_jvp():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    _, t = srcgrad.jvp(einsum_trace, (a,), (np.ones((2, 2)),))
    assert np.isclose(t, 2.0)


def test_einsum_hessian():
    h = srcgrad.hessian(einsum_square)(X3)
    assert np.allclose(h, np.diag(12 * X3 ** 2))


class _WithStatic:
    def __init__(self, w):
        self.w = w

    @staticmethod
    def sq(v):
        return v * v


def staticmethod_via_instance(m, x):
    return np.sum(m.sq(x) * m.w)


def test_staticmethod_through_instance():
    check_grad(staticmethod_via_instance, (_WithStatic(0.5), X3), wrt=(1,))


def lambda_default_loop_var(x):
    fs = []
    for i in range(3):
        fs.append(lambda v, i=i: v * (i + 1))
    return sum([f(x[0]) for f in fs])


def lambda_default_active(x):
    scale = x[0] * 2
    f = lambda v, s=scale: v * s
    return f(x[1]) + f(x[2], 3.0)


def test_lambda_default_loop_variable():
    # each lambda of the loop keeps its own default (they share one generated build)
    check_grad(lambda_default_loop_var, (X3,))


def test_lambda_default_reading_a_differentiated_local_is_refused():
    # its gradient would be lost through the default; it once crashed with a NameError
    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="default value of 'f'"):
        srcgrad.grad(lambda_default_active)(X3)


def sum_with_initial(x):
    return np.sum(x ** 2, initial=1.0)


def mean_with_where(x):
    return np.mean(x ** 2, where=x > 0)


@pytest.mark.parametrize("fn, keyword", [(sum_with_initial, "initial"),
                                         (mean_with_where, "where")])
def test_unsupported_keyword_of_a_rule_is_a_located_error(fn, keyword):
    # it once crashed with a TypeError from inside the generated code
    with pytest.raises(srcgrad.errors.UnsupportedFeatureError, match=f"'{keyword}'") as info:
        srcgrad.grad(fn)(X3)
    assert "test_found_bugs.py:" in str(info.value)


# == unclear errors =============================================================================

def call_local_callable_object(x):
    m = _CallableModel(2.0)
    return np.sum(m(x))


def test_callable_instance_error_is_clear():
    try:
        srcgrad.grad(call_local_callable_object)(X3)
    except SrcgradError as e:
        msg = str(e)
        assert "object at 0x" not in msg and "test_found_bugs.py:" in msg, msg
    else:  # differentiating it is the better fix
        check_grad(call_local_callable_object, (X3,))


_P = namedtuple("_P", "a b")


def namedtuple_replace(p):
    q = p._replace(a=p.a * 2)
    return q.a * q.b + p.a


def test_namedtuple_replace_error_names_user_line():
    # _replace(self, /, **kwds) is collections' source; the positional-only self was passed by
    # keyword (a TypeError) and map(kwds.pop, names, self) was not lowered. It now stops at
    # dict.pop, a refusal that names the user's call site below the library line.
    try:
        srcgrad.grad(namedtuple_replace)(_P(0.3, 0.7))
    except SrcgradError as e:
        text = "\n".join([str(e), *getattr(e, "__notes__", [])])
        line = namedtuple_replace.__code__.co_firstlineno + 1
        assert f"test_found_bugs.py:{line} in namedtuple_replace()" in text, text
        assert "collections" in text, text
    else:
        check_grad(namedtuple_replace, (_P(0.3, 0.7),))


# == second order through shape rules ===========================================================

def diag_squared(m):
    return np.sum(np.diag(m) ** 2)


def tile_squared(x):
    return np.sum(np.tile(x, 2) ** 2)


def concatenate_slices(x):
    y = np.concatenate([x[1:], x[:1], x[::-1]])
    return np.sum(y * np.arange(y.size) * y)


def _directional(g, v):
    def directional(x):
        return np.sum(g(x) * v)
    return directional


M33 = np.array([[1.0, 0.2, -0.3], [0.4, 2.0, 0.5], [-0.1, 0.6, 3.0]])


def test_hvp_through_diag():
    v = np.arange(9.0).reshape(3, 3)
    assert np.allclose(srcgrad.hvp(diag_squared, (M33,), (v,)), 2 * np.diag(np.diag(v)))


def test_hessian_through_tile():
    assert np.allclose(srcgrad.hessian(tile_squared)(X3), 4 * np.eye(3))


def test_reverse_over_reverse_through_concatenate():
    x, v = X4, np.array([1.0, -2.0, 0.5, 0.3])
    result = srcgrad.grad(_directional(srcgrad.grad(concatenate_slices), v))(x)
    assert np.allclose(result, srcgrad.hvp(concatenate_slices, (x,), (v,)))


def apply_global_fn(x):
    return _FN(x)


_FN = np.sin


def test_global_callable_rebound_in_loop():
    global _FN
    results = []
    try:
        for fn in [np.sin, np.cos]:
            _FN = fn
            results.append(float(srcgrad.grad(apply_global_fn)(0.0)))
    finally:
        _FN = np.sin
    assert results == [1.0, 0.0]   # actual [1.0, 1.0]


# -- a wrt parameter assigned again: its gradient has the shape it came in with ---------------
def _rebind_list(xs):
    xs = xs[1:]
    return xs[0] * 2.0


def _rebind_array(x):
    x = x[:2]
    return 3.0


def _list_built_by_appends(x, n):
    out = []
    for k in range(1, n + 1):
        out.append(x ** k / k)
    return out


def _sum_of_built_list(x):
    t = _list_built_by_appends(x, 2)
    return np.sum(t[0] + t[1])


def test_rebound_parameter_gradient_keeps_the_input_structure():
    assert srcgrad.grad(_rebind_list)([1.0, 2.0, 3.0]) == [0.0, 2.0, 0.0]
    got = srcgrad.grad(_rebind_array)(np.ones(3))
    assert got.shape == (3,) and not got.any()  # was shape (2,)


def test_reverse_over_reverse_through_a_list_built_by_appends():
    # the helper's backward sweep rebinds its cotangent parameter while it walks the list;
    # differentiated again, that parameter's gradient was densified against the empty list
    x, v = np.array([0.3, -0.5, 0.7]), np.array([1.0, 2.0, 3.0])
    g = srcgrad.grad(_sum_of_built_list)
    got = srcgrad.grad(lambda y: np.sum(g(y) * v))(x)
    assert np.allclose(got, srcgrad.hessian(_sum_of_built_list)(x) @ v)
    assert np.allclose(got, v)  # d2/dx2 of sum(x + x^2/2) is the identity


# -- closures made by one def, called from differentiated code: each reads its own cells ------
def _make_scaled_sine(c):
    def scaled_sine(x):
        return np.sin(c * x)
    return scaled_sine


_SINE1, _SINE2 = _make_scaled_sine(1.0), _make_scaled_sine(2.0)


def _calls_sine1(x):
    return _SINE1(x)


def _calls_sine2(x):
    return _SINE2(x)


def test_closures_of_one_def_called_from_differentiated_code():
    # the second caller's adjoint called the first closure's sweeps (c = 1): a wrong number
    assert srcgrad.grad(_calls_sine1)(0.5) == pytest.approx(np.cos(0.5))
    assert srcgrad.grad(_calls_sine2)(0.5) == pytest.approx(2 * np.cos(1.0))


@pytest.mark.parametrize("c", [1.0, 2.0, 3.0])
def test_second_derivatives_of_closures_of_one_def(c):
    f = _make_scaled_sine(c)
    want = -c * c * np.sin(c * 0.5)
    assert srcgrad.grad(srcgrad.grad(f))(0.5) == pytest.approx(want)
    x = np.array([0.5, -0.25])
    assert np.allclose(srcgrad.jacrev(srcgrad.grad(lambda y: np.sum(f(y))))(x),
                       np.diag(-c * c * np.sin(c * x)))
    _, pullback = srcgrad.vjp(srcgrad.grad(f), 0.5)
    assert pullback(1.0)[0] == pytest.approx(want)
