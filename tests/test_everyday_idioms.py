"""Everyday idioms of numerical Python met on programs nobody here wrote (issue 9): zip and
enumerate over differentiable sequences (also of generators and dicts), the standard
library's dicts (defaultdict, OrderedDict) and every form of ``dict.update``,
``functools.reduce``, and comprehensions in a branch of ``a if c else b`` / ``and`` / ``or``
(run only when Python would run them). Each is checked against plain Python's value and, in
every mode, against central differences: gradient, jvp, Hessian, grad of grad."""
from __future__ import annotations

import functools
import operator
from collections import OrderedDict, defaultdict
from functools import reduce

import numpy as np
import pytest

import srcgrad
from test_language import check_all_orders

rng = np.random.default_rng(2711)
X4 = rng.uniform(0.4, 1.2, 4)


# -- zip and enumerate ----------------------------------------------------------------------
def enumerate_of_zip(x):
    total = 0.0
    for i, (a, b) in enumerate(zip(x, x[::-1])):
        total = total + (i + 1) * a * np.sin(b)
    return total


def list_of_zip(x):
    pairs = list(zip(x, np.sin(x)))
    return sum(a * b for a, b in pairs) + pairs[1][0] ** 2


def zip_item_as_tuple(x):
    total = 0.0
    for p in zip(x, [1.0, 2.0, 3.0, 4.0]):
        total = total + p[0] ** 2 * p[1]
    return total


def zip_of_three_slices(x):
    return sum(a * b * c for a, b, c in zip(x, x[1:], x[2:]))


def zip_over_dict_keys(x):
    weights = {"a": 1.5, "b": -2.0, "c": 0.5}
    return sum(weights[k] * v ** 2 for k, v in zip(weights, x))


def zip_of_generator(x):
    return sum(a * b for a, b in zip((v ** 2 for v in x), x))


def enumerate_of_generator(x):
    return sum(i * v for i, v in enumerate(np.tanh(w) for w in x))


def for_over_zip_of_map(x):
    total = 0.0
    for a, b in zip(map(np.sin, x), x[::-1]):
        total = total + a * b
    return total


def zip_of_unequal_lengths(x):
    return sum(a * b for a, b in zip(x, [1.0, 2.0]))


def zip_of_lists_of_arrays(x):
    weights, biases = [x[:2], x[2:]], [x[0], x[3]]
    return sum(np.sum(np.tanh(w * b)) for w, b in zip(weights, biases))


# -- the standard library's dicts, dict.update's forms ----------------------------------------
def defaultdict_accumulates(x):
    d = defaultdict(float)
    for i, v in enumerate(x):
        d[i % 2] += v ** 2
    return d[0] * d[1]


def ordered_dict_values(x):
    d = OrderedDict()
    d["b"] = x[0]
    d["a"] = x[1] ** 2
    d.update(c=x[2])
    vals = list(d.values())
    return vals[0] * 3.0 + vals[1] * d["c"]


def update_with_pairs_and_keywords(x):
    d = {"a": x[0]}
    d.update([("b", x[1] * 2.0), ("a", x[2])])
    d.update({"c": x[3]}, e=x[0] ** 2)
    return d["a"] * d["b"] + d["c"] * d["e"]


def update_with_spread_keywords(x):
    d = {"a": x[0]}
    extra = {"b": np.sin(x[1])}
    d.update(**extra)
    return d["a"] * d["b"]


# -- functools.reduce ---------------------------------------------------------------------
def reduce_operator(x):
    return functools.reduce(operator.mul, [x[0], x[1], x[2] + 1.0, x[3]])


def reduce_lambda_with_start(x):
    return functools.reduce(lambda a, b: a * b + 1.0, list(x), 1.0)


def reduce_closure(x):
    s = x[0]
    return reduce(lambda a, b: a * s + np.sin(b), x[1:], 0.5)


def reduce_matrix_products(x):
    m = x.reshape(2, 2)
    return np.sum(reduce(np.dot, [m, m.T, m]))


def reduce_generator(x):
    return reduce(operator.add, (v ** 2 for v in x))


def reduce_local_def(x):
    def combine(a, b):
        return np.tanh(a + b * x[0])
    return np.sum(reduce(combine, [x[1], x[2], x[3]]))


