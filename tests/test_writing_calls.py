"""numpy calls that write into an existing array, as real code uses them: ``np.add.at``
(scatter-add, repeated indices accumulating), ``np.subtract.at``, ``np.copyto`` and ``out=``,
in the differentiated function and inside a helper changing its caller's array.

Each such call, a statement of its own, is the element assignment ``a[...] = new value``
(transforms/desugar.py, ``writing_call_store``), so the store's adjoint and the checks for
other holders of ``a`` are element assignment's. Before: refused in the function itself, and,
inside a helper, a silent wrong gradient (the caller did not know the helper changed its
argument: activity.py's ``_changed_by_call``). Every program is checked against central
differences in every mode (gradient, jvp, Hessian, grad of grad)."""
from __future__ import annotations

import operator
import os

import numpy as np
import pytest

import srcgrad
from test_language import check_all_orders

rng = np.random.default_rng(3108)
X4 = rng.uniform(0.4, 1.2, 4)


def add_at_into_zeros(x):
    a = np.zeros(3)
    np.add.at(a, [0, 0, 2], x[:3])
    return np.sum(a ** 2) * x[3]


def add_at_into_a_differentiable_array(x):
    a = x ** 2
    np.add.at(a, [1, 1, 3], x[:3] * x[3])
    return np.sum(np.sin(a))


def subtract_at(x):
    a = np.ones(4)
    np.subtract.at(a, np.array([3, 3, 0]), x[1:] ** 2)
    return np.sum(a * x)


def add_at_two_dimensional(x):
    m = np.zeros((2, 3))
    np.add.at(m, (np.array([0, 1, 0]), np.array([2, 2, 2])), x[:3])
    return np.sum(m ** 2) + m[0, 2] * x[3]


def add_at_of_one_value(x):
    a = np.zeros(4)
    np.add.at(a, [0, 0, 0], x[1])
    return np.sum(a * x)


def copyto(x):
    a = np.zeros(4)
    np.copyto(a, x ** 2)
    return np.sum(a * x)


def copyto_broadcasting(x):
    a = np.zeros((2, 4))
    np.copyto(a, x * x[0])
    return np.sum(a ** 2)


def ufunc_out(x):
    a = np.empty(4)
    np.multiply(x, x[::-1], out=a)
    return np.sum(a * x)


def ufunc_out_tuple(x):
    a = np.empty(4)
    np.sin(x, out=(a,))
    return np.sum(a * x)


def ufunc_out_into_its_operand(x):
    a = x * 1.0
    np.add(a, x ** 2, out=a)
    np.exp(a, out=a)
    return np.sum(a)


def reduction_out_zero_dimensional(x):
    a = np.empty(())
    np.sum(x ** 2, out=a)
    return float(a) * x[0]


def store_into_zero_dimensional(x):
    a = np.zeros(())
    a[()] = np.sum(x ** 2)
    return np.sum(a * x)


def operator_setitem(x):
    a = np.zeros(4)
    operator.setitem(a, 1, x[2] * x[0])
    return np.sum(a * x)


def _add_at_helper(a, x):
    np.add.at(a, [0, 0], x[:2])


def _copyto_helper(a, x):
    np.copyto(a, x)


def _out_helper(a, x):
    np.multiply(x, 2.0, out=a)


def add_at_in_a_helper(x):
    a = np.zeros(4)
    _add_at_helper(a, x)
    return np.sum(a * x)


def copyto_in_a_helper(x):
    a = np.zeros(4)
    _copyto_helper(a, x)
    return np.sum(a * x)


def out_in_a_helper(x):
    a = np.zeros(4)
    _out_helper(a, x)
    return np.sum(a * x)


@pytest.mark.parametrize("f", [add_at_into_zeros, add_at_into_a_differentiable_array,
                               subtract_at, add_at_two_dimensional, add_at_of_one_value,
                               copyto, copyto_broadcasting, ufunc_out, ufunc_out_tuple,
                               ufunc_out_into_its_operand, reduction_out_zero_dimensional,
                               store_into_zero_dimensional, operator_setitem,
                               add_at_in_a_helper,
                               copyto_in_a_helper, out_in_a_helper],
                         ids=lambda f: f.__name__)
def test_every_order(f):
    check_all_orders(f, X4)


# -- refused, at the user's line: Python would change an array srcgrad cannot follow ---------
def add_at_through_an_alias(x):
    a = np.zeros(4)
    b = a
    np.add.at(a, [0, 1, 1], x[:3])
    return np.sum(b * x)


def add_at_into_a_view(x):
    a = np.zeros(4)
    b = a[:2]
    np.add.at(b, [0, 1, 1], x[:3])
    return np.sum(a * x)


def out_with_where(x):
    a = np.zeros(4)
    np.multiply(x, x, out=a, where=x > 0.7)
    return np.sum(a * x)


def out_value_read(x):
    a = np.empty(4)
    b = np.multiply(x, x, out=a)
    return np.sum(a * b)


def _put_helper(a, x):
    np.put(a, [0, 2], x[:2])


def put_in_a_helper(x):
    a = np.zeros(4)
    _put_helper(a, x)
    return np.sum(a * x)


@pytest.mark.parametrize("f, line", [(add_at_through_an_alias, "np.add.at(a, [0, 1, 1]"),
                                     (add_at_into_a_view, "np.add.at(b, [0, 1, 1]"),
                                     (out_with_where, "where=x > 0.7"),
                                     (out_value_read, "b = np.multiply(x, x, out=a)"),
                                     (put_in_a_helper, "np.put(a, [0, 2], x[:2])")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_refused_at_the_line(f, line):
    assert_refused_at(f, X4, __file__, line)


def assert_refused_at(f, x, path, text):
    """``grad(f)(x)`` raises a SrcgradError naming ``path`` and the first line of it that
    holds ``text`` (in its message, or, raised at run time, in the note srcgrad adds)."""
    with pytest.raises(srcgrad.SrcgradError) as info:
        srcgrad.grad(f)(x.copy())
    source = open(path).read().splitlines()
    number = next(i for i, line in enumerate(source, 1) if text in line)
    told = "\n".join([str(info.value), *getattr(info.value, "__notes__", ())])
    name = os.path.basename(path)
    assert f"{name}:{number}:" in told or f"{name}:{number} " in told, told
