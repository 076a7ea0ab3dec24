"""A grad called inside differentiated code keeps the dtype numpy gives the user's own code
(issue 9 follow-up): ``runtime.grad_seed`` seeded a float32 sum with the Python float 1.0,
which the inner backward sweep spread into a float64 array, so the float32 gradient of a
function calling ``grad`` came out float64 where the derivative written out (and autograd)
stays float32. Checked at first and second order, for arrays and numpy scalars, float32
and float64, against the derivative written out: same dtype, same values to the dtype's
rounding."""
import numpy as np
import pytest

import srcgrad
from srcgrad import runtime


def inner(x):
    return np.sum(np.sin(x) * 3.0)


def outer(x):
    return np.sum(srcgrad.grad(inner)(x) * x)


def outer_written(x):
    return np.sum(3.0 * np.cos(x) * x)


def first_nested(x):
    return np.sum(srcgrad.grad(outer)(x) * x)


def first_written(x):
    return np.sum(srcgrad.grad(outer_written)(x) * x)


def scalar_nested(r):
    return srcgrad.grad(inner)(r) * r


def scalar_written(r):
    return 3.0 * np.cos(r) * r


CASES = [(outer, outer_written), (first_nested, first_written),
         (scalar_nested, scalar_written)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nested, written", CASES, ids=lambda f: getattr(f, "__name__", ""))
@pytest.mark.parametrize("order", [1, 2])
def test_the_dtype_follows_the_users_code(dtype, nested, written, order):
    x = dtype(0.7) if nested is scalar_nested else np.array([0.2, 0.5, 1.3], dtype)
    ours, theirs = nested, written
    for k in range(order):
        if k:  # (the derivative of an array function: of its sum)
            ours, theirs = _summed(ours), _summed(theirs)
        ours, theirs = srcgrad.grad(ours), srcgrad.grad(theirs)
    got, want = ours(x), theirs(x)
    assert np.result_type(got) == np.result_type(want) == dtype, (got, want)
    assert type(got) is type(want)
    rtol = 1e-5 if dtype is np.float32 else 1e-12
    assert np.allclose(got, want, rtol=rtol, atol=0)


def _summed(g):
    def summed(x):
        return np.sum(g(x))
    return summed


@pytest.mark.parametrize("value, seed", [
    (np.float32(2.5), np.array(1.0, np.float32)),
    (np.float16(2.5), np.array(1.0, np.float16)),
    (np.float64(2.5), 1.0),
    (2.5, 1.0),
    (np.array(2.5, np.float32), np.array(1.0, np.float32)),
    (np.int64(3), 1.0),
])
def test_grad_seed_has_the_values_dtype(value, seed):
    got = runtime.grad_seed(value)
    assert type(got) is type(seed) and np.result_type(got) == np.result_type(seed)
    assert got == 1


# -- runtime.promotes_plainly: one predicate for seed_scalar and stand_in_of -----------------
PLAIN = [2.0, 3, True, -(2 ** 53) + 1, np.int8(3), np.uint64(7), np.bool_(True),
         np.float32(0.5), np.float64(0.5), np.ones(3, np.float32), np.ones((2, 3), int)]
NOT_PLAIN = [2 ** 53, -(2 ** 60), 1j, np.complex64(1), np.float16(0.5), np.longdouble(0.5),
             np.ones(3, np.float16), np.ones(3, complex), np.ones(3, object), [1.0], None,
             "a", np.ones(3).view(np.matrix)]


@pytest.mark.parametrize("a", PLAIN + NOT_PLAIN, ids=repr)
def test_seed_scalar_and_stand_in_of_share_one_operand_predicate(a):
    plain = any(a is b for b in PLAIN)
    assert runtime.promotes_plainly(a) is plain
    x = np.linspace(1.0, 2.0, 3)
    seeded = runtime.seed_scalar(np.float64(1.0), x, a)
    assert (type(seeded) is not np.ndarray or seeded.ndim == 0) is plain
    if runtime.promotes_plainly(a) or np.ndim(a) == 0 and isinstance(a, (int, np.generic)):
        # a stand-in of the computed value's shape (and, where it is read, dtype)
        with np.errstate(all="ignore"):
            made, value = runtime.stand_in_of(np.multiply, x, a), np.multiply(x, a)
        assert made.shape == value.shape and made.strides == (0,) * value.ndim
