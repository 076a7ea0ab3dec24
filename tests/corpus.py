"""User-style functions to differentiate, each with explicit arguments and wrt.

``CASES`` lists ``Case(fn, args, wrt)``; tests check every case against finite differences
and compare transformed gradients with the Tensor facade where it applies.
"""
from __future__ import annotations

import functools
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


# =============================================================================================
# Issue #3: a wider corpus of user-style code. Each case lists its arguments and wrt explicitly.
# =============================================================================================

# -- branches with data-dependent conditions --------------------------------------------------
@case(0.7, -0.4, wrt=(0, 1))
def bool_ops_in_condition(x, y):
    if x > 0 and not y > 0:
        z = x * y
    elif x < 0 or y < 0:
        z = x + y
    else:
        z = x - y
    return z * z


@case(-0.3, 0.6, wrt=(0, 1))
def bool_ops_other_branch(x, y):
    if x > 0 and not y > 0:
        z = x * y
    elif x < 0 or y < 0:
        z = x + y
    else:
        z = x - y
    return z * z + x


@case(1.7)
def huber_by_hand(r):
    delta = 1.0
    if abs(r) <= delta:
        loss = 0.5 * r * r
    else:
        loss = delta * (abs(r) - 0.5 * delta)
    return loss


@case(arr(6, low=-3.0, high=3.0))
def huber_elementwise_loop(r):
    total = 0.0
    for v in r:
        if v > 1.0:
            total += v - 0.5
        elif v < -1.0:
            total += -v - 0.5
        else:
            total += 0.5 * v * v
    return total


@case(0.35)
def nested_conditional_expressions(x):
    y = x * x if x > 1 else (x * 3 if x > 0.3 else -x)
    z = 2.0 if y > 100 else y
    return y * z


@case(arr(4) * 3)
def clip_gradient_norm_by_hand(g):
    norm = np.sqrt(np.sum(g * g))
    if norm > 1.0:
        g = g / norm
    return np.sum(g * np.array([1.0, -2.0, 3.0, 0.5]))


@case(0.4, 1.2, wrt=(0, 1))
def nested_if(x, y):
    out = x
    if x < y:
        if x * y > 0.3:
            out = out * y
        else:
            out = out + y
        out = out * 2
    else:
        out = -out
    return out


@case(0.25)
def if_without_else(x):
    y = x * 2
    if y < 1:
        y = y ** 3
    if y > 5:
        y = y - 5
    return y + x


@case(2.5)
def piecewise_cubic_spline(t):
    # piecewise polynomial in t, evaluated away from the knots
    if t < 1.0:
        v = t ** 3 / 6
    elif t < 2.0:
        v = (-3 * t ** 3 + 12 * t ** 2 - 12 * t + 4) / 6
    elif t < 3.0:
        v = (3 * t ** 3 - 24 * t ** 2 + 60 * t - 44) / 6
    else:
        v = (4 - t) ** 3 / 6
    return v


@case(-1.3)
def stable_sigmoid(x):
    if x >= 0:
        z = math.exp(-x)
        return 1 / (1 + z)
    z = math.exp(x)
    return z / (1 + z)


@case(arr(5, low=-4.0, high=4.0))
def stable_softplus_loop(x):
    s = 0.0
    for v in x:
        s = s + (v + np.log1p(np.exp(-v)) if v > 0 else np.log1p(np.exp(v)))
    return s


# -- loops of every kind ----------------------------------------------------------------------
@case(np.array([0.5, -1.0, 2.0, 0.25]), 0.7, wrt=(0, 1))
def horner_reversed(coeffs, x):
    acc = 0.0
    for c in reversed(coeffs):
        acc = acc * x + c
    return acc


@case([0.3, -1.2, 0.8, 2.0], 1.3, wrt=(0, 1))
def horner_list_coefficients(coeffs, x):
    acc = coeffs[-1]
    for k in range(len(coeffs) - 2, -1, -1):
        acc = acc * x + coeffs[k]
    return acc


@case(0.6)
def loop_over_tuple_constants(x):
    s = 0.0
    for w in (0.5, 1.5, 2.5):
        s = s + w * np.sin(w * x)
    return s


@case(0.6, 1.1, wrt=(0, 1))
def loop_over_list_of_active_values(x, y):
    s = 1.0
    for v in [x, y, x * y, x + 2]:
        s = s * v + 0.1
    return s


@case(arr(3, 4), arr(3, 4), wrt=(0, 1))
def zip_rows(a, b):
    total = 0.0
    for ra, rb in zip(a, b):
        total = total + np.dot(ra, rb) ** 2
    return total


@case(arr(5))
def enumerate_with_weights(x):
    total = 0.0
    for i, v in enumerate(x):
        if i % 2 == 1:
            total = total - v * v
        else:
            total = total + np.exp(v) / (i + 1)
    return total


@case(0.9, 5)
def reversed_range(x, n):
    s = x
    for i in reversed(range(n)):
        s = s * (i + 1) * 0.3 + np.cos(s)
    return s


