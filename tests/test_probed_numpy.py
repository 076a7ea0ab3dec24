"""numpy semantics a probe of srcgrad found differentiated wrongly without an error (27 Nov
2026, session 32), each checked in every mode against central differences and the plain call.

- A differentiable float stored into an integer or boolean array: numpy casts it to the
  array's dtype (``a = np.zeros(3, dtype=int); a[0] = 2.7`` stores 2), which is locally
  constant, so the stored value's derivative is 0. srcgrad's functional store promoted the
  array to float instead: the value was the untruncated one and the gradient 1
  (``runtime.setitem``, ``runtime.written_adjoint``).
- ``np.fill_diagonal(a, v)`` was run as a plain call, unseen: the overwritten diagonal kept
  its adjoint and ``v`` got none. It is now the element store ``a[_rt.diagonal_index(a)] =
  v`` (``wrap=True`` is refused at the line).
- A numpy call computing in an integer dtype (``np.sum(x, dtype=int)``, ``np.cumsum``,
  ``np.mean``, ``np.prod``, ``np.cumprod``, ``np.trace``, ``np.full(n, v, dtype=int)``,
  ``np.full_like`` of an integer array, ``np.linspace(..., dtype=int)``, ``np.stack``/
  ``np.concatenate(..., dtype=int)``) kept the derivative of the untruncated value: the rules
  now pass it through ``cast_to(g, dtype)`` (which the inliner drops when no dtype is given).
- The value of a conditional expression (``a if c else b`` lowered to an ``if``) carried no
  tangent through a generated sweep, so second derivatives (``hvp``, ``hessian``) were 0.
- ``a.__setitem__(i, v)`` was run unseen as well (now ``a[i] = v``, as ``operator.setitem``);
  ``a.__iadd__(v)`` and the other in-place operator methods called by name are refused at
  the line.
"""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from test_language import check_all_orders

rng = np.random.default_rng(3203)
X4 = rng.uniform(0.4, 1.2, 4)


def store_into_int_array(x):
    a = np.zeros(3, dtype=int)
    a[0] = x[0] * 2.7
    return np.sum(a * x[:3]) + x[1] ** 2


def store_slice_into_int64_array(x):
    a = np.zeros(4, dtype=np.int64)
    a[:] = x * 3.3
    return np.sum(a * x)


def store_into_arange(x):
    a = np.arange(4)
    a[2] = x[1] * 4
    return np.sum(a * x)


def augmented_store_into_int_array(x):
    a = np.zeros(3, dtype=int)
    a += 1
    a[1] += x[0] * 10
    return np.sum(a * x[:3])


def store_into_full_of_ints(x):
    a = np.full(3, 7)
    a[0] = x[0] * 5
    return a[0] * x[2] + x[1]


def store_into_bool_array(x):
    b = np.zeros(4, dtype=bool)
    b[0] = x[0]
    return np.sum(b * x)


def store_into_uint8_array(x):
    a = np.zeros(4, dtype=np.uint8)
    a[0] = x[0] * 100
    return np.sum(a * x)


def store_into_float32_array(x):
    # a float array keeps the value (rounded to float32): its derivative stays 1
    a = np.zeros(4, dtype=np.float32)
    a[1] = x[0]
    return np.sum(a * x)


def fill_diagonal_with_a_value(x):
    m = np.outer(x, x)
    np.fill_diagonal(m, x[0])
    return np.sum(m ** 2)


def fill_diagonal_with_a_constant(x):
    m = np.outer(x, x)
    np.fill_diagonal(m, 0.0)
    return np.sum(m ** 2)


def fill_diagonal_with_a_vector(x):
    m = np.zeros((4, 4))
    np.fill_diagonal(m, x ** 2)
    return np.sum(m * np.outer(x, x))


def fill_diagonal_of_a_tall_matrix(x):
    m = np.outer(x, x[:3])
    np.fill_diagonal(m, x[3])
    return np.sum(m ** 2)


def setitem_method(x):
    a = np.zeros(4)
    a.__setitem__(0, x[0] ** 2)
    return np.sum(a * x)


def sums_in_an_integer_dtype(x):
    return np.sum(x * 5, dtype=int) * x[1] + np.cumsum(x * 5, dtype=int)[2] \
        + np.mean(x * 7, dtype=int) * x[0]


def products_and_traces_in_an_integer_dtype(x):
    return np.trace(np.outer(x, x) * 10, dtype=int) * x[0] + np.prod(x * 3, dtype=int) \
        + np.cumprod(x * 3, dtype=int)[1] * x[2]


