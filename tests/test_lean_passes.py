"""Before/after tests of the passes that make generated code lean (issue 11): shape-only
saves, dead tape pruning, copy propagation, combined contributions, released temporaries;
and their effect end to end (tape size, peak memory, gradients unchanged)."""
import textwrap
import tracemalloc

import gast
import numpy as np
import pytest

import srcgrad
from srcgrad import runtime
from srcgrad.api import get_adjoint
from srcgrad.codegen import to_source
from srcgrad.rules._helpers import expand_to
from srcgrad.transforms.combine import combine_contributions
from srcgrad.transforms.copies import propagate_copies
from srcgrad.transforms.prune_tape import dead_restores, remove_statements
from srcgrad.transforms.release import release_dead
from srcgrad.transforms.shape_reads import shape_only_names


def _stmts(src: str) -> list:
    return gast.parse(textwrap.dedent(src)).body


def _text(stmts: list) -> str:
    return to_source(gast.Module(body=stmts, type_ignores=[])).strip()


# -- shape_reads ------------------------------------------------------------------------------

def test_a_value_read_only_for_its_shape_is_shape_only():
    stmts = _stmts("""
        b1 = _rt.unbroadcast(g, t1)
        b2 = expand_to(g, t2)
        b3 = g * t3
        b4 = _rt.unbroadcast(g * t4, t4)
        n = t5.shape
    """)
    names = shape_only_names(stmts, "_rt", {"expand_to": expand_to})
    assert names == {"t1", "t2", "t5"}  # t3 and t4 are read as values too


def test_an_unknown_helper_reads_the_value():
    stmts = _stmts("b = mystery(g, t1)\nc = _rt.unbroadcast(g, t1)")
    assert shape_only_names(stmts, "_rt", {"mystery": print}) == frozenset()


def test_stand_in_has_shape_and_dtype_and_no_data():
    x = np.ones((300, 40), dtype=np.float32)
    s = runtime.shape_like(x)
    assert s.shape == x.shape and s.dtype == x.dtype and not s.flags.writeable
    assert s.base is not None and s.base.nbytes == 4
    assert runtime.shape_like(x) is s  # (one per shape and dtype)
    # a small array too: the backward sweep would otherwise keep it alive
    small = np.ones(3)
    tiny = runtime.shape_like(small)
    assert tiny.shape == (3,) and tiny.dtype == np.float64 and not tiny.flags.writeable
    assert not np.shares_memory(tiny, small) and runtime.shape_like(2.0) == 2.0
    swapped = runtime.shape_like(small.astype(">f8"))
    assert swapped.dtype == np.dtype(">f8") and swapped.shape == (3,)


# -- prune_tape -------------------------------------------------------------------------------

def _candidates(stmts):
    return {id(s): (s, s.targets[0].id) for s in stmts[0].body
            if isinstance(s, gast.Assign) and "pop" in gast.dump(s.value)}


def test_a_restored_value_nobody_reads_is_dead():
    stmts = _stmts("""
        for _k in range(n):
            b1 = by
            y = _tape.pop()
            by = b1 * 2
    """)
    assert dead_restores(stmts, set(), _candidates(stmts)) == {"y"}


def test_a_restored_value_read_in_the_next_iteration_is_live():
    stmts = _stmts("""
        for _k in range(n):
            bx = bx * np.cos(x)
            x = _tape.pop()
    """)
    assert dead_restores(stmts, set(), _candidates(stmts)) == set()


def test_removing_statements_drops_orphan_comments_and_keeps_a_body():
    stmts = _stmts("""
        for _k in range(n):
            '# srcgrad: a.py:3  y = y * 2'
            y = _tape.pop()
    """)
    from srcgrad.codegen import COMMENT_PREFIX
    stmts[0].body[0].value.value = COMMENT_PREFIX + " a.py:3  y = y * 2"
    out = remove_statements(stmts, {id(stmts[0].body[1])})
    assert _text(out) == "for _k in range(n):\n    pass"


