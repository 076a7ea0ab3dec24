"""Python semantics a probe of srcgrad found differentiated wrongly without an error (28 Nov
2026, session 33), each checked against the plain call's value and, in every mode, against
central differences.

- A ``try`` with a ``finally`` whose handler or ``else`` left by ``continue``, ``break``,
  ``return`` or an exception (a ``raise``, a call raising) skipped the ``finally``: the
  lowered handlers jumped over the ``finally`` code written after them, where Python runs
  it first. The handlers and ``else`` of such a ``try`` are now a protected region of their
  own, whose exits run after the ``finally`` (transforms/trycatch.py ``_lower``).
- ``a + b`` (and ``a - b``, ``a += b``) on objects of a user's class ran the class's
  ``__add__``, whatever it computes, while the sweep applied the rule of ``+`` on numbers:
  the object's adjoint went through unchanged, a silently wrong gradient when the method
  does anything but add the fields. It is refused at the line now (``runtime.unbroadcast``
  meets an object's adjoint for an operand that is an object).
- A call of a rule resolved at run time (``np.interp(*table)``, ``np.logspace(**kw)``, a
  function value ``fs[0](...)``, ``math.hypot(*xs)`` past the sixteen coordinates its rule
  differentiates) dropped the gradient of an operand the rule does not differentiate
  (session 34): the cotangent of such an operand holding floats is now a
  ``runtime.NotDifferentiated`` that raises where the backward sweep reads it, which it
  does only for an operand depending on the input (api.py ``_rule_backward``).
- A bare ``raise`` in a handler crashed (no exception is active in the lowered code); it
  raises what the body's catcher recorded.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import srcgrad
from test_language import check_all_orders

rng = np.random.default_rng(3301)
X4 = rng.uniform(0.4, 1.2, 4)


def continue_in_handler_with_finally(x):
    s = 0.0
    for i in range(4):
        try:
            if i == 2:
                raise ValueError("x")
            s = s + x[i] ** 2
        except ValueError:
            s = s * x[i]
            continue
        finally:
            s = s + x[0]
        s = s * 1.5
    return s


def continue_in_inner_handler_of_nested_try(x):
    s = 0.0
    for i in range(4):
        try:
            try:
                if i == 2:
                    raise ValueError("x")
                s = s + x[i] ** 2
            except ValueError:
                s = s * x[i]
                continue
            finally:
                s = s + x[0]
            s = s * 1.5
        finally:
            s = s + 0.1
    return s


def break_in_handler_with_finally(x):
    s = 0.0
    for i in range(4):
        try:
            if i == 2:
                raise ValueError("x")
            s = s + x[i] ** 2
        except ValueError:
            s = s * x[i]
            break
        finally:
            s = s + x[0]
    return s


def continue_in_else_with_finally(x):
    s = 0.0
    for i in range(4):
        try:
            s = s + x[i] ** 2
        except ValueError:
            pass
        else:
            if i == 1:
                continue
            s = s * 1.5
        finally:
            s = s + x[0]
    return s


def raise_in_handler_with_finally(x):
    s = 0.0
    for i in range(4):
        try:
            try:
                if i == 2:
                    raise ValueError("x")
                s = s + x[i] ** 2
            except ValueError:
                s = s * x[i]
                raise KeyError("k")
            finally:
                s = s + x[0]
        except KeyError:
            s = s * 2.0
    return s


def raise_in_else_with_finally(x):
    s = 0.0
    for i in range(4):
        try:
            try:
                s = s + x[i] ** 2
            except ValueError:
                pass
            else:
                if i == 2:
                    raise KeyError("k")
            finally:
                s = s + x[0]
        except KeyError:
            s = s * 2.0
    return s


def _raises_when_positive(v):
    if v > 0.0:
        raise KeyError("k")
    return v


def call_raising_in_handler_with_finally(x):
    s = 0.0
    try:
        try:
            raise ValueError("x")
        except ValueError:
            s = s + x[1]
            s = s + _raises_when_positive(x[1])
        finally:
            s = s + x[0] * x[2]
    except KeyError:
        s = s * 3.0
    return s


def finally_returning_after_handler_continue(x):
    for i in range(2):
        try:
            raise ValueError
        except ValueError:
            continue
        finally:
            return x[0] * x[1]
    return x[2]


def bare_raise_in_handler(x):
    s = 0.0
    try:
        try:
            raise ValueError("x")
        except ValueError:
            s = s + x[0] * x[3]
            raise
    except ValueError:
        s = s * x[1]
    return s


def bare_raise_in_nested_handler(x):
    s = 0.0
    try:
        try:
            raise ValueError("x")
        except ValueError:
            try:
                raise KeyError("k")
            except KeyError:
                s = s + x[2] ** 2
            s = s + x[0]
            raise
        finally:
            s = s * x[3]
    except ValueError:
        s = s * x[1]
    except KeyError:
        s = s * 100.0
    return s


def numpy_raising_in_handler_with_finally(x):
    """(WRONG before, silently, 30 Nov 2026: a handler holding no raise and no call of the
    user's was not protected, so numpy raising in it under np.errstate skipped the finally.)"""
    s = x[0] * 1.0
    with np.errstate(invalid="raise"):
        try:
            try:
                s = s * x[1]
                raise ValueError("v")
            except ValueError:
                s = s + np.sqrt(x[2] - 10.0)
            finally:
                s = s * x[3]
        except FloatingPointError:
            s = s * x[2]
    return s


def builtin_raising_in_else_with_finally(x):
    """(WRONG before, silently: ``int("z")`` in the ``else``, a builtin taken not to raise.)"""
    s = x[0] * x[1]
    try:
        try:
            s = s * x[2]
        except KeyError:
            s = s * 100.0
        else:
            s = s + x[1]
            int("z")
        finally:
            s = s * x[3]
    except ValueError:
        s = s * x[0]
    return s


TRY_EXITS = [continue_in_handler_with_finally, continue_in_inner_handler_of_nested_try,
             break_in_handler_with_finally, continue_in_else_with_finally,
             raise_in_handler_with_finally, raise_in_else_with_finally,
             call_raising_in_handler_with_finally, finally_returning_after_handler_continue,
             bare_raise_in_handler, bare_raise_in_nested_handler,
             numpy_raising_in_handler_with_finally, builtin_raising_in_else_with_finally]


@pytest.mark.parametrize("f", TRY_EXITS, ids=lambda f: f.__name__)
def test_handler_exits_run_the_finally(f):
    value, _ = srcgrad.value_and_grad(f)(X4.copy())
    assert np.isclose(value, f(X4.copy()), rtol=1e-12), (value, f(X4.copy()))
    check_all_orders(f, X4.copy())


class _Odd:
    """Operators that do not compute what their names say."""

    def __init__(self, a):
        self.a = a

    def __add__(self, other):
        return _Odd(self.a * other.a)

    def __sub__(self, other):
        return _Odd(np.sin(self.a) * other.a)


def add_meaning_multiply(x):
    v = _Odd(x) + _Odd(x * 3.0)
    return np.sum(v.a)


def augmented_add_meaning_multiply(x):
    v = _Odd(x)
    v += _Odd(x * 2.0)
    return np.sum(v.a)


def subtract_of_objects(x):
    v = _Odd(x) - _Odd(x * x)
    return np.sum(v.a)


@pytest.mark.parametrize("f", [add_meaning_multiply, augmented_add_meaning_multiply,
                               subtract_of_objects], ids=lambda f: f.__name__)
def test_operators_of_a_users_class_are_refused_at_the_line(f):
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match="arithmetic operator on a _Odd|arithmetic of its own") as info:
        srcgrad.grad(f)(X4.copy())
    assert f"in {f.__name__}():" in "".join(getattr(info.value, "__notes__", []))


