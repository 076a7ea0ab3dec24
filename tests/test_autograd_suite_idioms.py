"""Idioms of the kinds HIPS autograd's own test suite exercises (containers as arguments and
results, builtins constructing them, gradients inside differentiated code, Hessian and
Jacobian products), each written anew here as a small function of its own and checked against
central differences at first and second order, and in forward mode where it applies. Found by
running autograd 1.9.1's test_core, test_dict, test_list, test_tuple, test_logic,
test_scalar_ops, test_binary_ops, test_jacobian, test_wrappers, test_fft, test_direct,
test_truediv and test_misc through a shim outside this repository (README); none of
autograd's code is copied here."""
import builtins

import numpy as np
import pytest

import srcgrad
from fdcheck import check_grad, check_orders

rng = np.random.default_rng(2028)
EPS = 1e-6


def _hessian_by_differences(f, x):
    g = srcgrad.grad(f)
    rows = [(g(x + EPS * e) - g(x - EPS * e)) / (2 * EPS)
            for e in np.eye(x.size).reshape((x.size,) + x.shape)]
    return np.stack(rows).reshape(x.shape + x.shape)


def _check_all(f, x):
    """Gradient, jvp (along a random direction) and Hessian against central differences."""
    check_orders(f, x, direction=rng.standard_normal(x.shape), hessian=True)


# -- dict(...) of differentiable values: key-value pairs, and pairs with keywords -----------
# dict([("w", x)], b=x) was refused at the line ("constructing 'dict'"), and dict(pairs) of
# a list of pairs raised at run time: only dict(d) of a dict and dict(k=v) were supported.
def pairs_to_dict(x):
    d = dict([("w", x), ("b", np.sin(x))])
    return np.sum(d["w"] * d["b"])


def pairs_and_keywords(x):
    d = dict([("w", x)], b=x ** 2, c=np.cos(x))
    return np.sum(d["w"] * d["b"] + d["c"])


def repeated_key_keeps_the_last(x):
    # dict() keeps the last pair of a key: the first x carries no gradient
    d = dict((("k", x), ("k", 3.0 * np.tanh(x))))
    return np.sum(d["k"] ** 2)


def dict_of_a_dict_with_keywords(x):
    base = {"a": x, "b": 2.0 * x}
    d = dict(base, b=np.exp(x))
    return np.sum(d["a"] * d["b"])


@pytest.mark.parametrize("f", [pairs_to_dict, pairs_and_keywords, repeated_key_keeps_the_last,
                               dict_of_a_dict_with_keywords])
def test_dict_from_pairs_and_keywords(f):
    _check_all(f, rng.uniform(-1.0, 1.0, 3))


def test_repeated_key_keeps_the_last_pair_only():
    x = np.array([0.2, -0.4])
    g = srcgrad.grad(repeated_key_keeps_the_last)(x)
    t = np.tanh(x)
    assert np.allclose(g, 18.0 * t * (1.0 - t ** 2))


def test_dict_of_a_generator_of_pairs():
    def f(x):
        d = dict((k, v) for k, v in [("a", x)])
        return np.sum(d["a"])
    # a generator is the list of its items inside dict(): accepted like the list
    assert np.allclose(srcgrad.grad(f)(np.ones(2)), np.ones(2))


def zipped_names(x):
    names = ["w", "b", "c"]
    d = dict(zip(names, [x[0] * 2.0, np.sin(x[1]), x[2] ** 2]))
    return d["w"] * d["b"] + d["c"]


def zipped_repeated_key(x):
    # the first "k" is replaced by the second: x[0] carries no gradient, as in Python
    d = dict(zip(["k", "k", "m"], [x[0], np.tanh(x[1]), x[2]]))
    return d["k"] * 3.0 + d["m"] * d["k"]


def zipped_arrays_in_a_loop(x):
    d = dict(zip(("u", "v"), (x, np.cos(x))))
    total = 0.0
    for key in ("u", "v"):
        total = total + np.sum(d[key] * x)
    return total


@pytest.mark.parametrize("f", [zipped_names, zipped_repeated_key, zipped_arrays_in_a_loop])
def test_dict_of_zipped_keys_and_values(f):
    # dict(zip(keys, values)) of differentiable values was refused ("constructing 'zip'")
    _check_all(f, rng.uniform(-1.0, 1.0, 3))


def test_zipped_repeated_key_gives_the_first_value_no_gradient():
    x = np.array([0.3, -0.2, 0.5])
    g = srcgrad.grad(zipped_repeated_key)(x)
    assert g[0] == 0.0
    assert np.allclose(g[1], (3.0 + x[2]) * (1.0 - np.tanh(x[1]) ** 2))


# -- the builtins under other names (autograd's ``from autograd import list as ag_list``) ----
my_list, my_tuple, my_dict = builtins.list, builtins.tuple, builtins.dict


def renamed_builtins(x):
    pair = my_tuple((x, 2.0 * x))
    items = my_list(pair)
    d = my_dict(a=items[0], b=pair[1])
    return np.sum(np.sin(d["a"]) * d["b"])


def test_builtins_under_other_names():
    _check_all(renamed_builtins, rng.uniform(-1.0, 1.0, 4))


# -- containers in, containers out, and a gradient of a gradient inside ----------------------
def weighted_dict(params):
    total = 0.0
    for i, k in enumerate(sorted(params)):
        total = total + np.sum(np.sin(params[k])) * (i + 1.0)
    return total + np.sum(params.get("missing", 0.0) * 2.0)


