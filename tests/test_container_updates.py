"""In-place updates of arrays held in lists and dicts (issue 9): rewritten as new containers
when, at run time, nothing else holds what Python would change in place; refused, with the
user's line, when something does (another slot, another variable, a global, a view)."""
from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import UnsupportedSyntaxError
from test_language import _fd_gradient, check_all_orders

rng = np.random.default_rng(22)
X3 = rng.uniform(0.5, 1.5, 3)
X4 = rng.uniform(0.5, 1.5, 4)


def state_dict_rnn(x):
    state = {"h": np.zeros(3), "c": np.ones(3)}
    for i in range(3):
        state["h"][i] = x[i] * state["c"][i]
        state["c"] += x
    return np.sum(state["h"] ** 2)


def rows_of_a_comprehension(x):
    rows = [np.zeros(4) for _ in range(3)]
    for k in range(3):
        rows[k][1:] += x[k] * x[1:]
    return sum(np.sum(r ** 2) for r in rows)


def rows_updated_whole(x):
    rows = [np.zeros(4), np.ones(4)]
    for k in range(2):
        rows[k] += x * (k + 1.0)
        rows[k] *= x
    return np.sum(rows[0] * rows[1])


def list_of_arrays_appended(x):
    rows = []
    for k in range(3):
        rows.append(np.full(3, float(k)))
    for k in range(3):
        rows[k][k] = np.sin(x[k]) * rows[k][k - 1]
        rows[k] -= x ** 2
    return np.sum(rows[0] * rows[1] + rows[2])


def dict_of_lists_of_arrays(x):
    layers = {"w": [np.ones(3), np.ones(3)], "n": 0.0}
    for step in range(2):
        layers["w"][step][step:] *= x[step:]
        layers["n"] += np.sum(layers["w"][step])
    return layers["n"] * np.sum(layers["w"][0] * layers["w"][1])


def item_copied_first(x):
    a = np.ones(3)
    rows = [a.copy(), a.copy()]
    rows[0][1] = x[0] * x[1]
    rows[1] += x
    return np.sum(rows[0] * rows[1]) + np.sum(a)


def list_copy_of_rows(x):
    rows = [np.ones(3), np.zeros(3)]
    other = list(rows)
    other[1] = x * 1.0  # a new array in the copy's slot: rows alone holds its own
    rows[1] += x
    return np.sum(rows[1] * other[1]) + np.sum(other[0])


@pytest.mark.parametrize("f, x", [(state_dict_rnn, X3), (rows_of_a_comprehension, X4),
                                  (rows_updated_whole, X4), (list_of_arrays_appended, X3),
                                  (dict_of_lists_of_arrays, X3), (item_copied_first, X3),
                                  (list_copy_of_rows, X3)])
def test_updates_of_unshared_items_at_every_order(f, x):
    check_all_orders(f, x)
    v = rng.standard_normal(x.shape)
    hvp = srcgrad.hvp(f, (x,), (v,))
    hvp = hvp[0] if isinstance(hvp, tuple) else hvp
    g = srcgrad.grad(f)
    numeric = (g(x + 1e-6 * v) - g(x - 1e-6 * v)) / 2e-6
    assert np.allclose(hvp, numeric, rtol=1e-5, atol=1e-6), (hvp, numeric)


def test_value_and_inputs_kept():
    """The gradient's value is the plain call's, and the argument is not changed."""
    x = X4.copy()
    value, g = srcgrad.value_and_grad(rows_of_a_comprehension)(x)
    assert value == pytest.approx(rows_of_a_comprehension(X4.copy()))
    assert np.array_equal(x, X4)
    assert np.allclose(g, _fd_gradient(rows_of_a_comprehension, X4), rtol=1e-6, atol=1e-8)


# -- refused: something else holds what Python changes in place; a naive rewrite would give
# the value of the function where that other holder did not change (each checked below)

def same_array_in_every_slot(x):
    rows = [np.zeros(3)] * 2  # one array, twice
    rows[0] += x
    return np.sum(rows[1] * x)


