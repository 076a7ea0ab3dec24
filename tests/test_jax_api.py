"""JAX's vocabulary (issue 13): argnums, has_aux, pytrees, custom_vjp/custom_jvp,
elementwise_grad, preserve_result's order, float32 Jacobians and typed signatures. Every
derivative is checked against central finite differences."""
from __future__ import annotations

import collections
import dataclasses
import inspect
import typing

import numpy as np
import pytest

import srcgrad
from srcgrad.tree import TreeDef

rng = np.random.default_rng(13)
X = rng.standard_normal(3)
Y = rng.standard_normal(4)
EPS = 1e-6


def fd_jacobian(f, args, index):
    """d f(*args) / d args[index] by central differences: shape out.shape + in.shape."""
    x = np.asarray(args[index], dtype=float)
    columns = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = EPS
        e = e.reshape(x.shape)
        plus, minus = list(args), list(args)
        plus[index], minus[index] = x + e, x - e
        columns.append((np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * EPS))
    out = np.shape(f(*args))
    return np.stack(columns, axis=-1).reshape(out + x.shape)


def close(a, b, rtol=1e-5, atol=1e-7):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=rtol, atol=atol)


def loss(x, y):
    return np.sum(np.sin(x) ** 2) * np.sum(y * y) + np.sum(x[:2] * y[:2])


def vector_fn(x, y):
    return np.tanh(x) * np.sum(y ** 3) + np.cos(x) * y[0]


# -- 1. argnums ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", [1, "y", (0, 1), ["x", 1]])
def test_argnums_means_wrt(spec):
    by_argnums = srcgrad.grad(loss, argnums=spec)(X, Y)
    by_wrt = srcgrad.grad(loss, wrt=spec)(X, Y)
    indices = [spec] if not isinstance(spec, (tuple, list)) else list(spec)
    indices = [{"x": 0, "y": 1}.get(i, i) for i in indices]
    expected = [fd_jacobian(loss, (X, Y), i) for i in indices]
    got = [by_argnums] if len(indices) == 1 and not isinstance(spec, (tuple, list)) \
        else list(by_argnums)
    for g, w, e in zip(got, [by_wrt] if len(got) == 1 and not isinstance(
            spec, (tuple, list)) else list(by_wrt), expected):
        close(g, e)
        close(g, w, rtol=0, atol=0)


def test_argnums_on_value_and_grad_and_decorator_forms():
    value, g = srcgrad.value_and_grad(loss, argnums=1)(X, Y)
    assert value == pytest.approx(loss(X, Y))
    close(g, fd_jacobian(loss, (X, Y), 1))

    @srcgrad.grad(argnums=1)
    def decorated(x, y):
        return np.sum(x * y[:3] ** 2)
    close(decorated(X, Y), fd_jacobian(decorated.__wrapped__, (X, Y), 1))


@pytest.mark.parametrize("api", [srcgrad.grad, srcgrad.value_and_grad,
                                 srcgrad.elementwise_grad, srcgrad.jacfwd, srcgrad.jacrev,
                                 srcgrad.hessian])
def test_wrt_and_argnums_together_raise(api):
    with pytest.raises(srcgrad.SrcgradError, match="wrt= or argnums="):
        api(loss, wrt=0, argnums=1)


@pytest.mark.parametrize("jac", [srcgrad.jacfwd, srcgrad.jacrev])
def test_tuple_argnums_jacobians(jac):
    jx, jy = jac(vector_fn, argnums=(0, 1))(X, Y)
    assert jx.shape == (3, 3) and jy.shape == (3, 4)
    close(jx, fd_jacobian(vector_fn, (X, Y), 0))
    close(jy, fd_jacobian(vector_fn, (X, Y), 1))
    (single,) = jac(vector_fn, argnums=(1,))(X, Y)  # a 1-tuple, as in JAX
    close(single, jy, rtol=1e-12)
    close(jac(vector_fn, argnums="y")(X, Y), jy, rtol=1e-12)