# -- copies, combine, release ------------------------------------------------------------------

def test_copies_are_propagated_until_the_source_changes():
    stmts = _stmts("""
        b1 = by
        by = b1 * 2
    """)
    assert _text(propagate_copies(stmts, set())) == "by = by * 2"
    stmts = _stmts("""
        b2 = bt
        bt = f(bt)
        b3 = b2 * x
    """)
    assert _text(propagate_copies(stmts, set())).startswith("b2 = bt")


def test_a_copy_to_a_kept_name_stays():
    stmts = _stmts("bx = by")
    assert _text(propagate_copies(stmts, {"bx"})) == "bx = by"


def test_repeated_contributions_are_combined():
    stmts = _stmts("bh = g * h\nbh = bh + g * h")
    assert _text(combine_contributions(stmts)) == "bh = g * h * 2"
    other = _stmts("bh = g * h\nbh = bh + g * k")
    assert len(combine_contributions(other)) == 2


def test_temporaries_are_deleted_after_their_last_use():
    body = _stmts("""
        def f(x):
            t1 = x * 2
            t2 = t1 + 1
            t3 = t2 * t2
            return t3, (x,)
    """)[0].body
    assert "del t1" in _text(release_dead(body)) and "del t2" in _text(release_dead(body))
    # a name a lambda mentions, or a body calling locals(), is left alone
    lam = _stmts("def f(x):\n    t = x * 2\n    g = lambda: t\n    return g()")[0].body
    assert "del t" not in _text(release_dead(lam))


# -- end to end ---------------------------------------------------------------------------------

def _rnn(Wh, b, h0):
    h = h0
    for t in range(20):
        h = np.tanh(h @ Wh + b)
    return np.sum(h * h)


def test_loop_tape_keeps_shapes_not_arrays():
    rng = np.random.default_rng(0)
    Wh, b, h0 = rng.standard_normal((64, 64)) * 0.1, np.zeros(64), rng.standard_normal((16, 64))
    adj = get_adjoint(_rnn, (0, 1))
    _, saved = adj.fwd(Wh, b, h0)
    tape = saved[0]
    data = sum(v.nbytes for v in tape if isinstance(v, np.ndarray) and v.base is None)
    assert data <= 21 * h0.nbytes  # the h of each iteration, no shape-only temporaries
    g = srcgrad.grad(_rnn, wrt=(0, 1))(Wh, b, h0)
    eps, d = 1e-6, rng.standard_normal(Wh.shape)
    numeric = (_rnn(Wh + eps * d, b, h0) - _rnn(Wh - eps * d, b, h0)) / (2 * eps)
    assert np.isclose(np.sum(g[0] * d), numeric, rtol=1e-6)


def _doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return np.sum(y)


def test_values_nobody_reads_back_are_not_taped():
    x = np.array([0.3, -1.2, 0.5])
    _, saved = get_adjoint(_doubling, (0,)).fwd(x)
    k = 9  # 2 * 2**k * |x| crosses 1000
    # nothing taped: the trip count, pushed once, is a slot of the saved tuple (tape_once.py)
    assert not any(isinstance(v, runtime.Tape) for v in saved)
    assert [v for v in saved if type(v) is int] == [k]
    assert np.allclose(srcgrad.grad(_doubling)(x), np.full(3, 2.0 ** (k + 1)))


def _elementwise(x):
    return np.sum(np.tanh(x) * x + np.exp(-x * x))


def test_elementwise_peak_memory_is_bounded():
    x = np.random.default_rng(1).standard_normal(200_000)
    g = srcgrad.grad(_elementwise)
    g(x)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = g(x)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    t = np.tanh(x)
    assert np.allclose(out, t + x * (1 - t * t) - 2 * x * np.exp(-x * x))
    assert peak <= 8.5 * x.nbytes  # 10 arrays before the lean passes, 7 to 8 now


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
