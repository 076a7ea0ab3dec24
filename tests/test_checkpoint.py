"""Checkpointed loops (issue 11): gradients equal to the taped ones and to finite differences on
several loop shapes, the Revolve schedule's recomputation count equal to the theoretical
optimum, at most K live checkpoints, and located refusals."""
from functools import cache

import numpy as np
import pytest

import srcgrad
from srcgrad import checkpointed, checkpointed_while
from srcgrad.checkpoint import (beta, last_stats, online_advances, online_checkpoints,
                                optimal_advances, optimal_split, repetitions)
from fdcheck import check_grad


def same(a, b, rtol=1e-12):
    """Gradients equal to rounding (each a value or a tuple of values)."""
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y, rtol)
        return
    np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-14)


# -- loop shapes: each with its plain twin, the taped reference ---------------------------------
def scalar_loop(x, n, k):
    for i in checkpointed(range(n), k):
        x = x + 0.1 * np.sin(x)
    return x


def scalar_plain(x, n, k):
    for i in range(n):
        x = x + 0.1 * np.sin(x)
    return x


def array_loop(x, a, n, k):
    for i in checkpointed(range(n), k):
        x = x + a * np.tanh(x) * 0.1
    return np.sum(x * x)


def array_plain(x, a, n, k):
    for i in range(n):
        x = x + a * np.tanh(x) * 0.1
    return np.sum(x * x)


def oscillator(q, p, w, n, k):
    """Several carried variables, an input read in the body, the index used, a temporary
    assigned before it is read, and a value read only after the loop."""
    h = 0.05
    for i in checkpointed(range(n), k):
        force = -w * w * np.sin(q) + 0.01 * i
        p = p + h * force
        q = q + h * p
        last = force
    return np.sum(q * q) + np.sum(p) + np.sum(last)


def oscillator_plain(q, p, w, n, k):
    h = 0.05
    for i in range(n):
        force = -w * w * np.sin(q) + 0.01 * i
        p = p + h * force
        q = q + h * p
        last = force
    return np.sum(q * q) + np.sum(p) + np.sum(last)


def damping(v, c):
    return v * (1.0 - c * v * v)


def helper_loop(x, c, n, k):
    """A user function called in the body, a branch, an augmented assignment."""
    total = 0.0
    for i in checkpointed(range(n), k):
        x = damping(x, c)
        if i % 3 == 0:
            total += np.sum(np.cos(x))
        else:
            total = total + 0.5 * np.sum(x)
    return total


def helper_plain(x, c, n, k):
    total = 0.0
    for i in range(n):
        x = damping(x, c)
        if i % 3 == 0:
            total += np.sum(np.cos(x))
        else:
            total = total + 0.5 * np.sum(x)
    return total


def rows_loop(x, data, k):
    """A for loop over the rows of a (non-differentiated) array, tuple state."""
    s = 0.0
    for row in checkpointed(data, k):
        x = np.tanh(x + row)
        s = s + np.sum(x * row)
    return s + np.sum(x)


def rows_plain(x, data, k):
    s = 0.0
    for row in data:
        x = np.tanh(x + row)
        s = s + np.sum(x * row)
    return s + np.sum(x)


def newton_sqrt(a, k):
    """A while loop with a data-dependent stop (the count is the body's own variable)."""
    x = a
    steps = 0
    while checkpointed_while(abs(x * x - a) > 1e-12 and steps < 50, k):
        x = 0.5 * (x + a / x)
        steps += 1
    return x


def newton_plain(a, k):
    x = a
    steps = 0
    while abs(x * x - a) > 1e-12 and steps < 50:
        x = 0.5 * (x + a / x)
        steps += 1
    return x


def decay_while(x, rate, k):
    """A while loop over an array state until its norm falls below a threshold."""
    t = 0.0
    while checkpointed_while(np.linalg.norm(x) > 0.1, k):
        x = x - rate * x + 0.001 * np.sin(x)
        t = t + 1.0
    return np.sum(x * x) + 0.0 * t


def decay_plain(x, rate, k):
    t = 0.0
    while np.linalg.norm(x) > 0.1:
        x = x - rate * x + 0.001 * np.sin(x)
        t = t + 1.0
    return np.sum(x * x) + 0.0 * t