def test_tuple_argnums_hessian_is_nested_blocks():
    blocks = srcgrad.hessian(loss, argnums=(0, 1))(X, Y)
    assert len(blocks) == 2 and all(len(row) == 2 for row in blocks)
    sizes = {0: 3, 1: 4}
    for i in range(2):
        grad_i = srcgrad.grad(loss, argnums=i)
        for j in range(2):
            assert blocks[i][j].shape == (sizes[i], sizes[j])
            close(blocks[i][j], fd_jacobian(grad_i, (X, Y), j), rtol=1e-5, atol=1e-6)
    close(blocks[0][1], blocks[1][0].T, rtol=1e-10, atol=1e-12)
    close(blocks[0][0], srcgrad.hessian(loss)(X, Y), rtol=1e-12)


# -- 2. has_aux ------------------------------------------------------------------------------
_aux_vjp_calls = []


def _aux_only(x):
    return 2.0 * x


@srcgrad.rule(_aux_only)
def _aux_only_vjp(g, ans, x):
    _aux_vjp_calls.append(1)  # aux must never be differentiated
    return (2.0 * g,)


def with_aux(x, y):
    value = np.sum(np.sin(x) * y[:3])
    stats = _aux_only(np.cos(x))
    return value, {"stats": stats, "label": "run 1", "sizes": (len(x), len(y))}


def value_of(x, y):
    return with_aux(x, y)[0]


def _check_aux(aux):
    assert aux["label"] == "run 1" and aux["sizes"] == (3, 4)
    close(aux["stats"], 2.0 * np.cos(X), rtol=1e-14)


def test_grad_has_aux():
    _aux_vjp_calls.clear()
    g, aux = srcgrad.grad(with_aux, has_aux=True)(X, Y)
    close(g, fd_jacobian(value_of, (X, Y), 0))
    _check_aux(aux)
    (gx, gy), aux = srcgrad.grad(with_aux, argnums=(0, 1), has_aux=True)(X, Y)
    close(gy, fd_jacobian(value_of, (X, Y), 1))
    _check_aux(aux)
    assert not _aux_vjp_calls


def test_value_and_grad_has_aux():
    _aux_vjp_calls.clear()
    (value, aux), g = srcgrad.value_and_grad(with_aux, has_aux=True)(X, Y)
    assert value == pytest.approx(value_of(X, Y))
    close(g, fd_jacobian(value_of, (X, Y), 0))
    _check_aux(aux)
    assert not _aux_vjp_calls


def test_vjp_has_aux():
    _aux_vjp_calls.clear()
    value, pullback, aux = srcgrad.vjp(with_aux, X, Y, has_aux=True)
    assert value == pytest.approx(value_of(X, Y))
    gx, gy = pullback(2.0)
    close(gx, 2.0 * fd_jacobian(value_of, (X, Y), 0))
    close(gy, 2.0 * fd_jacobian(value_of, (X, Y), 1))
    _check_aux(aux)
    assert not _aux_vjp_calls


def vector_with_aux(x):
    return np.tanh(x) * x[0], {"norm": float(np.sum(x * x)), "name": "tanh"}


@pytest.mark.parametrize("jac", [srcgrad.jacrev, srcgrad.jacfwd])
def test_jacobians_has_aux(jac):
    j, aux = jac(vector_with_aux, has_aux=True)(X)
    close(j, fd_jacobian(lambda x: vector_with_aux(x)[0], (X,), 0))
    assert aux == {"norm": pytest.approx(float(np.sum(X * X))), "name": "tanh"}


def test_has_aux_gradient_differentiated_again():
    g = srcgrad.grad(with_aux, has_aux=True)
    second = srcgrad.grad(lambda x: np.sum(g(x, Y)[0] ** 2))(X)
    close(second, fd_jacobian(lambda x: np.sum(g(x, Y)[0] ** 2), (X,), 0), rtol=1e-5)


def test_has_aux_requires_a_pair():
    with pytest.raises(srcgrad.SrcgradError, match=r"return a pair \(value, aux\)"):
        srcgrad.grad(loss, has_aux=True)(X, Y)


# -- 3. pytrees ------------------------------------------------------------------------------
Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float