@case(arr(3, 4), arr(4, 2), wrt=(0, 1))
def matmul_triple_loop(a, b):
    n, k = a.shape
    m = b.shape[1]
    total = 0.0
    for i in range(n):
        for j in range(m):
            acc = 0.0
            for t in range(k):
                acc = acc + a[i, t] * b[t, j]
            total = total + acc * acc
    return total


@case(2.0)
def newton_sqrt_while(a):
    x = a
    while abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


@case(0.05)
def while_data_dependent_growth(x):
    y = x
    steps = 0
    while y < 3.0 and steps < 100:
        y = y * 1.3 + 0.2
        steps += 1
    return y * y


@case(0.4)
def while_with_break(x):
    y = x
    k = 0
    while True:
        y = y + 0.5 * np.sin(y)
        k += 1
        if y > 1.5 or k > 20:
            break
    return y


@case(0.3)
def while_with_continue(x):
    s = 0.0
    k = 0
    while k < 7:
        k += 1
        if k % 3 == 0:
            continue
        s = s + x ** 2 * k
    return s


@case(0.7)
def for_else_no_break(x):
    y = x
    for i in range(3):
        y = y * 1.1
        if y > 100:
            break
    else:
        y = y + x * x
    return y


@case(0.7)
def for_else_with_break(x):
    y = x
    for i in range(5):
        y = y * 1.5
        if y > 1.5:
            break
    else:
        y = y + x * x
    return y * 2


@case(0.4)
def while_else_with_break(x):
    y = x
    k = 0
    while k < 10:
        y = y * y + 0.3
        k += 1
        if y > 2:
            break
    else:
        y = -y
    return y


@case(arr(4, 3))
def return_inside_nested_loops(m):
    for i in range(4):
        for j in range(3):
            if m[i, j] > 0.5:
                return m[i, j] * np.sum(m[i])
    return np.sum(m)


@case(0.9)
def several_returns(x):
    if x < 0:
        return -x
    if x < 0.5:
        return x * x
    if x < 1.0:
        y = x ** 3
        return y + x
    return np.exp(x)


@case(0.3)
def pass_statement(x):
    if x > 10:
        pass
    else:
        x = x * 2
    for _ in range(2):
        pass
    return x * x


@case(0.3, 0.8, wrt=(0, 1))
def nested_loop_with_break_and_continue(x, y):
    s = 0.0
    for i in range(4):
        for j in range(4):
            if j > i:
                break
            if (i + j) % 2 == 1:
                continue
            s = s + x ** (i + 1) * y ** j
    return s


# -- assignments, swaps, subscript stores -----------------------------------------------------
@case(0.6, 0.9, wrt=(0, 1))
def fibonacci_swaps(x, y):
    a, b = x, y
    for _ in range(5):
        a, b = b, a + b * x
    return b


@case(arr(3), wrt=(0,))
def tuple_unpack_from_function(v):
    a, b, c = _split3(v)
    c, a = a, c
    return a * b - c


def _split3(v):
    return v[0], v[1] * 2, v[2] ** 2


@case(0.5)
def chained_then_modified(x):
    a = b = c = x + 1
    b = b * a
    c += b
    return a * b * c


@case(arr(4))
def overwrite_elements_read_before(x):
    y = x * 1.0
    y[0] = y[0] * y[1]
    y[1] = y[0] + y[1]
    y[2] = y[2] * y[2]
    y[0] = np.sin(y[0])
    return np.sum(y * y)


@case(arr(3, 4))
def column_augassign_loop(x):
    y = np.zeros((3, 4))
    for j in range(4):
        y[:, j] += x[:, j] * (j + 1)
        if j > 0:
            y[:, j] += y[:, j - 1] * 0.5
    return np.sum(y ** 2)


@case(arr(3, 3))
def element_assign_2d(m):
    out = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            out[i, j] = m[i, j] * m[j, i] + m[i, i]
    return np.sum(out)


@case(arr(5))
def slice_store_from_input(x):
    y = np.ones(5)
    y[1:3] = x[0:2] * 2
    y[3:] = y[1:3] * x[3:]
    return np.sum(y ** 3)


@case(arr(4))
def inplace_accumulate_prefix_sum(x):
    out = x * 1.0
    for i in range(1, 4):
        out[i] += out[i - 1]
    return np.sum(out * out)


@case(0.8)
def del_a_name(x):
    tmp = x * 3
    y = tmp + 1
    del tmp
    tmp = y * x
    return tmp


@case(0.5, 1.5, wrt=(0, 1))
def annotated_and_augmented(x, y):
    z: float = x * y
    z += x
    z *= y
    z -= x * x
    z /= (1 + y)
    return z


# -- containers -------------------------------------------------------------------------------
@case(0.4, 1.3, wrt=(0, 1))
def dict_literal_build_and_read(x, y):
    d = {"a": x * y, "b": x + y}
    d["c"] = d["a"] * d["b"]
    return d["a"] + d["c"] * 2


@case(0.5)
def list_pop_and_extend(x):
    xs = [x, x * 2]
    xs.extend([x * x, 3.0])
    last = xs.pop()
    first = xs.pop(0)
    return sum(xs) * last + first


