"""User-style functions to differentiate, each with explicit arguments and wrt.

``CASES`` lists ``Case(fn, args, wrt)``; tests check every case against finite differences
and compare transformed gradients with the Tensor facade where it applies.
"""
from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np

rng = np.random.default_rng(1234)


def arr(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape)


@dataclass
class Case:
    fn: object
    args: tuple
    wrt: tuple = (0,)
    tags: tuple = ()
    kwargs: dict = field(default_factory=dict)

    @property
    def id(self):
        return self.fn.__name__


CASES: list[Case] = []


def case(*args, wrt=(0,), tags=(), **kwargs):
    def register(fn):
        CASES.append(Case(fn, args, wrt, tags, kwargs))
        return fn
    return register


# -- straight-line arithmetic ----------------------------------------------------------------
@case(1.5, 0.7, wrt=(0, 1))
def poly(x, y):
    return 3 * x ** 3 - 2 * x * y + y ** 2 / 4 + 1


@case(arr(3), arr(3), wrt=(0, 1))
def elementwise_mix(x, y):
    z = x * y - x / (2 + y * y) + -x
    return np.sum(z * z)


@case(0.3)
def math_chain(x):
    return math.sin(x) * math.exp(-x) + math.log(1 + x * x) + math.sqrt(2 + math.cos(x))


@case(arr(4, 3), arr(3), wrt=(0, 1))
def broadcast_div_pow(x, y):
    return np.sum((x + 2) / (y + 3) + (x * x + 1) ** (y * 0.5 + 1.5))


@case(arr(5))
def numpy_unary(x):
    return np.sum(np.tanh(x) * x + np.exp(-x * x) + np.log1p(x * x) + np.sin(x) ** 2)


@case(arr(3, 4), arr(4, 2), wrt=(0, 1))
def matmul_chain(a, b):
    c = a @ b
    return np.sum(np.tanh(c)) + np.sum(a.T @ a)


@case(arr(8, 5), arr(5, 4), arr(4), wrt=(1, 2))
def mlp_layer(x, w, b):
    h = np.tanh(x @ w + b)
    return np.mean(h ** 2)


@case(arr(3, 4))
def reductions(x):
    return np.sum(np.mean(x, axis=0) ** 2) + np.max(x) + np.sum(x.sum(axis=1) * 2) + x.mean()


@case(arr(6))
def indexing(x):
    return x[0] * x[1] + np.sum(x[2:5] ** 2) + np.sum(x[np.array([0, 0, 3])])


@case(arr(2, 3))
def methods_and_attrs(x):
    y = x.reshape(3, 2)
    return np.sum(y.T * 2) + np.sum(x.ravel() ** 3) + float(x.shape[0]) * np.sum(x)


@case(1.2, 3.0, wrt=(0,))
def reassign(x, n):
    y = x
    y = y * 2
    y = y + x
    y = y * y
    return y / n


@case(0.5)
def abs_min_max(x):
    return abs(x - 2) + max(x, 0.1) * min(x * 3, 4.0)


@case(arr(3), arr(3), wrt=(0, 1))
def dot_outer(x, y):
    return np.dot(x, y) + np.sum(np.outer(x, y) ** 2)


# -- control flow ------------------------------------------------------------------------------
@case(0.8)
def if_else(x):
    if x > 0.5:
        y = x * x
    else:
        y = -x
    return y * 3


@case(-0.8)
def if_else_other_branch(x):
    if x > 0.5:
        y = x * x
    else:
        y = -x
    return y * 3


@case(0.4)
def elif_chain(x):
    if x > 1:
        y = x
    elif x > 0.2:
        y = x * x * x
    else:
        y = 2 * x
    return y


@case(0.7)
def conditional_expression(x):
    y = x * 2 if x > 0 else x * 3
    return y * y


@case(0.9, 4)
def for_range(x, n):
    s = 0.0
    for i in range(n):
        s = s + x ** i
    return s


@case(1.1, 5)
def for_product(x, n):
    p = 1.0
    for i in range(1, n):
        p = p * (x + i)
    return p


@case(arr(3))
def while_doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return np.sum(y * np.array([0.1, 1.0, 0.0001]))


@case(0.3)
def while_counter(x):
    k = 0
    while k < 4:
        x = x * 1.5 + 0.1
        k += 1
    return x


@case(0.5, 6)
def euler(x, n):
    for _ in range(n):
        x = x + 0.1 * np.sin(x)
    return x


@case(0.3)
def loop_with_break(x):
    y = x
    for i in range(10):
        y = y * 1.7
        if y > 2:
            break
    return y


@case(0.3)
def loop_with_continue(x):
    s = 0.0
    for i in range(6):
        if i % 2 == 0:
            continue
        s = s + x * i
    return s


