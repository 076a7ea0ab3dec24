"""A helper changing its caller's list, dict or array in place while the caller keeps reading
it (issue 9): the call site takes the changed container back (``r = h(xs)`` runs as ``_r, xs
= h'(xs); r = _r``, h' returning xs after its result), so values and gradients are Python's.
What Python would make visible through another name of the caller is refused at the call's
line, at run time."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import UnsupportedSyntaxError
from test_language import check_all_orders

rng = np.random.default_rng(62)
X3 = rng.uniform(0.5, 1.5, 3)


# -- helpers of the kinds real code writes -------------------------------------------------------
def _push(stack, x):
    stack.append(np.sin(x))


def _add_layer(layers, n, x):
    layers.append(x[:n] * 2.0)
    return len(layers)


def _update(params, grads, lr):
    for k in params:
        params[k] = params[k] - lr * grads[k]


def _scale_item(ws, i, x):
    ws[i] = ws[i] * x
    return np.sum(ws[i])


def _push_twice(stack, x):  # a helper handing the list on to another that changes it
    _push(stack, x)
    _push(stack, x * x)
    return stack[-1]


def _fill_to(stack, x, n):  # recursion
    if len(stack) < n:
        stack.append(stack[-1] * x)
        _fill_to(stack, x, n)


def _maybe_push(stack, x, flag):  # mutation in a branch
    if flag:
        stack.append(x * 3.0)
    else:
        stack[0] = stack[0] + x
    return flag


def _push_and_return(stack, x):  # the list itself returned
    stack.append(np.cos(x))
    return stack


def _set_row(a, x):  # an array changed in place
    a[0] = x[0] * x[1]


def pushes_then_reads(x):
    s = [x]
    _push(s, x * 2.0)
    _push(s, x)
    return np.sum(s[0] * s[1] + s[2])


def adds_layers(x):
    layers = []
    n = _add_layer(layers, 2, x)
    n = n + _add_layer(layers, 3, x)
    return np.sum(layers[0]) * np.sum(layers[1] ** 2) + n


def optimiser_update(x):
    params = {"w": x * 1.0, "b": x ** 2}
    grads = {"w": np.sin(x), "b": x}
    _update(params, grads, 0.1)
    _update(params, grads, 0.2)
    return np.sum(params["w"] * params["b"])


def item_scaled(x):
    ws = [x, x ** 2, np.ones(3)]
    t = _scale_item(ws, 1, x)
    return t + np.sum(ws[1] * ws[0])


def nested_helpers(x):
    s = [x]
    last = _push_twice(s, x)
    return np.sum(last * s[0]) + np.sum(s[1] * s[2])


def recursive_fill(x):
    s = [x]
    _fill_to(s, x, 4)
    return np.sum(s[3] * s[1])


def loop_calling_the_helper(x):
    s = [x]
    for k in range(3):
        _push(s, s[-1] * (k + 1.0))
    return np.sum(s[1] + s[2] * s[3])


def branches_in_the_helper(x):
    s = [x * 1.0]
    _maybe_push(s, x, True)
    _maybe_push(s, x * x, False)
    return np.sum(s[0] * s[1])


def returns_the_list(x):
    s = [x]
    t = _push_and_return(s, x)  # t is s, as in Python
    u = s[1] * 0.5
    return np.sum(t[1] * s[0]) + np.sum(u) + len(t)


def array_row_set(x):
    a = np.ones(3) * x
    _set_row(a, x)
    return np.sum(a ** 2)


def call_in_a_branch(x):
    s = [x]
    if np.sum(x) > 0:
        _push(s, x)
    else:
        _push(s, -x)
    return np.sum(s[0] * s[-1])


CASES = [pushes_then_reads, adds_layers, optimiser_update, item_scaled, nested_helpers,
         recursive_fill, loop_calling_the_helper, branches_in_the_helper, returns_the_list,
         array_row_set, call_in_a_branch]


@pytest.mark.parametrize("f", CASES)
def test_written_back_at_every_order(f):
    assert np.isclose(srcgrad.value_and_grad(f)(X3)[0], f(X3.copy()))
    check_all_orders(f, X3)


@pytest.mark.parametrize("f", [pushes_then_reads, optimiser_update, nested_helpers])
def test_written_back_vjp(f):
    value, back = srcgrad.vjp(f, X3)
    assert np.isclose(value, f(X3))
    assert np.allclose(back(1.0)[0], srcgrad.grad(f)(X3))


def _log(history, x):
    history.append(float(np.sum(x)))  # a float: carries no gradient


def logs_and_reads(x):
    history = [0.0]
    _log(history, x)
    _log(history, x * 2.0)
    return np.sum(x ** 2) + len(history)


def test_a_call_carrying_no_gradient_still_changes_the_list():
    # the call's result reaches nothing differentiable: run as plain Python, which changes
    # the caller's list itself, taken back as it is
    assert srcgrad.value_and_grad(logs_and_reads)(X3)[0] == pytest.approx(logs_and_reads(X3))
    assert np.allclose(srcgrad.grad(logs_and_reads)(X3), 2 * X3)


# -- what Python makes visible through another name: refused at the call's line ----------------
def alias_of_the_list(x):
    s = [x]
    t = s
    _push(s, x)  # Python changes t too
    return np.sum(t[-1] * s[0])


def list_held_by_another(x):
    s = [x]
    outer = [s]
    _push(s, x)  # Python changes outer[0] too
    return np.sum(outer[0][-1]) + np.sum(s[0])


def array_viewed_elsewhere(x):
    a = np.ones(3) * x
    v = a[:2]
    _set_row(a, x)  # Python changes v too
    return np.sum(a * a) + np.sum(v)


def returned_list_then_called_again(x):
    s = [x]
    t = _push_and_return(s, x)
    _push(s, x)  # t is s: Python changes t too
    return np.sum(t[-1]) + np.sum(s[0])


@pytest.mark.parametrize("f, line", [
    (alias_of_the_list, "_push(s, x)"),
    (list_held_by_another, "_push(s, x)"),
    (array_viewed_elsewhere, "_set_row(a, x)"),
    (returned_list_then_called_again, "_push(s, x)")])
def test_changes_seen_through_another_name_are_refused_at_the_call(f, line):
    _refused_at(f, line)


def _refused_at(f, line):
    lines, start = inspect.getsourcelines(f)
    at = start + next(i for i, text in enumerate(lines) if text.strip().startswith(line))
    with pytest.raises(UnsupportedSyntaxError, match=rf"test_written_back\.py:{at}:"):
        srcgrad.grad(f)(X3)


def test_the_refused_cases_differ_from_a_rewrite():
    s = [X3]
    t = s
    _push(s, X3)
    assert len(t) == 2  # Python changed the other name too


def _push_to_attribute(holder, x):
    holder.items.append(x * 2.0)


def rebinds_the_parameter_first(x):
    s = [x]
    _rebinding(s, x)
    return np.sum(s[-1])


def _rebinding(stack, x):
    stack.append(x)
    stack = [x * 5.0]  # the caller's list keeps what was appended before
    stack.append(x)


def test_a_helper_rebinding_its_parameter_stays_refused():
    with pytest.raises(srcgrad.SrcgradError, match="in place|caller's"):
        srcgrad.grad(rebinds_the_parameter_first)(X3)


def _bump(n, x):
    n += 1  # on a number: rebinds n, the caller's n is unchanged
    return x * n


def augmented_number_parameter(x):
    n = 1.0
    y = _bump(n, x)
    return np.sum(y) * n


def test_an_augmented_number_parameter_is_not_taken_back():
    g = srcgrad.grad(augmented_number_parameter)(X3)
    assert np.allclose(g, np.full(3, 2.0))


# -- more call shapes ----------------------------------------------------------------------------
def _pop(stack):
    return stack.pop()  # the value first, then the list as pop left it


def pops_and_reads(x):
    s = [x, x * 2.0, x * 3.0]
    v = _pop(s)
    return np.sum(v * s[-1]) + len(s)


def _two(a, b, x):
    a.append(x)
    b["k"] = x * 2.0


def two_containers_by_keyword(x):
    s, d = [x], {"k": x}
    _two(b=d, a=s, x=x)
    return np.sum(s[1] * d["k"] * s[0])


def _append_len(stack, x):
    stack.append(x * x)
    return len(stack)


def call_inside_an_expression(x):
    s = [x]
    y = np.sum(x) * _append_len(s, x) + 1.0
    return y * np.sum(s[-1])


def an_item_passed_along(x):
    s = [x * 1.0]
    _push(s, s[0])  # _push changes no item of s in place: s[0] may go along
    return np.sum(s[-1] * s[0])


def grows_while_iterated(x):
    s = [x, x * 2.0]
    total = 0.0
    for v in s:  # Python's iterator sees what _push appends
        if len(s) < 4:
            _push(s, v)
        total = total + np.sum(v)
    return total


def _ret_pair(stack, x):
    stack.append(x)
    return x * 2.0, len(stack)


def unpacks_the_result(x):
    s = [x]
    a, n = _ret_pair(s, x)
    return np.sum(a * s[-1]) * n


MORE = [pops_and_reads, two_containers_by_keyword, call_inside_an_expression,
        an_item_passed_along, grows_while_iterated, unpacks_the_result]


@pytest.mark.parametrize("f", MORE)
def test_more_call_shapes_at_every_order(f):
    assert np.isclose(srcgrad.value_and_grad(f)(X3)[0], f(X3.copy()))
    check_all_orders(f, X3)


def vector_of_pushes(x):
    return np.sin(x) * pushes_then_reads(x)


def test_jacobians_through_a_written_back_helper():
    # jacfwd runs the jvp batched: its sparse call sites keep what the call takes back
    numeric = np.stack([(vector_of_pushes(X3 + 1e-6 * e) - vector_of_pushes(X3 - 1e-6 * e))
                        / 2e-6 for e in np.eye(3)], axis=-1)
    assert np.allclose(srcgrad.jacfwd(vector_of_pushes)(X3), numeric, rtol=1e-6, atol=1e-8)
    assert np.allclose(srcgrad.jacrev(vector_of_pushes)(X3), numeric, rtol=1e-6, atol=1e-8)


def _two_lists(a, b, x):
    a.append(x)
    b.append(x * 3.0)


def same_list_twice(x):
    s = [x]
    _two_lists(s, s, x)  # a and b are one list in Python
    return np.sum(s[-1])


def _scale_first(ws, x):
    ws[0] *= x  # the array itself, in place


def item_held_by_another_variable(x):
    a = x * 1.0
    s = [a]
    _scale_first(s, x)  # Python changes a too
    return np.sum(s[0]) + np.sum(a)


@pytest.mark.parametrize("f, line", [
    (same_list_twice, "_two_lists(s, s, x)"),
    (item_held_by_another_variable, "_scale_first(s, x)")])
def test_more_sharing_refused_at_the_call(f, line):
    _refused_at(f, line)


# -- calls carrying no gradient run as Python, on copies of what they change -------------------
def _double_first(ws, x):
    ws[0] *= 2.0  # the array itself, in place


def handed_over_to_a_plain_call(x):
    s = [x * 2.0]
    y = np.sum(s[0] * x)  # the backward sweep reads s[0]
    _double_first(s, 1.0)  # s is read no more: handed over, and run as plain Python
    return y * np.sum(x)


def taken_back_from_a_plain_call(x):
    s = [x * 2.0]
    y = np.sum(s[0] * x)
    _double_first(s, 1.0)  # s read afterwards, but carrying no gradient to the result
    return y + len(s) + float(np.sum(s[0]))


@pytest.mark.parametrize("f", [handed_over_to_a_plain_call, taken_back_from_a_plain_call])
def test_a_plain_call_leaves_what_the_backward_sweep_reads(f):
    # _double_first used to double, in place, the array the backward sweep of s[0] * x
    # reads: a silent wrong gradient (handed_over_to_a_plain_call, before write_back too)
    assert np.isclose(srcgrad.value_and_grad(f)(X3)[0], f(X3.copy()))
    check_all_orders(f, X3)


# -- the pass on its own ------------------------------------------------------------------------
def test_return_written_back_on_a_small_tree():
    import types

    import gast

    from srcgrad.codegen import to_source
    from srcgrad.naming import Namer
    from srcgrad.transforms.writeback import return_written_back, writeback_mark

    tree = gast.parse("def h(xs, d, v):\n"
                      "    if v:\n"
                      "        return xs.pop()\n"
                      "    xs.append(v)\n"
                      "    d['k'] = v\n").body[0]
    ctx = types.SimpleNamespace(consumed=frozenset({"xs", "d", writeback_mark("xs"),
                                                    writeback_mark("d")}),
                                namer=Namer.for_tree(tree))
    text = to_source(return_written_back(tree, ctx))
    assert "_value1 = xs.pop()" in text and "return _value1, d, xs" in text
    assert text.rstrip().endswith("return None, d, xs")


def test_writeback_parameters_of_small_trees():
    import gast

    from srcgrad.transforms.writeback import surely_mutated, writeback_parameters

    def params(text):
        tree = gast.parse(text).body[0]
        return writeback_parameters(tree, surely_mutated(tree))

    assert params("def h(xs, v):\n    xs.append(v)\n") == {"xs"}
    assert params("def h(d, v):\n    for k in d:\n        d[k] = d[k] * v\n") == {"d"}
    assert params("def h(n, v):\n    n += v\n") == set()  # a number rebinds
    assert params("def h(xs, v):\n    xs.append(v)\n    xs = [v]\n") == set()  # rebound
    assert params("def h(xs, v):\n    xs.append(v)\n    yield v\n") == set()  # generator
    assert params("def h(xs, v):\n    xs.append(v)\n    f = lambda: xs\n") == set()


# -- a callee looked up at run time (a closure's cell) cannot take back: refused at the call ------
def _make_closure_pusher():
    def push(stack, x):
        stack.append(np.sin(x))

    def f(x):
        s = [x]
        push(s, x)  # run as plain Python, its append was lost to the tape
        return np.sum(s[-1] * s[0])
    return f


def test_a_closure_changing_a_callers_list_is_refused_at_the_call():
    # was a silent wrong gradient (the call, carrying no result, ran as plain Python)
    f = _make_closure_pusher()
    lines, start = inspect.getsourcelines(_make_closure_pusher)
    at = start + next(i for i, text in enumerate(lines) if text.strip().startswith("push(s"))
    with pytest.raises(UnsupportedSyntaxError, match=rf"test_written_back\.py:{at}:"):
        srcgrad.grad(f)(X3)


# -- the shape the fuzzer's container helpers write (docs/fuzzing.md, seeds 56-58) --------------
def _replace_last_layer(p):
    p[-1] = (p[-1][0] * 0.5, np.tanh(p[-1][1]))
    return np.sum(p[0][1])


def layers_changed_by_a_helper(x):
    params = [(np.outer(x, x), x * 1.0), (np.eye(3) * x, x ** 2)]
    t = _replace_last_layer(params)
    a = x
    for W, b in params:  # the caller reads params afterwards: Python shows it the new layer
        a = np.tanh(W @ a + b)
    return np.sum(a) + t


def test_the_fuzzers_layer_helper_is_taken_back():
    # reverse over reverse of a tuple of arrays stored into a list slot raised numpy's
    # inhomogeneous-shape error from runtime.broadcast_like, with or without a helper
    # (test_param_containers.py); it is checked at every order now
    f = layers_changed_by_a_helper
    assert np.isclose(srcgrad.value_and_grad(f)(X3)[0], f(X3.copy()))
    check_all_orders(f, X3)