def item_also_a_variable(x):
    h = np.zeros(3)
    state = {"h": h}
    state["h"][0] = x[0] * 2.0
    return np.sum(h * x)


def item_is_a_view_of_a_variable(x):
    base = np.zeros(4)
    rows = [base[:2], base[2:]]
    rows[1][0] = x[0] * x[1]
    return np.sum(base * x)


def container_aliased(x):
    state = {"h": np.zeros(3)}
    s2 = state
    state["h"] = x * 2.0
    return np.sum(s2["h"] * x)


def container_aliased_item_updated(x):
    rows = [np.zeros(3)]
    same = rows
    rows[0] += x
    return np.sum(same[0] * x)


def inner_list_also_a_variable(x):
    inner = [np.zeros(3)]
    state = {"a": inner}
    state["a"][0] = x * 2.0
    return np.sum(inner[0] * x)


def container_held_by_another(x):
    rows = [np.zeros(3)]
    outer = [rows]
    rows[0] = x * 2.0
    return np.sum(outer[0][0] * x)


def item_from_the_parameter(x):
    rows = [x, np.ones(3)]
    rows[0][1] = 5.0 * x[2]
    return np.sum(rows[1] * x)


G = np.zeros(3)


def item_a_global(x):
    rows = [G, np.ones(3)]
    rows[0] += x
    return np.sum(rows[0] * x)


def row_variable_of_a_loop(x):
    rows = [np.zeros(3), np.zeros(3)]
    total = 0.0
    for r in rows:
        total = total + np.sum(r)
    rows[1] += x  # r still holds rows[1]
    return np.sum(r * x) + total


@pytest.mark.parametrize("f, line", [
    (same_array_in_every_slot, "rows[0] += x"), (item_also_a_variable, 'state["h"][0] ='),
    (item_is_a_view_of_a_variable, "rows[1][0] ="), (container_aliased, 'state["h"] ='),
    (container_aliased_item_updated, "rows[0] += x"), (inner_list_also_a_variable,
                                                       'state["a"][0] ='),
    (container_held_by_another, "rows[0] = x"), (item_from_the_parameter, "rows[0][1] ="),
    (item_a_global, "rows[0] += x"), (row_variable_of_a_loop, "rows[1] += x")])
def test_updates_seen_elsewhere_are_refused_at_their_line(f, line):
    import inspect
    lines, first = inspect.getsourcelines(f)
    lineno = first + next(i for i, text in enumerate(lines) if line in text)
    with pytest.raises(UnsupportedSyntaxError) as info:
        srcgrad.grad(f)(X3.copy())
    assert f"test_container_updates.py:{lineno}:" in str(info.value)
    assert "Copy" in str(info.value)
    with pytest.raises(UnsupportedSyntaxError):
        srcgrad.jvp(f, (X3.copy(),), (np.ones(3),))


def test_the_refused_cases_would_be_wrong_if_rewritten():
    """Each refused function's true gradient differs from the one of its rewrite, where the
    other holder keeps its old value: without the refusal the result would be silently
    wrong (the naive rewrites below are what srcgrad would run)."""
    def naive_aliased(x):
        state = {"h": np.zeros(3)}
        s2 = state
        state = {"h": state["h"]}
        state["h"] = x * 2.0
        return np.sum(s2["h"] * x)

    def naive_same_array(x):
        rows = [np.zeros(3)] * 2
        rows = [rows[0], rows[1]]
        rows[0] = rows[0] + x
        return np.sum(rows[1] * x)

    for f, naive in ((container_aliased, naive_aliased),
                     (same_array_in_every_slot, naive_same_array)):
        true = _fd_gradient(f, X3)
        assert not np.allclose(true, _fd_gradient(naive, X3))
        assert np.allclose(srcgrad.grad(naive)(X3), _fd_gradient(naive, X3))


def test_a_number_item_of_a_shared_container_is_refused_too():
    """``+=`` on a float item rebinds the slot: the dict itself changes, which s2 sees."""
    def f(x):
        state = {"n": 0.0}
        s2 = state
        state["n"] += np.sum(x)
        return s2["n"] * 2.0
    with pytest.raises(UnsupportedSyntaxError):
        srcgrad.grad(f)(X3)