@case(arr(4))
def dict_comprehension(x):
    d = {i: x[i] * (i + 1) for i in range(4)}
    return d[0] * d[3] + d[1] + d[2] ** 2


@case(arr(4))
def list_comprehension_with_condition(x):
    ys = [v * v for v in x if v > 0]
    zs = [np.sin(v) for v in x]
    return sum(ys) + sum(zs) * 0.5


@case(0.3, 0.7, wrt=(0, 1))
def np_array_of_active_scalars(x, y):
    v = np.array([x, y, x * y])
    m = np.array([[x, y], [y * y, 1.0]])
    return np.sum(v ** 2) + np.sum(m @ m)


@case(arr(3, 2))
def stack_list_built_in_loop(x):
    rows = []
    for i in range(3):
        rows.append(x[i] * (i + 1))
    s = np.stack(rows)
    return np.sum(s * s)


@case(0.2, 0.9, wrt=(0, 1))
def tuple_literal_reads(x, y):
    t = (x, y, x * y)
    u = t + (x,)
    return u[0] * u[2] + u[3] - t[1]


@case(0.8)
def list_of_lists(x):
    grid = [[x, 2 * x], [x * x, 1.0]]
    grid[1][1] = grid[0][0] * 3
    return grid[0][1] * grid[1][0] + grid[1][1]


@case((arr(3), 0.5))
def tuple_param(wb):
    w, b = wb
    return np.sum(w * w) * b + b ** 2


@case({"layers": [{"W": arr(3, 3), "b": arr(3)}, {"W": arr(3, 2), "b": arr(2)}]}, arr(4, 3))
def nested_param_structure(params, x):
    h = x
    for layer in params["layers"]:
        h = np.tanh(h @ layer["W"] + layer["b"])
    return np.sum(h ** 2)


@case([arr(2), arr(2), arr(2)])
def list_param_in_loop(xs):
    total = xs[0] * 0.0
    for v in xs:
        total = total + v * v
    return np.sum(total * total)


# -- realistic numerics -----------------------------------------------------------------------
_MLP_X = arr(6, 4)
_MLP_Y = np.array([0, 2, 1, 1, 0, 2])


