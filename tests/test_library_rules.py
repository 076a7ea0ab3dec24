"""Rules of ``math``, ``statistics`` and numpy functions added in session 33, each through
grad, jvp, hessian and forward over reverse against central differences (the registry's
own tests, test_rules.py, check each rule at its test domain, but cannot trace the second
order of functions that convert to float: these rows do it through generated code).
"""
from __future__ import annotations

import math
import statistics
import sys
import warnings

import numpy as np
import pytest

import srcgrad
from test_language import check_all_orders

rng = np.random.default_rng(3301)
X4 = rng.uniform(0.4, 1.2, 4)


def fsum_of_products(x):
    return math.fsum([x[0] * x[1], x[1] ** 2, x[2], x[3] * x[0]])


def fsum_of_a_generator(x):
    return math.fsum(v * v for v in x)


def prod_of_a_list(x):
    return math.prod([x[0], x[1], x[2] * x[3]])


def prod_with_a_start(x):
    return math.prod((x[0], x[1] ** 2), start=x[2] + x[3])


def prod_of_an_array(x):
    return math.prod(x) * x[0]


def dist_of_lists(x):
    return math.dist([x[0], x[1]], [x[2] ** 2, 0.5])


def dist_of_arrays(x):
    return math.dist(x[:2] * 3.0, x[2:])


def fmod_of_both(x):
    return math.fmod(5.0 * x[0], x[1]) + math.fmod(-7.0 * x[2], x[3])


def remainder_of_both(x):
    return math.remainder(5.0 * x[0], x[1]) * math.remainder(x[2], 0.3 * x[3])


def copysign_ldexp(x):
    return math.copysign(x[0] * x[1], x[2] - 0.2) + math.ldexp(x[3] ** 2, 3)


def gamma_lgamma(x):
    return math.gamma(x[0] + 0.5) * math.lgamma(x[1] + 1.5) + math.gamma(x[2] - 2.5)


def hypot_of_three_and_one(x):
    return math.hypot(x[0], x[1] * 2.0, x[2]) + math.hypot(x[3]) * math.hypot(x[0], x[3])


def statistics_means(x):
    data = [x[0], x[1] * x[2], x[3]]
    return statistics.mean(data) * statistics.fmean(data) + statistics.median(data)


def weighted_fmean(x):
    return statistics.fmean([x[0], x[1], x[2] ** 2], weights=[x[3], 1.0, x[0]])


def statistics_spreads(x):
    data = [x[0], x[1] * 2.0, x[2] ** 2, x[3]]
    return (statistics.pvariance(data) + statistics.variance(data) * statistics.stdev(data)
            + statistics.pstdev(data))


def statistics_with_a_centre(x):
    data = (x[0], x[1] * 2.0, x[2])
    return (statistics.variance(data, statistics.mean(data)) + statistics.pstdev(data, x[3])
            + statistics.stdev(np.array(data), xbar=0.3 * x[3]))


def np_resize(x):
    return np.sum(np.resize(x, (3, 3)) ** 2 * np.arange(9.0).reshape(3, 3)) + \
        np.sum(np.resize(x[:3], 5) * x[0])


def np_ediff1d(x):
    return np.sum(np.ediff1d(x * x, to_end=x[:2] * 3.0, to_begin=x[3]) * np.arange(6.0)) + \
        np.sum(np.ediff1d(np.outer(x, x[:2])) ** 2)


def np_trim_zeros(x):
    padded = np.concatenate([[0.0, 0.0], x * x, [0.0]])
    return np.sum(np.trim_zeros(padded) * np.arange(4.0)) + np.sum(np.trim_zeros(padded, "f"))


def np_polyval(x):
    return np.polyval(x[:3], x[3]) + np.sum(np.polyval([1.0, x[0], 2.0], x) * x)


def np_vander(x):
    return np.sum(np.vander(x, 3) * np.arange(12.0).reshape(4, 3)) + \
        np.sum(np.vander(x[:2], increasing=True) ** 2)


