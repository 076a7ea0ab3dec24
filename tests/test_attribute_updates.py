"""Attributes of objects in differentiated code (issue 9): stores into attributes, setattr,
and in-place changes of the objects attributes or items hold. Each program either gets its
gradient checked against central differences, or is refused at the user's line with a hint;
never a gradient that silently misses the store."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import UnsupportedSyntaxError

X3 = np.array([0.3, -0.7, 1.1])


class Model:
    pass


def _refused_at(f, line, match=""):
    """``srcgrad.grad(f)`` raises at this file's line starting with ``line`` (in ``f``, or
    in the helper whose source holds it)."""
    lines, start = inspect.getsourcelines(f)
    at = start + next(i for i, text in enumerate(lines) if text.strip().startswith(line))
    with pytest.raises(UnsupportedSyntaxError,
                       match=rf"test_attribute_updates\.py:{at}:.*" + match):
        srcgrad.grad(f)(X3.copy())


# -- in-place changes of an object an attribute or an item holds: refused, located -------------
def append_to_item(w):
    d = {"hs": []}
    for k in range(3):
        d["hs"].append(w * k)
    return np.sum(d["hs"][2] * d["hs"][1])


def append_to_list_item(w):
    rows = [[], []]
    rows[0].append(w * 2.0)
    return np.sum(rows[0][0])


def update_attribute_dict(w):
    s = SimpleNamespace(d={})
    s.d.update({"a": w * 2.0})
    return np.sum(s.d["a"])


def append_to_attribute(w):
    s = SimpleNamespace(hs=[])
    for k in range(3):
        s.hs.append(w * k)
    return np.sum(s.hs[2] * s.hs[1])


def append_through_setdefault(w):
    d = {}
    d.setdefault("a", []).append(w)
    return np.sum(d["a"][0])


def _append_attribute(s, v):
    s.hs.append(v)


def helper_appends_to_attribute(w):
    s = SimpleNamespace(hs=[])
    _append_attribute(s, w * 2.0)
    return np.sum(s.hs[0])


@pytest.mark.parametrize("f, line", [
    (append_to_item, 'd["hs"].append'),
    (append_to_list_item, "rows[0].append"),
    (update_attribute_dict, "s.d.update"),
    (append_to_attribute, "s.hs.append"),
    (append_through_setdefault, "d.setdefault"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_changing_an_attribute_or_item_object_is_refused(f, line):
    """Python changes the object the attribute or item holds; srcgrad's rewrite as new
    values follows variables only. The gradient through the stored values was lost (zero)."""
    _refused_at(f, line, "changing the object .* in place.*Build the list or dict in a variable")


def test_helper_changing_an_attribute_object_is_refused():
    lines, start = inspect.getsourcelines(_append_attribute)
    with pytest.raises(UnsupportedSyntaxError,
                       match=rf"test_attribute_updates\.py:{start + 1}:.*_append_attribute"):
        srcgrad.grad(helper_appends_to_attribute)(X3.copy())


# -- setattr ------------------------------------------------------------------------------------
def setattr_under_a_variable_name(w):
    m = Model()
    for name in ("a", "b"):
        setattr(m, name, w * 2.0)
    return np.sum(m.a * m.b)


def test_setattr_under_a_name_not_written_out_is_refused():
    _refused_at(setattr_under_a_variable_name, "setattr(m, name",
                "name not written out.*obj.W = v")
