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


def test_a_frozen_dataclass_with_differentiable_fields_is_refused_at_the_line():
    """(WRONG before, zero.)"""
    with pytest.raises(UnsupportedFeatureError, match="dataclass _Frozen"):
        srcgrad.grad(frozen_dataclass)(X4.copy())
    with pytest.raises(UnsupportedFeatureError, match="dataclass _Frozen"):
        srcgrad.jvp(frozen_dataclass, (X4.copy(),), (np.ones(4),))
