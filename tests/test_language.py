"""The Python language numerical code uses (issue 9): *args/**kwargs parameters, unpacking in
calls, functools.partial, function values carrying differentiable data, try/except, nonlocal.

Each idiom is checked at first order (gradient against central differences), in forward mode
(jvp against central differences), and at second order both ways: forward over reverse
(hessian against differences of the gradient) and reverse over reverse (grad of grad). The
corpus (tests/corpus.py, section "issue 9") holds more cases, run by the corpus tests.
"""
import functools

import numpy as np
import pytest

import srcgrad
from fdcheck import check_grad

rng = np.random.default_rng(9)
X = rng.uniform(-1.0, 1.0, 3)


def _fd_gradient(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        out[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


def check_all_orders(f, x=X):
    """First order, forward mode, forward over reverse and reverse over reverse of scalar
    ``f`` at ``x``, each against central differences."""
    check_grad(f, (x,))
    v = rng.standard_normal(x.shape)
    _, tangent = srcgrad.jvp(f, (x,), (v,))
    numeric = (f(x + 1e-6 * v) - f(x - 1e-6 * v)) / 2e-6
    assert np.allclose(tangent, numeric, rtol=1e-6, atol=1e-8), (tangent, numeric)
    g = srcgrad.grad(f)
    hessian = srcgrad.hessian(f)(x)
    numeric_hessian = np.stack([_fd_gradient(lambda y: g(y)[i], x) for i in range(x.size)])
    assert np.allclose(hessian, numeric_hessian, rtol=1e-5, atol=1e-6), \
        (hessian, numeric_hessian)
    directional = srcgrad.grad(lambda y: np.sum(g(y) * v))(x)
    assert np.allclose(directional, hessian @ v, rtol=1e-8, atol=1e-10), \
        (directional, hessian @ v)


# -- 1. *args / **kwargs parameters --------------------------------------------------------
def _concat_and_multiply(weights, *args):
    # elementwise weights: reverse over reverse of np.dot or '@' inside a helper fails on its
    # own, *args or not (tensordot_vjp / matmul_left: a lazy zero reshaped); the corpus case
    # varargs_helper_rnn_step uses np.dot at first order and forward over reverse
    cat_state = np.hstack(args + (np.ones(1),))
    return np.sum(weights * cat_state, axis=-1)


def rnn_step_with_varargs_helper(x):
    h = np.tanh(_concat_and_multiply(np.linspace(-1, 1, 21).reshape(3, 7), x, x ** 2))
    return np.sum(np.sin(h * x))


def _softplus_sum(*values, scale=1.0, **named):
    total = 0.0
    for v in values:
        total = total + np.sum(np.log1p(np.exp(scale * v)))
    for key in named:
        total = total + np.sum(named[key] ** 3)
    return total


def kwargs_helper(x):
    return _softplus_sum(x, x * x, scale=0.5, a=x, b=np.cos(x))


def varargs_lambda(x):
    spread = lambda *vs: vs[0] * vs[1] + vs[-1]  # noqa: E731
    return np.sum(spread(x, x ** 2, np.sin(x)))


def differentiated_function_with_varargs(*xs, power=2.0):
    return np.sum(np.sin(xs[0]) ** power) + sum(np.sum(v * xs[0]) for v in xs[1:])


def test_varargs_of_the_differentiated_function_itself():
    """wrt indexes each call's positional arguments; every order and mode."""
    check_all_orders(differentiated_function_with_varargs)
    a, b = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    check_grad(differentiated_function_with_varargs, (X, a, b), wrt=(0, 2),
               kwargs={"power": 3.0})
    value, pullback = srcgrad.vjp(differentiated_function_with_varargs, X, a)
    assert np.allclose(pullback(1.0)[1], X)
    _, tangent = srcgrad.jvp(differentiated_function_with_varargs, (X, a), (None, np.ones(3)))
    assert np.isclose(tangent, np.sum(X))


def _logged(fn):
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@_logged
def _decorated(x, w=2.0):
    return np.sum(np.sin(x * w))


def through_a_generic_decorator(x):
    return _decorated(x, w=3.0) * _decorated(x)


# -- 2. * and ** unpacking in calls --------------------------------------------------------
def _pair(a, b):
    return a * b * b


def starred_call_arguments(x):
    args = (x, np.sin(x))
    return np.sum(_pair(*args))


def double_starred_call_arguments(x):
    kw = {"a": x, "b": x ** 2}
    return np.sum(_pair(**kw))


def zip_of_starred_pairs(x):
    pairs = [(x[i], x[i] ** 2) for i in range(3)]
    a, b = zip(*pairs)
    return sum(a) * sum(b)


# -- 3. functools.partial ------------------------------------------------------------------
def _loss(params, v):
    return np.sum(np.tanh(params * v)) ** 2


def partial_mapped_over_data(x):
    return sum(map(functools.partial(_loss, x), [np.ones(3), np.arange(3.0)]))


def partial_of_partial(x):
    inner = functools.partial(_pair, x)
    return np.sum(functools.partial(inner)(np.cos(x)))


def _scaled_by_keyword(v, /, **kw):
    # 'v' is positional-only: the keyword v= below goes to **kw, as in Python
    return v * kw["v"] + kw.get("w", 0.0)


def positional_only_and_kwargs(x):
    return np.sum(_scaled_by_keyword(x, v=np.sin(x), w=x ** 2))


_map = map  # an alias, as collections' namedtuple methods use


def map_over_two_sequences(x):
    return np.sum(sum(map(_pair, [x, 2 * x], [np.cos(x), x])))


def map_by_alias_over_unequal_lengths(x):
    # map stops at the shortest sequence, like zip
    return np.sum(sum(_map(lambda a, b: a * b, [x, x ** 2, x ** 3], (np.sin(x), x))))


def map_of_lambdas_reading_a_reassigned_variable(x):
    # consumed at once, map(lambda u: e, xs) is [e for u in xs]: the lambdas read y as it is
    # at that point, as Python's calls do (a function value kept for later is refused)
    y = x * 2.0
    y = np.sin(y)
    total = sum(map(lambda u: u * y, [x, x ** 2]))
    for t in map(lambda a, b: a * b * y, [x], (np.cos(x), x)):
        total = total + t
    y = y + 1.0
    return np.sum(total * y)


# -- 4. function values reading differentiable variables -----------------------------------
def _apply_twice(f, v):
    return f(v) + f(2 * v)


def lambda_value_capturing_active(x):
    return np.sum(_apply_twice(lambda v: v * x ** 2, x))


def lambdas_stored_in_a_list(x):
    fs = [lambda t: t * x, lambda t: np.sin(t * x) ** 2]
    return np.sum(fs[0](2.0) + fs[1](0.5))


def lambda_returned_from_a_helper(x):
    def make():
        return lambda t: np.exp(t * x)
    return np.sum(make()(0.3))


def nested_def_passed_as_value(x):
    def shaped(t):
        return np.tanh(t * x)
    return np.sum(_apply_twice(shaped, x))


# -- 5. try / except / else / finally -----------------------------------------------------
def _checked_log(v):
    if np.any(v <= 0):
        raise ValueError("not positive")
    return np.log(v)


def try_except_in_a_loop(x):
    total = 0.0
    for k in range(4):
        try:
            a = x * (k - 1.5)
            b = _checked_log(a)  # raises while k < 2: the next line does not run
            total = total + np.sum(b * x)
        except ValueError as error:
            total = total + np.sum(np.sin(a)) * len(str(error))
        else:
            total = total * 1.1
        finally:
            total = total + np.sum(x ** 2) * 0.1
    return total


def try_finally_and_raise_in_body(x):
    y = x * 2.0
    try:
        y = np.exp(y) * x
        if np.sum(x) > 0:
            raise KeyError("positive")
        y = y * 100.0
    except (KeyError, IndexError):
        y = y + np.cos(x)
    finally:
        y = y * x
    return np.sum(y)


# -- 6. nonlocal ---------------------------------------------------------------------------
def nonlocal_accumulator(x):
    total = 0.0
    count = 0

    def add(v):
        nonlocal total, count
        total = total + np.sum(np.sin(v) * x)
        count += 1
        if count > 2:
            return total * 0.5
        return total

    for i in range(3):
        add(x * (i + 1))
    last = add(x ** 2)
    return total * last / count


def return_break_continue_in_try_bodies(x):
    total = 0.0
    for k in range(5):
        try:
            if k == 3:
                break  # the finally still runs
            if k == 1:
                continue
            total = total + np.sum(np.sin(x * k))
        finally:
            total = total * 1.5
    try:
        return total * np.sum(x)
    except ValueError:
        return total


POSITIVE = np.array([0.4, 0.9, 1.3])
TRY_CASES = [try_except_in_a_loop, try_finally_and_raise_in_body,
             return_break_continue_in_try_bodies]


@pytest.mark.parametrize("f", TRY_CASES, ids=[f.__name__ for f in TRY_CASES])
def test_try_at_first_second_order_and_forward_mode(f):
    check_all_orders(f, POSITIVE)


def _unhandled(x):
    try:
        y = _checked_log(x - 10.0)
    except KeyError:
        y = x
    return np.sum(y)


def test_unhandled_exception_propagates_after_finally():
    with pytest.raises(ValueError, match="not positive"):
        srcgrad.grad(_unhandled)(POSITIVE)


CASES = [rnn_step_with_varargs_helper, kwargs_helper, varargs_lambda, through_a_generic_decorator, starred_call_arguments,
         double_starred_call_arguments, zip_of_starred_pairs, partial_mapped_over_data,
         partial_of_partial, positional_only_and_kwargs, map_over_two_sequences,
         map_by_alias_over_unequal_lengths,
         map_of_lambdas_reading_a_reassigned_variable, lambda_value_capturing_active, lambdas_stored_in_a_list,
         lambda_returned_from_a_helper, nested_def_passed_as_value, nonlocal_accumulator]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_first_second_order_and_forward_mode(f):
    check_all_orders(f)


# -- what stays refused: located, with a hint ----------------------------------------------
def captured_then_reassigned(x):
    y = x * 2.0
    f = lambda t: t * y  # noqa: E731
    fs = [f]
    y = x * 3.0
    return np.sum(fs[0](1.0))


def lambdas_over_a_comprehension_variable(x):
    fs = [lambda t: t * w for w in [x, 2 * x]]  # Python: every one reads the last w
    return np.sum(fs[0](1.0))


@pytest.mark.parametrize("f, name", [(captured_then_reassigned, "y"),
                                     (lambdas_over_a_comprehension_variable, "w")])
def test_function_value_reading_a_variable_assigned_again_is_refused(f, name):
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(f)(X)
    message = str(info.value)
    assert "test_language.py:" in message and "assigned more than once" in message
    assert f"Pass {name} to the function as an argument" in message


def nonlocal_updater_used_as_value(x):
    total = x

    def add(v):
        nonlocal total
        total = total + v

    updates = [add]
    updates[0](x)
    return np.sum(total)


def test_nonlocal_updater_used_as_a_value_is_refused():
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(nonlocal_updater_used_as_value)(X)
    message = str(info.value)
    assert "test_language.py:" in message and "'add', which rebinds 'nonlocal'" in message
    assert "statement of its own" in message


# -- a helper taking a plain function value: dispatched directly at first order --------------
def _map_sum(fn, xs):
    total = 0.0
    for v in xs:
        total = total + fn(v)
    return total


def _cube(v):
    return v * v * v


def map_sum_of_cubes(x):
    return _map_sum(_cube, x) + _map_sum(np.cos, x)


def test_function_passed_to_a_helper_through_pullbacks_and_jacobians():
    value, pullback = srcgrad.vjp(map_sum_of_cubes, X)
    expected = 3 * X ** 2 - np.sin(X)
    assert np.allclose(pullback(1.0)[0], expected)
    _, tangent = srcgrad.jvp(pullback, (1.0,), (2.0,))  # forward mode over its records
    assert np.allclose(tangent[0], 2 * expected)
    hessian = np.diag(6 * X - np.cos(X))
    assert np.allclose(srcgrad.jacrev(srcgrad.grad(map_sum_of_cubes))(X), hessian)
    check_all_orders(map_sum_of_cubes)