RNG = np.random.default_rng(0)
X5 = RNG.standard_normal(5)
CASES = {
    "scalar": (scalar_loop, scalar_plain, (0.7, 40), (0,)),
    "array": (array_loop, array_plain, (X5, RNG.standard_normal(5), 30), (0, 1)),
    "oscillator": (oscillator, oscillator_plain, (X5, 0.3 * X5, 1.3, 25), (0, 1, 2)),
    "helper": (helper_loop, helper_plain, (0.3 * X5, 0.2, 17), (0, 1)),
    "rows": (rows_loop, rows_plain, (X5, RNG.standard_normal((12, 5))), (0,)),
    "while_scalar": (newton_sqrt, newton_plain, (2.0,), (0,)),
    "while_array": (decay_while, decay_plain, (np.full(3, 1.0), 0.05), (0, 1)),
}


@pytest.mark.parametrize("k", [1, 2, 3, 7, 100])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_equals_taped_and_finite_differences(case, k):
    marked, plain, args, wrt = CASES[case]
    args = args + (k,)
    same(marked(*args), plain(*args))
    got = srcgrad.grad(marked, wrt=wrt)(*args)
    want = srcgrad.grad(plain, wrt=wrt)(*args)
    same(got, want, rtol=1e-11)
    check_grad(marked, args, wrt=wrt, grads=got if isinstance(got, tuple) else (got,),
               rtol=1e-5)
    stats = last_stats()
    assert stats.max_live <= k
    assert stats.live == 0


def test_value_and_grad_and_vjp_pullback_twice():
    args = (X5, RNG.standard_normal(5), 20, 3)
    v, g = srcgrad.value_and_grad(array_loop, wrt=(0, 1))(*args)
    same(v, array_plain(*args))
    _, pullback = srcgrad.vjp(array_loop, *args)
    first, second = pullback(1.0), pullback(1.0)  # the second replays without the tape
    same(first[0], g[0])
    same(second[0], g[0])
    same(second[1], g[1])


def test_while_pullback_twice_and_with_option():
    _, pullback = srcgrad.vjp(decay_while, np.full(3, 1.0), 0.05, 3)
    want = srcgrad.grad(decay_plain, wrt=(0, 1))(np.full(3, 1.0), 0.05, 3)
    for _ in range(2):  # the second reverses from the initial state again
        got = pullback(1.0)
        same(got[0], want[0], rtol=1e-11)
        same(got[1], want[1], rtol=1e-11)
        assert last_stats().max_live <= 3


def test_memory_is_bounded_by_k_states_not_by_n():
    """Peak memory (tracemalloc) of one gradient call: K states plus a constant (11 here:
    the working state, one step's tape, cotangents), the same for 40 and 160 steps; the
    taped loop's grows with n."""
    import tracemalloc
    dim = 20_000
    state_bytes = 8 * dim
    x, a = np.full(dim, 0.5), np.full(dim, 1.0)
    peaks = {}
    for fn, n, k in ((array_loop, 40, 8), (array_loop, 160, 8), (array_plain, 40, 8)):
        g = srcgrad.grad(fn, wrt=(0, 1))
        g(x, a, 3, k)  # (build outside the measurement)
        tracemalloc.start()
        g(x, a, n, k)
        peaks[fn, n] = tracemalloc.get_traced_memory()[1] / state_bytes
        tracemalloc.stop()
    assert peaks[array_loop, 40] < 8 + 12.5
    assert peaks[array_loop, 160] < 8 + 12.5
    assert peaks[array_plain, 40] > 40


def bump(counts):
    counts += 1


def counter_loop(x, n, k):
    """An integer array carried and changed in place by a helper (not differentiated, so
    srcgrad lets it run): the stored checkpoints must not change with it."""
    hits = np.zeros(1, dtype=int)
    for i in checkpointed(range(n), k):
        x = x * (1.0 + 0.01 * hits[0])
        bump(hits)
    return x


def counter_dynamic(x, n, k, bumper):
    hits = np.zeros(1, dtype=int)
    for i in checkpointed(range(n), k):
        x = x * (1.0 + 0.01 * hits[0])
        bumper(hits)
    return x


def test_in_place_change_of_an_input_is_refused():
    with pytest.raises(srcgrad.UnsupportedSyntaxError,
                       match=r"test_checkpoint.py:\d+: bump\(\) changing 'hits' in place"):
        srcgrad.grad(counter_loop)(2.0, 12, 3)
    # through a function value, seen only at run time
    with pytest.raises(srcgrad.SrcgradError,
                       match=r"test_checkpoint.py:\d+: the checkpointed loop changed hits in "
                             r"place"):
        srcgrad.grad(counter_dynamic)(2.0, 12, 3, bump)