# -- comprehensions where Python may not run them -----------------------------------------
def comprehension_in_untaken_branch(x):
    ys = [1.0, 0.0]
    # (the list would divide by zero: Python never builds it)
    return np.sum(x) if ys[1] == 0.0 else np.sum(x) * sum([1.0 / v for v in ys])


def comprehension_in_each_branch(x):
    return sum([v ** 2 for v in x]) if x[0] > 0.8 else sum([v ** 3 for v in x])


def comprehension_after_and(x):
    return (x[0] > 2.0 and sum([v ** 2 for v in x])) or np.sum(x * 3.0)


def comprehension_after_or(x):
    big = [v * 2.0 for v in x if v > 5.0]
    return len(big) and sum(big) or sum(v * v for v in x)


def nested_conditional_comprehensions(x):
    inner = sum(v for v in x) if x[1] > 0.2 else 0.0
    return inner if x[0] > 0.1 else sum([v * 3.0 for v in x])


def reduce_in_untaken_branch(x):
    # (reduce of an empty list raises: Python never calls it here)
    return x[0] if x[0] > 0.0 else functools.reduce(operator.mul, [x[1]] * 0)


CASES = [
    enumerate_of_zip, list_of_zip, zip_item_as_tuple, zip_of_three_slices, zip_over_dict_keys,
    zip_of_generator, enumerate_of_generator, for_over_zip_of_map, zip_of_unequal_lengths,
    zip_of_lists_of_arrays, defaultdict_accumulates, ordered_dict_values,
    update_with_pairs_and_keywords, update_with_spread_keywords, reduce_operator,
    reduce_lambda_with_start, reduce_closure, reduce_matrix_products, reduce_generator,
    reduce_local_def, comprehension_in_untaken_branch, comprehension_in_each_branch,
    comprehension_after_and, comprehension_after_or, nested_conditional_comprehensions,
    reduce_in_untaken_branch,
]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_idiom_every_mode(f):
    x = X4.copy()
    value, pullback = srcgrad.vjp(f, x.copy())
    assert np.isclose(value, f(x.copy()))
    numeric = np.array([(f(x + 1e-6 * e) - f(x - 1e-6 * e)) / 2e-6 for e in np.eye(x.size)])
    assert np.allclose(pullback(1.0)[0], numeric, rtol=1e-6, atol=1e-8)
    check_all_orders(f, x)


@pytest.mark.parametrize("x", [np.array([0.9, 0.5, 0.7, 0.6]), np.array([0.5, 0.1, 0.7, 0.6])])
def test_both_branches_of_a_conditional_comprehension(x):
    for f in (comprehension_in_each_branch, nested_conditional_comprehensions):
        check_all_orders(f, x)


def test_reduce_of_an_empty_list_raises_as_python_does():
    def f(x):
        return functools.reduce(operator.mul, [x[0]] * 0)
    with pytest.raises(TypeError, match="reduce.. of empty iterable"):
        srcgrad.grad(f)(X4.copy())


def test_a_defaultdict_stays_a_defaultdict():
    """A store into a defaultdict keeps its default for later missing keys (a functional copy
    as a plain dict lost it: KeyError on the second key)."""
    def f(x):
        d = defaultdict(float)
        d["a"] += x[0]
        d["b"] += x[1] * 2.0
        return d["a"] * d["b"] + d["missing"]
    assert np.allclose(srcgrad.grad(f)(X4.copy()), [2.0 * X4[1], 2.0 * X4[0], 0.0, 0.0])


# -- list.reverse, dict.pop -----------------------------------------------------------------
def reverse_a_built_list(x):
    hs = []
    for v in x:
        hs.append(np.tanh(v))
    hs.reverse()
    return sum((i + 1) * h for i, h in enumerate(hs))


def pop_of_a_dict(x):
    d = {"a": x[0] * 2.0, "b": x[1]}
    v = d.pop("a")
    return v * 3.0 + d["b"] * len(d)


def pop_of_a_dict_with_default(x):
    d = {"a": x[0] * 2.0, "b": x[1]}
    v = d.pop("c", x[2])
    w = d.pop("a", x[3])
    return v * 3.0 + w * d["b"] * len(d)


