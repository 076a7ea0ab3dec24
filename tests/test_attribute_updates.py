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


# -- in-place changes of an object an attribute or an item holds: new objects along the path --
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


def _items_of(d, key):
    return d[key]


def append_through_a_call_result(w):
    d = {"a": []}
    _items_of(d, "a").append(w)
    return np.sum(d["a"][0])


def _append_attribute(s, v):
    s.hs.append(v)


def helper_appends_to_attribute(w):
    s = SimpleNamespace(hs=[])
    _append_attribute(s, w * 2.0)
    return np.sum(s.hs[0])


def test_changing_an_attribute_or_item_object_every_mode():
    """Python changes the object the attribute or item holds; srcgrad rebuilds the path
    (s = with_attr(s, "hs", list_append(s.hs, v))) once nothing else holds it (the gradient
    through the stored values was lost before these were refused)."""
    from test_written_back_more import check_every_mode
    for f in (append_to_item, append_to_list_item, update_attribute_dict, append_to_attribute,
              helper_appends_to_attribute, append_through_setdefault):
        check_every_mode(f, X3.copy())


def test_changing_a_call_result_in_place_is_refused():
    # (d.setdefault(k, []).append(v), refused here before, is d[k].append(v) since s31:
    # tests/test_idioms_more.py)
    _refused_at(append_through_a_call_result, "_items_of(d",
                "changing the object .* in place.*Build the list or dict in a variable")


# -- setattr ------------------------------------------------------------------------------------
def setattr_under_a_variable_name(w):
    m = Model()
    for name in ("a", "b"):
        setattr(m, name, w * 2.0)
    return np.sum(m.a * m.b)


def test_setattr_under_a_name_not_written_out_is_refused():
    _refused_at(setattr_under_a_variable_name, "setattr(m, name",
                "name not written out.*obj.W = v")


# -- stores into attributes: supported, every order -------------------------------------------
from dataclasses import dataclass  # noqa: E402

from test_written_back_more import check_every_mode  # noqa: E402


def _scale(m):
    m.W = m.W * 3.0


def _scale_augmented(m):
    m.W *= 3.0


def _scale_and_sum(m):
    m.W = m.W * 2.0
    return np.sum(m.W)


def _read_W(m):
    return np.sum(m.W ** 2)


@dataclass
class _Layer:
    W: object = None
    b: float = 0.5


class _Cell:
    def __init__(self):
        self.h = 0.0


def local_object(w):
    m = Model()
    m.W = w * 2.0
    m.b = np.ones(3)
    return np.sum(np.tanh(m.W) * m.b)


def helper_stores_attribute(w):  # the example
    m = Model()
    m.W = w * 2.0
    m.b = np.ones(3)
    _scale(m)
    return np.sum(np.tanh(m.W) * m.b)


def helper_updates_attribute(w):
    m = Model()
    m.W = np.sin(w)
    _scale_augmented(m)  # (m.W *= 3.0: in place on m.W's array, which nothing else holds)
    return np.sum(m.W ** 2)


def helper_called_twice(w):
    m = Model()
    m.W = w * 1.0
    _scale(m)
    _scale(m)
    return np.sum(np.tanh(m.W))


def helper_stores_and_returns(w):
    m = Model()
    m.W = w * 1.0
    r = _scale_and_sum(m)
    return np.sum(m.W) + r


def helper_reads_stored_attribute(w):
    m = Model()
    m.W = w
    return _read_W(m)


def helper_given_the_input_itself(w):
    m = Model()
    m.W = w  # (_scale stores a new array: w unchanged, as in Python)
    _scale(m)
    return np.sum(m.W * w)


def setattr_written_out(w):
    m = Model()
    setattr(m, "W", w * 3.0)
    setattr(m, "W", m.W * np.sin(w))
    return np.sum(np.cos(m.W))


def dunder_setattr(w):
    m = Model()
    m.__setattr__("W", w * 3.0)
    object.__setattr__(m, "b", m.W * w)
    return np.sum(m.b)


def augmented_attribute(w):
    m = Model()
    m.W = w * 1.0
    m.W += np.sin(w)
    m.W *= w
    return np.sum(m.W)


def old_value_kept(w):
    m = Model()
    m.W = w * 1.0
    old = m.W
    m.W = m.W * 2.0
    return np.sum(old * m.W)