# -- the schedules' counts --------------------------------------------------------------------
@cache
def fewest_advances(n, s):
    """The minimal number of forward steps by exhaustive search over the first split
    (dynamic programming, independent of the closed formula)."""
    if n <= 1:
        return 0
    if s == 1:
        return n * (n - 1) // 2
    return min(m + fewest_advances(n - m, s - 1) + fewest_advances(m, s) for m in range(1, n))


@pytest.mark.parametrize("s", range(1, 7))
def test_formula_and_split_are_optimal(s):
    for n in range(1, 70):
        assert optimal_advances(n, s) == fewest_advances(n, s), (n, s)
        if n >= 2 and s >= 2:
            m = optimal_split(n, s)
            assert 1 <= m < n
            assert m + fewest_advances(n - m, s - 1) + fewest_advances(m, s) \
                == fewest_advances(n, s), (n, s, m)


def test_repetition_number():
    assert beta(3, 2) == 10
    assert [repetitions(n, 3) for n in (1, 4, 5, 10, 11)] == [0, 1, 2, 2, 3]


def counting_loop(x, n, k):
    for i in checkpointed(range(n), k):
        x = x * 0.999 + 0.001
    return x


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 33, 100, 257])
@pytest.mark.parametrize("k", [1, 2, 3, 5, 10, 300])
def test_measured_recomputation_is_the_optimum(n, k):
    srcgrad.grad(counting_loop)(1.5, n, k)
    stats = last_stats()
    assert stats.n == n
    assert stats.taped == n  # each step recorded once
    assert stats.advances == optimal_advances(n, k)
    assert stats.max_live <= min(k, n)
    assert stats.live == 0


def counting_while(x, n, k):
    i = 0
    while checkpointed_while(i < n, k):
        x = x * 0.999 + 0.001
        i = i + 1
    return x


@pytest.mark.parametrize("n", [0, 1, 2, 7, 64, 100, 257])
@pytest.mark.parametrize("k", [1, 2, 3, 5, 10])
def test_online_schedule_counts(n, k):
    g = srcgrad.grad(counting_while)(1.5, n, k)
    same(g, 0.999 ** n)
    stats = last_stats()
    assert stats.n == n and stats.taped == n
    assert stats.advances == online_advances(n, k)
    assert stats.max_live <= k
    assert len(online_checkpoints(n, k)) <= k


def test_online_is_within_its_bound_of_the_offline_optimum():
    """The online schedule's stated bound: never more than one extra forward run over the
    offline optimum (which knows n in advance), and on this grid within 20% of it counting
    the n taped steps."""
    for k in (1, 2, 3, 5, 10, 20):
        for n in (10, 100, 1000, 5000):
            online, offline = online_advances(n, k), optimal_advances(n, k)
            assert online <= n + offline, (n, k)
            assert online + n <= 1.2 * (offline + n), (n, k)


def test_default_k_from_grad_option():
    def f(x, n):
        for i in checkpointed(range(n)):
            x = x + 0.1 * np.sin(x)
        return x

    g = srcgrad.grad(f, checkpoint=4)(0.3, 50)
    same(g, srcgrad.grad(scalar_plain)(0.3, 50, 0))
    assert last_stats().k == 4 and last_stats().advances == optimal_advances(50, 4)
    v, g2 = srcgrad.value_and_grad(f, checkpoint=3)(0.3, 50)
    same(g2, g)
    _, pullback = srcgrad.vjp(f, 0.3, 50, checkpoint=5)
    same(pullback(1.0)[0], g)
    assert last_stats().k == 5
    with pytest.raises(srcgrad.SrcgradError, match=r"test_checkpoint.py:\d+: .*no number of "
                                                   r"checkpoints"):
        srcgrad.grad(f)(0.3, 50)


def test_runs_unchanged_without_srcgrad():
    assert list(checkpointed(range(3), 2)) == [0, 1, 2]
    assert checkpointed_while(True, 5) is True
    assert newton_sqrt(2.0, 3) == pytest.approx(np.sqrt(2.0))


def test_generated_source_shows_the_primitive():
    g = srcgrad.grad(scalar_loop)
    g(0.5, 5, 2)
    text = srcgrad.source(g)
    assert "def scalar_loop_loop(i, x):" in text
    assert "checkpointed.loop(" in text