def integer_arrays_filled_with_a_value(x):
    a = np.full(3, x[0] * 5, dtype=int)
    b = np.full_like(np.zeros(3, dtype=int), x[1] * 5)
    c = np.full_like(x, x[2] * 7, dtype=np.int32)
    return np.sum(a * x[:3]) + np.sum(b) * x[3] + np.sum(c * x) + np.sum(np.full_like(x, x[3]))


def integer_linspace(x):
    return np.sum(np.linspace(0.0, x[0] * 10, 4, dtype=int) * x) \
        + np.sum(np.logspace(0.0, x[1] * 2, 3, dtype=int)) * x[2] \
        + np.sum(np.linspace(x[1], 3.0, 3) * x[:3])


def integer_stacks(x):
    s = np.stack([x * 3, x * 5], dtype=int, casting="unsafe")
    c = np.concatenate([x * 3, x], dtype=int, casting="unsafe")
    return np.sum(s * x) + np.sum(c[:4] * x) + np.sum(np.hstack([x * 3], dtype=int,
                                                                   casting="unsafe") * x)


@pytest.mark.parametrize("f", [
    sums_in_an_integer_dtype, products_and_traces_in_an_integer_dtype,
    integer_arrays_filled_with_a_value, integer_linspace, integer_stacks,
    fill_diagonal_with_a_value, fill_diagonal_with_a_constant,
    fill_diagonal_with_a_vector, fill_diagonal_of_a_tall_matrix, setitem_method])
def test_value_and_every_order(f):
    value, _ = srcgrad.value_and_grad(f)(X4.copy())
    assert value == f(X4.copy())
    check_all_orders(f, X4.copy())


def test_float32_store_keeps_its_derivative():
    # float32 rounding makes differences noisy: compare with the derivative written out
    g = srcgrad.grad(store_into_float32_array)(X4.copy())
    assert np.allclose(g, [X4[1], np.float32(X4[0]), 0.0, 0.0], rtol=1e-6)


@pytest.mark.parametrize("f", [
    store_into_int_array, store_slice_into_int64_array, store_into_arange,
    augmented_store_into_int_array, store_into_full_of_ints, store_into_bool_array,
    store_into_uint8_array])
def test_a_float_stored_into_an_integer_array_is_refused_at_its_line(f):
    # numpy truncates it (no derivative); the store's rule reads neither the array nor the
    # result, so it cannot tell: refused (s32; before s32-probe the array became a float
    # array, value and gradient wrong). Every mode: grad, jvp.
    import inspect
    lines, first = inspect.getsourcelines(f)
    line = first + next(i for i, text in enumerate(lines) if "] " in text and "= " in text
                        and "x" in text.split("=")[-1])
    for run in (lambda: srcgrad.grad(f)(X4.copy()),
                lambda: srcgrad.jvp(f, (X4.copy(),), (np.ones(4),))):
        with pytest.raises(srcgrad.SrcgradError, match="truncates") as info:
            run()
        told = "\n".join([str(info.value), *getattr(info.value, "__notes__", ())])
        assert f"test_probed_numpy.py:{line} " in told, told


def conditional_expression_with_a_generator(x):
    # found by the fuzzer (seed 165, program 19): desugar named the value of a conditional
    # expression _c<N>, which a generated sweep's second derivative takes for a saved branch
    # decision (a boolean): the Hessian-vector product was silently zero
    v = sum(x for _ in (1, 2)) if x[1] > 0.81 else np.sin(x)
    return np.sum(v ** 2)


@pytest.mark.parametrize("x", [np.array([0.3, 0.9]), np.array([0.3, 0.5])])
def test_second_derivative_through_a_conditional_expression(x):
    check_all_orders(conditional_expression_with_a_generator, x)


def _fill_diagonal_wrapping(x):
    m = np.outer(x, x[:3])
    np.fill_diagonal(m, x[3], wrap=True)
    return np.sum(m ** 2)


def _iadd_method(x):
    a = np.zeros(4)
    a.__iadd__(x)
    return np.sum(a * x)


@pytest.mark.parametrize("f, line, what", [
    (_fill_diagonal_wrapping, "np.fill_diagonal(m, x[3], wrap=True)", "np.fill_diagonal"),
    (_iadd_method, "a.__iadd__(x)", "a.__iadd__")])
def test_refused_at_the_line(f, line, what):
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(f)(X4.copy())
    import inspect
    lines, first = inspect.getsourcelines(f)
    number = first + next(i for i, text in enumerate(lines) if line in text)
    assert f"test_probed_numpy.py:{number}:" in str(info.value)
    assert what in str(info.value)
