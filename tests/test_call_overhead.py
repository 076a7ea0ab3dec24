"""The fixed per-call costs of a generated gradient (issue 11): the fast paths that cut them
give exactly what the general paths give, and step aside whenever they would not."""
import numpy as np
import pytest

import srcgrad
from srcgrad import api, generated
from srcgrad.rules._helpers import expand_to


# -- a reduction's cotangent spread from a 0-d array -----------------------------------------
def _general_spread(g, x):
    """What expand_to computed before its fast paths: numpy's own broadcast."""
    return np.broadcast_to(np.reshape(g, (1,) * np.ndim(x)), np.shape(x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64, np.bool_])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (4, 1, 2), (17,), (5, 4), (3, 0)])
def test_a_0d_array_spreads_like_broadcast_to(dtype, shape):
    g = np.array(1.5 if dtype is not np.bool_ else True, dtype)
    x = np.zeros(shape)
    got, want = expand_to(g, x), _general_spread(g, x)
    assert type(got) is np.ndarray and got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want)
    if x.size > 16:  # a view of the cotangent, as numpy's broadcast is
        assert np.shares_memory(got, g) and not got.flags.writeable
    else:  # up to 16 elements, new ones: cheaper than a view, which numpy's buffer
        # bookkeeping on g (~0.3 kB, as long as g lives) makes larger than the elements
        assert not np.shares_memory(got, g) and got.flags.writeable
        assert expand_to(g, x) is not got


def test_a_small_spread_keeps_no_bookkeeping_on_the_cotangent():
    import tracemalloc
    x = np.zeros(3)
    expand_to(np.array(1.0), x)  # (warm)
    tracemalloc.start()
    try:
        g = np.array(1.0)
        before = tracemalloc.get_traced_memory()[0]
        spread = expand_to(g, x)
        del spread
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 64, kept  # (a view left ~100 bytes of buffer information on g)