class _Shifted:
    """A number-like class whose operators with a number compute something else."""

    def __init__(self, w):
        self.w = w

    def __add__(self, other):
        return _Shifted(self.w * 3.0 + (other.w if isinstance(other, _Shifted) else other))

    __radd__ = __add__

    def __neg__(self):
        return _Shifted(self.w ** 2)

    def total(self):
        return np.sum(self.w)


def constant_plus_object(x):
    u = 3.0 + _Shifted(x)  # (the check is where u is first read as an object)
    return np.sum(u.w)  # line: radd


def object_plus_constant(x):
    v = _Shifted(x)
    u = v + 1.0  # (the check is where u is first read as an object)
    return u.total()  # line: add


def negated_object(x):
    u = -_Shifted(x)
    if x[0] > 0.0:
        s = np.sum(u.w)
    else:
        s = np.sum(u.w)
    return s


@pytest.mark.parametrize("f, mark, mode", [
    (constant_plus_object, "radd", "grad"), (object_plus_constant, "add", "grad"),
    (constant_plus_object, "radd", "jvp"), (object_plus_constant, "add", "jvp")],
    ids=lambda v: getattr(v, "__name__", v))
def test_a_number_with_an_object_is_refused_at_the_line(f, mark, mode):
    """A number on one side: nothing was unbroadcast, the object's derivative went through
    the class's own operator unchanged (grad 1 where 3 is right, jvp too) before 28 Nov
    2026 (transforms/operator_objects.py)."""
    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="arithmetic of its own") as info:
        if mode == "grad":
            srcgrad.grad(f)(X4.copy())
        else:
            srcgrad.jvp(f, (X4.copy(),), (np.ones(4),))
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1)
                if f"# line: {mark}" in text)
    assert f"test_probed_python.py:{line}:" in str(info.value)


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_a_negated_object_fails_at_its_line(mode):
    """-obj running __neg__: the derivative of '-' on the object's derivative (a dict) fails
    at the line, never a silent number."""
    with pytest.raises(TypeError) as info:
        if mode == "grad":
            srcgrad.grad(negated_object)(X4.copy())
        else:
            srcgrad.jvp(negated_object, (X4.copy(),), (np.ones(4),))
    assert "in negated_object(): u = -_Shifted(x)" in "".join(
        getattr(info.value, "__notes__", []))