@case({"W1": arr(4, 5), "b1": arr(5), "W2": arr(5, 3), "b2": arr(3)}, _MLP_X, _MLP_Y)
def mlp_softmax_cross_entropy(params, x, y):
    h = np.tanh(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    loss = 0.0
    for i in range(len(y)):
        loss = loss - logp[i, y[i]]
    return loss / len(y)


@case(arr(5))
def logsumexp_by_hand(x):
    m = x[0]
    for v in x:
        if v > m:
            m = v
    return m + np.log(np.sum(np.exp(x - m)))


@case(arr(4), 2)
def softmax_by_hand(x, k):
    e = np.exp(x - np.max(x))
    p = e / np.sum(e)
    return p[k] * 3 + np.sum(p * p)


@case({"Wx": arr(3, 4), "Wh": arr(4, 4), "b": arr(4)}, arr(5, 3))
def rnn_over_sequence(p, xs):
    h = np.zeros(4)
    total = 0.0
    for x_t in xs:
        h = np.tanh(x_t @ p["Wx"] + h @ p["Wh"] + p["b"])
        total = total + np.sum(h)
    return total


@case(arr(4, 6), arr(6), arr(6), wrt=(0, 1, 2))
def layer_norm_by_hand(x, gamma, beta):
    mu = np.mean(x, axis=1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=1, keepdims=True)
    y = (x - mu) / np.sqrt(var + 1e-5) * gamma + beta
    return np.sum(y * np.arange(6.0))


@case(arr(3, 4), arr(3, 4), arr(3, 4), wrt=(0, 1, 2))
def attention_by_hand(q, k, v):
    scores = q @ k.T / np.sqrt(4.0)
    scores = scores - np.max(scores, axis=1, keepdims=True)
    w = np.exp(scores)
    w = w / np.sum(w, axis=1, keepdims=True)
    return np.sum((w @ v) ** 2)


@case(1.0, 0.3, 0.5, wrt=(0, 1, 2))
def spring_verlet(k, x0, v0):
    x, v = x0, v0
    dt = 0.05
    a = -k * x
    for _ in range(20):
        x = x + v * dt + 0.5 * a * dt * dt
        a_new = -k * x - 0.1 * v
        v = v + 0.5 * (a + a_new) * dt
        a = a_new
    return x * x + v * v


@case(12.0, 0.8, wrt=(0, 1))
def projectile_until_ground(speed, angle):
    x, y = 0.0, 0.0
    vx, vy = speed * math.cos(angle), speed * math.sin(angle)
    dt = 0.01
    drag = 0.05
    while y >= 0.0:
        vx = vx - drag * vx * dt
        vy = vy - (9.81 + drag * vy) * dt
        x = x + vx * dt
        y = y + vy * dt
    return x


def _pendulum_rhs(theta, omega, g_over_l=9.81):
    return omega, -g_over_l * math.sin(theta)


@case(0.6, 0.0, wrt=(0, 1))
def pendulum_midpoint(theta, omega):
    h = 0.05
    for _ in range(10):
        k1t, k1w = _pendulum_rhs(theta, omega)
        k2t, k2w = _pendulum_rhs(theta + h / 2 * k1t, omega + h / 2 * k1w)
        theta = theta + h * k2t
        omega = omega + h * k2w
    return theta


@case(arr(3), 0.1, wrt=(0, 1))
def unrolled_gradient_descent(w0, lr):
    target = np.array([1.0, -2.0, 0.5])
    w = w0
    for _ in range(5):
        grad_w = 2 * (w - target) + 0.1 * w ** 3
        w = w - lr * grad_w
    return np.sum((w - target) ** 2)


@case(0.4, 3.0, wrt=(0, 1))
def stable_log_sum_exp_pair(a, b):
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@case(arr(4, low=0.5, high=2.0))
def geometric_mean_via_logs(x):
    s = 0.0
    for v in x:
        s += math.log(v)
    return math.exp(s / len(x))


@case(0.7)
def series_exp_until_small(x):
    term = 1.0
    total = 1.0
    n = 1
    while abs(term) > 1e-15:
        term = term * x / n
        total = total + term
        n += 1
    return total


# -- user functions, recursion, closures, higher-order ----------------------------------------
def _affine(x, w=2.0, b=0.5, *, scale=1.0):
    return scale * (w * x + b)


@case(0.3, 1.7, wrt=(0, 1))
def calls_with_keywords_and_defaults(x, w):
    return _affine(x) + _affine(x, w) + _affine(x, b=w) + _affine(w=x, x=w, scale=w)


def _sum_list(xs):
    if len(xs) == 0:
        return 0.0
    return xs[0] + _sum_list(xs[1:])


@case(0.6, 1.2, wrt=(0, 1))
def recursion_over_list(x, y):
    return _sum_list([x, y, x * y, x * x])


def _power(x, n):
    if n == 0:
        return 1.0
    half = _power(x, n // 2)
    if n % 2 == 0:
        return half * half
    return half * half * x


@case(1.1)
def recursive_fast_power(x):
    return _power(x, 7)


def _make_poly(coeffs):
    def poly(t):
        acc = 0.0
        for c in coeffs:
            acc = acc * t + c
        return acc
    return poly


_cubic = _make_poly([1.0, -2.0, 0.5, 3.0])


@case(0.8)
def closure_poly(x):
    return _cubic(x) * _cubic(2 * x)


@case(0.4, 1.3, wrt=(0, 1))
def nested_def_in_loop(x, w):
    def step(v):
        return np.tanh(v * w) + v
    y = x
    for _ in range(3):
        y = step(y)
    return y


def _compose(f, g):
    return lambda v: f(g(v))


@case(0.5)
def composed_functions_as_values(x):
    h = _compose(np.sin, np.exp)
    return h(x) + _apply(lambda v: v * v, x)


def _map_sum(fn, xs):
    total = 0.0
    for v in xs:
        total = total + fn(v)
    return total


@case(arr(4))
def higher_order_map_with_lambda(x):
    return _map_sum(lambda v: v ** 3 - v, x) + _map_sum(np.cos, x)


def _min_max_scale(v, lo, hi):
    return (v - lo) / (hi - lo), lo, hi


@case(0.3, wrt=(0,))
def function_returning_tuple(x):
    y, lo, hi = _min_max_scale(x * 2, -1.0, 3.0)
    return y * y + lo * hi


@case(0.9, 0.4, wrt=(0, 1))
def lambda_with_default_and_two_args(x, y):
    f = lambda a, b=2.0: a * b + a ** 2  # noqa: E731
    return f(x) + f(x, y) + f(b=x, a=y)


# -- objects: plain, dataclasses, namedtuples, methods ----------------------------------------
@dataclass
class _Params:
    w: np.ndarray
    b: float


@case(_Params(arr(3), 0.25), arr(5, 3))
def dataclass_parameter(p, x):
    return np.sum((x @ p.w + p.b) ** 2)


_State = namedtuple("_State", "pos vel")


@case(_State(0.3, -0.2), 0.1, wrt=(0,))
def namedtuple_in_physics_loop(s, dt):
    pos, vel = s.pos, s.vel
    for _ in range(4):
        vel = vel - dt * pos
        pos = pos + dt * vel
    return pos * pos + vel * vel


class _Quadratic:
    def __init__(self, a, c):
        self.a = a
        self.c = c

    def value(self, x):
        return self.a * x * x + self.c

    def slope_sum(self, x):
        return self.value(x) + self.value(2 * x)


_quad = _Quadratic(1.5, -0.5)


@case(0.7)
def method_calling_method(x):
    return _quad.slope_sum(x) * x


@case(_Quadratic(0.8, 0.2), 1.3, wrt=(0, 1))
def object_param_and_method(q, x):
    return q.value(x) + q.a * q.c


class _Counter:
    def __init__(self):
        self.scale = 3.0


_counter_obj = _Counter()


@case(0.4)
def attribute_read_on_plain_object(x):
    return x * _counter_obj.scale + x ** 2 / _counter_obj.scale


# -- statements that carry no derivative ------------------------------------------------------
@case(0.6)
def print_in_untaken_branch(x):
    y = x * x
    if y > 100:
        print(f"large value {y:.3f}")
        raise ValueError(f"y too large: {y}")
    assert y >= 0, f"negative {y}"
    label = f"y={y:.2f}"
    return y + len(label) * 0.0


@case(0.2)
def debug_strings_and_asserts(x):
    history = []
    for i in range(3):
        x = x * 1.5
        history.append(f"step {i}: {x}")
        assert x < 100, "diverged"
    if len(history) > 10:
        print(history)
    return x


# -- cases that were srcgrad bugs once (regression tests) -------------------------------------


def _two_args(a, b):
    return a * b * b


@case(0.5, 1.5,
           wrt=(0, 1))
def bool_ops_as_values(x, y):
    z = (x > 0) and y or x
    default = None
    w = default or x
    return z * x + w * y


@case(np.array([0.5, 1.5, -0.7]))
def loop_target_shadows_iterable(x):
    s = 0.0
    for x in x:
        s = s + x * x
    return s


@case(np.array([0.5, 1.5, -0.7]))
def enumerate_with_start(x):
    s = 0.0
    for i, v in enumerate(x, 1):
        s = s + v * i
    return s


@case(np.array([0.5, 1.5, 2.0]))
def zip_with_reversed(x):
    s = 0.0
    for a, b in zip(x, reversed(x)):
        s = s + a * b
    return s


@case(0.6, 1.4, wrt=(0, 1))
def builtin_max_of_list(x, y):
    return max([x, y, x * y]) + min([x, y]) + max(x, y)


def attribute_store_on_local_object(x):
    acc = _Counter()
    acc.scale = x * 2
    return acc.scale * x


class _Accumulator:
    def __init__(self):
        self.total = 0.0

    def add(self, v):
        self.total = self.total + v
        return self.total


def method_mutating_self(x):
    a = _Accumulator()
    a.add(x)
    return a.add(x * x)


class _WithClassMethod:
    k = 3.0

    @classmethod
    def scaled(cls, v):
        return v * cls.k

    @staticmethod
    def square(v):
        return v * v


@case(0.5)
def classmethod_call(x):
    return _WithClassMethod.scaled(x) + _WithClassMethod.square(x)


@case({"a": arr(2), "b": arr(3)})
def dict_methods_on_params(p):
    total = 0.0
    for k, v in p.items():
        total = total + np.sum(v ** 2)
    for v in p.values():
        total = total + np.sum(v)
    return total + np.sum(p.get("a", 0.0)) * 2


@case(np.array([0.5, -1.0, 2.0]), 3.0, 1.0)
def annotated_optional_where(x: np.ndarray, scale: float = 2.0,
                             bias: float | None = None) -> float:
    """Annotated assignments, an optional parameter, np.where with a leaky slope."""
    y: np.ndarray = x * scale
    if bias is not None:
        y = y + bias
    z = np.where(y > 0, y, 0.1 * y)
    return float(np.sum(z ** 2)) + math.pi


@case(np.array([0.5, -1.0, 2.0]))
def annotated_accumulator(x):
    total: float = 0.0
    for v in x:
        total: float = total + v * v
    return total


@case(np.array([0.5, -1.0, 2.0]))
def keyword_only_defaults(x, *, scale=2.0, shift=-0.5):
    return np.sum(np.tanh(x * scale + shift))


@case(0.3)
def map_with_lambda(x):
    return sum(list(map(lambda v: v * v, [x, 2 * x])))


@case(np.array([[0.5, 0.7], [1.5, -1.0]]))
def list_and_tuple_of_rows(x):
    rows = list(x)
    t = tuple(rows)
    return np.sum(t[0] * t[1]) + sum(map(np.sum, rows))


# -- added by bug hunt: less common but valid Python and numpy styles ----------------------------
@case(arr(3))
def nested_tuple_targets(x):
    a, (b, c) = x[0], (x[1], x[2])
    return a * b + c ** 2 * a


@case(arr(3))
def chained_arrays_then_math(x):
    a = b = x * 2
    a = a + 1
    b = b * 3
    return np.sum(a * b)


@case(arr(3))
def augmented_pow_on_elements(x):
    y = x.copy()
    y[1] **= 2
    y[0] *= y[2]
    return np.sum(y * x)


@case(arr(4))
def boolean_mask_store(x):
    y = x * 1.0
    m = x > 0
    y[m] = x[m] ** 2
    y[y < -0.5] = 0.0
    return np.sum(y * x)


@case(arr(5))
def negative_step_slices(x):
    return np.sum(x[::-1] * x) + x[-1:0:-2].sum() + np.sum(x[3::-2] ** 2)


@case(arr(3, 3))
def newaxis_and_ellipsis(m):
    v = m[0]
    return (np.sum(v[:, np.newaxis] * v[None, :]) + np.sum(m[..., 0] * m[0, ...])
            + np.sum(m[..., None] ** 2))


@case(arr(1, 3), arr(4, 1), wrt=(0, 1))
def broadcast_row_against_column(r, c):
    return np.sum(r * c + r / (c + 3) - (r - c) ** 2)


@case(arr(2, 3, low=0.5, high=1.5))
def keepdims_normalisation(m):
    s = m.sum(axis=1, keepdims=True)
    mx = np.max(m, axis=0, keepdims=True)
    return np.sum(m / s) + np.sum((m - mx) ** 2) + np.sum(np.mean(m, axis=(0, 1), keepdims=True))


@case(arr(3))
def builtin_sum_of_list(x):
    return sum([v * v for v in x]) + sum([x[0], x[1]])


@case(arr(3))
def formatted_prints_in_loop(x):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] ** 2
        msg = f"iter {i}: {s:.3f} {'%d' % i}" + " s=%.2f" % s
        assert msg
    return s


@case(arr(3))
def nested_loops_break_triangle(x):
    s = 0.0
    for i in range(3):
        for j in range(3):
            if j > i:
                break
            s = s + x[i] * x[j]
    return s


@case(np.array([-0.5, 0.3, 0.2]))
def return_from_for_else_body(x):
    for v in x:
        if v > 0:
            return v * v * x[0]
    else:
        return np.sum(x ** 3)


@case(arr(3), 0)
def for_loop_zero_trips(x, n):
    y = x
    for i in range(n):
        y = y * x
    return np.sum(y)


@case(arr(3))
def while_loop_zero_trips(x):
    y = x * 2
    while np.sum(y) > 100:
        y = y / 2
    return np.sum(y * y)


@case(arr(3))
def loop_variable_reassigned(x):
    s = 0.0
    for i in range(3):
        i = i * 2
        s = s + x[i % 3] * i
    for v in x:
        v = v * v
        s = s + v
    return s


@case(arr(3))
def shadowed_builtin_sum(x):
    sum = 0.0
    for v in x:
        sum += v ** 2
    return sum


@case(arr(3))
def builtins_on_arrays(x):
    return max(x) * min(x) + sum(abs(x)) + abs(x[0])


@case(arr(3))
def math_on_numpy_scalars(x):
    a = np.float64(2.0) * x[0]
    return math.exp(a) + math.sin(x[1]) * math.sqrt(x[2] ** 2 + 1) + math.hypot(x[0], x[1])


@case(arr(4))
def overlapping_slice_shift(x):
    y = x * 1.0
    y[1:] = y[:-1] * 2
    z = np.zeros(4)
    z[::-1] = x * x
    return np.sum(y * x) + np.sum(z * np.arange(4.0))


@case(arr(3))
def element_updates_reading_other_elements(x):
    y = x * 1.0
    for i in range(3):
        j = (i * 2) % 3
        y[i] += y[j] * x[i]
    return np.sum(y)


_HUNT_SCALE = 2.5
_HUNT_OFFSETS = np.array([0.1, 0.2, 0.3])


@case(arr(3))
def defaults_referencing_globals(x, s=_HUNT_SCALE, off=_HUNT_OFFSETS):
    """Defaults and body both read module constants.

    A docstring with several lines.
    """
    'a second string statement'
    return np.sum((x * s + off) ** 2) + _HUNT_SCALE * np.sum(_HUNT_OFFSETS * x)


def _nested_tuple_helper(v):
    def inner(a):
        return a * 2, a ** 2, (a + 1, a - 1)
    p, q, (r, s) = inner(v)
    return p, q * r, s


@case(arr(3))
def nested_helper_returning_nested_tuples(x):
    a, b, c = _nested_tuple_helper(x)
    return np.sum(a * b - c)


@case(arr(3))
def inplace_ops_on_local_copy(x):
    y = x.copy()
    y += 1.0
    y *= x
    y -= x ** 2
    y /= 2.0
    return np.sum(y ** 2)


@case(arr(3, 3))
def stack_scaled_rows(m):
    rows = [m[i] * (i + 1) for i in range(m.shape[0])]
    s = np.stack(rows, axis=1)
    return np.sum(s ** 2) + np.sum(np.stack(rows)[0])


@case(arr(3, 3) + 3 * np.eye(3), arr(3), wrt=(0, 1))
def linalg_inside_loop(a, b):
    x = b
    for k in range(2):
        x = np.linalg.solve(a + k * np.eye(3), x)
        x = x + np.linalg.inv(a) @ x * np.linalg.det(a) * 0.01
    return np.sum(x ** 2)


@case(arr(3))
def list_index_lookup(x):
    xs = [x[0], x[1], x[2]]
    names = ["a", "b", "c"]
    i = names.index("b")
    return xs[i] * xs[names.index("c")]


@case(arr(3))
def map_over_list_and_array(x):
    ys = list(map(lambda v: v ** 2, [x[0], x[1]]))
    zs = list(map(np.sin, x))
    return ys[0] + ys[1] + sum(zs)


@case({"a": arr(3), "b": arr(2)})
def enumerate_dict_items(p):
    s = 0.0
    for i, (k, v) in enumerate(p.items()):
        s = s + (i + 1) * np.sum(v ** 2)
    return s


@case(arr(3), arr(3), arr(3), wrt=(0, 1, 2))
def zip_of_three(x, y, z):
    s = 0.0
    for a, b, c in zip(x, y, z):
        s = s + a * b * c
    return s


@case(arr(3))
def closures_late_binding_and_rebinding(x):
    fs = []
    for i in range(3):
        fs.append(lambda v: v * (i + 1))
    a = x[0]
    g = lambda v: v * a
    a = x[1]
    return fs[0](x[0]) + fs[1](x[1]) + g(x[2])


@case(arr(3))
def nested_def_reads_after_loop(x):
    acc = 0.0

    def f(t):
        return t * acc
    for v in x:
        acc = acc + v
    return f(2.0)


@case(arr(3))
def keyword_only_array_default(x, *, w=np.arange(9.0).reshape(3, 3) / 10):
    return np.sum(w @ x)


@case(arr(2, 3, low=0.5, high=1.5))
def array_methods_positional_axis(m):
    return (np.sum(m.sum(-1) ** 2) + np.sum(m.mean(0) ** 3) + np.sum(m.max(axis=1)) + m.std()
            + np.sum(m.var(axis=0, ddof=1)) + m.prod() + np.sum(m.cumsum() ** 2)
            + np.sum(m.clip(0.7, 1.2) ** 2) + m[0].dot(m[1]) + np.sum(m.transpose(1, 0) @ m))


@case(arr(3, 3) + 3 * np.eye(3))
def matrix_helpers(m):
    return (np.trace(m) + np.sum(np.triu(m) ** 2) + np.sum(np.tril(m, -1))
            + np.linalg.norm(m) + np.linalg.norm(m, axis=0).sum() + np.linalg.norm(m[0], 1)
            + np.average(m[0], weights=np.array([1., 2., 3.])) + np.trace(m.T @ m))


@case(arr(4, low=0.2, high=1.0))
def power_forms(x):
    return (np.sum(2 ** x) + np.sum(x ** x) + np.sum(x ** 2.0) + np.sum((x - 2) ** 3)
            + np.sum(np.power(x, 3)) + np.sum(np.flip(x) * np.arange(4)) + np.sum(np.repeat(x, 2) ** 2))


@case(np.array([0.3, 0.7, 0.5, 0.9]))
def chained_comparisons(x):
    s = 0.0
    for v in x:
        if 0 < v < 0.6:
            s = s + v ** 2
        elif 0.6 <= v:
            s = s + 2 * v
    return s


@case(np.array([0.33, 0.7, 0.5, 0.9]))
def scalar_casts_and_int_index(x):
    a = float(x[0]) * x[1]
    b = x[2].item() * x[3]
    n = int(x[0] * 10)
    c = np.asarray(x) * np.array(x, copy=True)
    return a + b + x[n % 4] + np.sum(c) + np.sum(x.astype(np.float64) * 2)


@case(arr(3, 3))
def matmul_augmented_assignment(m):
    y = np.eye(3)
    for i in range(2):
        y @= m
    return np.sum(y)


@case(arr(3))
def tuple_recurrence(x):
    a, b = x[0], x[1]
    for _ in range(3):
        a, b = b, a * b + 1
    return a + b


@case(0.7, 1.3, wrt=(0, 1))
def math_two_argument_functions(x, y):
    return (math.atan2(x, y) + math.pow(x, y) + math.log(x, 2) + math.log10(y)
            + math.fabs(x - y) + abs(x) * y + math.floor(y) * x)


# -- the Python language numerical code uses (issue 9) -----------------------------------------
def _concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones(1),))
    return np.dot(cat_state, weights)


