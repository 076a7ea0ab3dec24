"""More everyday idioms of issue 9: ``dict.setdefault`` (grouping values into lists, read as a
value), ``pop`` from a list held in an attribute, classes and namedtuples defined inside the
differentiated function, ``itertools`` over differentiable lists, ``np.cumprod``, and run-time
refusals inside a nested def located at the user's line. Each is checked against central
differences in every mode: gradient, jvp, Hessian, grad of grad."""
from __future__ import annotations

import itertools
import operator
from collections import namedtuple
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import pytest

import srcgrad
from test_everyday_idioms import X4, _make_cell
from test_everyday_idioms import test_idiom_every_mode as check_every_mode


# -- run-time refusals inside a nested def --------------------------------------------------
def changing_method_in_a_nested_def(x):
    def inner(v):
        m = _make_cell()
        m.set_first(v[0])
        return np.sum(m.W * v)
    return inner(x) + x[1]


def sort_in_a_nested_def(x):
    def inner(v):
        items = [v[0], v[1]]
        items.sort()
        return items[0] * 2.0
    return inner(x)


def store_into_an_alias_in_a_nested_def(x):
    def inner(v):
        a = v * 2.0
        b = a
        a[0] = v[1]
        return np.sum(b * v)
    return inner(x)


@pytest.mark.parametrize("f", [changing_method_in_a_nested_def, sort_in_a_nested_def,
                               store_into_an_alias_in_a_nested_def],
                         ids=lambda f: f.__name__)
def test_a_run_time_refusal_inside_a_nested_def_names_the_users_line(f):
    """Named the generated code's line (``<srcgrad: f adjoint #27>:9``): the nested def is
    transformed from the generated text of its parent's adjoint."""
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"^[^<]*test_idioms_more\.py:\d+: .* \(in inner\(\)\)"):
        srcgrad.grad(f)(X4.copy())


# -- np.cumprod, np.cumsum through the transformer ------------------------------------------
def cumprod_weighted(x):
    return np.sum(np.cumprod(x) * np.arange(1.0, 5.0))


def cumprod_through_a_zero(x):
    return np.sum(np.cumprod(x * np.array([1.0, 0.0, 1.0, 1.0])) * np.arange(1.0, 5.0))


def cumprod_of_rows_and_method(x):
    m = x.reshape(2, 2)
    return np.sum(np.cumprod(m, axis=1) ** 2) + np.sum(m.cumprod(axis=0) * m) \
        + np.sum(np.cumprod(m))


def cumsum_flattened_and_along_axes(x):
    m = x.reshape(2, 2)
    return np.sum(np.cumsum(m) ** 2) + np.sum(np.cumsum(m, axis=1) ** 3) \
        + np.sum(np.sin(np.cumsum(m, axis=0)))


@pytest.mark.parametrize("f", [cumprod_weighted, cumprod_through_a_zero,
                               cumprod_of_rows_and_method], ids=lambda f: f.__name__)
def test_running_products_every_mode(f):
    """np.cumprod had no rule (MissingRuleError)."""
    check_every_mode(f)


def test_running_sums_flattened_and_along_axes_every_mode():
    """(Already right before np.cumprod's rule: a guard, checked here next to it.)"""
    check_every_mode(cumsum_flattened_and_along_axes)


# -- itertools over differentiable lists ----------------------------------------------------
def accumulate_running_sums(x):
    return sum(v * (i + 1) for i, v in enumerate(itertools.accumulate(x)))


def accumulate_with_a_function(x):
    return sum(itertools.accumulate(list(x), operator.mul)) \
        + np.sum(np.array(list(itertools.accumulate(x, max))))


def accumulate_with_initial_and_lambda(x):
    total = sum(v ** 2 for v in itertools.accumulate(list(x), initial=1.0))
    return total + sum(itertools.accumulate((v * 2.0 for v in x),
                                            lambda a, b: a * b + 1.0, initial=x[3]))


