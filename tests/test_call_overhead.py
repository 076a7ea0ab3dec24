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
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (4, 1, 2)])
def test_a_0d_array_spreads_like_broadcast_to(dtype, shape):
    g = np.array(1.5 if dtype is not np.bool_ else True, dtype)
    x = np.zeros(shape)
    got, want = expand_to(g, x), _general_spread(g, x)
    assert type(got) is np.ndarray and got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want) and not got.flags.writeable
    assert np.shares_memory(got, g)  # a view of the cotangent, as numpy's broadcast is


def test_a_0d_array_spreads_without_broadcast_to(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(np, "broadcast_to", refuse)
    out = expand_to(np.array(2.0, np.float32), np.zeros((2, 2)))
    assert out.dtype == np.float32 and out.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_a_0d_view_into_a_larger_array_spreads_its_own_element():
    base = np.arange(4.0)
    g = base[2, ...]  # a 0-d view at an offset into base's buffer
    out = expand_to(g, np.zeros(3))
    assert out.tolist() == [2.0, 2.0, 2.0]
    base[2] = 7.0  # a view, like numpy's broadcast: it sees later writes
    assert out.tolist() == [7.0, 7.0, 7.0]


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
    seeds = [api._seed(test_seed_is_a_fresh_one_of_the_value_dtype, value) for _ in range(2)]
    for seed in seeds:
        assert type(seed) is np.ndarray and seed.dtype == dtype
        assert np.array_equal(seed, np.ones_like(value)) and seed.shape == np.shape(value)
        assert seed.flags.writeable and seed.flags.owndata
    assert seeds[0] is not seeds[1]  # generated code may own (update) its cotangents
    assert api._seed(test_seed_is_a_fresh_one_of_the_value_dtype, 2.0) == 1.0


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
    calls = []
    original = api.get_entry_adjoint

    def counted(fn, wrt):
        calls.append(fn)
        return original(fn, wrt)

    monkeypatch.setattr(api, "get_entry_adjoint", counted)
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

    def f(x):  # noqa: F811  (a new function under the old name)
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
    monkeypatch.setattr(srcgrad.rules.registry, "_version",
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
