"""Primitives common in machine learning, as numerically stable numpy functions with rules.

``sigmoid``, ``relu``, ``softplus``, ``logsumexp``, ``softmax`` and ``log_softmax`` are plain
numpy functions (array-like types such as the Tensor facade intercept them through
``__array_function__``); their rules differentiate them as single operations.
"""
import numpy as np

from ._helpers import dispatches, expand_reduced, first_operand
from .domains import away_from, draw, unary
from .registry import defrule

__all__ = ["sigmoid", "relu", "softplus", "logsumexp", "softmax", "log_softmax"]


@dispatches(first_operand)
def sigmoid(x):
    """The logistic function 1 / (1 + exp(-x)), without overflow for large |x|."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


@dispatches(first_operand)
def relu(x):
    """max(x, 0); the derivative at 0 is taken as 0."""
    return np.maximum(x, 0.0)


@dispatches(first_operand)
def softplus(x):
    """log(1 + exp(x)), without overflow for large x."""
    return np.logaddexp(0.0, x)


@dispatches(first_operand)
def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x), axis)), shifted by the maximum so that it never overflows."""
    shift = np.max(x, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    out = np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True)) + shift
    return out if keepdims else np.squeeze(out, axis=axis)


@dispatches(first_operand)
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x), axis), shifted by the maximum so that it never overflows."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@dispatches(first_operand)
def log_softmax(x, axis=-1):
    """x - logsumexp(x, axis): the log of ``softmax``, accurate for very negative entries."""
    return x - logsumexp(x, axis=axis, keepdims=True)


def sigmoid_vjp(g, ans, x):
    return (g * ans * (1.0 - ans),)


def sigmoid_jvp(dx, ans, x):
    return (dx * ans * (1.0 - ans),)


def relu_vjp(g, ans, x):
    return (g * (x > 0),)


def relu_jvp(dx, ans, x):
    return (dx * (x > 0),)


def softplus_vjp(g, ans, x):
    return (g * sigmoid(x),)


def softplus_jvp(dx, ans, x):
    return (dx * sigmoid(x),)


def logsumexp_vjp(g, ans, x, axis=None, keepdims=False):
    return (expand_reduced(g, x, axis, keepdims)
            * np.exp(x - expand_reduced(ans, x, axis, keepdims)),)


def logsumexp_jvp(dx, ans, x, axis=None, keepdims=False):
    return (np.sum(dx * np.exp(x - expand_reduced(ans, x, axis, keepdims)), axis=axis,
                   keepdims=keepdims),)


def softmax_vjp(g, ans, x, axis=-1):
    return (ans * (g - np.sum(g * ans, axis=axis, keepdims=True)),)


def softmax_jvp(dx, ans, x, axis=-1):
    return (ans * (dx - np.sum(dx * ans, axis=axis, keepdims=True)),)


def log_softmax_vjp(g, ans, x, axis=-1):
    return (g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True),)


def log_softmax_jvp(dx, ans, x, axis=-1):
    return (dx - np.sum(np.exp(ans) * dx, axis=axis, keepdims=True),)


def _logsumexp_points(rng):
    return [((draw(rng, (3, 4), -3.0, 3.0),), {}), ((draw(rng, (3, 4)),), {"axis": 1}),
            ((draw(rng, (3, 4)), 0, True), {}), ((draw(rng, (2, 3, 4)),), {"axis": (0, 2)}),
            ((draw(rng, (5,)) + 500.0,), {}),
            ((draw(rng, (2, 3)),), {"axis": -1, "keepdims": True}),
            ((draw(rng, None),), {})]


def _softmax_points(rng):
    return [((draw(rng, (5,)),), {}), ((draw(rng, (3, 4)),), {}), ((draw(rng, (3, 4)), 0), {}),
            ((draw(rng, (2, 3, 4)),), {"axis": (0, 2)}), ((draw(rng, (3, 4)) - 300.0,), {}),
            ((draw(rng, (3, 4)),), {"axis": None})]


def _sigmoid_points(rng):
    return unary(-4.0, 4.0)(rng) + [((np.array([-40.0, -3.0, 0.5, 3.0, 40.0]),), {})]


def _relu_points(rng):
    return [((away_from(rng, s, [0.0]),), {}) for s in (None, (), (3,), (2, 3))]


defrule(sigmoid, sigmoid_vjp, jvp=sigmoid_jvp, domain=_sigmoid_points)
defrule(relu, relu_vjp, jvp=relu_jvp, domain=_relu_points)
defrule(softplus, softplus_vjp, jvp=softplus_jvp, domain=_sigmoid_points)
defrule(logsumexp, logsumexp_vjp, jvp=logsumexp_jvp, domain=_logsumexp_points)
defrule(softmax, softmax_vjp, jvp=softmax_jvp, domain=_softmax_points)
defrule(log_softmax, log_softmax_vjp, jvp=log_softmax_jvp, domain=_softmax_points)