def pop_of_a_dict_as_statement(x):
    d = {"a": x[0] * 2.0, "b": x[1], "c": np.sin(x[2])}
    d.pop("a")
    return sum(d.values()) + x[3]


@pytest.mark.parametrize("f", [reverse_a_built_list, pop_of_a_dict, pop_of_a_dict_with_default,
                               pop_of_a_dict_as_statement], ids=lambda f: f.__name__)
def test_container_method_every_mode(f):
    test_idiom_every_mode(f)


def test_pop_inside_an_expression_is_refused_at_its_line():
    def f(x):
        items = [x[0], x[1] * 2.0]
        return items[0] * items.pop()
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_everyday_idioms\.py:\d+: 'items\.pop\(\.\.\.\)' of "
                             r"differentiable values inside an expression"):
        srcgrad.grad(f)(X4.copy())


def test_reverse_of_a_shared_list_is_refused():
    def f(x):
        items = [x[0], x[1]]
        alias = items
        items.reverse()
        return alias[0] * 2.0 + alias[1]
    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="another variable also refers"):
        srcgrad.grad(f)(X4.copy())


# -- lists repeated by '*', joined by '+': the gradient of what Python computes, or a refusal --
def repeated_display(x):
    items = [x[0]] * 3 + [x[1]]
    return sum(items) * items[-1]


def repeated_on_the_left(x):
    items = 2 * [x[0], x[1] ** 2]
    return items[0] * items[3] + items[1] * items[2]


def repeated_tuple(x):
    t = (x[0], x[2]) * 2
    return t[0] * t[3] + sum(t)


def repeated_by_a_variable(x):
    base = [x[0], x[1]]
    n = 3
    items = base * n
    return sum(v * (i + 1) for i, v in enumerate(items))


def zeros_list_filled(x):
    acc = [0.0] * 4
    for i in range(4):
        acc[i] = acc[i] + x[i] ** 2
    return sum(acc)


def array_times_a_list(x):
    weights = [1.0, 2.0, 3.0, 4.0]
    return np.sum(x * weights)


@pytest.mark.parametrize("f", [repeated_display, repeated_on_the_left, repeated_tuple,
                               repeated_by_a_variable, zeros_list_filled, array_times_a_list],
                         ids=lambda f: f.__name__)
def test_sequence_repetition_every_mode(f):
    test_idiom_every_mode(f)


def _pair(x):
    return [x[0], x[1]]


def list_from_a_call_repeated(x):
    items = _pair(x) * 2
    return items[0] * items[3]


def list_from_a_dict_repeated(x):
    d = {"a": [x[0], x[1]]}
    items = d["a"] * 2
    return items[0] * items[3]


def list_from_unpacking_repeated(x):
    a, _ = [x[0], x[1]], 3
    items = a * 2
    return items[0] * items[3]


def list_from_a_loop_repeated(x):
    total = 0.0
    for row in [[x[0], x[1]], [x[2], x[3]]]:
        items = row * 2
        total = total + items[0] * items[3]
    return total


def list_joined_with_itself(x):
    a = _pair(x)
    items = a + a
    return items[0] * items[3]


@pytest.mark.parametrize("f", [list_from_a_call_repeated, list_from_a_dict_repeated,
                               list_from_unpacking_repeated, list_from_a_loop_repeated,
                               list_joined_with_itself], ids=lambda f: f.__name__)
def test_a_list_srcgrad_cannot_tell_from_an_array_is_refused(f):
    """Each gave a wrong gradient with no error: the adjoint of 'items * 2' was the list
    cotangent times 2, itself repeated (unbroadcast, which checks for lists, was left out
    as 'a product with a number keeps the shape')."""
    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="repeating a list"):
        srcgrad.grad(f)(X4.copy())


def test_a_parameter_list_repeated_is_refused_by_its_adjoint_check():
    def f(xs):
        items = xs * 2
        return items[0] * items[3]
    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="repeating a list"):
        srcgrad.grad(f)([X4[0], X4[1]])


# -- builtins and numpy scalar types ----------------------------------------------------------
def builtin_pow(x):
    return pow(x[0], 2) + np.sum(pow(x, x[1])) + pow(2.0, x[2])