def summary_of_gradient(params):
    g = srcgrad.grad(weighted_dict)(params)
    return np.sum(g["u"]) + np.sum(np.sin(g["v"]))


def test_gradient_of_a_function_of_a_gradient_of_a_dict():
    params = {"u": rng.standard_normal((2, 3)), "v": rng.standard_normal(4)}
    check_grad(weighted_dict, (params,))
    check_grad(summary_of_gradient, (params,))
    # and in forward mode (over the inner gradient: the second order of weighted_dict)
    dv = {"u": rng.standard_normal((2, 3)), "v": rng.standard_normal(4)}
    _, t = srcgrad.jvp(summary_of_gradient, (params,), (dv,))
    shift = lambda s: {k: params[k] + s * dv[k] for k in params}  # noqa: E731
    numeric = (summary_of_gradient(shift(EPS)) - summary_of_gradient(shift(-EPS))) / (2 * EPS)
    assert np.isclose(t, numeric, rtol=1e-6, atol=1e-8)


def slices_of_a_list(xs):
    s = slice(None, -1, None)
    head = xs[s]
    return head[0] * xs[1:][1] + np.sin(xs[-1])


def test_slices_of_a_list_argument():
    check_grad(slices_of_a_list, ([0.3, -0.7, 1.1],))
    _, t = srcgrad.jvp(slices_of_a_list, ([0.3, -0.7, 1.1],), ([1.0, 0.5, -2.0],))
    xs, v = np.array([0.3, -0.7, 1.1]), np.array([1.0, 0.5, -2.0])
    numeric = (slices_of_a_list(list(xs + EPS * v)) - slices_of_a_list(list(xs - EPS * v))) \
        / (2 * EPS)
    assert np.isclose(t, numeric, rtol=1e-6)


def type_checks_in_the_body(x):
    assert isinstance(x, np.ndarray)
    assert np.allclose(x, (x * 3.0) / 3.0)
    return np.sum(x ** 3) if not np.iscomplexobj(x) else np.sum(np.real(x))


def test_isinstance_and_assert_inside_differentiated_code():
    _check_all(type_checks_in_the_body, rng.uniform(-1.0, 1.0, 3))


# -- a gradient closing over the differentiated argument, inside a Jacobian ------------------
def closes_over(x):
    return srcgrad.grad(lambda y: np.exp(y) * np.tanh(x[0]))(x[1])


def stacked(x):
    return np.array([np.sum(x ** 3), np.prod(np.sin(x)), closes_over(x)])


def test_jacobian_of_scalars_stacked_with_an_inner_gradient():
    x = rng.uniform(-1.0, 1.0, 4)
    jac = srcgrad.jacobian(stacked)(x)
    numeric = np.stack([(stacked(x + EPS * e) - stacked(x - EPS * e)) / (2 * EPS)
                        for e in np.eye(4)], axis=1)
    assert np.allclose(jac, numeric, rtol=1e-6, atol=1e-8)
    _check_all(closes_over, x)


def outer_of_itself(x):
    return np.sin(np.outer(x, x)) + np.cos(np.dot(x, x))


def test_jacobian_of_a_jacobian_and_a_function_of_it():
    x = rng.uniform(-1.0, 1.0, 2)
    assert srcgrad.jacobian(srcgrad.jacobian(outer_of_itself))(x).shape == (2, 2, 2, 2)
    _check_all(lambda x: np.sum(np.sin(srcgrad.jacobian(outer_of_itself)(x))), x)


# -- Hessian products on matrices and 3-d arrays ---------------------------------------------
def sum_of_sines(a):
    return np.sum(np.sin(a) * np.cos(2.0 * a))


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2)])
def test_hessian_products_of_arrays_of_any_rank(shape):
    a, v = rng.standard_normal(shape), rng.standard_normal(shape)
    h = srcgrad.hessian(sum_of_sines)(a)
    assert np.allclose(h, _hessian_by_differences(sum_of_sines, a), rtol=1e-5, atol=1e-7)
    expected = np.tensordot(h, v, axes=len(shape))
    assert np.allclose(srcgrad.hvp(sum_of_sines, (a,), (v,)), expected)


# -- scalar and binary operations at their special points ------------------------------------
def power_with_zero_exponent(x):
    return np.power(x, 0.0)


def test_power_with_a_zero_exponent_at_zero():
    assert srcgrad.grad(power_with_zero_exponent)(0.0) == 0.0
    assert srcgrad.grad(srcgrad.grad(power_with_zero_exponent))(0.0) == 0.0


def zero_base(y):
    return np.sum(np.power(0.0, y) + np.power(2.0, y))


def binary_mix(x, y):
    return np.sum(np.mod(x, y) + np.arctan2(x, y) + np.hypot(x, y) + np.sinc(x) * y)


def test_zero_base_and_binary_functions():
    _check_all(zero_base, np.array([0.4, 1.3]))
    x = rng.uniform(0.6, 1.4, 3)
    y = rng.uniform(1.6, 2.4, 3)
    check_grad(binary_mix, (x, y), wrt=(0, 1))
    check_orders(lambda y: binary_mix(x, y), y, direction=rng.standard_normal(3), hessian=True)


# -- the real part of a transform of a real signal -------------------------------------------
def spectrum_energy(x):
    return np.sum(np.abs(np.fft.rfftn(x)) ** 2) + np.sum(np.real(np.fft.fft(x, axis=0)))


def test_real_functions_of_fft_of_odd_lengths():
    _check_all(spectrum_energy, rng.standard_normal((3, 5)))
