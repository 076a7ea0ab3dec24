"""Issue 9's idioms the last session left refused, each differentiated as written and checked
against central differences (gradient, jvp, Hessian, Hessian-vector product; third order
where the idiom was refused there): a call in a comprehension's first source of a nested
function reading a name the comprehension's variable reuses, a one-line nested ``def`` at
third order, a method changing ``self`` through another method of ``self``, frozen
dataclasses and ``__post_init__``; and the silently wrong gradient found on the way (a
method named like a container's, ``m.add(v)``, ran as plain Python)."""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import srcgrad
from test_language import check_all_orders

X4 = np.array([0.9, 0.5, 0.7, 0.6])


def _check_third_order(f, x):
    g2 = srcgrad.grad(lambda y: srcgrad.grad(f)(y)[0])
    third = srcgrad.grad(lambda y: g2(y)[1])(x)
    numeric = np.array([(g2(x + 1e-5 * e)[1] - g2(x - 1e-5 * e)[1]) / 2e-5 for e in np.eye(4)])
    assert np.allclose(third, numeric, rtol=1e-5, atol=1e-6), (third, numeric)


# -- a comprehension's first source is evaluated where its variables hide nothing ------------
def call_in_a_first_source(x):
    def g(t):
        u = t * x
        return u * 2.0
    return sum([x * 2.0 for x in g(x[0])]) * x[1]


def call_in_a_nested_first_source(x):
    def g(t):
        u = t * x
        return np.sin(u)
    return sum(np.sum(x) for x in [g(v) for v in x[:2]])


def one_line_def_in_a_first_source(x):
    def g(t):
        return t * x
    return sum([x * 2.0 for x in g(x[0])]) * x[1]


@pytest.mark.parametrize("f", [call_in_a_first_source, call_in_a_nested_first_source,
                               one_line_def_in_a_first_source], ids=lambda f: f.__name__)
def test_a_call_in_a_comprehensions_first_source(f):
    """(Refused before: the comprehension's variable ``x`` was taken to hide the function's
    ``x`` that ``g`` reads, but the first source is evaluated outside the comprehension.)"""
    check_all_orders(f, X4.copy())


def test_a_one_line_def_in_a_first_source_at_third_order():
    _check_third_order(one_line_def_in_a_first_source, X4.copy())


def call_where_the_variable_hides(x):
    def g(t):
        return t * x
    return sum(np.sum(g(x)) for x in x[:2])


def test_only_a_call_where_the_comprehensions_variable_hides_a_read_name_is_refused():
    srcgrad.grad(call_in_a_first_source)(X4.copy())  # (refused before)
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_idioms_left2\.py:\d+: a call of 'g' inside a "
                             r"comprehension whose variable 'x' hides"):
        srcgrad.grad(call_where_the_variable_hides)(X4.copy())


# -- a nested one-line def at third order ----------------------------------------------------
def nested_def_in_a_generator(x):
    def g(t):
        return t * x
    return np.sum(sum(g(v) for v in x))


def nested_def_in_a_loop(x):
    def g(t):
        """Scaled."""
        return t * x[0] * np.cos(t)
    total = 0.0
    for v in x:
        total = total + g(v)
    return total * x[3]


@pytest.mark.parametrize("f", [nested_def_in_a_generator, nested_def_in_a_loop],
                         ids=lambda f: f.__name__)
def test_a_nested_one_line_def_at_third_order(f):
    """``def g(t): return expr`` is written at its calls like a named lambda
    (transforms/lambda_calls.py); as a call of a function known only at run time a third
    derivative was refused."""
    check_all_orders(f, X4.copy())
    _check_third_order(f, X4.copy())


# -- a method changing self through another method of self ---------------------------------
class _Stack:
    def __init__(self):
        self.xs = []

    def push(self, v):
        self.xs.append(v)

    def push_twice(self, v):
        self.push(v)
        self.push(v * 2)


class _Tripled(_Stack):
    def push(self, v):
        self.xs.append(v * 3.0)


class _Plain(_Stack):
    pass


def push_twice_of_numbers(x):
    m = _Stack()
    m.push_twice(x[0] * x[1])
    m.push(x[2])
    return sum(m.xs) * x[3] + m.xs[1] ** 2


def push_twice_of_arrays(x):
    m = _Stack()
    m.push_twice(x)
    return np.sum(m.xs[1] * x) + np.sum(m.xs[0] ** 2)


def push_twice_in_a_loop(x):
    m = _Stack()
    for v in x:
        m.push_twice(np.sin(v))
    return sum(m.xs) * x[0]


def push_twice_of_a_subclass(x):
    m = _Plain()
    m.push_twice(x[0] * x[1])
    return sum(m.xs) * x[3]


@pytest.mark.parametrize("f", [push_twice_of_numbers, push_twice_of_arrays,
                               push_twice_in_a_loop, push_twice_of_a_subclass],
                         ids=lambda f: f.__name__)
def test_a_method_changing_self_through_another_method(f):
    """``self.push(v)`` in a method of ``_Stack`` runs as ``_Stack.push(self, v)``, a helper
    whose call site takes ``self`` back (refused before: srcgrad did not follow it)."""
    check_all_orders(f, X4.copy())
    _check_third_order(f, X4.copy())


def push_twice_of_a_subclass_overriding_push(x):
    m = _Tripled()
    m.push_twice(x[0] * x[1])
    return sum(m.xs) * x[3]