def np_interp(x):
    knots = [0.0, 0.5, 1.0, 1.5]
    return np.sum(np.interp(x, knots, [1.0, 3.0, 2.0, 5.0]) * x) + \
        np.sum(np.interp([0.2, 0.7, 1.9], knots, x ** 2, right=-1.0)) + \
        np.interp(x[0] * 2.0 - 0.5, [0.0, 0.5, 1.0], x[1:])


def np_histogram(x):
    data = np.concatenate([x, x ** 2])
    counts, edges = np.histogram(data, bins=3)
    heights, _ = np.histogram(data, bins=3, density=True)
    weighted, _ = np.histogram([0.1, 0.5, 0.9, 1.3], bins=3, range=(0.0, 1.2), weights=x ** 2,
                               density=True)
    return np.sum(edges * np.arange(4.0)) + np.sum((counts + heights + weighted) * x[:3])


def statistics_of_generators(x):
    """A generator passed to statistics' functions (refused before: not consumed at once)."""
    return statistics.mean(v * v for v in x) + statistics.pstdev(v * x[0] for v in x) + \
        statistics.median(v for v in x)


CASES = [statistics_of_generators, fsum_of_products, fsum_of_a_generator, prod_of_a_list, prod_with_a_start,
         prod_of_an_array, dist_of_lists, dist_of_arrays, fmod_of_both, remainder_of_both,
         copysign_ldexp, gamma_lgamma, hypot_of_three_and_one, statistics_means,
         weighted_fmean, statistics_spreads, statistics_with_a_centre, np_resize, np_ediff1d,
         np_trim_zeros, np_polyval, np_vander, np_interp, np_histogram]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_value_and_every_order(f):
    if f is weighted_fmean and sys.version_info < (3, 11):
        pytest.skip("statistics.fmean takes weights from Python 3.11")
    check_all_orders(f, X4.copy())


def _prod_with_zero(x):
    return math.prod([x[0], x[1] - 3.0, x[2]])


def test_prod_is_exact_with_zeros():
    x = np.array([2.0, 3.0, 5.0])  # the second item is 0
    assert np.array_equal(srcgrad.grad(_prod_with_zero)(x), [0.0, 10.0, 0.0])
    _, tangent = srcgrad.jvp(_prod_with_zero, (x,), (np.ones(3),))
    assert tangent == 10.0


def _fmod_of_y(y):
    return math.fmod(3.0, y)


def _remainder_of_y(y):
    return math.remainder(5.0, y)


def test_fmod_and_remainder_take_the_piece_s_derivative_in_y():
    # d/dy fmod(x, y) = -trunc(x / y), d/dy remainder(x, y) = -rint(x / y): at the jumps
    # the value of the piece that the quotient's rounding selects
    assert srcgrad.grad(_fmod_of_y)(1.4) == -2.0
    assert srcgrad.grad(_fmod_of_y)(-1.4) == 2.0
    assert srcgrad.grad(_fmod_of_y)(1.5) == -2.0  # 3 / 1.5 = 2 exactly: the jump
    assert srcgrad.grad(_remainder_of_y)(2.0) == -2.0  # 5 / 2 = 2.5 rounds to even
    assert srcgrad.grad(_remainder_of_y)(-1.1) == 5.0


def _dist_of_equal_points(x):
    return math.dist([x[0], x[1]], [1.0, 2.0])


def _norm(x):
    return np.linalg.norm(x)


def test_dist_at_equal_points_is_nan_like_norm_at_zero():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.all(np.isnan(srcgrad.grad(_norm)(np.zeros(2))))
        assert np.all(np.isnan(srcgrad.grad(_dist_of_equal_points)(np.array([1.0, 2.0]))))


def _hypot_on_an_axis(x):
    return math.hypot(x, 0.0)