def test_copied_containers_pass():
    """``dict(state)`` and ``list(rows)`` make new containers: updating an item of the copy
    that is a new array changes nothing the original holds."""
    def f(x):
        state = {"h": np.zeros(3)}
        s2 = dict(state)
        s2["h"] = s2["h"] + x
        s2["h"][0] = x[1] ** 2
        return np.sum(s2["h"] * x) + np.sum(state["h"])
    check_all_orders(f, X3)


def test_a_new_key_of_a_shared_dict_is_refused():
    def f(x):
        state = {"a": {"h": np.zeros(3)}}
        inner = state["a"]
        state["a"]["new"] = x * 2.0  # inner sees the new key
        return np.sum(inner["new"] * x)

    def g(x):
        state = {"a": {"h": np.zeros(3)}}
        state["a"]["new"] = x * 2.0  # nothing else holds state["a"]
        state["a"]["h"][1:] += x[1:] * state["a"]["new"][:2]
        return np.sum(state["a"]["new"] * state["a"]["h"])
    with pytest.raises(UnsupportedSyntaxError):
        srcgrad.grad(f)(X3)
    check_all_orders(g, X3)


def _make_state():
    return {"h": np.zeros(3)}


def test_a_container_from_a_call_aliased_is_refused():
    """The dict comes from a helper (not built here); s2 names it too: Python shows s2 the
    new item, a functional store would not."""
    def f(x):
        state = _make_state()
        s2 = state
        state["h"] = x * 2.0
        return np.sum(s2["h"] * x)
    with pytest.raises(UnsupportedSyntaxError):
        srcgrad.grad(f)(X3)
    assert np.allclose(_fd_gradient(f, X3), 4.0 * X3)


def test_an_array_in_a_tuple_is_refused_at_its_line():
    def f(x):
        st = {"p": (np.zeros(3), np.ones(3))}
        st["p"][0][1] = x[0] * 2.0
        return np.sum(st["p"][0] * x)
    with pytest.raises(UnsupportedSyntaxError, match=r"test_container_updates.py:\d+: an "
                                                     r"in-place update of an array held in "
                                                     r"a tuple"):
        srcgrad.grad(f)(X3)


def test_run_time_check_of_views_and_foreign_memory():
    """refuse_shared_item compares memory, not objects: views of one array that do not
    overlap pass, overlapping ones (also of memory numpy did not allocate) are refused."""
    from srcgrad.runtime import refuse_shared_item

    def check(rows, frame=None):
        refuse_shared_item(rows, (0, 1), False, frame or {}, tuple(frame or ()), (), "m: 'x")

    base = np.zeros(6)
    check([base[:3], base[3:]])
    with pytest.raises(UnsupportedSyntaxError):
        check([base[:3], base[3:]], {"base": base})
    with pytest.raises(UnsupportedSyntaxError):
        check([base[:4], base[2:]])
    foreign = np.frombuffer(bytearray(48))
    check([foreign[:3], foreign[3:]])
    with pytest.raises(UnsupportedSyntaxError):
        check([foreign[:4], foreign[2:]])
    check([np.zeros(3), np.zeros(3)], {"other": [np.zeros(3)], "n": 3})
    with pytest.raises(UnsupportedSyntaxError):
        rows = [np.zeros(3)]
        check(rows, {"holder": {"k": (rows[0],)}})


def rows_extended_then_updated(x):
    rows = [np.ones(3)]
    rows += [np.zeros(3) for _ in range(2)]
    for k in range(3):
        rows[k][k] += x[k] * x[(k + 1) % 3]
    return np.sum(rows[0] * rows[1] + rows[2] ** 2)


def test_a_list_extended_in_place_is_still_built_here():
    check_all_but_reverse_over_reverse(rows_extended_then_updated, X3)


