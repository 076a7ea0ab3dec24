"""The records of calls dispatched at run time (srcgrad/call_records.py): built by
``call_fwd``, read by ``call_bwd``, and differentiated again at higher order, where their
cotangents are tuples read by field position."""
import functools

import numpy as np
import pytest

import srcgrad
from srcgrad import runtime
from srcgrad.call_records import (RULE_ARGS, RULE_VALUE, USER_SAVED, RuleCall, UserCall,
                                  record_derivative)


def test_a_record_derivative_names_its_fields_and_zeros_the_rest():
    g = record_derivative(UserCall, saved=3.0)
    assert type(g) is tuple and len(g) == len(UserCall._fields)
    assert runtime.part(g, USER_SAVED) == 3.0
    assert all(runtime.is_zero(v) for i, v in enumerate(g) if i != USER_SAVED)
    g = record_derivative(RuleCall, args=(1.0,), value=2.0)
    assert runtime.part(g, RULE_ARGS) == (1.0,) and runtime.part(g, RULE_VALUE) == 2.0
    with pytest.raises(TypeError, match="no field"):
        record_derivative(RuleCall, saved=1.0)


def test_a_lazy_zero_cotangent_reads_as_zero_in_every_field():
    assert runtime.is_zero(runtime.part(runtime.ZERO, USER_SAVED))


def test_a_user_call_lines_gradients_up_with_the_call():
    # method(self, a, b, c=...) called as obj.method(x, c=z): gradients for wrt a and c
    record = UserCall(bwd=None, saved=None, n_self=1, names=["self", "a", "b", "c"],
                      n_args=1, kwargs={"c": 0.0, "other": 0.0}, wrt=(1, 3))
    grads = record.per_parameter([10.0, 30.0])
    assert grads == [None, 10.0, None, 30.0]
    assert record.at_call(grads) == ([10.0], {"c": 30.0, "other": None})
    assert record.at_call(record.per_parameter([1.0, 2.0], missing=0.0), missing=0.0) == \
        ([1.0], {"c": 2.0, "other": 0.0})


def test_copying_saved_values_copies_the_tapes_inside_a_record():
    tape = runtime.Tape([1.0, 2.0])
    record = UserCall(None, (tape, 5.0), 0, ["x"], 1, {}, (0,))
    copied = runtime.copy_saved(runtime.Tape([record]))
    inner = copied[0].saved[0]
    assert isinstance(copied[0], UserCall) and inner == tape and inner is not tape
    inner.pop()
    assert len(tape) == 2  # (a second backward sweep can pop the original again)
    plain = RuleCall(None, (1.0,), {}, 2.0)
    assert runtime.copy_saved(plain) is plain  # nothing to copy: the same record


# -- higher order through each kind of record ---------------------------------------------------
def _through_a_passed_function(x, fn):
    return fn(x) * x  # fn known only at run time: call_fwd/call_bwd


def _cube(v):
    return v * v * v


def test_second_order_through_a_user_call():
    f = functools.partial(_through_a_passed_function, fn=_cube)  # x^4: 12 x^2
    assert srcgrad.grad(srcgrad.grad(lambda x: f(x)))(0.5) == pytest.approx(3.0, rel=1e-12)


def test_second_order_through_a_rule_call():
    def f(x):
        return _through_a_passed_function(x, np.sin)  # x sin x: 2 cos x - x sin x
    x = 0.3
    expected = 2 * np.cos(x) - x * np.sin(x)
    assert srcgrad.grad(srcgrad.grad(f))(x) == pytest.approx(expected, rel=1e-12)
    assert srcgrad.hessian(f)(x) == pytest.approx(expected, rel=1e-12)


def test_forward_over_reverse_through_dynamic_calls():
    def f(x):
        square = lambda v: v * v  # noqa: E731
        return np.sum(_through_a_passed_function(x, square) + np.tanh(x))
    x = np.array([0.2, -0.4, 0.7])
    expected = np.diag(6 * x - 2 * np.tanh(x) * (1 - np.tanh(x) ** 2))
    np.testing.assert_allclose(srcgrad.jacfwd(srcgrad.grad(f))(x), expected, rtol=1e-12)
    np.testing.assert_allclose(srcgrad.hessian(f)(x), expected, rtol=1e-12)


class _Scaler:
    @staticmethod
    def twice(v):
        return 2.0 * v * v

    def apply(self, v):
        return self.twice(v) * v  # a static method: a receiverless record


class _Cuber:
    @classmethod
    def cube(cls, v):
        return v * v * v

    def apply(self, v):
        return self.cube(v) * 2.0  # a class method: a receiverless record too


# method_fwd differentiated again passed the receiver to the static method
# (dispatch._method_target): a TypeError at second order, older than the records. Now the
# redispatched forward keeps the ReceiverlessCall record the first order made.
@pytest.mark.parametrize("holder, second", [(_Scaler, lambda x: 12.0 * x),
                                            (_Cuber, lambda x: 12.0 * x)])
def test_second_order_through_a_static_or_class_method(holder, second):
    def f(x, s):
        return s.apply(x)  # 2 x^3 either way

    def first(x):
        return srcgrad.grad(f)(x, holder())

    assert srcgrad.grad(first)(0.5) == pytest.approx(second(0.5), rel=1e-12)
    value = srcgrad.jvp(first, (0.5,), (1.0,))[1]
    assert value == pytest.approx(second(0.5), rel=1e-12)


class _Varargs:
    @staticmethod
    def twice(*vals):
        return 2.0 * vals[0] * vals[0]

    def apply(self, v):
        return self.twice(v) * v


def test_forward_mode_through_a_static_method():
    """method_jvp passed the receiver to the static method as its first value (an error
    located in generated code, for a static method taking *vals)."""
    def f(x):
        return _Varargs().apply(x)  # 2 x^3
    value, tangent = srcgrad.jvp(f, (0.5,), (1.0,))
    assert value == pytest.approx(0.25) and tangent == pytest.approx(1.5)
