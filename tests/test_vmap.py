"""vmap by source transformation, checked against a Python loop over the examples."""
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad import VmapFallbackWarning, batching, vmap
from fdcheck import check_grad

rng = np.random.default_rng(0)
B = 5


def loop(f, in_axes, args, out_axes=0):
    """The reference: f called once per example, results stacked."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, axes)])
            for b in range(size)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([o[i] for o in outs], axis=out_axes)
                     for i in range(len(outs[0])))
    return np.stack(outs, axis=out_axes)


class CountLoops:
    """Counts the calls that fell back to a loop over the examples."""

    def __enter__(self):
        self.calls = []
        self.original = batching.per_example

        def counting(fn, *args):
            self.calls.append(getattr(fn, "__name__", fn))
            return self.original(fn, *args)
        batching.per_example = counting
        return self

    def __exit__(self, *exc):
        batching.per_example = self.original


def check(f, *args, in_axes=0, out_axes=0, batched=True):
    """vmap(f) agrees with the loop; with ``batched`` it must not loop anywhere."""
    with warnings.catch_warnings(), CountLoops() as loops:
        warnings.simplefilter("error" if batched else "ignore", VmapFallbackWarning)
        got = vmap(f, in_axes=in_axes, out_axes=out_axes)(*args)
    if batched:
        assert loops.calls == [], f"looped over the batch for {loops.calls}"
    want = loop(f, in_axes, args, out_axes)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert np.shape(g) == np.shape(w)
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    else:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    return got


# -- user-style functions -------------------------------------------------------------------
def elementwise(x, y):
    return np.sin(x) * y + 2.0 / (1.0 + np.exp(-x)) - y ** 2


def scalar_times_vector(a, v):
    return a * v + np.cos(a)


def matvec(W, x):
    return np.tanh(W @ x)


def vecmat(x, W):
    return x @ W


def dot_vectors(x, y):
    return x @ y + np.dot(x, y)


def matmat(A, C):
    return A @ C


def einsum_ops(A, x):
    return np.einsum("ij,j->i", A, x) + np.einsum("ij,jk", A, A.T).sum(axis=1)


def reductions(x):
    return (np.sum(x) + np.sum(x, axis=0).sum() + np.mean(x, axis=-1).sum()
            + np.max(x) * np.std(x) + np.sum(x, axis=(0, 1)) + np.sum(x, axis=1,
                                                                        keepdims=True).sum())


def arg_and_cum(x):
    return np.cumsum(x, axis=1)[:, -1] + np.argmax(x, axis=1) + np.cumsum(x, axis=-2)[-1].sum()


def indexing(x, idx):
    return x[0] + x[1:, 2].sum() + x[..., 0].sum() + x[idx].sum() + x[:, None, 1].sum()


def methods(x):
    return x.sum(axis=0) + x.mean() + x.max() * x.T[0] + x.reshape(-1)[:4]


def shapes(x):
    n = x.shape[0]
    m = len(x)
    return x.reshape((n * x.shape[1],)) * m + np.transpose(x).ravel() + x.ndim


def helper(a, b, scale=1.0):
    return scale * a * b


def calls_helper(x, y):
    return helper(x, y) + helper(y, x, scale=np.sum(x))


def loop_accumulate(x, W):
    s = 0.0
    xs = []
    h = x
    for i in range(3):
        h = np.tanh(W @ h) + i
        s = s + np.sum(h ** 2)
        xs.append(h)
    return s + np.stack(xs).mean() + np.concatenate(xs, axis=0).sum()


def item_assign(x):
    y = x * 1.0
    y[0] = 2.0 * x[1]
    y[1:3] = 0.5
    return y


def returns_tuple(x, c):
    return np.sum(x ** 2), c * 2.0


def logistic_loss(w, x, y):
    z = x @ w
    return np.log1p(np.exp(-y * z))


def mlp_loss(params, x, y):
    h = np.tanh(params["W1"] @ x + params["b1"])
    out = params["W2"] @ h
    return np.sum((out - y) ** 2)


def branchy(x):
    if np.sum(x) > 0:
        return x * 2.0
    return -x


def while_on_data(x):
    s = 0.0
    while s < np.sum(x ** 2):
        s = s + 1.0
    return s


def for_over_data(x):
    s = 0.0
    for i in range(int(np.sum(x > 0))):
        s = s + x[i] ** 2
    return s


# -- tests ----------------------------------------------------------------------------------
def test_elementwise_with_broadcasting_unbatched_operands():
    check(elementwise, rng.standard_normal((B, 3)), rng.standard_normal(3), in_axes=(0, None))
    check(elementwise, rng.standard_normal((B, 3)), rng.standard_normal((B, 3)))
    # a scalar per example against an unbatched vector: axes must be realigned
    check(scalar_times_vector, rng.standard_normal(B), rng.standard_normal(4),
          in_axes=(0, None))
    check(scalar_times_vector, rng.standard_normal(B), rng.standard_normal((B, 4)))


@pytest.mark.parametrize("in_axes", [(None, 0), (0, 0), (0, None)])
def test_matmul_variants(in_axes):
    W = rng.standard_normal((B, 3, 4)) if in_axes[0] == 0 else rng.standard_normal((3, 4))
    x = rng.standard_normal((B, 4)) if in_axes[1] == 0 else rng.standard_normal(4)
    check(matvec, W, x, in_axes=in_axes)
    xv = rng.standard_normal((B, 3)) if in_axes[0] == 0 else rng.standard_normal(3)
    W2 = rng.standard_normal((B, 3, 2)) if in_axes[1] == 0 else rng.standard_normal((3, 2))
    check(vecmat, xv, W2, in_axes=in_axes)
    y = rng.standard_normal((B, 3)) if in_axes[1] == 0 else rng.standard_normal(3)
    check(dot_vectors, xv, y, in_axes=in_axes)
    A = rng.standard_normal((B, 2, 3)) if in_axes[0] == 0 else rng.standard_normal((2, 3))
    C = rng.standard_normal((B, 3, 4)) if in_axes[1] == 0 else rng.standard_normal((3, 4))
    check(matmat, A, C, in_axes=in_axes)


def test_einsum_explicit_and_implicit():
    check(einsum_ops, rng.standard_normal((B, 3, 4)), rng.standard_normal(4), in_axes=(0, None))
    check(einsum_ops, rng.standard_normal((3, 4)), rng.standard_normal((B, 4)), in_axes=(None, 0))


def test_reductions_shift_their_axes():
    check(reductions, rng.standard_normal((B, 3, 4)))
    check(arg_and_cum, rng.standard_normal((B, 3, 4)))


def test_indexing_and_methods():
    idx = np.array([2, 0, 2])
    check(indexing, rng.standard_normal((B, 4, 3)), idx, in_axes=(0, None))
    # array indices apart: numpy moves their axes first, so this one loops (correctly)
    def apart(x, i):
        return x[i, :, 0] + x[0, i, 1]

    def adjacent(x, i):
        return x[1, i] + x[i > 0, 0].sum()
    check(apart, rng.standard_normal((B, 3, 3, 2)), idx, in_axes=(0, None), batched=False)
    check(adjacent, rng.standard_normal((B, 3, 3)), idx, in_axes=(0, None))
    check(methods, rng.standard_normal((B, 4, 4)))
    check(shapes, rng.standard_normal((B, 3, 2)))


def test_nested_expressions_the_anf_pass_keeps_are_batched_too():
    """Comparisons and integer results are not flattened by the anf pass (they carry no
    gradient); their batched operations must still be rewritten."""
    def f(x):
        m = np.sum(x) > 0
        k = np.argmax(x * 2.0) + 1
        n = np.sum(x > 0) * (np.max(x) < 1.0)
        return np.where(m, x, -x) * k + n + (x.T * 2).sum()
    check(f, rng.standard_normal((B, 3)))


def test_batched_integer_index():
    def pick(table, i):
        return table[i] * 2.0
    table = rng.standard_normal((6, 3))
    check(pick, table, np.array([0, 5, 2, 2, 1]), in_axes=(None, 0))


def test_calls_of_user_functions_are_batched_too():
    check(calls_helper, rng.standard_normal((B, 3)), rng.standard_normal((B, 3)))
    check(calls_helper, rng.standard_normal((B, 3)), rng.standard_normal(3), in_axes=(0, None))


def test_loops_over_the_items_of_batched_values():
    def rows(x, y):
        s = 0.0
        for v in x:
            s = s + np.sum(v ** 2)
        for i, v in enumerate(y):
            s = s + i * v
        for a, b in zip(x, y):
            s = s + np.sum(a) * b
        return s
    check(rows, rng.standard_normal((B, 3, 2)), rng.standard_normal((B, 4)))


def test_loops_lists_and_item_assignment():
    check(loop_accumulate, rng.standard_normal((B, 3)), rng.standard_normal((3, 3)),
          in_axes=(0, None))
    check(item_assign, rng.standard_normal((B, 4)))


def test_tuple_results_and_unbatched_outputs_are_lifted():
    got = check(returns_tuple, rng.standard_normal((B, 3)), 1.5, in_axes=(0, None))
    assert got[1].shape == (B,) and got[1].flags.writeable


def test_in_axes_other_than_zero_and_out_axes():
    W = rng.standard_normal((3, 4))
    x = rng.standard_normal((4, B))
    check(matvec, W, x, in_axes=(None, 1))
    check(matvec, W, x, in_axes=(None, -1), out_axes=1)
    M = rng.standard_normal((3, B, 3))
    got = vmap(lambda m: m @ m, in_axes=1, out_axes=2)(M)
    want = np.stack([M[:, b] @ M[:, b] for b in range(B)], axis=2)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_lambdas_and_closures():
    c = rng.standard_normal(3)
    check(lambda x: np.exp(x) * c, rng.standard_normal((B, 3)))

    def make(scale):
        def f(x):
            return scale * np.sum(x ** 3)
        return f
    check(make(2.0), rng.standard_normal((B, 3)))
    check(make(-1.0), rng.standard_normal((B, 3)))


def test_pytree_arguments_and_in_axes():
    params = {"W1": rng.standard_normal((4, 3)), "b1": rng.standard_normal(4),
              "W2": rng.standard_normal((2, 4))}
    X, Y = rng.standard_normal((B, 3)), rng.standard_normal((B, 2))
    got = vmap(mlp_loss, in_axes=(None, 0, 0))(params, X, Y)
    want = [mlp_loss(params, x, y) for x, y in zip(X, Y)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # a batch of parameter sets, batched only in W2 (a dict of in_axes)
    W2s = rng.standard_normal((B, 2, 4))
    batch = dict(params, W2=W2s)
    got = vmap(mlp_loss, in_axes=({"W1": None, "b1": None, "W2": 0}, None, None))(
        batch, X[0], Y[0])
    want = [mlp_loss(dict(params, W2=W2s[b]), X[0], Y[0]) for b in range(B)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_per_example_gradients():
    w = rng.standard_normal(3)
    X, Y = rng.standard_normal((B, 3)), np.sign(rng.standard_normal(B))
    with warnings.catch_warnings(), CountLoops() as loops:
        warnings.simplefilter("error", VmapFallbackWarning)
        per_example = vmap(srcgrad.grad(logistic_loss), in_axes=(None, 0, 0))(w, X, Y)
    assert per_example.shape == (B, 3) and loops.calls == []
    for b in range(B):
        np.testing.assert_allclose(per_example[b], srcgrad.grad(logistic_loss)(w, X[b], Y[b]),
                                   rtol=1e-12)
        check_grad(logistic_loss, (w, X[b], Y[b]), grads=(per_example[b],))


def test_per_example_gradients_of_a_dict_of_parameters():
    params = {"W1": rng.standard_normal((4, 3)), "b1": rng.standard_normal(4),
              "W2": rng.standard_normal((2, 4))}
    X, Y = rng.standard_normal((B, 3)), rng.standard_normal((B, 2))
    with warnings.catch_warnings(), CountLoops() as loops:
        warnings.simplefilter("error", VmapFallbackWarning)
        grads = vmap(srcgrad.grad(mlp_loss), in_axes=(None, 0, 0))(params, X, Y)
    assert loops.calls == []
    for b in range(B):
        want = srcgrad.grad(mlp_loss)(params, X[b], Y[b])
        for k in params:
            np.testing.assert_allclose(grads[k][b], want[k], rtol=1e-12, atol=1e-14)


def test_per_example_gradients_through_a_loop():
    W = rng.standard_normal((3, 3)) * 0.5
    X = rng.standard_normal((B, 3))
    g = srcgrad.grad(loop_accumulate, wrt=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        got = vmap(g, in_axes=(0, None))(X, W)
    for b in range(B):
        np.testing.assert_allclose(got[b], g(X[b], W), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f, construct", [(branchy, "data-dependent 'if'"),
                                          (while_on_data, "'while' on a batched value"),
                                          (for_over_data, "'for' loop over a batched value")])
def test_data_dependent_control_flow_falls_back_with_a_note(f, construct):
    X = rng.standard_normal((B, 3))
    X[0] = -np.abs(X[0])
    X[1] = np.abs(X[1])
    with pytest.warns(VmapFallbackWarning) as record:
        got = vmap(f)(X)
    message = str(record[0].message)
    assert construct in message and "test_vmap.py:" in message
    assert "once per example" in message
    np.testing.assert_allclose(got, loop(f, 0, (X,)), rtol=1e-12)
    # (branchy's two returns are lowered to a choice per example, which fails at run time
    # for a batch mixing both: None is the other branch's return value meanwhile)
    assert ("_bv.select(" if f is branchy else "once per example") in srcgrad.source(vmap(f))


def test_source_shows_the_batched_code():
    text = srcgrad.source(vmap(matvec, in_axes=(None, 0)))
    assert "def matvec_batched(W, x):" in text and "np.tanh(" in text
    assert "operator.matmul" in text


def test_bad_in_axes_are_errors():
    x = rng.standard_normal((B, 3))
    with pytest.raises(srcgrad.SrcgradError, match="batch axes disagree"):
        vmap(elementwise)(x, rng.standard_normal((B + 1, 3)))
    with pytest.raises(srcgrad.SrcgradError, match="in_axes has 1 entries"):
        vmap(elementwise, in_axes=(0,))(x, x)
    with pytest.raises(srcgrad.SrcgradError, match="maps no argument"):
        vmap(elementwise, in_axes=None)(x, x)
    with pytest.raises(srcgrad.SrcgradError, match="no axis"):
        vmap(elementwise)(x, 2.0)
    with pytest.raises(srcgrad.SrcgradError, match="no such axis"):
        vmap(elementwise, in_axes=(2, 0))(x, x)


def test_unbatchable_callee_is_looped_without_changing_the_caller():
    def picky(v):
        if v[0] > 0:
            return v * 2.0
        return v
    def outer(x):
        return np.sum(picky(x) ** 2)
    # (first entries of both signs: were they all of one sign, the branch would not vary
    # over the batch and vmap would batch it without a fallback; the file's shared rng
    # drew that about once in 16 orders of its tests)
    X = np.random.default_rng(11).standard_normal((B, 3))
    X[:, 0] = np.linspace(-1.0, 1.0, B) + 0.1
    with pytest.warns(VmapFallbackWarning, match="picky"):
        got = vmap(outer)(X)
    np.testing.assert_allclose(got, [outer(x) for x in X], rtol=1e-12)


# -- jacfwd / jacrev / hessian batch their jvp / vjp with vmap ------------------------------
def softmax_layer(x, W):
    z = W @ x
    e = np.exp(z - np.max(z))
    return e / np.sum(e)


def loop_map(x, W):
    h = x
    for i in range(2):
        h = np.sin(W @ h) * (i + 1.0)
    return h


def scalar_loss(x, W):
    return np.sum(softmax_layer(x, W) ** 2) + np.sum(x ** 4)


def numeric_jacobian(f, x, eps=1e-6):
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


@pytest.mark.parametrize("f", [softmax_layer, loop_map, matvec, elementwise])
def test_jacobians_by_vmap_match_the_loops_and_finite_differences(f):
    from srcgrad.api import get_adjoint
    from srcgrad.api_forward import _jacfwd_loop, _jacrev_loop, get_forward
    x, W = rng.standard_normal(3), rng.standard_normal((3, 3))
    if f is matvec:
        x, W = W, x  # matvec(W, x): the Jacobian with respect to the matrix
    fwd_jac = srcgrad.jacfwd(f)(x, W)
    rev_jac = srcgrad.jacrev(f)(x, W)
    jf = get_forward(f, (0,)).function_for(f)
    np.testing.assert_allclose(fwd_jac, _jacfwd_loop(jf, x, [x, W]), rtol=1e-13, atol=1e-15)
    fwd, bwd = get_adjoint(f, (0,)).sweeps_for(f)
    value, saved = fwd(x, W)
    np.testing.assert_allclose(rev_jac, _jacrev_loop(bwd, saved, x, np.shape(value)),
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(fwd_jac, numeric_jacobian(lambda v: f(v, W), x),
                               rtol=1e-6, atol=1e-8)


def test_hessian_by_vmap_matches_finite_differences_of_the_gradient():
    x, W = rng.standard_normal(3), rng.standard_normal((3, 3))
    H = srcgrad.hessian(scalar_loss)(x, W)
    g = srcgrad.grad(scalar_loss)
    np.testing.assert_allclose(H, numeric_jacobian(lambda v: g(v, W), x), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-14)
    # (jacrev(g) here hits a reverse-over-reverse bug of matmul_left with a zero cotangent,
    # reported separately; on an elementwise loss it agrees)
    def smooth(v):
        return np.sum(np.sin(v) ** 2 * v)
    np.testing.assert_allclose(srcgrad.jacrev(srcgrad.grad(smooth))(x),
                               srcgrad.hessian(smooth)(x), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f", [softmax_layer, matvec, elementwise, scalar_loss])
def test_jacobians_batch_their_jvp_and_vjp_in_one_run(f, monkeypatch):
    """jacfwd/jacrev/hessian of batchable functions loop neither over the columns or rows
    nor over examples inside (so the comparisons above test the batched path)."""
    from srcgrad import api_forward

    def no_loop(*args):
        raise AssertionError("the Jacobian was computed one column or row at a time")
    monkeypatch.setattr(api_forward, "_jacfwd_loop", no_loop)
    monkeypatch.setattr(api_forward, "_jacrev_loop", no_loop)
    x, W = rng.standard_normal(4), rng.standard_normal((4, 4))
    if f is matvec:
        x, W = W, x
    with CountLoops() as loops:
        if f is scalar_loss:
            H = srcgrad.hessian(f)(x, W)
            g = srcgrad.grad(f)
            np.testing.assert_allclose(H, numeric_jacobian(lambda v: g(v, W), x),
                                       rtol=1e-6, atol=1e-8)
            return  # (a few helpers of its jvp, such as extremum_weights, loop inside)
        srcgrad.jacfwd(f)(x, W)
        srcgrad.jacrev(f)(x, W)
    assert loops.calls == []


# -- the corpus of user-style functions: vmap over each one's first argument ---------------
def _corpus_cases():
    from corpus import CASES
    out = []
    for c in CASES:
        a = c.args[c.wrt[0]]
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and not c.kwargs:
            out.append(c)
    return out


@pytest.mark.parametrize("case", _corpus_cases(), ids=lambda c: c.id)
def test_vmap_on_the_corpus_matches_a_loop(case):
    """Batched (or looped, with a warning) vmap of each corpus function over 3 copies of its
    first differentiable argument, perturbed, against calling it once per copy."""
    i = case.wrt[0]
    base = case.args[i]
    r = np.random.default_rng(7)
    batch = np.stack([base + 0.01 * k * r.standard_normal(base.shape) for k in range(3)])
    in_axes = tuple(0 if j == i else None for j in range(len(case.args)))
    copies = [list(case.args) for _ in range(3)]
    want = []
    for k in range(3):
        copies[k][i] = batch[k].copy()
        try:
            want.append(case.fn(*copies[k]))
        except Exception:
            pytest.skip("the function does not run on this input")
    args = list(case.args)
    args[i] = batch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        got = vmap(case.fn, in_axes=in_axes)(*args)
    for k in range(3):
        _assert_tree_close(batching.take(got, k), want[k])


def _assert_tree_close(got, want):
    if isinstance(want, dict):
        assert set(got) == set(want)
        for key in want:
            _assert_tree_close(got[key], want[key])
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_tree_close(g, w)
    else:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_methods_and_source_before_the_first_call():
    class Model:
        def __init__(self, W):
            self.W = W

        def predict(self, x, scale=1.0):
            return scale * np.tanh(self.W @ x)
    m = Model(rng.standard_normal((2, 3)))
    X = rng.standard_normal((B, 3))
    v = vmap(m.predict, in_axes=(0, None))
    assert "def predict_batched(self, x, scale=1.0):" in srcgrad.source(v)
    np.testing.assert_allclose(v(X, 2.0), [m.predict(x, 2.0) for x in X], rtol=1e-12)
    assert "def loop_accumulate_batched" in srcgrad.source(vmap(loop_accumulate,
                                                                 in_axes=(0, None)))


def test_batched_names_skip_shapes_and_lift_unbatched_definitions():
    """The pass on a small tree: shapes of batched values are not batched, and a batched
    name's unbatched definition (the accumulator's start) is lifted."""
    from srcgrad.transforms import PIPELINE, prepare
    from srcgrad.transforms.batch import batched_names

    def f(x, c):
        n = x.shape[0]
        s = 0.0
        for i in range(n):
            s = s + x[i] * c
        return s
    ctx = prepare(f, (0,))
    tree = ctx.src.tree
    for _, run in PIPELINE:
        tree = run(tree, ctx)
    names = batched_names(tree, ctx, {"x"})
    assert {"x", "s"} <= names and not {"n", "c", "i"} & names
    text = srcgrad.source(vmap(f, in_axes=(0, None)))
    assert "s = _bv.lift(0.0, _B)" in text and "for i in range(n):" in text


def test_shapes_inside_expressions_are_one_examples():
    def f(x, y):
        m = np.zeros(x.shape) < np.reshape(y, x.shape)  # (a comparison: kept nested)
        return np.where(m, x, 0.0) * len(x) + np.ones(np.shape(x)) * x.size
    check(f, rng.standard_normal((B, 3)), rng.standard_normal((B, 3, 1)))


def huber(x, delta):
    r = np.sum(x)
    if np.abs(r) < delta:
        loss = 0.5 * r ** 2
        kind = 0
    else:
        loss = delta * (np.abs(r) - 0.5 * delta)
        kind = 1
    scale = 1.0
    if loss > 1.0:
        scale = 2.0
    return loss * scale + kind


def test_branches_that_only_assign_are_lowered_to_a_choice_per_example():
    X = rng.standard_normal((8, 3))
    got = check(huber, X, 1.0, in_axes=(0, None))  # (check forbids loops and warnings)
    text = srcgrad.source(vmap(huber, in_axes=(0, None)))
    assert text.count("_bv.select(") == 3
    # every example on one side: the choice is still made per example
    check(huber, np.full((4, 3), 10.0), 1.0, in_axes=(0, None))
    assert got.shape == (8,)


def test_a_lowered_branch_failing_for_other_examples_falls_back_to_the_loop():
    def pick(x, i):
        if i < 3:
            y = x[i] * 2.0
        else:
            y = 0.0
        return y
    X = rng.standard_normal((4, 3))
    idx = np.array([0, 5, 2, 7])
    with pytest.warns(VmapFallbackWarning, match="IndexError"):
        got = vmap(pick)(X, idx)
    np.testing.assert_allclose(got, [pick(x, i) for x, i in zip(X, idx)], rtol=1e-12)


def test_truth_value_of_a_vector_per_example_is_an_error_as_in_the_loop():
    def ambiguous(x):
        if x > 0:
            y = x
        else:
            y = -x
        return y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        with pytest.raises(ValueError, match="ambiguous"):
            vmap(ambiguous)(rng.standard_normal((B, 3)))
    check(ambiguous, rng.standard_normal(B))


def test_a_choice_between_values_of_different_shapes_is_left_to_the_loop():
    def widen(x):
        y = 0.0
        if np.sum(x) > 0:
            y = x * 2.0
        return np.sum(y + x)  # (a scalar or a vector per example, then reduced)
    X = rng.standard_normal((6, 3))
    X[0], X[1] = np.abs(X[0]), -np.abs(X[1])
    with pytest.warns(VmapFallbackWarning, match="shapes"):
        got = vmap(widen)(X)
    np.testing.assert_allclose(got, [widen(x) for x in X], rtol=1e-12)

    def flag(x, xs):
        if xs:  # a list's truth: its length
            y = x
        else:
            y = -x
        return y
    with pytest.warns(VmapFallbackWarning):
        got = vmap(flag, in_axes=(0, 0))(X[:, 0], [X[:, 1]])
    np.testing.assert_allclose(got, X[:, 0], rtol=1e-12)


@pytest.mark.parametrize("fn", [np.sum, np.mean, np.max, np.min, np.prod, np.std, np.var,
                                np.any, np.argmax, np.cumsum])
def test_reducing_a_number_per_example_never_reduces_the_batch(fn):
    # np.sum of a batch of numbers used to sum across the batch
    x = np.array([0.5, -1.5, 2.0])
    got = batching.apply(fn, (x,), {}, {0}, 3)
    want = np.stack([np.asarray(fn(x[i])) for i in range(3)])
    assert np.shape(got) == want.shape and np.allclose(got, want)


def test_the_parameter_update_check_runs_on_one_example_of_the_batch():
    """``refuse_mutable`` (a callee's ``p *= 2`` on an argument) under vmap looks at one
    example: a batch of numbers passes (each example is a number, which ``*=`` rebinds), a
    batch of arrays is refused as one array is. (It indexed the set of batched positions,
    a TypeError, before session 34.)"""
    from srcgrad import runtime
    check = runtime.refuse_mutable
    rule = batching.BATCH_RULES[check]  # (batching.apply loops per example if it fails)
    rule(check, (np.arange(3.0), "m"), {}, {0}, 3)
    with pytest.raises(srcgrad.SrcgradError, match="m"):
        rule(check, (np.ones((3, 2)), "m"), {}, {0}, 3)