def arrays_and_numbers_read_after_arithmetic(x):
    u = x * 2.0 + 1.0
    s = float(x[0]) + 2.0
    u += s
    t = -u
    return np.sum(u.T * t.real) + s.real + np.sum(t.conj())


def test_arrays_and_numbers_pass_the_check():
    check_all_orders(arrays_and_numbers_read_after_arithmetic, X4.copy())


_SQUARED = np.vectorize(lambda t: t * t)


def vectorized_global(x):
    return np.sum(_SQUARED(x))  # line: vectorize global


def vectorized_here(x):
    g = np.vectorize(lambda t: t * t)
    return np.sum(g(x))  # line: vectorize here


@pytest.mark.parametrize("f, mark", [(vectorized_global, "vectorize global"),
                                     (vectorized_here, "vectorize here")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_numpy_element_loops_are_refused_naming_them(f, mark):
    """np.vectorize was refused inside numpy's source, naming its '*args' (a hint about the
    user's own parameters that did not apply). (np.frompyfunc's ufunc stays a missing rule,
    which test_errors checks: a rule may be registered for it.)"""
    with pytest.raises(srcgrad.SrcgradError, match="element by element") as info:
        srcgrad.grad(f)(X4.copy())
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1)
                if f"# line: {mark}" in text)
    assert f"test_probed_python.py:{line} " in "".join(getattr(info.value, "__notes__", []))


def _shift(v):
    return 3.0 + v  # line: helper returns


def _shift_named(v):
    u = v + 1.0
    return u  # line: helper returns a name


def helper_shifting_an_object(x):
    u = _shift(_Shifted(x))
    return np.sum(u.w)


def helper_shifting_an_object_by_name(x):
    u = _shift_named(_Shifted(x))
    return np.sum(u.w)


def helpers_shifting_arrays(x):
    return np.sum(_shift(x) * _shift_named(x))


def _weight_of(u):
    return u.w


def shifted_object_handed_to_a_helper(x):
    u = _Shifted(x) + 1.0
    return np.sum(_weight_of(u))  # line: handed to a helper


def shifted_object_stored_in_a_list(x):
    u = 2.0 + _Shifted(x)
    us = [u]  # line: stored in a list
    return np.sum(us[0].w)