@case(arr(3), arr(2), arr(6, 2))
def varargs_helper_rnn_step(x, h, w):
    for _ in range(2):
        h = np.tanh(_concat_and_multiply(w, x, h))
    return np.sum(h ** 2)


def _weighted(x, *scales, power=2.0, **offsets):
    total = 0.0
    for s in scales:
        total = total + s * x ** power
    for name in offsets:
        total = total + offsets[name] * x
    return total


@case(arr(3), 0.8, wrt=(0, 1))
def varargs_and_kwargs_helper(x, y):
    a = _weighted(x, y, 2.0 * y, power=3.0, shift=y, tilt=x)
    b = _weighted(y, x)
    return np.sum(a) + np.sum(b)


def _pair_product(a, b, c=1.5):
    return a * b + c * a


@case(arr(3), 0.6, wrt=(0, 1))
def starred_call_of_differentiable_values(x, y):
    params = (x, y)
    first = _pair_product(*params)
    named = {"b": y * 2.0, "c": y}
    second = _pair_product(x, **named)
    third = _pair_product(*[x ** 2], *(y,), **{"c": x})
    return np.sum(first + second + third)


@case(arr(4), arr(4))
def zip_of_starred_pairs(x, y):
    pairs = [(x[i], y[i] * x[i]) for i in range(4)]
    firsts, seconds = zip(*pairs)
    return sum(firsts) * sum(seconds)