def chain_of_lists_and_arrays(x):
    total = sum(v ** 2 for v in itertools.chain([x[0], x[1]], [x[2] * x[3]]))
    total = total + sum(itertools.chain(x[:2], np.cos(x[2:])))
    return total + sum(itertools.chain.from_iterable([[x[0], x[1]], [x[2] ** 2]]))


def product_of_lists(x):
    total = sum(a * b for a, b in itertools.product([x[0], x[1]], [x[2], x[3]]))
    for a, b in itertools.product([x[0], x[1] ** 2], repeat=2):
        total = total + a * np.sin(b)
    return total


def islice_of_lists_and_generators(x):
    return sum(v ** 3 for v in itertools.islice(list(x), 1, 3)) \
        + sum(itertools.islice((np.sin(v) for v in x), 1, None, 2)) \
        + sum(itertools.islice(x, 2))


@pytest.mark.parametrize("f", [accumulate_running_sums, accumulate_with_a_function,
                               accumulate_with_initial_and_lambda, chain_of_lists_and_arrays,
                               product_of_lists, islice_of_lists_and_generators],
                         ids=lambda f: f.__name__)
def test_itertools_every_mode(f):
    """Each was refused ("constructing 'accumulate' from differentiable values")."""
    check_every_mode(f)


def test_an_itertools_iterator_kept_in_a_variable_is_refused_at_its_line():
    """Read twice, the iterator is empty the second time (a list would not be): refused,
    with the hint to consume it where it is made."""
    def f(x):
        c = itertools.chain([x[0]], [x[1]])
        return sum(c) + sum(c)
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_idioms_more\.py:\d+: an itertools\.chain iterator over "
                             r"differentiable values that is not consumed at once .*"
                             r"list\(itertools\.chain\(\.\.\.\)\)"):
        srcgrad.grad(f)(X4.copy())


# -- dict.setdefault --------------------------------------------------------------------------
def setdefault_groups_into_lists(x):
    groups = {}
    for i, v in enumerate(x):
        groups.setdefault(i % 2, []).append(v ** 2)
    return sum(groups[0]) * sum(groups[1]) + len(groups)


def setdefault_read_as_a_value(x):
    d = {"a": x[0]}
    a = d.setdefault("a", 0.0)
    b = d.setdefault("b", x[1] * 2.0)
    c = d.setdefault("c", 0.0)
    return a * b + c + d["b"] * x[2]


def setdefault_inside_expressions(x):
    d = {"a": x[0]}
    total = d.setdefault("a", 3.0) * x[1] + d.setdefault("b", x[2]) ** 2 + len(d)
    none = d.setdefault("z")
    total = total + (x[3] if none is None else 0.0)
    return total + (d.setdefault("e", x[1]) if x[0] > 0.5 else d.setdefault("f", x[2]))


@pytest.mark.parametrize("f", [setdefault_groups_into_lists, setdefault_read_as_a_value,
                               setdefault_inside_expressions], ids=lambda f: f.__name__)
def test_setdefault_every_mode(f):
    """Each was refused: the list changed in place through setdefault's value, or no rule
    for dict.setdefault."""
    check_every_mode(f)


def test_a_list_setdefault_returned_and_changed_through_a_name_is_refused():
    """Python changes the dict's list through the name too: refused where it changes, at the
    user's line (d.setdefault(k, []).append(v) changes it through the dict). (Refused before
    setdefault was rewritten too: a guard that the rewrite, ``items = d[k]``, keeps it so.)"""
    def f(x):
        d = {}
        items = d.setdefault("k", [])
        items.append(x[0])
        return sum(d["k"]) * x[1]
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_idioms_more\.py:\d+: an in-place update of 'items'"):
        srcgrad.grad(f)(X4.copy())


# -- pop from an attribute's or an item's list ------------------------------------------------
class _Holder:
    pass


def pop_of_an_attribute_as_statements(x):
    s = _Holder()
    s.hs = [x[0], x[1] ** 2, x[2]]
    s.hs.pop()
    s.hs.pop(0)
    return sum(s.hs) * x[3]