def test_flatten_orders_dicts_by_key_and_roundtrips():
    tree = {"b": [1.0, (2.0, None)], "a": Point(np.ones(2), 3.0),
            "c": Layer(np.zeros(3), 4.0), "d": None}
    leaves, treedef = srcgrad.tree_flatten(tree)
    assert isinstance(treedef, TreeDef) and treedef.num_leaves == 6
    assert [np.shape(v) for v in leaves] == [(2,), (), (), (), (3,), ()]
    assert leaves[1:4] == [3.0, 1.0, 2.0] and leaves[5] == 4.0  # a, then b, then c
    rebuilt = srcgrad.tree_unflatten(treedef, leaves)
    assert list(rebuilt) == ["a", "b", "c", "d"] and rebuilt["d"] is None
    assert isinstance(rebuilt["a"], Point) and isinstance(rebuilt["c"], Layer)
    assert rebuilt["b"] == [1.0, (2.0, None)] and rebuilt["c"].b == 4.0
    assert all(a is b for a, b in zip(srcgrad.tree_leaves(tree), leaves))
    assert srcgrad.tree_flatten(None) == ([], srcgrad.tree_structure(None))


def test_tree_map_over_several_trees():
    a = {"w": np.arange(3.0), "s": (1.0, 2.0)}
    b = {"w": np.ones(3), "s": (10.0, 20.0)}
    out = srcgrad.tree_map(lambda p, q: p + 2 * q, a, b)
    np.testing.assert_array_equal(out["w"], np.arange(3.0) + 2)
    assert out["s"] == (21.0, 42.0)
    with pytest.raises(srcgrad.SrcgradError, match="structure"):
        srcgrad.tree_map(lambda p, q: p, a, {"w": 1.0})
    with pytest.raises(srcgrad.SrcgradError, match="leaves"):
        srcgrad.tree_unflatten(srcgrad.tree_structure(a), [1.0])


def _mlp_loss(params, x, y):
    h = np.tanh(x @ params["layers"][0].w + params["layers"][0].b)
    pred = h @ params["out"]["w"] + params["out"]["b"]
    return np.mean((pred - y) ** 2)


def test_training_loop_with_tree_map():
    data_rng = np.random.default_rng(0)
    x = data_rng.standard_normal((16, 3))
    y = np.sin(x[:, 0])
    params = {"layers": [Layer(0.5 * data_rng.standard_normal((3, 8)), 0.0)],
              "out": {"w": 0.5 * data_rng.standard_normal(8), "b": 0.0}}
    grad_loss = srcgrad.grad(_mlp_loss)
    g = grad_loss(params, x, y)
    # the gradient has the parameters' structure, checked against finite differences
    assert srcgrad.tree_structure(g) == srcgrad.tree_structure(params)
    leaves, treedef = srcgrad.tree_flatten(params)
    direction = [data_rng.standard_normal(np.shape(v)) for v in leaves]
    shifted = [srcgrad.tree_unflatten(treedef, [v + s * EPS * d for v, d in
                                                zip(leaves, direction)]) for s in (1, -1)]
    numeric = (_mlp_loss(shifted[0], x, y) - _mlp_loss(shifted[1], x, y)) / (2 * EPS)
    predicted = sum(np.sum(gl * d) for gl, d in zip(srcgrad.tree_leaves(g), direction))
    assert predicted == pytest.approx(numeric, rel=1e-5)
    first = _mlp_loss(params, x, y)
    for _ in range(30):
        params = srcgrad.tree_map(lambda p, g: p - 0.1 * g, params, grad_loss(params, x, y))
    assert isinstance(params["layers"][0], Layer)
    assert _mlp_loss(params, x, y) < 0.7 * first


# -- 4. custom_vjp / custom_jvp --------------------------------------------------------------
@srcgrad.custom_vjp
def clipped_sin(x):
    return np.sin(x)


def _clipped_sin_fwd(x):
    return np.sin(x), np.cos(x)


def _clipped_sin_bwd(cos_x, g):
    return (np.clip(g * cos_x, -0.5, 0.5),)


clipped_sin.defvjp(_clipped_sin_fwd, _clipped_sin_bwd)


@srcgrad.custom_vjp
def scaled_product(a, b, scale=2.0):
    return scale * a * b


def _scaled_product_fwd(a, b, scale=2.0):
    return scale * a * b, (a, b, scale)


def _scaled_product_bwd(residuals, g):
    a, b, scale = residuals
    return g * scale * b, g * scale * a, np.sum(g * a * b)  # shaped like each argument


scaled_product.defvjp(_scaled_product_fwd, _scaled_product_bwd)


def uses_product(x, y):
    return np.sum(scaled_product(np.sin(x), y[:3], scale=1.5) ** 2)


