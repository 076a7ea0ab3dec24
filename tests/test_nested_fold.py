"""Two cleanups of a flattened gradient wrapper (issue 9, transforms/inline_sweeps.py).

``_densified_once``: an inlined backward sweep returns ``densify(g, x)`` and its caller's
sweep densified that again for the same ``x``; ``densify`` being idempotent, the second is a
copy, propagated away (a call fewer per level, and when differentiated its adjoint and a
zero guard). Checked: the fact it rests on, for every kind of value densify handles; the
pass on its own (folded only for the same ``x``, a value read once, names assigned once).

``_renamed_apart``: an accumulation ``br = br + ...`` of the inlined sweeps assigned a name
several times, so the transformation saved each overwritten value on a tape (a push and a
pop per assignment, all differentiated again at higher order); each value now has its own
name. Checked on its own (reads between assignments, reads in blocks, what is left alone)
and on autograd's negative_binomial_maxlike, whose nested derivatives keep their values
(against the derivative written out; to the bit against the code before, measured when the
passes were added).
"""
import ast
import os
import sys
from collections import namedtuple

import numpy as np
import pytest

import srcgrad
from srcgrad import runtime
from srcgrad.api_forward import source_function
from srcgrad.transforms.inline_sweeps import Sweep, flatten_wrapper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
from bench_nested import loglike, rprime, rprime_written  # noqa: E402

Pair = namedtuple("Pair", "a b")


class Obj:
    def __init__(self):
        self.w = np.ones(2)
        self.k = 3
        self.name = "o"


ONES = np.ones(3)
CASES = [  # (g, x)
    (np.arange(3.0), ONES), (runtime.ZERO, ONES), (None, ONES), (2.0, ONES),
    (np.float64(2.0), ONES), (np.ones(3, complex), ONES), (np.ones(3), np.ones(3, int)),
    (np.ones(3), np.ones(3, bool)), (np.ones(3, np.float32), ONES),
    (2.5, 1.5), (0.0, 1.5), (-0.0, 1.5), (None, 1.5), (np.float64(2.0), 1.5),
    (np.float32(2.0), np.float32(1.0)), (runtime.ZERO, np.float32(1.0)), (1.0, 3),
    (np.array(2.0), 1.5), (2.0, np.array(1.5)),
    ([1.0, runtime.ZERO], [1.0, 2.0]), ((np.ones(2), None), (ONES[:2], 2.0)),
    ({"a": 1.0}, {"a": 2.0, "b": ONES}), (Pair(1.0, runtime.ZERO), Pair(2.0, ONES)),
    (runtime.ZERO, [1.0, ONES]), ({"w": np.full(2, 5.0)}, Obj()), (runtime.ZERO, Obj()),
    (None, np.sin), (runtime.ZERO, runtime.ZERO),
]


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, Obj):
        return _same(vars(a), vars(b))
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and a.shape == b.shape and \
            np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))
    if isinstance(a, float):
        return a == b and np.signbit(a) == np.signbit(b)
    return a == b


@pytest.mark.parametrize("g, x", CASES, ids=lambda v: type(v).__name__)
def test_densify_is_idempotent(g, x):
    once = runtime.densify(g, x)
    twice = runtime.densify(once, x)
    assert _same(twice, once), (once, twice)
    if isinstance(once, (np.ndarray, float, np.generic)) or once is None:
        assert twice is once or once == 0.0


# -- the pass on its own -----------------------------------------------------------------------
BWD = """
def f_bwd(saved, g):
    x, y = saved
    gx = g * y
    return _rt.densify(gx, x), _rt.densify(g * x, y)
"""
FWD = "def f_fwd(x, y):\n    return x * y, (x, y)\n"


def _flat(wrapper):
    namespace: dict = {"_rt": runtime}
    exec(FWD + BWD, namespace)
    sweeps = {id(namespace["f_fwd"]): ast.parse(FWD).body[0],
              id(namespace["f_bwd"]): ast.parse(BWD).body[0]}

    def inlinable(obj, attribute):
        definition = sweeps.get(id(obj)) if attribute is None else None
        return None if definition is None else Sweep(definition, {}, frozenset(), id(obj), "<t>")

    bound = {"f_fwd": namespace["f_fwd"], "f_bwd": namespace["f_bwd"], "_rt": runtime}
    definition, _, _ = flatten_wrapper(ast.parse(wrapper).body[0], bound, inlinable)
    text = ast.unparse(definition)
    made: dict = dict(bound)
    exec(text, made)
    plain: dict = dict(bound)
    exec(wrapper, plain)
    for args in [(1.5, -2.0), (np.ones(3), 2.0), (0.0, np.zeros(2))]:
        assert all(map(_same, made["f_grad"](*args), plain["f_grad"](*args)))
    return text