def test_a_0d_array_spreads_without_broadcast_to(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(np, "broadcast_to", refuse)
    out = expand_to(np.array(2.0, np.float32), np.zeros((2, 2)))
    assert out.dtype == np.float32 and out.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_a_0d_view_into_a_larger_array_spreads_its_own_element():
    base = np.arange(4.0)
    g = base[2, ...]  # a 0-d view at an offset into base's buffer
    out = expand_to(g, np.zeros(30))
    assert out.tolist() == [2.0] * 30
    base[2] = 7.0  # a view, like numpy's broadcast: it sees later writes
    assert out.tolist() == [7.0] * 30
    assert expand_to(g, np.zeros(3)).tolist() == [7.0] * 3


def test_other_cotangents_keep_the_general_path():
    x = np.zeros((2, 3))
    sub = np.array(3.0).view(type("Sub", (np.ndarray,), {}))  # (a subclass: numpy's path)
    for g in (np.array([1.0]), np.array(1.0, dtype=object), sub):
        got = expand_to(g, x)
        assert np.array_equal(got, _general_spread(g, x)) and got.shape == x.shape
    # an axis given: the reduced axes only
    got = expand_to(np.array([1.0, 2.0]), x, axis=1)
    assert got.tolist() == [[1.0] * 3, [2.0] * 3]
    # x not an ndarray: its shape through np.shape
    assert expand_to(np.array(4.0), 2.5).shape == ()
    assert expand_to(np.array(4.0), [[1.0, 2.0]]).tolist() == [[4.0, 4.0]]


# -- the seed of grad --------------------------------------------------------------------------
@pytest.mark.parametrize("value, dtype", [(np.float64(2.0), np.float64),
                                          (np.float32(2.0), np.float32),
                                          (np.array(2.0), np.float64),
                                          (np.array(2.0, np.float32), np.float32),
                                          (np.array([2.0], np.float32), np.float32)])
def test_seed_is_a_fresh_one_of_the_value_dtype(value, dtype):
    seeds = [api.grad_seed_of(test_seed_is_a_fresh_one_of_the_value_dtype, value) for _ in range(2)]
    for seed in seeds:
        assert type(seed) is np.ndarray and seed.dtype == dtype
        assert np.array_equal(seed, np.ones_like(value)) and seed.shape == np.shape(value)
        assert seed.flags.writeable and seed.flags.owndata
    assert seeds[0] is not seeds[1]  # generated code may own (update) its cotangents
    assert api.grad_seed_of(test_seed_is_a_fresh_one_of_the_value_dtype, 2.0) == 1.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_grad_of_a_sum_keeps_the_dtype(dtype):
    x = np.array([0.5, -1.0, 2.0], dtype)
    g = srcgrad.grad(lambda x: np.sum(x * x))(x)
    assert g.dtype == dtype and np.array_equal(g, (2 * x).astype(dtype))
    g = srcgrad.grad(lambda x: np.sum(x) * 3.0)(x)  # a python float times the sum
    assert np.array_equal(g, np.full(3, 3.0))


def test_grad_of_a_0d_array_and_of_python_floats():
    assert srcgrad.grad(lambda x: np.sum(x * x))(np.array(3.0)) == 6.0
    assert srcgrad.grad(lambda x: x * x)(3.0) == 6.0
    g = srcgrad.grad(lambda x: np.sum(x * x))(np.array([[1.0, 2.0]]))
    assert g.tolist() == [[2.0, 4.0]]


def test_holomorphic_grad_of_a_complex_sum():
    z = np.array([1.0 + 2.0j, -0.5j])
    g = srcgrad.grad(lambda z: np.sum(z * z), holomorphic=True)(z)
    assert np.allclose(g, 2 * z)


def test_an_ndarray_subclass_is_still_refused():
    class Sub(np.ndarray):
        pass

    x = np.array([1.0, 2.0]).view(Sub)
    with pytest.raises(srcgrad.NonDifferentiableError, match="subclass"):
        srcgrad.grad(lambda x: np.sum(x * x))(x)


# -- the last build a gradient function used -------------------------------------------------
def _counting(monkeypatch):
    """Lookups of a gradient's sweeps, ordinary or lean (grad's own: api.get_lean_adjoint)."""
    calls = []
    entry, lean = api.get_entry_adjoint, api.get_lean_adjoint

    def counted(fn, wrt):
        calls.append(fn)
        return entry(fn, wrt)

    def counted_lean(fn, wrt, value=True, facts=None):
        calls.append(fn)
        return lean(fn, wrt, value, facts)

    monkeypatch.setattr(api, "get_entry_adjoint", counted)
    monkeypatch.setattr(api, "get_lean_adjoint", counted_lean)
    return calls


def test_a_gradient_reuses_its_last_build_without_the_cache(monkeypatch):
    calls = _counting(monkeypatch)

    def f(x):
        return np.sum(x * 3.0)

    g = srcgrad.grad(f)
    for _ in range(3):
        assert g(np.ones(2)).tolist() == [3.0, 3.0]
    assert len(calls) == 1


def test_code_replaced_between_calls_is_seen(monkeypatch):
    calls = _counting(monkeypatch)

    def f(x):
        return x * 3.0

    def other(x):
        return x * x

    g = srcgrad.grad(f)
    assert g(2.0) == 3.0
    f.__code__ = other.__code__
    assert g(2.0) == 4.0
    assert len(calls) == 2


def test_function_redefined_between_calls_is_its_own_gradient():
    def f(x):
        return x * 3.0
    first = srcgrad.grad(f)
    assert first(2.0) == 3.0

    def f(x):  # (a new function under the old name)
        return x * 5.0
    assert srcgrad.grad(f)(2.0) == 5.0 and first(2.0) == 3.0


def test_rebound_global_is_seen(tmp_path):
    import importlib.util
    path = tmp_path / "overhead_rebound.py"
    path.write_text("def scale(v):\n    return v * 2.0\n\n"
                    "def f(x):\n    return scale(x) * x\n")
    spec = importlib.util.spec_from_file_location("overhead_rebound", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    g = srcgrad.grad(mod.f)
    assert g(3.0) == 12.0
    mod.scale = np.negative
    assert g(3.0) == -6.0


def test_closure_value_resolved_by_the_build_is_checked():
    def make(helper):
        def f(x):
            return helper(x) * x
        return f

    f = make(lambda v: v * 2.0)
    g = srcgrad.grad(f)
    assert g(3.0) == 12.0
    f.__closure__[0].cell_contents = lambda v: v * 10.0
    assert g(3.0) == 60.0


def test_rule_registered_between_calls_rebuilds(monkeypatch):
    calls = _counting(monkeypatch)

    def f(x):
        return x * 3.0

    g = srcgrad.grad(f)
    assert g(2.0) == 3.0
    monkeypatch.setattr(srcgrad.rules.registry, "changes",
                        srcgrad.rules.registry.version() + 1)
    assert g(2.0) == 3.0
    assert len(calls) == 2


def test_a_cache_cleared_or_popped_makes_a_new_lookup(monkeypatch):
    calls = _counting(monkeypatch)

    def f(x):
        return x * 3.0

    g = srcgrad.grad(f)
    g(1.0)
    api._CACHE.clear()
    g(1.0)
    api._CACHE.pop(f.__code__, None)
    g(1.0)
    g(1.0)
    assert len(calls) == 3


def test_build_cache_epoch_counts_removals():
    cache = generated.BuildCache()

    def f():
        pass

    start = cache.epoch
    cache[f.__code__] = {}
    assert cache.epoch == start  # (adding leaves what call sites remember valid)
    del cache[f.__code__]
    for remove in (lambda: cache.__delitem__(f.__code__), lambda: cache.pop(f.__code__),
                   cache.popitem, cache.clear):
        cache[f.__code__] = {}
        before = cache.epoch
        remove()
        assert cache.epoch > before and not cache


def test_gradient_of_a_gradient_still_differentiates(monkeypatch):
    # get_entry_adjoint gives a function made by srcgrad the build of its source: that
    # build never serves the function itself, so nothing is remembered
    d2 = srcgrad.grad(srcgrad.grad(lambda x: x * x * x))
    assert d2(2.0) == 12.0 and d2(1.0) == 6.0


def test_lookup_helper_in_isolation():
    cache = generated.BuildCache()
    made = []

    def f():
        pass

    class Build:
        fn = f

        def __init__(self, serves):
            self._serves = serves

        def serves(self, fn):
            return self._serves

    last = generated.LastBuild(cache)
    first = last.get(f, lambda: made.append(1) or Build(True))
    assert last.get(f, lambda: made.append(2) or Build(True)) is first
    cache.changed()
    second = last.get(f, lambda: made.append(3) or Build(False))
    assert second is not first
    third = last.get(f, lambda: made.append(4) or Build(True))  # nothing was remembered
    assert third is not second and made == [1, 3, 4]
    f.__code__ = (lambda: None).__code__
    assert last.get(f, lambda: made.append(5) or Build(True)) is not third
    assert made == [1, 3, 4, 5]


# -- trip counts pushed once: slots of the saved tuple (transforms/tape_once.py) -------------
def _saved_of(fn, *args, wrt=(0,)):
    return api.get_adjoint(fn, wrt).fwd(*args)[1]


def _taped(saved) -> bool:
    return any(isinstance(v, srcgrad.runtime.Tape) for v in saved)


def doubling(x):
    y = x * 2.0
    while np.linalg.norm(y) < 100.0:
        y = y * 2.0
    return np.sum(y * y)


def two_loops(x, n):
    y = x
    for _ in range(n):
        y = np.sin(y) + y
    while np.sum(y * y) < 50.0:
        y = y * 1.5
    return np.sum(y)


def nested_loops(x, n):
    y = x
    for i in range(n):
        k = 0
        while k < i:
            y = y * 1.1 + np.sin(y)
            k = k + 1
    return np.sum(y)


def loop_in_branch(x, flag):
    y = x
    if flag:
        while np.sum(y) < 10.0:
            y = y * 2.0
    return np.sum(y * y)


@pytest.mark.parametrize("x", [np.array([0.3, -1.2, 0.5]), np.array([100.0, 1.0, 1.0])])
def test_a_while_loop_outside_others_needs_no_tape(x):
    from fdcheck import check_grad
    assert not _taped(_saved_of(doubling, x))
    check_grad(doubling, (x,))


@pytest.mark.parametrize("n", [0, 1, 3])
def test_two_top_level_loops_save_both_counts(n):
    from fdcheck import check_grad
    x = np.array([0.2, 0.4])
    saved = _saved_of(two_loops, x, n)
    # both counts are saved (the for loop's is len(range(n))); its y is still taped
    counts = [v for v in saved if type(v) is int]
    assert len(counts) == 2 and n in counts and _taped(saved)
    check_grad(two_loops, (x, n))


@pytest.mark.parametrize("n", [0, 1, 4])
def test_a_count_pushed_in_a_loop_stays_on_the_tape(n):
    from fdcheck import check_grad
    x = np.array([0.2, -0.3])
    src = srcgrad.source(srcgrad.grad(nested_loops))
    assert src.count(".push(_n") == 1  # the inner loop's count, once per outer iteration
    check_grad(nested_loops, (x, n))


@pytest.mark.parametrize("flag", [True, False])
def test_a_count_pushed_in_a_branch_stays_on_the_tape(flag):
    from fdcheck import check_grad
    x = np.array([0.5, 0.25])
    assert _taped(_saved_of(loop_in_branch, x, flag))
    check_grad(loop_in_branch, (x, flag))


def test_saved_count_serves_repeated_pullbacks_and_second_order():
    x = np.array([0.3, -1.2, 0.5])
    _, pullback = srcgrad.vjp(doubling, x)
    first, second = pullback(1.0)[0], pullback(2.0)[0]
    assert np.array_equal(second, 2.0 * first)
    h = srcgrad.hvp(doubling, (x,), (np.array([1.0, 0.0, 0.0]),))
    k = 6  # 2 * 2**k * |x| crosses 100
    assert np.allclose(np.ravel(h), [2.0 * 4.0 ** (k + 1), 0.0, 0.0])
    assert np.allclose(srcgrad.grad(lambda x: np.sum(srcgrad.grad(doubling)(x)))(x),
                       np.full(3, 2.0 * 4.0 ** (k + 1)))


def test_saved_once_on_small_trees():
    import gast

    from srcgrad.transforms.tape_once import saved_once

    def stmts(text):
        return gast.parse(text).body

    fwd = stmts("_n1 = 0\nwhile c:\n    _n1 = _n1 + 1\n_tape.push(_n1)\n_tape.push(_n2)\n"
                "_n2 = 5\n_tape.push(_n3)\nfor i in r:\n    _tape.push(_n3)\n")
    bwd = stmts("_n3 = _tape.pop()\n_n2 = _tape.pop()\n_n1 = _tape.pop()\n"
                "for k in range(_n1):\n    pass\n")
    new_fwd, new_bwd, once = saved_once(fwd, bwd, "_tape", {"_n1", "_n2", "_n3"})
    # _n2 is written after its push (the saved value would differ); _n3 is pushed in a loop too
    assert once == ["_n1"]
    assert len(new_fwd) == len(fwd) - 1 and len(new_bwd) == len(bwd) - 1
    # the push and the pop of _n1 are gone
    assert all(s is not fwd[2] for s in new_fwd) and all(s is not bwd[2] for s in new_bwd)
    # a count popped inside a loop of the backward sweep stays on the tape
    bwd2 = stmts("for k in r:\n    _n1 = _tape.pop()\n")
    assert saved_once(fwd, bwd2, "_tape", {"_n1"})[2] == []
    # a name that is not a trip count is left alone
    assert saved_once(fwd, bwd, "_tape", {"_n9"})[2] == []


# -- unbroadcast when only leading axes were broadcast -----------------------------------------
@pytest.mark.parametrize("gshape, xshape", [((16, 4), (4,)), ((2, 3, 4), (4,)), ((2, 3, 4), (3, 4)),
                                            ((2, 3, 4), (1, 4)), ((3,), ()), ((2, 3), ()),
                                            ((2, 3, 4), (3, 1))])
def test_unbroadcast_sums_leading_axes_like_numpy(gshape, xshape):
    from srcgrad.runtime import unbroadcast
    g = np.arange(np.prod(gshape), dtype=float).reshape(gshape)
    x = np.zeros(xshape) if xshape else 0.5
    got = unbroadcast(g, x)
    # the reference: sum over every axis x was broadcast along
    full = np.broadcast_shapes(gshape, np.shape(x))
    lead = len(full) - len(np.shape(x))
    want = np.sum(np.broadcast_to(g, full), axis=tuple(range(lead)))
    want = np.sum(want, axis=tuple(i for i, n in enumerate(np.shape(x)) if n == 1
                                   and want.shape[i] != 1), keepdims=True) if np.shape(x) \
        else want
    assert np.shape(got) == np.shape(x) and np.array_equal(got, want)
    if not xshape:  # a python float's cotangent: a number, not a 0-d array
        assert not isinstance(got, np.ndarray)


def test_unbroadcast_of_same_shaped_arrays_is_the_cotangent_itself():
    from srcgrad.runtime import unbroadcast
    g = np.ones((2, 3), np.float32)
    assert unbroadcast(g, np.zeros((2, 3))) is g
    assert unbroadcast(g, np.zeros((3,))).shape == (3,)  # (not the same shape: summed)
    sub = np.zeros((2, 3)).view(type("Sub", (np.ndarray,), {}))
    assert unbroadcast(g, sub) is g  # other operand types take the general path, same result


def test_functions_passed_to_grad_are_freed():
    # a global table of gradients kept every differentiated function (and its generated code)
    # alive: each gradient refers to its function
    import gc
    import weakref

    def make(k):
        def f(x):
            return np.sum(np.sin(x) * k)
        return f

    refs = []
    for k in range(20):
        f = make(k)
        assert np.allclose(srcgrad.grad(f)(np.ones(3)), np.cos(np.ones(3)) * k)
        refs.append(weakref.ref(f))
        del f
    gc.collect()
    assert sum(r() is not None for r in refs) <= 1  # (the last build may be remembered)


def test_a_function_gets_its_own_gradient_back_and_a_wrapper_does_not():
    import functools

    def f(x):
        return np.sum(x * x)

    g = srcgrad.grad(f)
    assert srcgrad.grad(f) is g

    @functools.wraps(f)  # copies f.__dict__, where f's gradients are kept
    def wrapper(x):
        return 3.0 * f(x)

    assert srcgrad.grad(wrapper) is not g
    assert np.allclose(srcgrad.grad(wrapper)(np.ones(2)), 6.0)
