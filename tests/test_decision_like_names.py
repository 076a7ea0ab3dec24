"""Variables of the user's named like the branch decisions and trip counts of srcgrad's
generated code (``_c1``, ``_n2``): higher derivatives differentiate that code, so such
names were taken for booleans and integers and lost their derivative (silently). They are
renamed (a parameter copied to the new name first); a global so named is refused at the
user's line."""
import numpy as np
import pytest

import srcgrad
from srcgrad.errors import SrcgradError


def central_difference(f, x, eps=1e-5):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def uses_c1(x):
    _c1 = np.sin(x)
    return _c1 * x


def uses_n2_in_a_loop(x):
    _n2 = x
    for _ in range(3):
        _n2 = _n2 * x
    return _n2  # x ** 4


def uses_c1_1_and_c1v(x):
    _c1v = 2.0
    _c1_1 = x ** 3 * _c1v
    return _c1_1 + sum([_c3 * x for _c3 in [x]])


@pytest.mark.parametrize("fn, second", [
    (uses_c1, lambda x: 2 * np.cos(x) - x * np.sin(x)),
    (uses_n2_in_a_loop, lambda x: 12 * x ** 2),
    (uses_c1_1_and_c1v, lambda x: 12 * x + 2),
])
def test_second_and_third_derivatives_keep_them(fn, second):
    x = 0.7
    assert srcgrad.grad(srcgrad.grad(fn))(x) == pytest.approx(second(x), rel=1e-10)
    third = srcgrad.grad(srcgrad.grad(srcgrad.grad(fn)))(x)
    assert third == pytest.approx(central_difference(second, x), rel=1e-6)
    xs = np.array([0.3, -1.1])
    h = srcgrad.hessian(lambda v: np.sum(fn(v)))(xs)
    assert np.allclose(np.diag(h), second(xs), rtol=1e-10)


def takes_c1(_c1, _n1=2.0):
    return _c1 ** 3 * _n1


def test_parameters_so_named_keep_their_derivatives():
    assert srcgrad.grad(srcgrad.grad(takes_c1))(0.5) == pytest.approx(6 * 0.5 * 2.0)
    assert srcgrad.grad(srcgrad.grad(takes_c1, 1), 0)(0.5, _n1=3.0) == \
        pytest.approx(3 * 0.5 ** 2)


def global_c1(x):
    global _c1
    _c1 = x
    return x ** 2


def test_a_global_so_named_is_refused_at_its_line():
    with pytest.raises(SrcgradError, match=r"test_decision_like_names\.py:\d+.*_c1"):
        srcgrad.grad(global_c1)(0.5)