def test_a_gradient_densified_again_for_the_same_argument_is_a_copy():
    text = _flat("def f_grad(x, y):\n    value, saved = f_fwd(x, y)\n"
                 "    grads = f_bwd(saved, 1.0)\n    gx = _rt.densify(grads[0], x)\n"
                 "    gy = _rt.densify(grads[1], y)\n    return gx, gy\n")
    assert text.count("densify(") == 2, text


def test_a_densify_for_another_argument_or_a_value_read_twice_is_kept():
    text = _flat("def f_grad(x, y):\n    value, saved = f_fwd(x, y)\n"
                 "    grads = f_bwd(saved, 1.0)\n    g0 = grads[0]\n"
                 "    a = _rt.densify(g0, y)\n    b = _rt.densify(grads[1], y)\n"
                 "    return a, b, grads[1]\n")
    # (the first for y, of x's gradient; the second of a value also returned)
    assert text.count("densify(") == 4, text
    text = _flat("def f_grad(x, y):\n    value, saved = f_fwd(x, y)\n"
                 "    grads = f_bwd(saved, 1.0)\n    x = y\n"
                 "    gx = _rt.densify(grads[0], x)\n    return gx, grads[1]\n")
    assert text.count("densify(") == 3, text  # (x reassigned: another object)


# -- negative_binomial_maxlike -----------------------------------------------------------------
def test_the_flat_wrapper_of_loglike_densifies_once():
    flat = source_function(srcgrad.grad(loglike), flat=True)
    import linecache
    text = "".join(linecache.getlines(flat.__code__.co_filename))
    assert text.count("_rt.densify(") == 1, text


@pytest.mark.parametrize("r", [0.7, 2.0, 11.0])
def test_the_nested_derivatives_keep_their_values(r):
    first, second = srcgrad.grad(rprime), srcgrad.grad(srcgrad.grad(rprime))
    assert np.isclose(first(r), srcgrad.grad(rprime_written)(r), rtol=1e-11, atol=0)
    assert np.isclose(second(r), srcgrad.grad(srcgrad.grad(rprime_written))(r),
                      rtol=1e-10, atol=0)


# -- one name per value ------------------------------------------------------------------------
ACC_BWD = """
def f_bwd(saved, g):
    x, y = saved
    gx = g * y
    gx = gx + g
    gx = gx * gx
    return _rt.densify(gx, x), _rt.densify(g * x, y)
"""


def _flat_acc(wrapper, bwd=ACC_BWD):
    global BWD
    kept, BWD = BWD, bwd
    try:
        return _flat(wrapper)
    finally:
        BWD = kept


WRAPPER = ("def f_grad(x, y):\n    value, saved = f_fwd(x, y)\n"
           "    grads = f_bwd(saved, 1.0)\n    return grads[0], grads[1], value\n")


def _assigned_twice(text):
    names = [n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Store)]
    return {n for n in names if names.count(n) > 1}


def test_each_value_of_an_accumulation_gets_its_own_name():
    text = _flat_acc(WRAPPER)
    assert not _assigned_twice(text), text
    assert "gx_i1 = g_i1 * y" in text and "gx_i1_i1 = gx_i1 + g_i1" in text \
        and "gx_i1_i2 = gx_i1_i1 * gx_i1_i1" in text, text


def test_a_read_in_a_block_reads_the_value_assigned_before_it():
    bwd = ACC_BWD.replace("    gx = gx * gx\n", "    if x is not None:\n        g = gx * 2.0\n"
                          "    gx = gx * gx\n")
    text = _flat_acc(WRAPPER, bwd)
    assert "g_i1 = gx_i1_i1 * 2.0" in text, text  # (g assigned twice: in a block, kept)


@pytest.mark.parametrize("change", [
    ("    gx = gx * gx\n", "    for k in range(2):\n        gx = gx * gx\n"),  # in a loop
    ("    gx = gx * gx\n", "    gx *= gx\n"),  # augmented
])
def test_a_name_assigned_otherwise_than_at_the_top_level_keeps_its_name(change):
    text = _flat_acc(WRAPPER, ACC_BWD.replace(*change))
    assert "gx_i1_i1" not in text, text


def test_the_differentiated_flat_wrapper_of_loglike_keeps_no_tape():
    from srcgrad.api import get_adjoint
    adjoint = get_adjoint(source_function(srcgrad.grad(loglike), flat=True), (0, 1))
    assert "Tape()" not in adjoint.source and "_tape" not in adjoint.source, adjoint.source