def _scaled_loss(params, v):
    return np.sum(params * v) ** 2


@case(arr(3))
def partial_over_parameters_mapped(x):
    data = [np.ones(3), np.arange(3.0)]
    losses = list(map(functools.partial(_scaled_loss, x), data))
    shifted = functools.partial(_pair_product, c=x[0])
    return sum(losses) + np.sum(shifted(x, x[1]))


@case(arr(3))
def lambdas_capturing_input_as_values(x):
    fs = [lambda t: t * x, lambda t: np.sin(t * x) ** 2]
    direct = fs[0](2.0) + fs[1](0.5)
    return np.sum(direct + sum(f(3.0) for f in fs) + _map_sum(fs[1], x))


@case(arr(3), 1.3, wrt=(0, 1))
def nested_function_returned_and_passed(x, y):
    def make(scale):
        def shaped(t):
            return np.tanh(t * x) * scale * y
        return shaped

    g = make(2.0)
    h = make(y)
    return np.sum(g(1.5) + _map_sum(g, x) + _map_sum(h, x))


@case(arr(3), 0.7, wrt=(0, 1))
def nonlocal_running_sum(x, y):
    acc = x * 0.0

    def push(v):
        nonlocal acc
        acc = acc * y + v

    for i in range(3):
        push(np.cos(x * i))
    return np.sum(acc ** 2)


