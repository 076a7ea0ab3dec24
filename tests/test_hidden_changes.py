"""Changes in place that no statement of the differentiated function makes, each a silently
wrong gradient before 27 Nov 2026, now refused at the user's line (transforms/desugar.py
``refuse_closure_changes``, transforms/__init__.py ``_changed_outside``):

- a lambda changing a variable of the enclosing function (``lambda v: acc.append(v)``), a
  nested def changing one through another name (``b = a; b[1] = v``) or a writing call
  (``np.copyto(a, v)``);
- a changing method taken as a value (``push = acc.append``, ``map(acc.append, xs)``,
  ``st = a.__setitem__``), or called inside an expression;
- a helper run as plain Python changing a global the function reads (``G[0] = v``,
  ``GL.append(v)``);
- the standard library's functions changing a list in place (``heapq.heappush``,
  ``bisect.insort``, ``random.shuffle``, a generator's ``shuffle``, ``operator.iadd``), and
  an element store into a global (an UnboundLocalError before).

What still works: a nested def storing into the enclosing variable as a statement of its own
(refused at run time for a float only), and a helper logging values into a global the
function does not read."""
from __future__ import annotations

import bisect
import heapq
import operator
import random
from collections import deque

import numpy as np
import pytest

from test_language import check_all_orders
from test_writing_calls import assert_refused_at

rng = np.random.default_rng(3110)
X4 = rng.uniform(0.4, 1.2, 4)
G = np.zeros(4)
GL: list = []
HISTORY: list = []


def lambda_appending(x):
    acc = []
    f = lambda v: acc.append(v)  # noqa: E731  line: lambda
    f(x[0] ** 2)
    return acc[0] * x[1]


def nested_def_through_an_alias(x):
    a = np.zeros(4)

    def put(v):  # line: alias
        b = a
        b[1] = v
    put(x[0] * x[2])
    return np.sum(a * x)


def nested_def_copyto(x):
    a = np.zeros(4)

    def fill(v):  # line: copyto
        np.copyto(a, v)
    fill(x ** 2)
    return np.sum(a * x)


def bound_append(x):
    acc = []
    push = acc.append  # line: bound
    push(x[0] ** 2)
    push(x[1])
    return acc[0] * acc[1]


def bound_setitem(x):
    a = np.zeros(4)
    st = a.__setitem__  # line: setitem
    st(0, x[1] * 3)
    return np.sum(a * x)


def map_of_append(x):
    acc = []
    list(map(acc.append, x))  # line: map
    return acc[0] * x[1]


def append_inside_an_expression(x):
    acc = []
    n = len(acc) + (acc.append(x[0] * 2) or 0)  # line: inside
    return acc[0] * x[1] + n


def _store_global(x):
    G[0] = x[0] * 2


def helper_storing_into_a_global(x):
    G[:] = 0.0
    _store_global(x)  # line: global
    return np.sum(G * x)


def _append_global(x):
    GL.append(x[0] * 2)


def helper_appending_to_a_global(x):
    GL.clear()
    _append_global(x)  # line: global list
    return GL[0] * x[1]


def heappush(x):
    h = []
    for v in x:
        heapq.heappush(h, v * 2)  # line: heappush
    return h[0] * x[1]


def insort(x):
    xs = [0.0, 10.0]
    bisect.insort(xs, x[0] * 2)  # line: insort
    return xs[1] * x[1]


def shuffle(x):
    xs = [x[0], x[1], x[2]]
    random.Random(0).shuffle(xs)  # line: shuffle
    return xs[0] + xs[1] * 2 + xs[2] * 3


def generator_shuffle(x):
    a = x * 1.0
    np.random.default_rng(0).shuffle(a)  # line: generator shuffle
    return a[0] + a[1] * 2


def operator_iadd(x):
    a = np.zeros(4)
    operator.iadd(a, x)  # line: iadd
    return np.sum(a * x)


def element_of_a_global(x):
    G[0] = x[0] * 2  # line: global element
    return np.sum(G * x)


def deque_appendleft(x):
    d = deque()
    d.append(x[0])  # line: deque
    d.appendleft(x[1] * 2)
    return d[0] * d[1]


@pytest.mark.parametrize("f, mark", [
    (heappush, "heappush"), (insort, "insort"), (shuffle, "shuffle"),
    (generator_shuffle, "generator shuffle"), (operator_iadd, "iadd"),
    (element_of_a_global, "global element"), (deque_appendleft, "deque"),
    (lambda_appending, "lambda"), (nested_def_through_an_alias, "alias"),
    (nested_def_copyto, "copyto"), (bound_append, "bound"), (bound_setitem, "setitem"),
    (map_of_append, "map"), (append_inside_an_expression, "inside"),
    (helper_storing_into_a_global, "global"), (helper_appending_to_a_global, "global list")],
    ids=lambda v: getattr(v, "__name__", ""))
def test_refused_at_the_line(f, mark):
    assert_refused_at(f, X4, __file__, f"line: {mark}")


def _log(v):
    HISTORY.append(float(v))


def logging_into_an_unread_global(x):
    y = np.sum(x ** 2)
    _log(y)
    return y * np.sin(x[0])


def nested_def_storing_an_integer(x):
    count = [0]

    def tick():
        count[0] += 1
    for v in x:
        tick()
    return np.sum(x ** 2) * count[0]


@pytest.mark.parametrize("f", [logging_into_an_unread_global, nested_def_storing_an_integer],
                         ids=lambda f: f.__name__)
def test_still_differentiated(f):
    check_all_orders(f, X4)