def check_all_but_reverse_over_reverse(f, x):
    """First order, forward mode and forward over reverse of scalar ``f`` at ``x``, each
    against central differences."""
    from fdcheck import check_grad
    check_grad(f, (x,))
    v = rng.standard_normal(x.shape)
    _, tangent = srcgrad.jvp(f, (x,), (v,))
    assert np.allclose(tangent, (f(x + 1e-6 * v) - f(x - 1e-6 * v)) / 2e-6, rtol=1e-6)
    g = srcgrad.grad(f)
    numeric = np.stack([_fd_gradient(lambda y: g(y)[i], x) for i in range(x.size)])
    assert np.allclose(srcgrad.hessian(f)(x), numeric, rtol=1e-5, atol=1e-6)


# Reverse over reverse through 'rows += [...]' added a float zero to a list (TypeError, also
# without item updates, at 06357c4); it works on main since the merges of 26 Nov 2026 (a
# strict xfail until then).
def test_reverse_over_reverse_of_a_list_extended_in_place():
    g = srcgrad.grad(rows_extended_then_updated)
    outer = srcgrad.grad(lambda y: np.sum(g(y)))(X3)
    numeric = _fd_gradient(lambda y: float(np.sum(g(y))), X3)
    np.testing.assert_allclose(outer, numeric, rtol=1e-5, atol=1e-6)


# == a helper changing a list or dict its caller passes =========================================
# Found by the container-updates helper (26 Nov 2026): srcgrad rewrites `state["h"] = v`,
# `rows.append(v)` in a helper as new containers, which left the caller's unchanged (a
# differentiated helper: wrong value and gradient; one run as plain Python: the tape missed
# the gradient it stored). Python changes the caller's object: these were refused, and the
# call site now takes the changed container back (tests/test_written_back.py).

def _store_into(state, x):
    state["h"] = x * 2.0
    return np.sum(x)


def stores_into_a_callers_dict(x):
    state = {"h": np.zeros(3)}
    y = _store_into(state, x)
    return y + np.sum(state["h"] * x)


def _append_to(rows, x):
    rows.append(x * 3.0)
    return np.sum(x)


def appends_to_a_callers_list(x):
    rows = []
    y = _append_to(rows, x)
    return y + np.sum(rows[0] * x)


def _fill(rows, x):
    rows.append(x * 3.0)


def plain_call_fills_a_list(x):
    rows = []
    _fill(rows, x)              # returns None: run as plain Python
    return np.sum(rows[0] * x)


def _update_item(state, x):
    state["h"] += x


def plain_call_updates_an_item(x):
    state = {"h": np.zeros(3)}
    _update_item(state, x)
    return np.sum(state["h"] * x)


@pytest.mark.parametrize("fn", [stores_into_a_callers_dict, appends_to_a_callers_list,
                                plain_call_fills_a_list, plain_call_updates_an_item])
def test_helper_changing_a_callers_container_is_taken_back(fn):
    assert np.isclose(srcgrad.value_and_grad(fn)(X3)[0], fn(X3.copy()))
    check_all_orders(fn, X3)


def logs_into_a_list_nobody_reads(x):
    history = []
    for _ in range(2):
        _fill(history, x)       # filled, never read by this function: no effect on it
    return np.sum(x ** 2)


def test_a_filled_list_the_function_never_reads_is_fine():
    np.testing.assert_allclose(srcgrad.grad(logs_into_a_list_nobody_reads)(np.arange(1.0, 4.0)),
                               2 * np.arange(1.0, 4.0))


def _memo_fib(x, n, memo=None):
    if memo is None:
        memo = {}
    if n in memo:
        return memo[n]
    r = x * (n + 1) if n < 2 else _memo_fib(x, n - 1, memo) + _memo_fib(x, n - 2, memo) * x
    memo[n] = r
    return r


def recursion_with_memo_dict(x):
    return _memo_fib(x, 5)


# A memo dict passed down a recursion used to be a corpus case: its functional rewrite never
# hit the cache but recomputed the same values. The same rewrite is what made
# stores_into_a_callers_dict silently wrong, and srcgrad cannot tell a pure cache from state,
# so it is refused like those, with the rewrite that works.
def test_memo_dict_passed_down_a_recursion_is_refused():
    with pytest.raises(srcgrad.SrcgradError, match="parameter 'memo'"):
        srcgrad.grad(recursion_with_memo_dict)(0.7)


