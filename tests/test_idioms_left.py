"""Issue 9's everyday idioms left open by the last session, each differentiated as written
and checked against central differences (gradient, jvp, Hessian, Hessian-vector product;
third order where the idiom was refused there): methods changing an element of their object's
list or array, ``dataclasses.replace`` with differentiable fields, ``setdefault`` on a dict the
function did not make, ``namedtuple._replace``, lambdas in comprehensions at third order,
objects returned by methods, ``itertools.islice`` with ``None``/step and over generators; and
the silently wrong gradients found on the way (an unread list attribute's primal values taken
for its cotangent, a dataclass built from ``**d`` or frozen losing its fields' gradients)."""
from __future__ import annotations

import dataclasses
from collections import namedtuple
from typing import NamedTuple

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import UnsupportedFeatureError
from test_language import check_all_orders

X4 = np.array([0.9, 0.5, 0.7, 0.6])


# -- an object returned by a method ---------------------------------------------------------
class _Bag:
    def __init__(self, x):
        self.xs = [x[0], x[1], 1.0]
        self.W = np.ones(4)

    def make(self):
        return _Box(self.W * 2.0)


class _Box:
    def __init__(self, W):
        self.W = W

    def scaled(self, s):
        return _Box(self.W * s)


def object_made_by_a_method(x):
    """(WRONG before: make's cotangent of ``m`` carried ``m.xs``'s primal values, a list its
    densified gradient object copied, into Bag's backward sweep as xs's cotangent.)"""
    m = _Bag(x)
    m.W = x * 1.0
    m2 = m.make()
    m3 = m2.scaled(x[1])
    return np.sum(m2.W * x) + np.sum(m3.W)


def test_an_object_returned_by_a_method():
    check_all_orders(object_made_by_a_method, X4.copy())


def test_an_unread_list_attribute_has_a_zero_gradient():
    def f(m):
        return np.sum(m.W ** 2)
    g = srcgrad.grad(f)(_Bag(X4))
    assert np.allclose(g.W, 2.0) and g.xs == [0.0, 0.0, 0.0]


# -- dataclasses built from **d, frozen ones ------------------------------------------------
@dataclasses.dataclass
class _Plain:
    W: np.ndarray
    b: float = 1.0


@dataclasses.dataclass(frozen=True)
class _Frozen:
    W: np.ndarray
    b: float = 1.0


def _build_from(**kwargs):
    return _Plain(**kwargs)


def dataclass_from_a_dict(x):
    d = {"W": x * 2.0, "b": x[0]}
    m = _Plain(**d)
    return np.sum(m.W ** 2) * m.b


def dataclass_from_a_helpers_keywords(x):
    return np.sum(_build_from(W=np.sin(x), b=x[1]).W ** 3)


@pytest.mark.parametrize("f", [dataclass_from_a_dict, dataclass_from_a_helpers_keywords],
                         ids=lambda f: f.__name__)
def test_a_dataclass_built_through_its_generated_init(f):
    """(WRONG before, zero: dataclasses' generated ``__init__`` has no source, so the
    constructor's ``__init__(self, ...)`` ran as plain Python and its stores went unseen.)"""
    check_all_orders(f, X4.copy())


def frozen_dataclass(x):
    m = _Frozen(x * 2.0)
    return np.sum(m.W ** 2)


def test_a_frozen_dataclass_with_differentiable_fields_every_mode():
    """(WRONG before, zero; then refused; now its constructor stores each field with
    object.__setattr__, as dataclasses' generated __init__ does: tests/test_idioms_left2.py.)"""
    check_all_orders(frozen_dataclass, X4.copy())


# -- a method changing an element of its object's list or array -----------------------------
class _Holder:
    def __init__(self, x):
        self.xs = [x[0], x[1], 1.0]
        self.W = np.ones(4)
        self.n = 0

    def set_x(self, i, v):
        self.xs[i] = v

    def set_w(self, i, v):
        self.W[i] = v

    def set_and_read(self, i, v):
        self.xs[i] = v * 2.0
        self.n += 1
        return self.xs[i] + 1.0

    def push(self, v):
        self.xs.append(v)


def method_setting_a_list_element(x):
    m = _Holder(x)
    m.set_x(0, x[2] * 3.0)
    return m.xs[0] * m.xs[1] + m.xs[2]


def method_setting_an_array_element(x):
    m = _Holder(x)
    m.set_w(1, x[2] ** 2)
    return np.sum(m.W * x)


