"""Everyday Python a second probe of srcgrad found differentiated wrongly, or crashing inside
srcgrad (28 Nov 2026, session 34), each checked in every mode against central differences,
or refused at the user's line.

Silently wrong numbers:

- ``b = a.copy()`` (a list's or dict's), ``b = a[:]``, then ``b[0][0] = v`` or
  ``b[0] += [v]``: a shallow copy shares its items, so Python changes ``a[0]`` too, where
  srcgrad stored into new lists; ``a`` kept its old value in the gradient. Only a root the
  function certainly built (a display, ``list(a)``) was checked at run time for other holders
  of what the store changes; any other root (a copy, a call's result) is now checked the same
  way (desugar ``item_guardable``): refused when another variable holds the item.
- The Hessian (``hessian``, ``jacfwd`` of a gradient) of code reading an object whose class
  defines ``__call__`` (a ``Model`` called as ``m(x)``, or only defining it): the batched
  forward mode stacked such objects as if they were functions, keeping example 0's, so every
  column read the first column's fields (``batching.stack``).
- ``a.add(u).add(v)`` with ``add`` changing its object and returning it: the second call ran
  as plain Python on the first one's result and its change was lost. A user's method named
  like a set's (``add``, ``discard``, ``popitem``) skipped the run-time check of a method
  changing its object, on a receiver that is a call's result; it is refused now.

- A subclass whose ``__init__`` only calls ``super().__init__(w * 3.0)``: run as plain
  Python (it stores into no attribute itself), its fields' gradients were lost. Such an
  ``__init__`` counts as changing self now (activity ``_changed_through_super``), and the
  run-time check of a method changing its object asks the parent's method for a ``super()``
  receiver (``runtime._class_called``): refused at the line.

- Reading a property in forward mode (``m.w2``, computed from ``m.w``): the tangent
  object's property ran on the tangents (``w ** 2`` of a tangent), a silently wrong jvp;
  reverse mode refused it already. An attribute a class's ``__getattr__`` computes was
  wrong in both modes (its adjoint went to a field that does not exist). Both are refused
  now, in both modes (``runtime.refuse_computed_attribute``).
- ``Registry.items.append(self)`` in a differentiated ``__init__``: a class's list, which
  outlives the call, changed as plain Python; the gradient through what it holds was lost.
  Refused at the line now.

Refused without need:

- ``enumerate(xs, start=k)`` with the keyword (``enumerate(xs, k)`` worked): refused as
  constructing an enumerate object; the keyword becomes the positional argument now.

Crashes inside srcgrad:

- ``super()`` in a method differentiated in forward mode (``super().__init__()`` in a
  constructor): the jvp's first parameter is a tangent, which Python's ``super()`` without
  arguments takes for self (TypeError). It is written ``super(__class__, self)`` now; a
  method of the parent's called through it with differentiable values is refused as such.

- A slice store into a list (``lst[::-1] = [...]``, ``lst[1:3] = [...]``): the backward
  sweep zeroed the slice with a number (TypeError). It zeroes each item now; a store
  changing the list's length is refused (its items move: the adjoint would not line up).
- ``copy.copy`` / ``copy.deepcopy`` of a list, dict or array of differentiable values were
  differentiated through the standard library's source and refused there (getattr in
  copy.py, no line of the user's); they have rules now (the copy's gradient is the
  original's).
- Reverse over reverse through a loop over a list of callable objects: ``densify`` took
  vars() of a lazy zero whose cotangent was an object.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

import srcgrad
from test_language import check_all_orders

rng = np.random.default_rng(3401)
X4 = rng.uniform(0.4, 1.2, 4)


def _told(info) -> str:
    return "\n".join([str(info.value), *getattr(info.value, "__notes__", ())])


def _line(mark: str) -> int:
    return next(i for i, text in enumerate(open(__file__).read().splitlines(), 1)
                if f"# line: {mark}" in text)


# -- slice stores into lists ----------------------------------------------------------------
def reversed_slice_store_into_a_list(x):
    lst = [0.0, 0.0, 0.0, 0.0]
    lst[::-1] = [x[0], x[1], x[2], x[3] ** 2]
    return lst[0] * 1.0 + lst[1] * 2.0 + lst[3] * 5.0


def slice_store_into_a_list(x):
    lst = [0.0, 1.0, 2.0, 3.0]
    lst[1:3] = [x[0], x[1] ** 2]
    return lst[0] * 1.0 + lst[1] * 2.0 + lst[2] * 5.0 + lst[3]


def stepped_slice_store_over_differentiable_items(x):
    lst = [x[3], x[2], 2.0, x[1]]
    lst[::2] = [x[0] ** 2, x[1] * 3.0]
    return lst[0] * 1.0 + lst[1] * 2.0 + lst[2] * 5.0 + lst[3] * 7.0


def reversed_slice_store_over_differentiable_items(x):
    lst = [x[3], x[2], x[1], x[0]]
    lst[::-1] = [x[0] ** 2, x[1] * 3.0, x[2], x[3]]
    return lst[0] * 1.0 + lst[1] * 2.0 + lst[2] * 5.0 + lst[3] * 7.0


@pytest.mark.parametrize("f", [reversed_slice_store_into_a_list, slice_store_into_a_list,
                               stepped_slice_store_over_differentiable_items,
                               reversed_slice_store_over_differentiable_items])
def test_slice_stores_into_lists(f):
    check_all_orders(f, X4.copy())


def slice_store_growing_a_list(x):
    lst = [x[3], 1.0, 2.0, 3.0]
    lst[1:2] = [x[0], x[1] ** 2]  # line: grows
    return lst[0] * 1.0 + lst[1] * 2.0 + lst[2] * 5.0 + lst[3] * 7.0 + lst[4] * 11.0


def slice_store_shrinking_a_list(x):
    lst = [x[3], x[2], 2.0, x[1]]
    lst[1:3] = [x[0] ** 2]  # line: shrinks
    return lst[0] * 1.0 + lst[1] * 2.0 + lst[2] * 5.0


@pytest.mark.parametrize("f, mark", [(slice_store_growing_a_list, "grows"),
                                     (slice_store_shrinking_a_list, "shrinks")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_a_slice_store_changing_a_lists_length_is_refused_at_its_line(f, mark):
    for run in (lambda: srcgrad.grad(f)(X4.copy()),
                lambda: srcgrad.jvp(f, (X4.copy(),), (np.ones(4),))):
        with pytest.raises(srcgrad.SrcgradError, match="changes its length") as info:
            run()
        assert f"test_probed_python2.py:{_line(mark)} " in _told(info), _told(info)


# -- copy.copy and copy.deepcopy ----------------------------------------------------------
def shallow_copy_of_a_list(x):
    a = [x[0], x[1]]
    b = copy.copy(a)
    b[0] = x[2] ** 2
    return a[0] * b[0] + b[1]


def shallow_copy_of_a_dict(x):
    d = {"a": x * 1.0}
    e = copy.copy(d)
    e["a"] = e["a"] * 2.0
    return np.sum(d["a"] * e["a"])


def deep_copy_with_a_nested_store(x):
    a = {"w": x * 1.0, "l": [x[0], x[1]]}
    b = copy.deepcopy(a)
    b["l"][0] = x[2] ** 2
    b["w"] = b["w"] * 3.0
    return a["l"][0] * np.sum(a["w"]) + b["l"][0] * np.sum(b["w"])


def deep_copy_of_a_list_appended_to(x):
    a = [[x[0]], x[1]]
    b = copy.deepcopy(a)
    b[0].append(x[2] ** 2)
    return sum(a[0]) * x[3] + sum(b[0]) + b[1]


class _Holder:
    def __init__(self, w):
        self.w = w


def copies_of_objects(x):
    p = _Holder(x * 2.0)
    q = copy.copy(p)
    q.w = q.w * x
    r = copy.deepcopy(_Holder([x * 2.0, x[0]]))
    return np.sum(p.w * q.w) + np.sum(r.w[0] * x) * r.w[1]


def copies_of_arrays_and_numbers(x):
    y = copy.copy(x)
    z = copy.deepcopy(x * 2.0)
    y[0] = 5.0
    return np.sum(y * z) + x[0] + copy.copy(x[0]) * copy.deepcopy(x[1] ** 2)


def _copy_and_change(lst):
    c = copy.copy(lst)
    c[0] = c[0] ** 3
    return c[0] + lst[0] + c[1]


def copy_of_a_parameter_in_a_helper(x):
    return _copy_and_change([x[0], x[1] * 2.0]) * x[2]


@pytest.mark.parametrize("f", [shallow_copy_of_a_list, shallow_copy_of_a_dict,
                               deep_copy_with_a_nested_store, deep_copy_of_a_list_appended_to,
                               copies_of_objects, copies_of_arrays_and_numbers,
                               copy_of_a_parameter_in_a_helper])
def test_copy_module_copies(f):
    check_all_orders(f, X4.copy())


# -- stores through the items a shallow copy shares ----------------------------------------
def list_copy_method_then_nested_store(x):
    a = [[x[0], x[1]], x[3]]
    b = a.copy()
    b[0][0] = x[2] ** 2  # line: list copy
    return a[0][0] * x[3] + b[0][0]


def dict_copy_method_then_nested_store(x):
    a = {"w": x * 1.0, "l": [x[0], x[1]]}
    b = a.copy()
    b["l"][0] = x[2] ** 2  # line: dict copy
    return a["l"][0] * np.sum(a["w"]) + b["l"][0]


def full_slice_then_nested_store(x):
    a = [[x[0], x[1]], x[3]]
    b = a[:]
    b[0][0] = x[2] ** 2  # line: full slice
    return a[0][0] * x[3] + b[0][0]


def shallow_copy_then_nested_store(x):
    a = {"w": x * 1.0, "l": [x[0], x[1]]}
    b = copy.copy(a)
    b["l"][0] = x[2] ** 2  # line: copy.copy
    return a["l"][0] * np.sum(a["w"]) + b["l"][0]


def full_slice_then_extended_item(x):
    a = [[x[0]], x[1]]
    b = a[:]
    b[0] += [x[2] ** 2]  # line: item extended
    return sum(a[0]) * x[3] + sum(b[0])


@pytest.mark.parametrize("f, mark", [(list_copy_method_then_nested_store, "list copy"),
                                     (dict_copy_method_then_nested_store, "dict copy"),
                                     (full_slice_then_nested_store, "full slice"),
                                     (shallow_copy_then_nested_store, "copy.copy"),
                                     (full_slice_then_extended_item, "item extended")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_a_store_into_an_item_a_shallow_copy_shares_is_refused(f, mark):
    # Python changes the original's item too; srcgrad's new containers did not (before: a
    # wrong gradient, no error)
    with pytest.raises(srcgrad.SrcgradError, match="something else also holds") as info:
        srcgrad.grad(f)(X4.copy())
    assert f"test_probed_python2.py:{_line(mark)}:" in _told(info), _told(info)


def copy_then_own_item_then_nested_store(x):
    a = [[x[0], x[1]], x[3]]
    b = a.copy()
    b[0] = [x[2], x[1]]
    b[0][0] = x[2] ** 2
    return a[0][0] * x[3] + b[0][0] * b[0][1]


def _nested(x):
    return [[x[0], x[1]], x[2]]


def helpers_result_then_nested_store(x):
    b = _nested(x)
    b[0][0] = x[3] ** 2
    return b[0][0] * b[0][1] + b[1]


@pytest.mark.parametrize("f", [copy_then_own_item_then_nested_store,
                               helpers_result_then_nested_store])
def test_stores_into_items_nothing_else_holds_pass(f):
    check_all_orders(f, X4.copy())


# -- objects whose class defines __call__, in forward over reverse ------------------------
class _Model:
    k = 3.0

    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.sum(self.w * x) * self.k

    def forward(self, x):
        return np.sum(np.tanh(self.w * x)) * self.k


def calling_an_object(x):
    m = _Model(x * 2.0)
    return m(x)


def a_method_of_a_callable_object(x):
    m = _Model(x ** 2)
    return m.forward(x)


class _Linear:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def __call__(self, x):
        return self.w * x + self.b


def callable_objects_in_a_loop(x):
    layers = [_Linear(x[i], x[3]) for i in range(3)]
    h = x[0]
    for layer in layers:
        h = np.tanh(layer(h))
    return h


@pytest.mark.parametrize("f", [calling_an_object, a_method_of_a_callable_object,
                               callable_objects_in_a_loop])
def test_callable_objects_at_second_order(f):
    # the Hessian's columns all read the first column's object (before: a wrong Hessian,
    # no error); the loop's reverse over reverse crashed in densify
    check_all_orders(f, X4.copy())
    assert np.allclose(srcgrad.jacfwd(srcgrad.grad(f))(X4.copy()),
                       srcgrad.jacrev(srcgrad.grad(f))(X4.copy()))


# -- a chain of calls of a method changing its object ---------------------------------------
class _Accumulator:
    def __init__(self):
        self.total = 0.0

    def add(self, v):
        self.total = self.total + v
        return self


def chained_changing_method(x):
    a = _Accumulator()
    a.add(x[0] ** 2).add(x[1] * x[2])  # line: chained add
    return a.total * x[3]


def test_a_chain_of_a_method_changing_its_object_is_refused():
    # the second add ran as plain Python on the first one's result: its change was lost
    # (before: a wrong gradient, no error)
    with pytest.raises(srcgrad.SrcgradError, match="changing its object") as info:
        srcgrad.grad(chained_changing_method)(X4.copy())
    assert f"test_probed_python2.py:{_line('chained add')}:" in _told(info), _told(info)


# -- enumerate(..., start=k) ---------------------------------------------------------------
def enumerate_with_a_start_keyword(x):
    s = 0.0
    for i, v in enumerate(x, start=2):
        s = s + v ** i
    return s


def enumerate_with_a_start_keyword_in_comprehensions(x):
    return sum(v * i for i, v in enumerate(x, start=1)) \
        + sum([v ** k for k, v in enumerate([x[0], x[1]], start=2)])


@pytest.mark.parametrize("f", [enumerate_with_a_start_keyword,
                               enumerate_with_a_start_keyword_in_comprehensions])
def test_enumerate_with_a_start_keyword(f):
    check_all_orders(f, X4.copy())


# -- super() -------------------------------------------------------------------------------
class _Base:
    def __init__(self, scale=1.0):
        self.scale = scale

    def forward(self, x):
        return np.sum(np.sin(x)) * self.scale


class _Layer(_Base):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def __call__(self, x):
        return np.sum(self.w * x) * self.scale


class _Scaled(_Base):
    def __init__(self, w):
        super().__init__(2.0)
        self.w = w * self.scale


class _OnlySuper(_Base):
    def __init__(self, w):
        super().__init__(w * 3.0)  # line: only super


class _ParentByName(_Base):
    def forward(self, x):
        return _Base.forward(self, x) * 2.0 + np.sum(x ** 2) * self.scale


def super_init_without_arguments(x):
    return _Layer(x ** 2)(x)


def super_init_with_a_constant(x):
    m = _Scaled(x)
    return np.sum(m.w * x)


def parent_method_by_name(x):
    m = _ParentByName(x[0] ** 2)
    return m.forward(x)


@pytest.mark.parametrize("f", [super_init_without_arguments, super_init_with_a_constant,
                               parent_method_by_name])
def test_super_and_parent_methods(f):
    # (forward mode crashed: super() took the jvp's tangent parameter for self)
    check_all_orders(f, X4.copy())


def super_init_storing_differentiable_values(x):
    m = _OnlySuper(x)
    return np.sum(m.scale * x)


def test_a_parents_init_storing_differentiable_values_is_refused():
    # (before: run as plain Python, m.scale's gradient was lost without an error)
    with pytest.raises(srcgrad.SrcgradError, match="parent class's method") as info:
        srcgrad.grad(super_init_storing_differentiable_values)(X4.copy())
    assert f"test_probed_python2.py:{_line('only super')}:" in _told(info), _told(info)


# -- attributes a class computes, and a class's list ---------------------------------------
class _WithProperty:
    def __init__(self, w):
        self.w = w

    @property
    def squared(self):
        return self.w ** 2


class _WithGetattr:
    def __init__(self, w):
        self._w = w

    def __getattr__(self, name):
        if name == "squared":
            return self._w ** 2
        raise AttributeError(name)


def reading_a_property(x):
    m = _WithProperty(x * 1.0)
    return np.sum(m.squared * x)  # line: property


def reading_a_computed_attribute(x):
    m = _WithGetattr(x * 1.0)
    return np.sum(m.squared * x)  # line: getattr


@pytest.mark.parametrize("f, mark, what", [(reading_a_property, "property", "property"),
                                           (reading_a_computed_attribute, "getattr",
                                            "__getattr__")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_attributes_a_class_computes_are_refused_in_every_mode(f, mark, what):
    # (before: forward mode read the tangent object's property, a wrong jvp; __getattr__'s
    # attribute was wrong in both modes)
    for run in (lambda: srcgrad.grad(f)(X4.copy()),
                lambda: srcgrad.jvp(f, (X4.copy(),), (np.ones(4),))):
        with pytest.raises(srcgrad.SrcgradError, match=what) as info:
            run()
        assert f"test_probed_python2.py:{_line(mark)} " in _told(info), _told(info)


class _Registry:
    items: list = []

    def __init__(self, w):
        self.w = w
        _Registry.items.append(self)  # line: registry


def objects_registering_themselves(x):
    _Registry.items = []
    a = _Registry(x * 2.0)
    b = _Registry(x ** 2)
    return np.sum(a.w * b.w) + sum(np.sum(r.w) for r in _Registry.items)


def unused_objects_registering_themselves(x):
    """(WRONG before, silently: the objects unused, the constructors ran as plain Python and
    the gradient through the class's list was zero.)"""
    _Registry.items = []
    _Registry(x * 2.0)  # line: unused registry
    _Registry(x ** 2)
    return sum(np.sum(r.w) for r in _Registry.items)


class _Counted:
    made = 0

    def __init__(self, w):
        self.w = w
        _Counted.made += 1


def unused_counted_object(x):
    _Counted(x * 2.0)
    return np.sum(x * x)


def test_an_unused_object_changing_its_class_is_refused_at_the_call():
    with pytest.raises(srcgrad.SrcgradError, match="changing the class '_Registry' in place, "
                                                   "which unused_objects_registering_"
                                                   "themselves\\(\\) reads") as info:
        srcgrad.grad(unused_objects_registering_themselves)(X4.copy())
    assert f"test_probed_python2.py:{_line('unused registry')}:" in _told(info), _told(info)


def test_an_unused_object_changing_a_class_the_function_does_not_read():
    check_all_orders(unused_counted_object, X4.copy())


def test_a_change_of_a_class_list_in_a_constructor_is_refused():
    with pytest.raises(srcgrad.SrcgradError, match="not a variable of") as info:
        srcgrad.grad(objects_registering_themselves)(X4.copy())
    assert f"test_probed_python2.py:{_line('registry')}:" in _told(info), _told(info)