def test_a_subclass_overriding_the_method_called_on_self_is_refused_at_the_line():
    with pytest.raises(srcgrad.SrcgradError, match=r"test_idioms_left2\.py:\d+: 'self\.push"
                                                   r"\(\.\.\.\)' on an object whose class "
                                                   r"overrides push\(\)"):
        srcgrad.grad(push_twice_of_a_subclass_overriding_push)(X4.copy())


class _Total:
    def __init__(self, x):
        self.total = x[0]
        self.W = x * 1.0

    def add(self, v):
        self.total = self.total + v

    def add_scaled(self, v, s):
        self.add(v * s)
        self.W = self.W * s
        return self.total


def method_named_like_a_sets(x):
    """(WRONG before, silently: ``a.add(v)``, named like a set's method, ran as plain Python
    and the gradient through ``a.total`` was lost.)"""
    a = _Total(x)
    a.add(x[2])
    r = a.add_scaled(x[1], x[2])
    return a.total * r + np.sum(a.W)


def test_a_method_named_like_a_containers_every_mode():
    check_all_orders(method_named_like_a_sets, X4.copy())


def _add_in_a_helper(a, v):
    a.add(v)
    return a.total


def method_named_like_a_sets_in_a_helper(x):
    a = _Total(x)
    return _add_in_a_helper(a, x[2]) * x[1] + a.total


def test_a_method_named_like_a_containers_on_a_parameter_is_refused_at_the_line():
    """(WRONG before, silently; the class is not known in the helper.)"""
    with pytest.raises(srcgrad.SrcgradError, match=r"test_idioms_left2\.py:\d+: 'a\.add"
                                                   r"\(\.\.\.\)', a method changing its "
                                                   r"object 'a'"):
        srcgrad.grad(method_named_like_a_sets_in_a_helper)(X4.copy())


class _Store:
    def __init__(self):
        self.d = {}

    def setdefault(self, k, v):
        if k not in self.d:
            self.d[k] = v * 2.0
        return self.d[k]


def method_named_setdefault(x):
    """(A TypeError before: ``s.setdefault(k, v)`` was rewritten as dict's, ``k not in s``.)"""
    s = _Store()
    r = np.sum(s.setdefault("a", x * x[0]) * x)
    return r * np.sum(s.setdefault("a", x) * x[1])


def dict_setdefault_on_a_parameter(x, d):
    a = d.setdefault("a", x * x[0])
    return np.sum(a * x) + np.sum(d.setdefault("a", x))


def test_a_method_named_setdefault_every_mode():
    check_all_orders(method_named_setdefault, X4.copy())


def test_dict_setdefault_on_a_parameter_every_mode():
    check_all_orders(lambda x: dict_setdefault_on_a_parameter(x, {}), X4.copy())


def test_setdefault_of_a_class_on_a_parameter_is_refused_at_the_line():
    with pytest.raises(srcgrad.SrcgradError, match=r"test_idioms_left2\.py:\d+: 'd\.setdefault"
                                                   r"\(\.\.\.\)' with differentiable values "
                                                   r"on an object that is not a dict"):
        srcgrad.grad(dict_setdefault_on_a_parameter)(X4.copy(), _Store())


# -- frozen dataclasses and __post_init__ ----------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Frozen:
    W: np.ndarray
    b: float = 1.0


@dataclasses.dataclass
class _Derived:
    x: np.ndarray

    def __post_init__(self):
        self.y = self.x * 2


@dataclasses.dataclass(frozen=True)
class _FrozenDerived:
    x: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, 'y', self.x * 2)


def frozen_built_and_read(x):
    m = _Frozen(x * 2.0, x[0])
    return np.sum(m.W ** 2) * m.b


def frozen_replaced(x):
    m = _Frozen(x * 2.0)
    m2 = dataclasses.replace(m, b=x[1] ** 2)
    return np.sum(m2.W * m.W) * m2.b


def post_init_computing_a_field(x):
    m = _Derived(np.sin(x))
    return np.sum(m.y * m.x)


def frozen_post_init_computing_a_field(x):
    m = _FrozenDerived(np.sin(x))
    return np.sum(m.y * m.x) + m.y[1] ** 2


@pytest.mark.parametrize("f", [frozen_built_and_read, frozen_replaced,
                               post_init_computing_a_field, frozen_post_init_computing_a_field],
                         ids=lambda f: f.__name__)
def test_frozen_dataclasses_and_post_init(f):
    """Their constructor stores each field (with ``object.__setattr__`` in a frozen one, as
    dataclasses' generated ``__init__`` does), then calls ``__post_init__`` as a helper
    changing ``self`` (adapters.constructor_adapter; refused before)."""
    check_all_orders(f, X4.copy())


def test_a_store_into_a_frozen_dataclass_still_raises_as_in_python():
    def f(x):
        m = _Frozen(x * 2.0)
        m.W = x
        return np.sum(m.W)
    with pytest.raises(dataclasses.FrozenInstanceError):
        srcgrad.grad(f)(X4.copy())


# -- islice over an infinite generator: refused, with a hint -------------------------------
def _forever(x):
    k = 0
    while True:
        yield x[k % 4] * k
        k += 1


def islice_of_an_infinite_generator(x):
    return sum(itertools.islice(_forever(x), 6))


def test_islice_of_an_infinite_generator_is_refused_with_a_hint():
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_idioms_left2\.py:\d+: an infinite generator .*give the "
                             r"generator the count its consumer takes"):
        srcgrad.grad(islice_of_an_infinite_generator)(X4.copy())