@case(0.6)
def early_return(x):
    if x > 0.5:
        return x * x
    y = x * 3
    return y


@case(0.2)
def early_return_not_taken(x):
    if x > 0.5:
        return x * x
    y = x * 3
    return y


@case(1.3)
def return_in_loop(x):
    for i in range(5):
        x = x * 1.2
        if x > 2:
            return x * 10
    return x


@case(0.4, 3)
def nested_loops(x, n):
    s = x
    for i in range(n):
        for j in range(i + 1):
            s = s * 1.1 + x * j
    return s


@case(arr(4, 3))
def loop_over_rows(x):
    total = 0.0
    for row in x:
        total = total + np.sum(row ** 2)
    return total


@case(arr(4))
def loop_enumerate(x):
    total = 0.0
    for i, v in enumerate(x):
        total = total + v * (i + 1)
    return total


@case(arr(3), arr(3), wrt=(0, 1))
def loop_zip(x, y):
    total = 0.0
    for a, b in zip(x, y):
        total = total + a * b * b
    return total


@case(0.7)
def while_else(x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    else:
        x = x + 1
    return x


# -- assignments and containers ---------------------------------------------------------------
@case(0.5, 2.0, wrt=(0, 1))
def augmented(x, y):
    z = x
    z += y
    z *= x
    z -= 1
    z /= y
    z **= 2
    return z


@case(1.5, 0.5, wrt=(0, 1))
def tuple_swap(x, y):
    a, b = x, y
    a, b = b, a * b
    return a * 2 + b


@case(arr(5))
def subscript_assign(x):
    out = np.zeros(5)
    for i in range(5):
        out[i] = x[i] * x[(i + 1) % 5]
    return np.sum(out ** 2)


@case(arr(3, 4))
def slice_augassign(x):
    y = x * 1.0
    y[:, 1] += 2 * x[:, 0]
    y[0] = 0.0
    return np.sum(y ** 2)


@case(0.4)
def list_building(x):
    xs = []
    for i in range(4):
        xs.append(x ** (i + 1))
    return sum(xs)


@case(arr(3))
def list_comprehension(x):
    squares = [v * v for v in x]
    return sum(squares) + np.sum(np.stack([x, 2 * x]) ** 2)


@case({"w": arr(3), "b": 0.5})
def dict_params(p):
    return np.sum(p["w"] ** 2) + p["b"] * np.sum(p["w"])


@case([arr(2), arr(2)])
def list_param(xs):
    return np.sum(xs[0] * xs[1]) + np.sum(xs[1] ** 3)


@case(0.3)
def chained_assign(x):
    a = b = x * 2
    return a * b


# -- calls ---------------------------------------------------------------------------------------
def _square_plus(a, b=1.0):
    return a * a + b


def _helper_loop(v, n):
    for _ in range(n):
        v = np.sin(v) + v
    return v


@case(0.7)
def calls_user_function(x):
    return _square_plus(x) + _square_plus(x * 2, b=x)


@case(arr(3))
def calls_helper_with_loop(x):
    return np.sum(_helper_loop(x, 3) ** 2)


def _fact(x, n):
    if n <= 1:
        return x
    return x * _fact(x, n - 1)


@case(1.3)
def recursion(x):
    return _fact(x, 4)


@case(0.5)
def passthrough_statements(x):
    assert x > 0, "positive"
    n = len([1, 2, 3])
    y = x * n
    msg = f"value {y}"
    return y * y


# -- closures, lambdas, nested defs, functions as values, objects --------------------------------
def _make_scaler(k):
    def scale(v):
        return v * k
    return scale


_triple = _make_scaler(3.0)


@case(0.7)
def closure_from_factory(x):
    return _triple(x) * x


@case(0.6)
def lambda_inside(x):
    sq = lambda v: v * v  # noqa: E731
    return sq(x) + sq(2 * x)


@case(0.6, 1.5, wrt=(0, 1))
def nested_def_reading_enclosing(x, w):
    def inner(v):
        return v * w + np.sin(v)
    return inner(x) * inner(w)


def _apply(f, v):
    return f(v) + f(2 * v)


@case(0.4)
def function_as_argument(x):
    return _apply(np.sin, x) + _apply(_triple, x)


class _Affine:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def forward(self, x):
        return np.tanh(x @ self.w + self.b)


_layer = _Affine(arr(3, 2), arr(2))


@case(arr(4, 3))
def method_of_global_object(x):
    return np.sum(_layer.forward(x) ** 2)


@case(_Affine(arr(3, 2), arr(2)), arr(4, 3))
def object_parameter(model, x):
    return np.sum(model.forward(x) ** 2) + np.sum(model.w * model.w)


_Point = namedtuple("_Point", "x y")


@case(_Point(0.3, 0.8))
def namedtuple_parameter(p):
    return p.x * p.y + p[0] ** 2