def test_custom_vjp_first_order_and_jvp():
    for i in (0, 1):
        close(srcgrad.grad(uses_product, argnums=i)(X, Y),
              fd_jacobian(uses_product, (X, Y), i))
    v = rng.standard_normal(3)
    _, tangent = srcgrad.jvp(uses_product, (X, Y), (v, np.zeros(4)))
    assert tangent == pytest.approx(float(fd_jacobian(uses_product, (X, Y), 0) @ v), rel=1e-5)
    # called directly, and through vjp
    value, pullback = srcgrad.vjp(scaled_product, X, Y[:3])
    ga, gb = pullback(np.ones(3))
    close(ga, 2.0 * Y[:3], rtol=1e-14)
    scale_grad = srcgrad.grad(lambda s: np.sum(scaled_product(X, Y[:3], s)))(1.5)
    assert scale_grad == pytest.approx(float(np.sum(X * Y[:3])), rel=1e-12)
    assert srcgrad.rules.lookup(scaled_product).vjp is not None  # in the one registry


def test_custom_vjp_is_the_derivative_used():
    x = np.array([-2.0, 0.1, 1.0])
    big = srcgrad.grad(lambda x: np.sum(10.0 * clipped_sin(x)))(x)
    close(big, np.clip(10.0 * np.cos(x), -0.5, 0.5), rtol=1e-14)  # clipped, not 10 cos x
    small = srcgrad.grad(lambda x: np.sum(0.1 * clipped_sin(x)))(x)
    close(small, fd_jacobian(lambda x: np.sum(0.1 * np.sin(x)), (x,), 0))
    # the Tensor facade reads the same registry entry
    t = srcgrad.tensor(x, requires_grad=True)
    (10.0 * clipped_sin(t)).sum().backward()
    close(t.grad.numpy(), big, rtol=1e-14)
    assert clipped_sin(0.3) == pytest.approx(np.sin(0.3))  # undifferentiated: plain call


@srcgrad.custom_jvp
def softplus_times(x, y):
    return np.log1p(np.exp(x)) * y


@softplus_times.defjvp
def _softplus_times_jvp(primals, tangents):
    (x, y), (dx, dy) = primals, tangents
    return softplus_times(x, y), dx * y / (1.0 + np.exp(-x)) + dy * np.log1p(np.exp(x))


def uses_softplus(x, y):
    return np.sum(softplus_times(x, y[:3]) ** 2)


def test_custom_jvp_forward_reverse_and_second_order():
    v, w = rng.standard_normal(3), rng.standard_normal(4)
    _, tangent = srcgrad.jvp(uses_softplus, (X, Y), (v, w))
    numeric = fd_jacobian(uses_softplus, (X, Y), 0) @ v + fd_jacobian(uses_softplus, (X, Y),
                                                                       1) @ w
    assert tangent == pytest.approx(float(numeric), rel=1e-5)
    for i in (0, 1):  # reverse mode: the transposed jvp
        close(srcgrad.grad(uses_softplus, argnums=i)(X, Y),
              fd_jacobian(uses_softplus, (X, Y), i))
    g = srcgrad.grad(uses_softplus)
    close(srcgrad.hessian(uses_softplus)(X, Y), fd_jacobian(g, (X, Y), 0), rtol=1e-5,
          atol=1e-6)


@srcgrad.custom_jvp
def straight_through_round(x):
    return np.round(x)


@straight_through_round.defjvp
def _straight_through_jvp(primals, tangents):
    return straight_through_round(primals[0]), tangents[0]  # derivative 1, not 0


def test_custom_jvp_is_the_derivative_used():
    x = np.array([0.2, 1.7, -2.4])
    f = lambda x: np.sum(straight_through_round(x) * x)  # noqa: E731
    close(srcgrad.grad(f)(x), np.round(x) + x, rtol=1e-14)
    _, tangent = srcgrad.jvp(f, (x,), (np.ones(3),))
    assert tangent == pytest.approx(float(np.sum(np.round(x) + x)))


def test_custom_rule_refuses_starred_parameters():
    with pytest.raises(srcgrad.SrcgradError, match="not plain positional"):
        srcgrad.custom_vjp(lambda *xs: xs[0])