def method_in_a_loop_reading_its_object(x):
    m = _Holder(x)
    for k in range(3):
        m.set_x(k, x[k] * m.xs[(k + 1) % 3])
    return sum(m.xs) * x[3]


def method_whose_value_is_read(x):
    m = _Holder(x)
    r = m.set_and_read(1, x[2])
    y = x[0] + m.set_and_read(0, x[1])
    return r * m.xs[1] + m.n + y * m.xs[0]


def method_appending_to_its_list(x):
    m = _Holder(x)
    m.push(x[3] * 2.0)
    return sum(m.xs) * x[0]


@pytest.mark.parametrize("f", [method_setting_a_list_element, method_setting_an_array_element,
                               method_in_a_loop_reading_its_object, method_whose_value_is_read,
                               method_appending_to_its_list], ids=lambda f: f.__name__)
def test_a_method_changing_its_object_is_taken_back_at_the_call(f):
    """``m.set_x(i, v)`` on an object made here by its class runs as ``_Holder.set_x(m, i,
    v)``, a helper whose changed parameter the call site takes back."""
    check_all_orders(f, X4.copy())


def _set_x(m, i, v):
    m.xs[i] = v


def helper_setting_an_element_read_in_its_arguments(x):
    """(WRONG before: the helper's cotangent of ``m``, an object of its class, was dropped
    by add_attr, which kept only dicts: the gradient through ``m.xs[1]`` and ``m.xs[2]``
    after the calls was lost.)"""
    m = _Holder(x)
    _set_x(m, 0, x[0] * m.xs[1])
    _set_x(m, 1, x[1] * m.xs[2])
    return sum(m.xs) * x[3] + m.xs[1]


def test_a_helper_setting_an_element_of_its_parameters_list():
    check_all_orders(helper_setting_an_element_read_in_its_arguments, X4.copy())


def method_changing_an_object_another_name_holds(x):
    m = _Holder(x)
    w = m.xs
    m.set_x(0, x[2] * 3.0)
    return w[0] * x[3]


def test_a_method_changing_an_object_another_name_holds_is_refused_at_the_line():
    with pytest.raises(srcgrad.SrcgradError, match=r"test_idioms_left\.py:\d+: set_x\(\) "
                                                   r"updates its argument 'self' in place"):
        srcgrad.grad(method_changing_an_object_another_name_holds)(X4.copy())


# -- dataclasses.replace and namedtuple._replace with differentiable fields -----------------
@dataclasses.dataclass
class _Layer:
    W: np.ndarray
    b: float
    name: str = "layer"


class _Point(NamedTuple):
    a: float
    b: float


_Pair = namedtuple("_Pair", "a b")


def _replaced_layer(m, x):
    return dataclasses.replace(m, W=np.sin(x))


def dataclass_replace(x):
    m = _Layer(np.ones(4), 1.0)
    m2 = dataclasses.replace(m, W=x * 2.0)
    m3 = dataclasses.replace(m2, b=x[0] ** 2, name="other")
    return np.sum(m3.W ** 2) * m3.b + m2.b


def dataclass_replace_in_a_helper(x):
    m = _Layer(np.ones(4), x[0])
    m2 = _replaced_layer(m, x)
    return np.sum(m2.W * m.W) * m2.b


def namedtuple_replace(x):
    p = _Pair(x[0], 2.0)
    q = p._replace(a=x[1] ** 2)
    r = _Point(x[2], x[3])._replace(b=q.a * x[0])
    return q.a * q.b + p.a + r.a * r.b


@pytest.mark.parametrize("f", [dataclass_replace, dataclass_replace_in_a_helper,
                               namedtuple_replace], ids=lambda f: f.__name__)
def test_replacing_fields_every_mode(f):
    """(Refused before, in dataclasses' code, getattr, or in collections', map; and the jvp of
    dataclasses.replace was silently zero.)"""
    check_all_orders(f, X4.copy())


@dataclasses.dataclass
class _Computed:
    W: np.ndarray

    def __post_init__(self):
        self.V = self.W * 2.0


def replace_of_a_dataclass_with_post_init(x):
    m = _Computed(np.ones(4))
    return np.sum(dataclasses.replace(m, W=x).V)


def test_replacing_fields_of_a_dataclass_with_post_init_is_refused():
    with pytest.raises(UnsupportedFeatureError, match="replacing fields of a _Computed"):
        srcgrad.grad(replace_of_a_dataclass_with_post_init)(X4.copy())