def numpy_float64_cast(x):
    return np.float64(x[0]) * x[1] + np.sum(np.float64(x) ** 2)


@pytest.mark.parametrize("f", [builtin_pow, numpy_float64_cast], ids=lambda f: f.__name__)
def test_builtin_every_mode(f):
    test_idiom_every_mode(f)


# -- a method changing its object, on an object whose class srcgrad cannot tell ---------------
class _Cell:
    def __init__(self):
        self.W = np.ones(4)

    def set_first(self, v):
        self.W[0] = v

    def scale(self, v):
        self.W = self.W * v

    def apply(self, h):
        return np.tanh(self.W * h)


def _make_cell():
    return _Cell()


def _scale_it(m, v):
    m.scale(v[0])
    return np.sum(m.W * v)


def method_on_a_helpers_object(x):
    m = _make_cell()
    m.set_first(x[0])
    return np.sum(m.W * x)


def rebinding_method_on_a_helpers_object(x):
    m = _make_cell()
    m.scale(x[1])
    return np.sum(m.W * x)


def changing_method_in_a_loop(x):
    m = _make_cell()
    for i in range(2):
        m.scale(x[i])
    return np.sum(m.W)


def changing_method_on_a_parameter(x):
    return _scale_it(_make_cell(), x)


@pytest.mark.parametrize("f", [method_on_a_helpers_object, rebinding_method_on_a_helpers_object,
                               changing_method_in_a_loop, changing_method_on_a_parameter],
                         ids=lambda f: f.__name__)
def test_a_method_changing_an_object_of_unknown_class_is_refused_at_its_line(f):
    """Each gave a wrong gradient with no error: the call ran as plain Python (its value
    unread), and the object's change carried no gradient. Now refused at run time, where the
    object's class tells, at the user's line."""
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_everyday_idioms\.py:\d+: '\w+\.(set_first|scale)\(\.\.\.\)', "
                             r"a method changing its object"):
        srcgrad.grad(f)(X4.copy())


def methods_that_change_nothing(x):
    m = _make_cell()
    rs = np.random.RandomState(0)
    return np.sum(m.apply(x)) + np.sum(x * rs.randn(*x.shape)) + np.sum(_GLOBAL_CELL.apply(x))


_GLOBAL_CELL = _Cell()


def test_methods_that_change_nothing_still_work():
    test_idiom_every_mode(methods_that_change_nothing)


# -- the run-time sharing check on what user code reaches --------------------------------
class _OddDict:
    """An object answering __dict__ with something else than a dict (llvmlite's library
    wrappers do, and the check met one through numba's objects)."""

    def __getattribute__(self, name):
        if name == "__dict__":
            return object()
        return object.__getattribute__(self, name)


def test_the_sharing_check_passes_an_object_whose_dict_is_not_a_dict():
    from srcgrad import runtime
    updated = [X4]  # (a list updated in place: the views are walked for it)
    runtime.refuse_viewed(updated, [_OddDict(), [_OddDict()]], "shared")
    with pytest.raises(srcgrad.UnsupportedSyntaxError, match="shared"):
        runtime.refuse_viewed(updated, [[_OddDict(), updated]], "shared")


def _squares(v):
    return v * v


def calls_a_helper(x):
    return np.sum(_squares(x))


def test_srcgrads_own_objects_are_not_walked_by_the_sharing_check():
    """The check before an in-place update walks what the other variables reach; srcgrad's
    generated code reaches its helpers' adjoints, their caches and, once anything compiled,
    numba's objects, down which the walk went until 'nested more than 32 levels' (a jvp of
    a pullback refused under the full suite). Those hold no data of the user's."""
    from srcgrad import runtime
    from srcgrad.api import get_adjoint
    adjoint = get_adjoint(calls_a_helper, (0,))
    updated = [X4]
    runtime.refuse_viewed(updated, [adjoint.bwd, adjoint, [adjoint] * 40], "shared")
    seen: dict = {}
    runtime._reach(adjoint.bwd, seen, [])
    assert len(seen) <= 3, len(seen)  # (the function, its closure's tuple, no further)