def pop_of_an_attribute_as_values(x):
    s = SimpleNamespace(hs=[x[0], x[1] ** 2, np.sin(x[2])])
    last = s.hs.pop()
    first = s.hs.pop(0)
    return last * first * sum(s.hs) + x[3]


def pop_of_items(x):
    d = {"hs": [x[0], x[1] * 3.0], "w": {"a": x[2], "b": x[3]}}
    v = d["hs"].pop()
    w = d["w"].pop("a")
    u = d["w"].pop("c", x[0] ** 2)
    return v * w * u + sum(d["hs"]) * d["w"]["b"]


def pop_of_an_attribute_returned(x):
    s = _Holder()
    s.hs = [x[0], x[1] ** 2]
    s.hs[0] = s.hs[0] * x[2]
    return s.hs.pop()


def pop_of_an_attribute_in_a_loop(x):
    s = _Holder()
    s.hs = [v ** 2 for v in x]
    total = 0.0
    while len(s.hs) > 1:
        v = s.hs.pop()
        total = total + v * (len(s.hs) + 1.0) * s.hs[0]
    return total


@pytest.mark.parametrize("f", [pop_of_an_attribute_as_statements, pop_of_an_attribute_as_values,
                               pop_of_items, pop_of_an_attribute_returned,
                               pop_of_an_attribute_in_a_loop], ids=lambda f: f.__name__)
def test_pop_of_an_attribute_or_item_every_mode(f):
    """Each was refused ("changing the object s.hs in place ... not supported")."""
    check_every_mode(f)


def test_pop_of_an_attribute_inside_an_expression_is_refused_at_its_line():
    def f(x):
        s = _Holder()
        s.hs = [x[0], x[1]]
        return s.hs.pop() * x[2]
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_idioms_more\.py:\d+: 's\.hs\.pop\(\.\.\.\)' of "
                             r"differentiable values inside an expression .*\(v = s\.hs\.pop"):
        srcgrad.grad(f)(X4.copy())


def test_pop_of_an_attribute_list_another_variable_holds_is_refused_at_its_line():
    def f(x):
        s = _Holder()
        hs = [x[0], x[1]]
        s.hs = hs
        s.hs.pop()
        return sum(hs) * x[2]
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_idioms_more\.py:\d+: 's\.hs\.pop\(\.\.\.\)' changes in "
                             r"place .* something else also holds"):
        srcgrad.grad(f)(X4.copy())



# -- namedtuples made from differentiable values -------------------------------------------------
_Pair = namedtuple("_Pair", ["a", "b"])


class _Point(NamedTuple):
    x: float
    y: float = 2.0


def module_namedtuple_read_by_attribute(x):
    p = _Pair(x[0], x[1] * 2.0)
    return p.a * p.b + x[2]


def typed_namedtuple_with_a_default(x):
    p = _Point(np.sin(x[0]))
    q = _Point(y=x[1], x=x[2] ** 2)
    return p.x * p.y + q.x * q.y + q[0] * x[3]


def namedtuple_defined_inside(x):
    Pt = namedtuple("Pt", ["a", "b"])
    p = Pt(x[0], x[1] * 2.0)
    return p.a * p.b + x[2]


def namedtuple_defined_inside_unpacked(x):
    Pt = namedtuple("Pt", "a b")
    p = Pt(b=x[0], a=x[1] * 2.0)
    a, b = p
    return a * b + p[0] * x[2] + sum(p) * x[3]


def _norm_of(p):
    return p.a ** 2 + p.b ** 2


def namedtuple_passed_to_a_helper(x):
    return _norm_of(_Pair(x[0], x[1] * x[2])) * x[3]


@pytest.mark.parametrize("f", [module_namedtuple_read_by_attribute,
                               typed_namedtuple_with_a_default, namedtuple_defined_inside,
                               namedtuple_defined_inside_unpacked, namedtuple_passed_to_a_helper],
                         ids=lambda f: f.__name__)