def store_in_a_loop(w):
    m = Model()
    m.h = w * 1.0
    for _ in range(3):
        m.h = np.tanh(m.h * w)
    return np.sum(m.h)


def store_in_branches(w):
    m = Model()
    m.W = w * 1.0
    if np.sum(w) > 0:
        m.W = m.W * 2.0
    else:
        m.W = np.sin(m.W)
    return np.sum(m.W ** 2)


def objects_made_in_a_loop(w):
    out = []
    for k in range(3):
        m = Model()
        m.W = w * k
        out.append(m)
    return np.sum(out[2].W * out[1].W)


def two_objects(w):
    a = Model()
    b = Model()
    a.W = w * 2.0
    b.W = a.W * w
    a.W = b.W + 1.0
    return np.sum(a.W * b.W)


def constant_attribute_too(w):
    m = Model()
    m.scale = 2.0
    m.W = w * m.scale
    m.scale = 3.0
    return np.sum(m.W * m.scale)


def namespace_and_dataclass(w):
    s = SimpleNamespace()
    s.h = np.sin(w)
    layer = _Layer()
    layer.W = s.h * w
    layer.W = np.tanh(layer.W) + layer.b
    return np.sum(layer.W * s.h)


def object_with_init(w):
    c = _Cell()
    c.h = c.h + w
    c.h = c.h * np.cos(w)
    return np.sum(c.h)


@pytest.mark.parametrize("f", [
    local_object, helper_stores_attribute, helper_updates_attribute, helper_called_twice,
    helper_stores_and_returns, helper_reads_stored_attribute, helper_given_the_input_itself,
    setattr_written_out, dunder_setattr, augmented_attribute, old_value_kept, store_in_a_loop,
    store_in_branches, objects_made_in_a_loop, two_objects, constant_attribute_too,
    namespace_and_dataclass, object_with_init,
], ids=lambda f: f.__name__)
def test_attribute_stores_every_mode(f):
    """m.W = v on an object the function makes (or a helper handed it): the value Python
    computes; gradient, vjp, jvp, hvp, Hessian and grad of grad against differences."""
    check_every_mode(f, X3.copy())


# -- what Python would change elsewhere: refused at run time, at the store or the call --------
def alias_then_store(w):
    m = Model()
    m.W = w * 1.0
    n = m
    m.W = m.W * 5.0
    return np.sum(n.W)


def held_by_a_list_then_store(w):
    m = Model()
    m.W = w * 1.0
    held = [m]
    m.W = m.W * 2.0
    return np.sum(held[0].W)


def augmented_on_the_input(w):
    m = Model()
    m.W = w  # (m.W += 1.0 changes w itself)
    m.W += 1.0
    return np.sum(m.W * w)


def helper_given_an_object_held_elsewhere(w):
    m = Model()
    m.W = w * 1.0
    held = [m]
    _scale(m)
    return np.sum(held[0].W)


def helper_updating_the_input_in_place(w):
    m = Model()
    m.W = w
    _scale_augmented(m)
    return np.sum(m.W * w)


class _Doubling:
    @property
    def W(self):
        return self._w

    @W.setter
    def W(self, v):
        self._w = v * 2


def property_setter(w):
    p = _Doubling()
    p.W = w * 1.0
    return np.sum(p.W)


def nested_attribute(w):
    m = Model()
    m.W = w
    outer = Model()
    outer.inner = m
    outer.inner.W = outer.inner.W * 2.0
    return np.sum(m.W)


@pytest.mark.parametrize("f, line, match", [
    (alias_then_store, "m.W = m.W * 5.0", "changes an object that something else also holds"),
    (held_by_a_list_then_store, "m.W = m.W * 2.0", "something else also holds"),
    (augmented_on_the_input, "m.W += 1.0", "an array or list that something else holds"),
    (helper_given_an_object_held_elsewhere, "_scale(m)", "updates its argument 'm' in place"),
    (helper_updating_the_input_in_place, "_scale_augmented(m)", "updates its argument"),
    (nested_attribute, "outer.inner.W =", "changes in place an object.*something else"),
], ids=lambda v: getattr(v, "__name__", "") if callable(v) else None)
def test_stores_python_would_see_elsewhere_are_refused(f, line, match):
    """Python changes the one object (or array) other names hold; srcgrad's new object
    would leave those unchanged: refused at the user's line (the value Python gives differs
    from the rewrite's, so a gradient would be wrong)."""
    _refused_at(f, line, match)