# -- a list or dict a caller hands over (p = step(p, g)) updated item by item ------------------
# The optimiser-step idiom: the helper changes the arrays its caller's container holds in
# place, and the caller reads only what it returns. Rewritten as new containers when, at run
# time, nothing else holds those arrays (the caller's other variables, the helper's, globals).
def _sgd_step(p, g):
    p["a"] -= 0.1 * g
    p["b"] *= 1.5
    return p


def _list_step(ws, g):
    ws[0] -= g
    ws[1][1:] += g[1:]
    return ws


def _passes_on(p, g):
    p = _sgd_step(p, g)
    return p


def dict_handed_to_a_step(x):
    p = {"a": x * 1.0, "b": x ** 2}
    p = _sgd_step(p, x * x)
    return np.sum(p["a"] ** 2 * p["b"])


def list_handed_to_a_step(x):
    ws = [x * 1.0, x ** 2]
    ws = _list_step(ws, x * 0.5)
    return np.sum(ws[0] * ws[1])


def dict_handed_on_in_a_loop(x):
    p = {"a": x * 2.0, "b": x + 1.0}
    for _ in range(2):
        p = _passes_on(p, x)
    return np.sum(p["a"] * p["b"])


@pytest.mark.parametrize("f", [dict_handed_to_a_step, list_handed_to_a_step,
                               dict_handed_on_in_a_loop])
def test_items_of_a_handed_over_container_updated_at_every_order(f):
    assert np.isclose(srcgrad.value_and_grad(f)(X3)[0], f(X3.copy()))
    check_all_orders(f, X3)


def holds_the_array_elsewhere(x):
    a = x * 1.0
    p = {"a": a, "b": x ** 2}
    p = _sgd_step(p, x)  # Python changes a too
    return np.sum(p["a"] * p["b"]) + np.sum(a)


def hands_over_a_display_of_its_argument(x):
    p = _sgd_step({"a": x, "b": x * 2.0}, x)  # Python changes x itself
    return np.sum(p["a"] * p["b"]) + np.sum(x)


def _step_keeping_an_alias(p, g):
    q = p
    p["a"] += g
    return q


def helper_keeps_an_alias(x):
    p = {"a": x * 1.0}
    p = _step_keeping_an_alias(p, x)
    return np.sum(p["a"] ** 2)


@pytest.mark.parametrize("f, where, line", [
    (holds_the_array_elsewhere, holds_the_array_elsewhere, "p = _sgd_step(p, x)"),
    (hands_over_a_display_of_its_argument, _sgd_step, 'p["a"] -= 0.1 * g'),
    (helper_keeps_an_alias, _step_keeping_an_alias, 'p["a"] += g')])
def test_handed_over_items_seen_elsewhere_are_refused(f, where, line):
    import inspect
    lines, start = inspect.getsourcelines(where)
    at = start + next(i for i, text in enumerate(lines) if text.strip().startswith(line))
    with pytest.raises(UnsupportedSyntaxError, match=rf"test_container_updates\.py:{at}:"):
        srcgrad.grad(f)(X3)


def test_the_refused_handed_over_cases_differ_from_a_rewrite():
    # what a functional rewrite would compute is not what Python computes
    x = X3.copy()
    a = x * 1.0
    p = {"a": a, "b": x ** 2}
    _sgd_step(p, x)
    assert not np.allclose(a, x)  # the caller's a changed


def test_the_differentiated_functions_dict_argument_updated_item_by_item():
    def f(params, x):
        params["a"] -= 0.1 * x
        return np.sum(params["a"] ** 2 * x)

    g = srcgrad.grad(f)({"a": X3 * 1.0}, X3)
    assert np.allclose(g["a"], _fd_gradient(lambda a: f({"a": a.copy()}, X3), X3 * 1.0),
                       rtol=1e-6, atol=1e-8)
    shared = X3 * 1.0
    with pytest.raises(UnsupportedSyntaxError):
        srcgrad.grad(f)({"a": shared}, shared)  # x is the array params["a"] holds