def test_namedtuple_made_from_differentiable_values_every_mode(f):
    """Refused ("constructing '_Pair' from differentiable values"), or, defined inside the
    function, a MissingRuleError for 'Pt' that named no line."""
    check_every_mode(f)


def test_a_namedtuples_field_from_a_tuple_tangent_is_not_zero():
    """The adjoint of reading a namedtuple's field (add_attr) keeps it by position, in a plain
    tuple; differentiating that adjoint read the field of the tuple by name, found none and
    took a lazy zero: grad of grad of p.a * p.b was 0 where the Hessian was not."""
    from srcgrad import runtime
    p = _Pair(1.0, 2.0)
    assert runtime.tangent_attr((3.0, 4.0), "b", p) == 4.0
    assert runtime.tangent_attr(_Pair(3.0, 4.0), "b", p) == 4.0
    assert runtime.tangent_attr({"a": 3.0}, "b", p) is runtime.ZERO


# -- classes with an __init__ of their own, also defined inside the function ----------------------
class _Layer:
    def __init__(self, v, scale=2.0):
        self.hs = [v[0], v[1] ** 2, v[2]]
        self.w = v * scale

    def f(self):
        return sum(self.hs) * np.sum(self.w)


def class_with_an_init(x):
    return _Layer(x).f() * x[3]


def class_with_an_init_and_keywords(x):
    s = _Layer(x, scale=x[0])
    return sum(s.hs) * np.sum(s.w)


def class_defined_inside(x):
    class P:
        def __init__(self, v):
            self.v = v

        def f(self):
            return np.sum(self.v ** 2)
    return P(x).f()


def class_defined_inside_with_more(x):
    class Acc:
        unit = 1.0

        def __init__(self, v):
            self.hs = []
            self.v = v

        def push(self, w):
            return np.sum(self.v * w) + self.unit

        @staticmethod
        def sq(w):
            return w * w
    a = Acc(x)
    total = a.push(x[::-1]) + Acc.sq(x[1])
    return total * Acc(np.sin(x)).push(x)


@pytest.mark.parametrize("f", [class_with_an_init, class_with_an_init_and_keywords,
                               class_defined_inside, class_defined_inside_with_more],
                         ids=lambda f: f.__name__)
def test_classes_with_an_init_every_mode(f):
    """Refused: "constructing '_Layer' from differentiable values", "a class definition
    inside the function is not supported"."""
    check_every_mode(f)


def class_inside_reading_a_variable_in_a_method(x):
    scale = x[0] * 2.0

    class P:
        def g(self, v):
            return v * scale
    return P().g(x[1])


def class_inside_reading_a_variable_in_its_body(x):
    s = x[0] * 2.0

    class P:
        k = s
    return P.k * x[1]


@pytest.mark.parametrize("f", [class_inside_reading_a_variable_in_a_method,
                               class_inside_reading_a_variable_in_its_body],
                         ids=lambda f: f.__name__)
def test_a_class_inside_reading_the_functions_variables_is_refused_at_its_line(f):
    """Run as plain Python, the class would hold the value without its gradient (a wrong
    gradient, or a crash of the method's closure) once local classes were accepted."""
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_idioms_more\.py:\d+: the class P defined inside the "
                             r"function reading its variable '(scale|s)'"):
        srcgrad.grad(f)(X4.copy())


class _WithConstant:
    k = 3.0

    def __init__(self, w):
        self.w = w


def _scaled_sum(m):
    return np.sum(m.w * m.k)


def test_a_class_attribute_read_through_a_tangent_object_is_no_tangent():
    """jvp with respect to an object, its tangent an object of the same class: reading the
    class's constant m.k through the tangent found the class's value (3.0), taken as the
    tangent of m.k: 15.0 instead of 6.0, without an error."""
    import copy
    m = _WithConstant(np.array([1.0, 2.0]))
    dm = copy.copy(m)
    dm.w = np.ones(2)
    value, tangent = srcgrad.jvp(_scaled_sum, (m,), (dm,))
    assert value == 9.0 and tangent == 6.0
