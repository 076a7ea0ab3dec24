"""A helper that changes its caller's object in place through another name than its
parameter: an alias (``b = a``), a view (``b = a[:2]``), a row (``for row in a``), an item of
a list (``for a in lst: a += x``), ``vars(m)``, a method of the object (``m.set_w(x)``), an
argument gathered by ``*args``. The caller runs such a helper, whose value it does not
read, as plain Python unless it knows the helper changes the argument; each of these gave a
silently wrong gradient (27 Nov 2026): activity.mutated_parameters now follows the names
bound to a parameter's objects. Each is now differentiated (checked against central
differences in every mode) or refused at the helper's line."""
from __future__ import annotations

import numpy as np
import pytest

from test_language import check_all_orders
from test_writing_calls import assert_refused_at

rng = np.random.default_rng(3109)
X4 = rng.uniform(0.4, 1.2, 4)


class Model:
    def __init__(self):
        self.W = np.zeros(4)

    def set_w(self, x):
        self.W = x * 3


def _through_vars(m, x):
    vars(m)["W"] = x * 2


def through_vars(x):
    m = Model()
    _through_vars(m, x)
    return np.sum(m.W * x)


def _store(a, x):
    a[0] = x[0] * x[1]


def _passes_on(a, x):
    _store(a, x)


def passed_on_to_another_helper(x):
    a = np.zeros(4)
    _passes_on(a, x)
    return np.sum(a * x)


def _into_an_item(lst, x):
    lst[0][1] = x[2]


def into_an_item_of_a_list(x):
    lst = [np.zeros(4), np.ones(4)]
    _into_an_item(lst, x)
    return np.sum(lst[0] * x)


def _keyword_only(x, *, out):
    out[2] = x[0] * 5


def keyword_only_parameter(x):
    a = np.zeros(4)
    _keyword_only(x, out=a)
    return np.sum(a * x)


@pytest.mark.parametrize("f", [through_vars, passed_on_to_another_helper,
                               into_an_item_of_a_list, keyword_only_parameter],
                         ids=lambda f: f.__name__)
def test_every_order(f):
    check_all_orders(f, X4)


def _alias(a, x):
    b = a
    b[0] = x[0] * x[1]  # line: alias


def through_an_alias(x):
    a = np.zeros(4)
    _alias(a, x)
    return np.sum(a * x)


def _view(a, x):
    b = a[:2]
    b[0] = x[0] * x[1]  # line: view


def through_a_view(x):
    a = np.zeros(4)
    _view(a, x)
    return np.sum(a * x)


def _rows(a, x):
    for row in a:
        row[0] = x[0] * x[1]  # line: rows


def through_rows(x):
    a = np.zeros((2, 4))
    _rows(a, x)
    return np.sum(a * x)


def _items(lst, x):
    for a in lst:
        a += x


def through_items_of_a_list(x):
    lst = [np.zeros(4), np.ones(4)]
    _items(lst, x)  # line: items
    return np.sum(lst[0] * lst[1] * x)


def _method(m, x):
    m.set_w(x)  # line: method


def through_a_method(x):
    m = Model()
    _method(m, x)
    return np.sum(m.W * x)


def _gathered(*arrs, x):
    arrs[0][0] = x[3]


def through_star_args(x):
    a = np.zeros(4)
    _gathered(a, x=x)  # line: star
    return np.sum(a * x)


def _partitioned(a):
    a.partition(1)  # line: partition


def through_partition(x):
    a = x * 2.0
    _partitioned(a)
    return np.sum(a * np.arange(4.0))


def _added_by_method(a, x):
    a.__iadd__(x)  # line: iadd helper


def through_an_operator_method(x):
    a = np.ones(4)
    _added_by_method(a, x)
    return np.sum(a * x)


def operator_method_here(x):
    a = np.ones(4)
    a.__iadd__(x)  # line: iadd here
    return np.sum(a * x)


@pytest.mark.parametrize("f, mark", [(through_partition, "partition"),
                                     (through_an_operator_method, "iadd helper"),
                                     (operator_method_here, "iadd here")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_methods_missing_from_the_old_tables(f, mark):
    """``a.partition(k)`` and ``a.__iadd__(v)`` change ``a`` too: missing from activity's
    method table, a helper doing them ran as plain Python (a silently wrong gradient, session
    32); ``a.__iadd__(v)`` in the differentiated function itself carried no gradient."""
    assert_refused_at(f, X4, __file__, f"# line: {mark}")


@pytest.mark.parametrize("f, mark", [(through_an_alias, "alias"), (through_a_view, "view"),
                                     (through_rows, "rows"),
                                     (through_items_of_a_list, "items"),
                                     (through_a_method, "method"),
                                     (through_star_args, "star")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_refused_at_the_line(f, mark):
    assert_refused_at(f, X4, __file__, f"# line: {mark}")