def _positive_sqrt(v):
    if v < 0:
        raise ValueError("negative")
    return math.sqrt(v)


@case(np.array([0.5, -0.3, 0.8, -0.1]))
def try_except_else_finally_per_element(x):
    total = 0.0
    for i in range(4):
        try:
            r = _positive_sqrt(x[i])
            total = total + r * x[i]
        except ValueError:
            total = total - x[i] ** 2
        else:
            total = total + 0.5 * r
        finally:
            total = total * 1.1
    return total


@case(np.array([0.5, -0.3, 0.8, -0.1]))
def try_nested_in_try_body_with_errstate(x):
    total = 0.0
    for i in range(4):
        try:
            with np.errstate(invalid="ignore"):
                try:
                    r = _positive_sqrt(x[i])  # raises on negatives: the inner finally, then
                    total = total + r * x[i]  # the outer handler run
                except KeyError:
                    total = total + 100.0
                finally:
                    total = total + np.sin(x[i])
            total = total * (1.0 + x[i] ** 2)
        except ValueError:
            total = total - np.cos(x[i]) * x[i]
    return total


# -- generators, starred targets, with, :=, match (issue 9; each also runs in forward mode,
#    at second order and under vmap through the corpus-wide tests) --------------------------
@case(arr(4))
def generator_expressions_consumed(x):
    total = sum(v ** 2 for v in x)
    listed = list(np.sin(v) for v in x if True)
    stacked = np.array(tuple(v * x[0] for v in x))
    acc = 0.0
    for w in (np.tanh(v) for v in x):
        acc = acc + w * x[1]
    return total + sum(listed) + np.sum(stacked) + acc