# -- setdefault on a dict the function did not make ------------------------------------------
_SHARED = []


def _fresh_dict():
    return {"b": 2.0}


def _dict_holding_a_global_list():
    return {"k": _SHARED}


def _group_into(d, x):
    d.setdefault("k", []).append(x[0] ** 2)
    d.setdefault("k", []).append(x[1])
    d.setdefault("n", 0.0)
    return d["k"][0] * d["k"][1] + d["n"]


def setdefault_on_a_helpers_dict(x):
    d = _fresh_dict()
    for v in x:
        d.setdefault("k", []).append(v * 2.0)
    w = d.setdefault("b", 5.0)
    return sum(d["k"]) * w + d["k"][0] ** 2


def setdefault_on_a_parameter(x):
    d = {}
    r = _group_into(d, x)
    return r + d["k"][1] * x[3] + _group_into({"n": x[2]}, x)


@pytest.mark.parametrize("f", [setdefault_on_a_helpers_dict, setdefault_on_a_parameter],
                         ids=lambda f: f.__name__)
def test_setdefault_on_a_dict_the_function_did_not_make(f):
    check_all_orders(f, X4.copy())


def setdefault_into_a_list_a_global_holds(x):
    d = _dict_holding_a_global_list()
    d.setdefault("k", []).append(x[0] * 2.0)
    return sum(d["k"]) * x[1]


def test_setdefault_changing_a_list_a_global_holds_is_refused_at_the_line():
    with pytest.raises(srcgrad.SrcgradError, match=r"test_idioms_left\.py:\d+: 'd\['k'\]"
                                                   r"\.append\(\.\.\.\)' changes in place"):
        srcgrad.grad(setdefault_into_a_list_a_global_holds)(X4.copy())
    assert _SHARED == []


# -- a lambda in a comprehension reading the comprehension's variable, at third order ---------
def lambda_called_in_a_generator(x):
    xs = [x[0], x[1], x[2]]
    return sum((lambda t: t * x[3])(v) for v in xs) * x[0]


def named_lambda_in_a_comprehension(x):
    g = lambda t: t * x[3] * np.sin(t)  # noqa: E731
    return sum([g(v) for v in x]) * x[1] + g(x[2] ** 2)


def named_lambda_in_a_loop(x):
    scale = x[3] ** 2
    g = lambda a, b: a * b + scale  # noqa: E731
    total = 0.0
    for v in x:
        total = total + g(v, np.cos(v))
    return total * x[0]


def _third_derivative(f, x, i, j, k):
    g2 = srcgrad.grad(lambda y: srcgrad.grad(f)(y)[i])
    return srcgrad.grad(lambda y: g2(y)[j])(x)[k], g2


@pytest.mark.parametrize("f", [lambda_called_in_a_generator, named_lambda_in_a_comprehension,
                               named_lambda_in_a_loop], ids=lambda f: f.__name__)
def test_a_lambda_called_in_a_comprehension_at_third_order(f):
    """The call is the lambda's body written there (transforms/lambda_calls.py); as a call of
    a function known only at run time a third derivative was refused."""
    x = X4.copy()
    check_all_orders(f, x)
    g2 = srcgrad.grad(lambda y: srcgrad.grad(f)(y)[0])
    third = srcgrad.grad(lambda y: g2(y)[1])(x)
    numeric = np.array([(g2(x + 1e-5 * e)[1] - g2(x - 1e-5 * e)[1]) / 2e-5 for e in np.eye(4)])
    assert np.allclose(third, numeric, rtol=1e-5, atol=1e-6), (third, numeric)


def lambda_reading_a_variable_a_comprehension_rebinds(x):
    v = x[3]
    g = lambda t: t * v  # noqa: E731
    return sum([g(v) * v for v in x[:3]])


def test_a_lambda_reading_a_name_the_comprehension_rebinds_is_refused_at_the_line():
    """Not inlined there: the lambda's ``v`` is the function's, the comprehension's is its
    own. Passed to the lambda as ``v=v`` at the call, it read the comprehension's (a silently
    wrong gradient before)."""
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_idioms_left\.py:\d+: a call of 'g' inside a comprehension "
                             r"whose variable 'v' hides"):
        srcgrad.grad(lambda_reading_a_variable_a_comprehension_rebinds)(X4.copy())