@pytest.mark.parametrize("f, mark", [(helper_shifting_an_object, "helper returns"),
                                     (shifted_object_handed_to_a_helper,
                                      "handed to a helper"),
                                     (shifted_object_stored_in_a_list, "stored in a list"),
                                     (helper_shifting_an_object_by_name,
                                      "helper returns a name")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_a_helper_returning_an_object_shifted_by_a_number_is_refused(f, mark):
    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="arithmetic of its own") as info:
        srcgrad.grad(f)(X4.copy())
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1)
                if f"# line: {mark}" in text)
    assert f"test_probed_python.py:{line}:" in str(info.value)


def test_helpers_returning_arrays_pass_the_check():
    check_all_orders(helpers_shifting_arrays, X4.copy())


# -- rules taking any number of operands, past the ones they differentiate -----------------
def atleast_of_spread_arrays(x):
    """(WRONG before, silently: the second array's gradient was dropped.)"""
    parts = [x[0] * 2.0, x[1] * 3.0]
    a, b = np.atleast_1d(*parts)
    return np.sum(a) + np.sum(b)


def hypot_of_twenty_spread(x):
    """(WRONG before, silently: coordinates 17 to 20 got no gradient.)"""
    return math.hypot(*[x[i % 4] * (i + 1) for i in range(20)])


def hypot_of_seventeen_written(x):
    return math.hypot(x[0], x[1], x[2], x[3], x[0], x[1], x[2], x[3], x[0], x[1], x[2], x[3],
                      x[0], x[1], x[2], x[3], x[0])


def hypot_of_sixteen_spread(x):
    return math.hypot(*[x[i % 4] * (i + 1) for i in range(16)])


def interp_of_a_spread_table(x):
    """(WRONG before, silently: ``xp``'s gradient was dropped.)"""
    table = (0.6, x[:2] * np.array([1.0, 2.0]), np.array([0.0, 1.0]))
    return np.interp(*table)


def logspace_of_spread_keywords(x):
    """(WRONG before, silently: ``base``'s gradient was dropped.)"""
    options = {"base": x[0] + 1.0}
    return np.sum(np.logspace(0.0, 1.0, 3, **options))


def interp_as_a_function_value(x):
    """(A TypeError in the backward sweep before.)"""
    fns = [np.interp]
    return fns[0](0.6, x[:2] * np.array([1.0, 2.0]), np.array([0.0, 1.0]))


def interp_of_a_constant_spread_table(x):
    table = (np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0]))
    options = {"base": 3.0, "num": 3}
    return np.interp(x[0] + x[1], *table) * np.sum(np.logspace(0.0, x[2], **options))


def max_of_three_spread(x):
    return max(*[x[0] * 2.0, x[1], x[2]])


@pytest.mark.parametrize("f, message", [
    (atleast_of_spread_arrays, r"argument 2 of 'numpy\.atleast_1d' is not differentiable.*"
                               r"differentiates its first argument only"),
    (hypot_of_twenty_spread, r"argument 17 of 'math\.hypot' .*its first 16 arguments only"),
    (hypot_of_seventeen_written, r"test_probed_python\.py:\d+: argument 17 of 'math\.hypot'"
                                 r".*its first 16 arguments only"),
    (max_of_three_spread, r"'max' called with 3 positional operands"),
    (interp_of_a_spread_table, r"argument 2 of 'numpy\.interp' is not differentiable"),
    (logspace_of_spread_keywords, r"argument 'base' of 'numpy\.logspace' is not "
                                  r"differentiable"),
    (interp_as_a_function_value, r"argument 2 of 'numpy\.interp' is not differentiable")])
def test_operands_past_what_a_rule_differentiates_are_refused(f, message):
    with pytest.raises(srcgrad.SrcgradError, match=message):
        srcgrad.grad(f)(X4.copy())
    with pytest.raises(srcgrad.SrcgradError, match=message):
        srcgrad.jvp(f, (X4.copy(),), (X4.copy(),))
    with pytest.raises(srcgrad.SrcgradError, match=message):  # (zeros, silently, at first)
        srcgrad.jacrev(srcgrad.grad(f))(X4.copy())


@pytest.mark.parametrize("f", [hypot_of_sixteen_spread, interp_of_a_constant_spread_table],
                         ids=lambda f: f.__name__)
def test_a_spread_call_within_what_the_rule_differentiates(f):
    check_all_orders(f, X4.copy())