def _scaled_powers(x, n):
    for k in range(1, n + 1):
        yield x ** k / k


@case(arr(3))
def generator_function_consumed(x):
    terms = list(_scaled_powers(x, 3))
    return np.sum(sum(terms)) + sum(np.sum(t) for t in _scaled_powers(x[0], 2))


@case(arr(3))
def random_draw_shaped_like_input(x):
    rs = np.random.RandomState(3)
    noise = rs.randn(*x.shape)
    return np.sum((x + 0.1 * noise) ** 2)


@case(arr(4))
def starred_assignment_targets(x):
    first, *rest = x
    *init, last = [x[0] * 2.0, x[1], x[2] * x[3]]
    a, (b, *c) = x[0], (x[1], x[2], x[3])
    return first * np.sum(np.array(rest)) + sum(init) * last + a * b * sum(c)


@case(arr(3), 0.4, wrt=(0, 1))
def dict_call_and_unpacking(x, y):
    params = dict(a=x, b=y * 2.0)
    more = {**params, "c": x * y}
    return np.sum(more["a"] * more["b"] + more["c"] ** 2)


@case(arr(3, low=0.2, high=1.0))
def with_blocks_without_gradient(x):
    import warnings
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x) / x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = np.sqrt(x) * y
    with open(__file__) as handle:
        scale = len(handle.readline()) / 100.0
    return np.sum(z) * scale


@case(arr(5))
def walrus_in_conditions_and_comprehensions(x):
    total = 0.0
    if (s := np.sum(x ** 2)) > 0.0:
        total = total + s
    kept = [y for v in x if (y := v * 2.0) > -5.0]
    i = 0
    while (i := i + 1) < 3:
        total = total + x[i] * total
    return total + sum(kept)


def _match_value(v, spec):
    match spec:
        case 0:
            return v * 2.0
        case ("scale", k):
            return v * k
        case {"power": p}:
            return v ** p
        case [a, *rest] if len(rest) > 1:
            return v * a + sum(rest)
        case str() as name:
            return v + len(name)
        case _:
            return -v


@case(arr(3))
def match_statement_patterns(x):
    specs = [0, ("scale", 3.0), {"power": 2}, [1.5, 1.0, 2.0], "abc", None]
    total = 0.0
    for spec in specs:
        total = total + np.sum(_match_value(x, spec))
    return total