def test_hypot_at_the_origin_is_nan_like_norm_at_zero():
    """Python floats: the rule divided by a float 0.0 (ZeroDivisionError) before."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert math.isnan(srcgrad.grad(_hypot_on_an_axis)(0.0))
    assert srcgrad.grad(_hypot_on_an_axis)(-3.0) == -1.0


def _trim(x):
    return np.sum(np.trim_zeros(np.array([0.0, x[0], 0.0, x[1], 0.0])) * np.arange(3.0))


def _interp_with_a_period(x):
    return np.interp(x[0], [0.0, 1.0], [1.0, 2.0], period=2.0)


def test_trim_zeros_keeps_inner_zeros_and_gives_trimmed_ones_nothing():
    x = np.array([2.0, 3.0])
    assert np.array_equal(srcgrad.grad(_trim)(x), [0.0, 2.0])
    _, tangent = srcgrad.jvp(_trim, (x,), (np.array([1.0, 10.0]),))
    assert tangent == 20.0


def test_interp_with_a_period_is_refused():
    with pytest.raises(srcgrad.SrcgradError, match="period"):
        srcgrad.grad(_interp_with_a_period)(np.array([0.3]))


def test_resize_on_the_tensor_facade():
    t = srcgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = np.arange(8.0).reshape(2, 4)
    (np.resize(t, (2, 4)) * srcgrad.tensor(w)).sum().backward()
    assert np.allclose(t.grad.numpy(), [0 + 3 + 6, 1 + 4 + 7, 2 + 5])


# -- a list that starts as None and grows by '+' (jvp and hvp added a lazy-zero tangent to a
# list: TypeError before session 33) ---------------------------------------------------------

def none_then_list_in_a_conditional_expression(x):
    lst = None
    for i in range(3):
        lst = [x[0] * i] if lst is None else lst + [x[1] * i]
    return sum(lst)


def none_then_empty_list_then_concatenation(x):
    lst = None
    for i in range(3):
        if lst is None:
            lst = []
        lst = lst + [x[i] * x[3]]
    return sum(lst)


def none_then_list_in_an_if_else(x):
    lst = None
    for i in range(4):
        if lst is None:
            lst = [x[i] ** 2]
        else:
            lst = lst + [x[i] * lst[-1]]
    return np.sum(np.array(lst))


def none_then_augmented_concatenation(x):
    lst = None
    for v in x:
        if lst is None:
            lst = []
        lst += [np.sin(v)]
    return sum(lst) * lst[0]


def none_then_tuple(x):
    acc = None
    for i in range(3):
        acc = (x[i],) if acc is None else acc + (x[i] * acc[-1],)
    return acc[0] + acc[1] * acc[2]


def _grow(lst, v):
    if lst is None:
        lst = []
    return lst + [v * v]


def none_then_list_through_a_helper(x):
    lst = None
    for v in x[:3]:
        lst = _grow(lst, v)
    return sum(lst) + lst[1] * x[3]


NONE_LISTS = [none_then_list_in_a_conditional_expression,
              none_then_empty_list_then_concatenation, none_then_list_in_an_if_else,
              none_then_augmented_concatenation, none_then_tuple,
              none_then_list_through_a_helper]


@pytest.mark.parametrize("f", NONE_LISTS, ids=[f.__name__ for f in NONE_LISTS])
def test_a_list_starting_as_none(f):
    check_all_orders(f, X4.copy())


def _two_floats(x):
    return [x[0] * 2.0, x[1]]


def a_helper_s_list_joined_twice(x):
    # the adjoints of the two joins are lists: '+' accumulated them by concatenation (the
    # gradient of x[0] was 1.8 instead of 3.2, silently, before session 33)
    a = _two_floats(x)
    b = a + [x[2]]
    c = a + [x[3]]
    return b[0] * c[1] + b[2] * c[0]


def _grow_list(lst, v):
    return lst + [v * v]


def a_list_grown_by_a_helper_in_a_loop(x):
    # reverse over reverse: the inlined helper's parameter is such a name (TypeError, or a
    # wrong Hessian-vector product with sum(lst), before session 33)
    lst = []
    for i in range(3):
        lst = _grow_list(lst, x[i])
    return sum(lst) + lst[1] * x[3]


@pytest.mark.parametrize("f", [a_helper_s_list_joined_twice, a_list_grown_by_a_helper_in_a_loop])
def test_lists_joined_with_plus_get_list_adjoints_added(f):
    check_all_orders(f, X4.copy())