# -- refusals ------------------------------------------------------------------------------
def with_break(x, n):
    for i in checkpointed(range(n), 3):
        x = x * 1.1
        if x > 10:
            break
    return x


def with_return(x, n):
    for i in checkpointed(range(n), 3):
        x = x * 1.1
        if x > 10:
            return x
    return x


def mutating(x, n):
    for i in checkpointed(range(n), 3):
        x[0] = x[0] * 2.0
    return np.sum(x)


def appending(x, xs, n):
    for i in checkpointed(range(n), 3):
        xs.append(x)
        x = x * 2.0
    return x


def inner_loop_break_is_fine(x, n):
    for i in checkpointed(range(n), 3):
        for j in range(5):
            if j == 3:
                break
            x = x * 1.01
    return x


@pytest.mark.parametrize("fn, args, what", [
    (with_break, (1.0, 5), "'break' inside a checkpointed loop"),
    (with_return, (1.0, 5), "'return' inside a checkpointed loop"),
    (mutating, (np.ones(3), 5), "changing 'x' in place inside a checkpointed loop"),
    (appending, (1.0, [], 5), "changing 'xs' in place inside a checkpointed loop"),
])
def test_refusals_name_the_users_line(fn, args, what):
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(fn)(*args)
    message = str(info.value)
    assert what in message
    assert "test_checkpoint.py:" in message and f"in {fn.__name__}()" in message


def test_break_of_an_inner_loop_is_allowed():
    same(srcgrad.grad(inner_loop_break_is_fine)(1.0, 4), 1.01 ** 12)


def test_second_order_is_refused_with_a_location():
    g = srcgrad.grad(scalar_loop)
    with pytest.raises(srcgrad.SrcgradError, match=r"test_checkpoint.py:\d+: a checkpointed "
                                                   r"loop cannot be differentiated"):
        srcgrad.grad(g)(0.5, 4, 2)


@pytest.mark.parametrize("case", ["array", "oscillator", "rows", "while_array"])
def test_forward_mode_runs_the_loop_with_tangents(case):
    marked, plain, args, wrt = CASES[case]
    args = args + (2,)
    rng = np.random.default_rng(1)
    tangents = tuple(rng.standard_normal(np.shape(a)) if i in wrt else None
                     for i, a in enumerate(args))
    same(srcgrad.jvp(marked, args, tangents)[1], srcgrad.jvp(plain, args, tangents)[1],
         rtol=1e-11)


def test_hessian_is_refused_with_a_location():
    with pytest.raises(srcgrad.SrcgradError, match=r"test_checkpoint.py:\d+: a checkpointed "
                                                   r"loop cannot be differentiated twice"):
        srcgrad.hessian(array_loop)(X5, X5, 4, 2)


def test_bad_k_is_refused():
    with pytest.raises(srcgrad.SrcgradError, match="integer >= 1"):
        srcgrad.grad(scalar_loop)(0.5, 4, 0)


def test_error_in_the_body_names_the_users_line():
    def f(x, n):
        for i in checkpointed(range(n), 2):
            x = x + undefined_helper(x)  # noqa: F821
        return x

    with pytest.raises(Exception) as info:
        srcgrad.grad(f)(1.0, 3)
    assert "undefined_helper" in str(info.value)


# -- the pass: which names flow through the loop ---------------------------------------------
def test_upward_exposed_reads():
    import gast
    from srcgrad.transforms.checkpoint import exposed_reads
    body = gast.parse("t = sin(x)\nx = x + t\nif c:\n    y = 1\nelse:\n    y = 2\n"
                      "if d:\n    u = 1\nz = y + u + w\nfor j in r:\n    v = v + j\n").body
    assert exposed_reads(body, set()) == {"sin", "x", "c", "d", "u", "w", "r", "v"}
    assert exposed_reads(body, {"x"}) == {"sin", "c", "d", "u", "w", "r", "v"}


def test_loop_becomes_a_function_of_state_and_inputs():
    g = srcgrad.grad(oscillator, wrt=(0, 1, 2))
    g(X5, X5, 1.3, 4, 2)
    text = srcgrad.source(g)
    # state p, q (read before assigned); last: read only after the loop; force: a temporary;
    # h, w: read-only inputs
    assert "def oscillator_loop(i, p, q, h, w):" in text
    assert "return p, q, last" in text