def test_a_class_running_code_on_the_store_is_refused():
    lines, start = inspect.getsourcelines(property_setter)
    with pytest.raises(srcgrad.errors.UnsupportedFeatureError,
                       match=rf"test_attribute_updates\.py:{start + 2}: .*property"):
        srcgrad.grad(property_setter)(X3.copy())


_KEPT = []


def append_to_a_global_list(w):
    _KEPT.append(w * 2.0)
    return np.sum(w)


def test_append_to_a_global_list_is_refused():
    """Rewritten as a new list, the global's name became a local one (UnboundLocalError
    raised from generated code)."""
    _refused_at(append_to_a_global_list, "_KEPT.append", "not a variable of")


# -- objects made from differentiable values: SimpleNamespace, plain dataclasses ---------------
@dataclass
class _Dense:
    W: object
    b: float = 0.5


def namespace_of_values(w):
    s = SimpleNamespace(a=w, b=2.0)
    s.a = s.a * s.b + np.sin(w)
    return np.sum(s.a ** 2)


def dataclass_of_values(w):
    layer = _Dense(w * 2.0)
    layer.W = np.tanh(layer.W) + layer.b
    return np.sum(layer.W * w)


def _advance(state, x):
    state.h = state.h * x + 1.0


def namespace_state_through_a_helper(w):
    state = SimpleNamespace(h=w * 1.0)
    for _ in range(3):
        _advance(state, np.sin(w))
    return np.sum(state.h)


@pytest.mark.parametrize("f", [namespace_of_values, dataclass_of_values,
                               namespace_state_through_a_helper], ids=lambda f: f.__name__)
def test_objects_made_from_values_every_mode(f):
    """SimpleNamespace(a=v) and a dataclass's generated __init__ only store their
    arguments: made with None there, then each stored as m.a = v."""
    check_every_mode(f, X3.copy())


class _Counter:
    def __init__(self, v):
        self.v = v * 1.0


def class_with_its_own_init(w):
    c = _Counter(w)
    return np.sum(c.v)


def test_a_class_with_its_own_init_every_mode():
    """(Refused at the construction until s31: now made by self = new_instance(cls);
    cls.__init__(self, ...), adapters.constructor_adapter; tests/test_idioms_more.py.)"""
    check_every_mode(class_with_its_own_init, X3.copy())


# -- numpy writing into an existing array (each gave a gradient that missed the write, without
# an error): out=, np.copyto and np.add.at are element stores since s31 (tests/
# test_writing_calls.py), checked in every mode here; sort in place stays refused
def multiply_into(w):
    s = SimpleNamespace(W=w * 1.0)
    np.multiply(s.W, 2.0, out=s.W)
    return np.sum(s.W)


def copy_into(w):
    v = np.zeros(3)
    np.copyto(v, w * 2.0)
    return np.sum(v * w)


def add_at(w):
    v = w * 1.0
    np.add.at(v, [0, 0], w[1])
    return np.sum(v)


def sort_in_place(w):
    v = w * 1.0
    v.sort()
    return np.sum(v * np.arange(3))


@pytest.mark.parametrize("f", [multiply_into, copy_into, add_at], ids=lambda f: f.__name__)
def test_numpy_writes_into_arrays_every_mode(f):
    check_every_mode(f, X3.copy())


def test_sorting_in_place_is_refused():
    """It gave a gradient that missed the write, without an error."""
    _refused_at(sort_in_place, "v.sort()", "v.sort.*changes in place a list or array holding")


def _summary(v, out="sum"):
    return np.sum(v) if out == "sum" else np.mean(v)


def summary_with_an_out_parameter(w):
    return _summary(w * w, out="mean") + _summary(np.sin(w), out="sum")


def test_a_user_function_s_own_out_parameter_is_an_ordinary_argument():
    """Only numpy's ``out=`` writes into an array: a user's helper with a parameter of that
    name is differentiated from its source like any other."""
    check_every_mode(summary_with_an_out_parameter, X3.copy())