# -- 5. elementwise_grad ---------------------------------------------------------------------
def test_elementwise_grad():
    x = np.linspace(-2.0, 2.0, 7)
    close(srcgrad.elementwise_grad(np.tanh)(x), 1.0 - np.tanh(x) ** 2, rtol=1e-12)
    f = lambda x, y: np.sin(x) * y  # noqa: E731
    close(srcgrad.elementwise_grad(f, argnums=1)(x, 3.0),
          fd_jacobian(lambda y: np.sum(f(x, y)), (3.0,), 0))
    # elementwise derivatives differentiate again: second derivative of sin is -sin
    second = srcgrad.elementwise_grad(srcgrad.elementwise_grad(np.sin))(x)
    close(second, -np.sin(x), rtol=1e-12, atol=1e-14)


# -- 6. preserve_result ----------------------------------------------------------------------
def test_preserve_result_is_value_then_gradient():
    value, g = srcgrad.grad(loss, argnums=(0, 1), preserve_result=True)(X, Y)
    expected_value, expected_g = srcgrad.value_and_grad(loss, argnums=(0, 1))(X, Y)
    assert value == expected_value
    close(g[0], expected_g[0], rtol=0, atol=0)
    close(g[1], fd_jacobian(loss, (X, Y), 1))


# -- 7. float32 ------------------------------------------------------------------------------
@pytest.mark.parametrize("api", [srcgrad.jacfwd, srcgrad.jacrev])
def test_jacobians_keep_float32(api):
    x = X.astype(np.float32)
    j = api(np.sin)(x)
    assert j.dtype == np.float32
    close(j, np.diag(np.cos(X)), rtol=1e-6)
    jx, jy = api(lambda a, b: a * b[0], argnums=(0, 1))(x, np.ones(2, np.float32))
    assert jx.dtype == jy.dtype == np.float32


def test_hessian_keeps_float32():
    x = X.astype(np.float32)
    h = srcgrad.hessian(lambda x: np.sum(np.sin(x) * x))(x)
    assert h.dtype == np.float32
    close(h, np.diag(2 * np.cos(X) - X * np.sin(X)), rtol=1e-5, atol=1e-6)


# -- 8. the public surface -------------------------------------------------------------------
def test_public_names_and_type_hints():
    for name in ("elementwise_grad", "custom_vjp", "custom_jvp", "tree_map", "tree_flatten",
                 "tree_unflatten", "tree_leaves"):
        assert name in srcgrad.__all__ and hasattr(srcgrad, name)
    for fn in (srcgrad.grad, srcgrad.value_and_grad, srcgrad.elementwise_grad,
               srcgrad.jacfwd, srcgrad.jacrev, srcgrad.hessian):
        hints = typing.get_type_hints(fn)
        assert "argnums" in hints and "wrt" in hints and "return" in hints, fn.__name__
        assert "argnums" in inspect.signature(fn).parameters
    for fn in (srcgrad.vjp, srcgrad.jvp, srcgrad.tree_map, srcgrad.tree_flatten):
        assert "return" in typing.get_type_hints(fn), fn.__name__


def test_elementwise_grad_refuses_what_grad_refuses():
    # (the parity check of tests/test_errors.py, for the new entry point)
    for bad in (np.ma.array(X, mask=[0, 1, 0]), np.arange(3), [X, "text"]):
        with pytest.raises(srcgrad.SrcgradError) as by_grad:
            srcgrad.grad(lambda x: np.sum(np.sin(x)))(bad)
        with pytest.raises(srcgrad.SrcgradError) as by_elementwise:
            srcgrad.elementwise_grad(lambda x: np.sin(x))(bad)
        reason = str(by_grad.value).split(": it is ")[1]
        assert reason in str(by_elementwise.value)


def test_jacobians_one_row_or_column_at_a_time(monkeypatch):
    # the paths taken when vmap cannot batch the sweep: same results
    from srcgrad import api_forward
    monkeypatch.setattr(api_forward, "_batched", lambda fn, positions: None)
    for jac in (srcgrad.jacfwd, srcgrad.jacrev):
        jx, jy = jac(vector_fn, argnums=(0, 1))(X, Y)
        close(jx, fd_jacobian(vector_fn, (X, Y), 0))
        close(jy, fd_jacobian(vector_fn, (X, Y), 1))
        j, aux = jac(vector_with_aux, has_aux=True)(X)
        close(j, fd_jacobian(lambda x: vector_with_aux(x)[0], (X,), 0))
        assert aux["name"] == "tanh"
        assert jac(np.sin)(X.astype(np.float32)).dtype == np.float32
