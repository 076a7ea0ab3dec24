"""Checkpointed loops: markers, schedules (binomial Revolve, online thinning) and the
differentiable loop primitive the ``lower_checkpointed`` pass emits.

A marked loop keeps at most K states ("checkpoints", the loop's initial state counted) instead
of a tape that grows with the trip count, and recomputes the rest:

* ``for i in srcgrad.checkpointed(range(n), K):`` -- the trip count is known when the loop
  starts: Griewank and Walther's binomial schedule (Revolve), which needs the minimal number of
  forward steps, ``optimal_advances(n, K)``;
* ``while srcgrad.checkpointed_while(cond, K):`` -- the trip count is known only at the end:
  checkpoints at multiples of a stride that doubles whenever the K slots are full (online
  thinning); the backward pass then reverses each stored segment with Revolve using the slots
  already freed. Its exact cost is ``online_advances(n, K)``.

Without srcgrad both markers return their argument, so the function runs unchanged.
See docs/checkpointing.md.
"""
from __future__ import annotations

__all__ = ["checkpointed", "checkpointed_while", "checkpoint_options", "default_checkpoints",
           "beta", "repetitions", "optimal_advances", "optimal_split", "online_checkpoints",
           "online_plan", "online_advances", "loop", "loop_vjp", "LoopSpec", "ReversalStats",
           "last_stats", "connect"]

import contextvars
import functools
import zlib
from dataclasses import dataclass
from math import comb
from collections.abc import Callable

import numpy as np

from . import runtime
from .errors import InternalError, Location, UnsupportedFeatureError
from .rules.registry import defrule
from .source import FunctionSource, register_source

# K for marked loops that do not give their own (set by grad(f, checkpoint=K))
_DEFAULT_K: contextvars.ContextVar = contextvars.ContextVar("srcgrad_checkpoints",
                                                            default=None)


# -- markers: plain Python without srcgrad ---------------------------------------------------
def checkpointed(iterable, checkpoints: int | None = None):
    """Mark a ``for`` loop for checkpointing: ``for i in checkpointed(range(n), K):``.

    Returns ``iterable`` itself: the function runs unchanged when not differentiated.
    ``checkpoints`` (K) is the most loop states kept at once during differentiation; None
    takes the ``checkpoint=`` option of ``srcgrad.grad``.
    """
    return iterable


def checkpointed_while(condition, checkpoints: int | None = None):
    """Mark a ``while`` loop for checkpointing: ``while checkpointed_while(x > tol, K):``.

    Returns ``condition`` itself. The trip count may depend on the data; the loop is
    reversed with an online schedule keeping at most ``checkpoints`` states.
    """
    return condition


def checkpoint_options(fn: Callable, checkpoints: int | None) -> Callable:
    """``fn`` (a gradient made by srcgrad) running with ``checkpoints`` as the K of marked
    loops that give none; ``fn`` itself when ``checkpoints`` is None."""
    if checkpoints is None:
        return fn
    _check_k(checkpoints, None)

    @functools.wraps(fn)
    def with_checkpoints(*args, **kwargs):
        token = _DEFAULT_K.set(checkpoints)
        try:
            return fn(*args, **kwargs)
        finally:
            _DEFAULT_K.reset(token)

    return with_checkpoints


class default_checkpoints:
    """``with default_checkpoints(K):`` -- K for marked loops run inside (vjp's option)."""

    def __init__(self, checkpoints: int | None):
        self.k, self.token = checkpoints, None

    def __enter__(self):
        if self.k is not None:
            _check_k(self.k, None)
            self.token = _DEFAULT_K.set(self.k)

    def __exit__(self, *exc):
        if self.token is not None:
            _DEFAULT_K.reset(self.token)


def _check_k(k, where: Location | None) -> int:
    if isinstance(k, bool) or not isinstance(k, int) and not hasattr(k, "__index__") \
            or int(k) < 1:
        prefix = f"{where}: " if where else ""
        raise UnsupportedFeatureError(
            f"{prefix}the number of checkpoints must be an integer >= 1; got {k!r}. One "
            f"checkpoint keeps only the loop's initial state (quadratic recomputation); "
            f"more keep more states and recompute less.")
    return int(k)


# -- binomial (Revolve) schedule ------------------------------------------------------------
def beta(s: int, r: int) -> int:
    """Griewank's beta(s, r) = C(s + r, s): the most steps s checkpoints reverse with at
    most r forward evaluations of each step (0 for r < 0)."""
    return comb(s + r, s) if r >= 0 and s >= 0 else 0


def repetitions(n: int, s: int) -> int:
    """The repetition number: the least r with beta(s, r) >= n."""
    r = 0
    while beta(s, r) < n:
        r += 1
    return r


def optimal_advances(n: int, s: int) -> int:
    """The minimal number of (untaped) forward steps that reverse ``n`` steps with ``s``
    checkpoints, the initial state held in one (Griewank-Walther):
    ``r*n - beta(s+1, r-1)`` with r the repetition number. Each step is also run once
    taped, which this count does not include."""
    if n <= 1:
        return 0
    r = repetitions(n, s)
    return r * n - beta(s + 1, r - 1)


def optimal_split(n: int, s: int) -> int:
    """How far to advance before storing the next checkpoint, to reverse ``n`` >= 2 steps
    with ``s`` >= 2 checkpoints optimally: any m with
    ``beta(s, r-2) <= m <= beta(s, r-1)`` and ``beta(s-1, r-1) <= n-m <= beta(s-1, r)``
    costs ``m + optimal_advances(n-m, s-1) + optimal_advances(m, s) = optimal_advances(n, s)``
    (Pascal's rule on beta); the largest is taken."""
    r = repetitions(n, s)
    lo = max(beta(s, r - 2), n - beta(s - 1, r), 1)
    hi = min(beta(s, r - 1), n - beta(s - 1, r - 1), n - 1)
    return max(lo, hi)


def online_checkpoints(n: int, k: int) -> list[int]:
    """The steps at which the online (thinning) schedule holds checkpoints once a loop of
    ``n`` steps has ended: multiples of a stride that doubles whenever the k slots are full
    (the even multiples are kept)."""
    kept, stride = [], 1
    for j in range(n):
        if j % stride == 0:
            if len(kept) == k:
                kept = [c for c in kept if c % (2 * stride) == 0]
                stride *= 2
            if j % stride == 0 and len(kept) < k:
                kept.append(j)
    return kept


def online_plan(kept: list[int], n: int, k: int) -> tuple[list[int], int]:
    """Which of the checkpoints ``kept`` (steps, the first 0) to reverse from once the loop
    ended after ``n`` steps, and the advances that costs: the segment between the j-th
    chosen checkpoint and the next is reversed by Revolve with the ``k - j`` checkpoints
    not held by the j earlier ones. Chosen by dynamic programming over the subsets that keep
    the first checkpoint (for up to 64 stored; else the stride multiples), so it never
    costs more than keeping only the initial state: ``optimal_advances(n, k)``."""
    if n == 0 or not kept:
        return [], 0
    if len(kept) > 64:
        return _thinned_plan(kept, n, k)
    m = len(kept)
    points = kept + [n]
    # best[i][j]: cheapest reversal of steps kept[i] .. n-1, kept[i] being the j-th chosen
    best = [[None] * (i + 1) for i in range(m)]
    for i in reversed(range(m)):
        for j in range(i + 1):
            options = [(optimal_advances(n - kept[i], k - j), m)]
            for nxt in range(i + 1, m):
                if j + 1 < k and best[nxt][j + 1] is not None:
                    options.append((optimal_advances(kept[nxt] - kept[i], k - j)
                                    + best[nxt][j + 1][0], nxt))
            best[i][j] = min(options)
    chosen, i, j = [], 0, 0
    while i < m:
        chosen.append(kept[i])
        i, j = best[i][j][1], j + 1
    del points
    return chosen, best[0][0][0]


def _thinned_plan(kept: list[int], n: int, k: int) -> tuple[list[int], int]:
    """Among every 2**p-th stored checkpoint (p = 0, 1, ...), the cheapest plan."""
    options, step = [], 1
    while True:
        chosen = kept[::step]
        ends = chosen[1:] + [n]
        cost = sum(optimal_advances(e - c, k - j) for j, (c, e) in enumerate(zip(chosen, ends)))
        options.append((cost, chosen))
        if len(chosen) == 1:
            break
        step *= 2
    cost, chosen = min(options, key=lambda o: o[0])
    return chosen, cost


def online_advances(n: int, k: int) -> int:
    """Untaped forward steps of the online schedule for a loop that ran ``n`` steps with
    ``k`` checkpoints: the n steps of the forward run, then the reversal of
    ``online_plan``. At most ``n + optimal_advances(n, k)``."""
    return n + online_plan(online_checkpoints(n, k), n, k)[1]


# -- the loop primitive --------------------------------------------------------------------
@dataclass
class LoopSpec:
    """What the pass knows about one checkpointed loop (a factory parameter of the
    generated code): its kind, where it is, and the names that flow through it."""

    kind: str  # 'for' | 'while'
    location: Location
    state: tuple[str, ...]  # loop-carried: the body's parameters after the loop index
    outputs: tuple[str, ...]  # assigned in the body, read only after the loop
    inputs: tuple[str, ...]  # read, not assigned: their gradients add up over the steps
    body_source: FunctionSource | None = None
    cond_source: FunctionSource | None = None
    k: int | None = None  # a constant K from the marker, if any

    def register(self, body, cond=None) -> None:
        """Make srcgrad read the body's (and the condition's) definition from the user's
        loop, so errors name the user's lines."""
        for fn, source in ((body, self.body_source), (cond, self.cond_source)):
            if fn is not None and source is not None:
                register_source(fn.__code__, source)


@dataclass
class ReversalStats:
    """Counts of one checkpointed loop's forward and backward passes."""

    n: int = 0  # trip count
    k: int = 0  # checkpoints allowed
    advances: int = 0  # body runs without a tape (forward run and recomputation)
    taped: int = 0  # body runs recording a tape (one per step and backward pass)
    live: int = 0  # checkpoints held now
    max_live: int = 0  # the most held at once (the initial state counted)

    def hold(self, count: int = 1) -> None:
        self.live += count
        self.max_live = max(self.max_live, self.live)


_LAST: list = [None]

# The body's generated code comes from the caches of the API layer, which hands its lookups
# down when the package loads (srcgrad/__init__.py calls ``connect``): this layer imports
# nothing above it.
_CONNECTED: dict[str, Callable] = {}


def connect(get_adjoint: Callable, dynamic_wrt: Callable, jvp: Callable) -> None:
    """Give this layer the API layer's ``get_adjoint(fn, wrt)``, ``dynamic_wrt(fn, self_args,
    args, kwargs)`` (which parameters of a call known at run time to differentiate) and
    ``jvp(fn, primals, tangents)``."""

    def sweeps(fn, args: tuple) -> tuple:
        wrt = dynamic_wrt(fn, (), args, {})
        fwd, bwd = get_adjoint(fn, wrt).sweeps_for(fn)
        return fwd, bwd, wrt

    _CONNECTED.update(sweeps=sweeps, jvp=jvp)


def _connected(name: str) -> Callable:
    found = _CONNECTED.get(name)
    if found is None:
            raise InternalError("checkpoint", f"the API layer did not connect '{name}'")
    return found


def last_stats() -> ReversalStats | None:
    """The statistics of the checkpointed loop run most recently (forward and backward)."""
    return _LAST[0]


class _Run:
    """One call of a checkpointed loop: its checkpoints, what its backward pass needs."""

    def __init__(self, spec: LoopSpec, body, items, k: int, inputs: tuple):
        self.spec, self.body, self.items, self.inputs = spec, body, items, tuple(inputs)
        self.k = k
        self.n_state = len(spec.state)
        self.stats = ReversalStats(k=k)
        self.levels: list = []  # Revolve's forward path: (start, advance, snaps, state)
        self.kept: list = []  # the online schedule's checkpoints: (step, state)
        self.last: tuple | None = None  # (state before the last step, its taped record)
        self.initial: tuple = ()
        self.g_inputs: list = [runtime.ZERO] * len(self.inputs)
        self.g_outputs: tuple = ()
        self._sweeps: dict = {}
        self.cotangent: tuple | None = None  # of the state where the reversal stands

    def lead(self, j: int) -> tuple:
        return (self.items[j],) if self.spec.kind == "for" else ()

    def advance(self, state: tuple, start: int, steps: int) -> tuple:
        if steps:
            state = _fresh(state)  # (the body may change an array in place: x += v)
        for j in range(start, start + steps):
            state = self.step(state, j)[:self.n_state]
        return state

    def step(self, state: tuple, j: int) -> tuple:
        self.stats.advances += 1
        return tuple(self.body(*self.lead(j), *state, *self.inputs))

    def taped_step(self, state: tuple, j: int):
        """Run step j recording its tape: ``(output, (backward sweep, saved, wrt))``."""
        self.stats.taped += 1
        args = (*self.lead(j), *state, *self.inputs)
        fwd, bwd, wrt = self.sweeps(args)
        value, saved = fwd(*args)
        return value, (bwd, saved, wrt)

    def sweeps(self, args: tuple) -> tuple:
        """The body's generated sweeps for arguments like ``args``, looked up once per kind
        of arguments (which of them may carry a gradient) instead of once per step."""
        key = tuple(runtime.may_carry_gradient(a) for a in args)
        found = self._sweeps.get(key)
        if found is None:
            fwd, bwd, wrt = _connected("sweeps")(self.body, args)
            found = self._sweeps[key] = (fwd, bwd, wrt)
        return found

    def step_back(self, record, j: int) -> None:
        """Turn ``self.cotangent`` (of step j's output state) into that of its input state;
        accumulate the inputs' gradients."""
        g_out = self.cotangent + (self.g_outputs if j == self.stats.n - 1
                                  else (runtime.ZERO,) * len(self.spec.outputs))
        self.cotangent = None  # (held by no frame while the step's backward sweep runs)
        bwd, saved, wrt = record
        grads = [None] * (len(self.lead(j)) + self.n_state + len(self.inputs))
        for i, gi in zip(wrt, bwd(saved, g_out)):
            grads[i] = gi
        del g_out
        grads = grads[len(self.lead(j)):]
        for i in range(len(self.inputs)):
            gi = grads[self.n_state + i]
            if gi is not None:
                self.g_inputs[i] = runtime.add(self.g_inputs[i], gi)
        self.cotangent = tuple(runtime.ZERO if g is None else g for g in grads[:self.n_state])

    def retape_back(self, state: tuple, j: int) -> None:
        _, record = self.taped_step(state, j)
        self.step_back(record, j)

    def reverse(self, state: tuple, start: int, n: int, snaps: int) -> None:
        """Reverse steps start .. start+n-1 from ``state`` (the state at ``start``, held in
        a checkpoint by the caller) with ``snaps`` checkpoints counting that one: Revolve.
        Split at ``optimal_split``, reverse the right part with one checkpoint less, then
        the left part; iterative (a stack of left parts), the cotangent flowing through
        ``self.cotangent``."""
        pending: list = []  # left parts still to reverse: (state, start, n, snaps, owned)
        owned = False  # whether this reversal stored ``state`` (and releases it)
        while True:
            while n > 1 and snaps > 1:
                m = optimal_split(n, snaps)
                pending.append((state, start, m, snaps, owned))
                state = self.advance(state, start, m)
                self.stats.hold()
                start, n, snaps, owned = start + m, n - m, snaps - 1, True
            for j in reversed(range(n)):  # one checkpoint: from it, step by step
                self.retape_back(self.advance(state, start, j), start + j)
            if owned:
                self.stats.live -= 1
            if not pending:
                return
            state, start, n, snaps, owned = pending.pop()

    # forward passes ---------------------------------------------------------------------
    def forward_for(self, state: tuple) -> tuple:
        """Revolve's first path: advance and store checkpoints as the reversal will want
        them, then run the last step taped. Returns the last step's output."""
        n, start, snaps = self.stats.n, 0, self.k
        self.stats.hold()  # the initial state
        while n - start > 1 and snaps > 1:
            m = optimal_split(n - start, snaps)
            self.levels.append((start, m, snaps, state))
            state = self.advance(state, start, m)
            start, snaps = start + m, snaps - 1
            self.stats.hold()
        self.levels.append((start, n - 1 - start, 1, state))  # the rest, from one checkpoint
        state = self.advance(state, start, n - 1 - start)
        value, record = self.taped_step(state, n - 1)
        self.last = (state, record)
        return tuple(value)

    def forward_while(self, state: tuple, cond) -> tuple:
        """Run the loop, keeping checkpoints at multiples of a stride that doubles when the
        k slots are full. Returns the last step's output (the initial state if none ran)."""
        stride, j, out = 1, 0, state + (None,) * len(self.spec.outputs)
        while cond(*state, *self.inputs):
            if j % stride == 0:
                if len(self.kept) == self.k:
                    self.kept = [c for c in self.kept if c[0] % (2 * stride) == 0]
                    stride *= 2
                    self.stats.live = len(self.kept)
                if j % stride == 0 and len(self.kept) < self.k:
                    self.kept.append((j, _fresh(state)))
                    self.stats.hold()
            out = self.step(state, j)
            state, j = out[:self.n_state], j + 1
        self.stats.n = j
        return out

    # backward passes --------------------------------------------------------------------
    def backward_for(self) -> None:
        """Reverse the loop, releasing each checkpoint once its part is reversed."""
        n = self.stats.n
        if self.last is None:  # a second pullback: the first released the checkpoints
            self.stats.live = 0
            self.forward_for(self.initial)
        (state, record), self.last = self.last, None
        if record is not None:
            self.step_back(record, n - 1)
        else:
            self.retape_back(state, n - 1)
        del record, state
        while self.levels:
            start, m, snaps, state = self.levels.pop()
            self.reverse(state, start, m, snaps)
            del state
            self.stats.live -= 1

    def backward_while(self) -> None:
        """Reverse the loop from the checkpoints chosen by ``online_plan``."""
        if not self.kept:  # a second pullback: n is known now, so Revolve as for a for loop
            self.backward_for()
            return
        n = self.stats.n
        chosen, _ = online_plan([c[0] for c in self.kept], n, self.k)
        states = dict(self.kept)
        self.kept = []
        states = [states[c] for c in chosen]  # (the others are dropped)
        self.stats.live = len(chosen)
        ends = chosen[1:] + [n]
        for i in reversed(range(len(chosen))):
            self.reverse(states.pop(), chosen[i], ends[i] - chosen[i], self.k - i)
            self.stats.live -= 1


def _fresh(state: tuple) -> tuple:
    """``state`` with its arrays copied: what a checkpoint keeps must not change."""
    return tuple(v.copy() if isinstance(v, np.ndarray) else v for v in state)


def loop(code: tuple, items, k, state: tuple, inputs: tuple) -> tuple:
    """Run a checkpointed loop, ``code`` being ``(spec, body)`` or ``(spec, body, cond)``:
    ``body(item, *state, *inputs)`` for each of ``items`` (a ``for`` loop) or
    ``body(*state, *inputs)`` while ``cond(*state, *inputs)`` (a ``while`` loop). Returns
    the final state, the values assigned only for after the loop, and the run (for the
    backward pass)."""
    spec, body, cond = (tuple(code) + (None,))[:3]
    k = _resolve_k(spec, k)
    spec.register(body, cond)
    if spec.kind == "for" and not hasattr(items, "__getitem__"):
        items = list(items)
    run = _Run(spec, body, items, k, inputs)
    state = run.initial = tuple(state)
    _LAST[0] = run.stats
    before = _fingerprints(inputs)
    if spec.kind == "for":
        run.stats.n = len(items)
        if run.stats.n == 0:
            out = _no_steps(spec, state)
        else:
            out = run.forward_for(state)
    else:
        out = run.forward_while(state, cond)
        if run.stats.n == 0:
            out = _no_steps(spec, state)
    if _fingerprints(inputs) != before:
        changed = [name for name, a, b in zip(spec.inputs, before, _fingerprints(inputs))
                   if a != b]
        raise UnsupportedFeatureError(
            f"{spec.location}: the checkpointed loop changed {', '.join(changed)} in place "
            f"(an array its body reads without assigning it), so replaying the loop from "
            f"stored states would not see the values it saw. Assign the new value instead "
            f"({changed[0]} = ...), which makes it loop-carried.")
    return tuple(out) + (run,)


def _fingerprints(values) -> list:
    """A checksum of each array among ``values`` (None for other values): a loop that
    changes one of its read-only inputs in place cannot be replayed."""
    return [zlib.crc32(np.ascontiguousarray(v).view(np.uint8)) if isinstance(v, np.ndarray)
            and v.dtype.kind in "biufc" else None for v in values]


def _no_steps(spec: LoopSpec, state: tuple) -> tuple:
    if spec.outputs:
        raise UnsupportedFeatureError(
            f"{spec.location}: the checkpointed loop ran no step, so "
            f"{', '.join(spec.outputs)} (assigned in its body and read after it) would keep "
            f"the value from before the loop, which a checkpointed loop does not track. "
            f"Assign them after the loop instead, or make them loop-carried by reading them "
            f"in the body before assigning them.")
    return state


def _resolve_k(spec: LoopSpec, k) -> int:
    if k is None:
        k = _DEFAULT_K.get()
    if k is None:
        raise UnsupportedFeatureError(
            f"{spec.location}: the checkpointed loop has no number of checkpoints. Give one "
            f"in the marker (checkpointed(range(n), K)) or to srcgrad.grad(f, checkpoint=K).")
    return _check_k(k, spec.location)


def loop_vjp(g, ans, code, items, k, state, inputs):
    """Cotangents of the initial state and of the inputs, by reversing the run."""
    run: _Run = ans[-1]
    spec = run.spec
    _LAST[0] = run.stats
    n_state = len(spec.state)
    parts = [runtime.part(g, i) if not runtime.is_zero(g) else runtime.ZERO
             for i in range(n_state + len(spec.outputs))]
    parts = [runtime.ZERO if p is None else p for p in parts]
    run.g_inputs = [runtime.ZERO] * len(run.inputs)
    run.g_outputs = tuple(parts[n_state:])
    run.cotangent = tuple(parts[:n_state])
    del parts
    if run.stats.n > 0:
        if spec.kind == "for":
            run.backward_for()
        else:
            run.backward_while()
    g_state, run.cotangent = run.cotangent, None
    return (tuple(runtime.densify(gs, s) for gs, s in zip(g_state, state)),
            tuple(runtime.densify(gi, x) for gi, x in zip(run.g_inputs, inputs)))


def _refuse(code, what: str):
    spec = code[0] if isinstance(code, tuple) and code else None
    where = f"{spec.location}: " if isinstance(spec, LoopSpec) else ""
    raise UnsupportedFeatureError(
        f"{where}a checkpointed loop cannot be {what} (its backward pass recomputes from "
        f"checkpoints outside the generated code). Remove the checkpointed(...) marker "
        f"for this use, or use a plain loop there.")


def _second_order(g2, ans2, g, ans, code, items, k, state, inputs):
    """Differentiating the reversal of a checkpointed loop again is not supported."""
    _refuse(code, "differentiated twice")


def _second_order_jvp(d_g, d_state, d_inputs, ans2, g, ans, code, items, k, state, inputs):
    _refuse(code, "differentiated twice")


def _loop_jvp(d_state, d_inputs, ans, code, items, k, state, inputs):
    """Forward mode needs no checkpoints: the loop runs again carrying tangents, the body's
    jvp per step; one run per differentiable argument (a contribution each)."""
    n_state = len(state)
    no_state, no_inputs = (None,) * n_state, (None,) * len(inputs)
    return (_tangent_run(code, items, state, inputs, _tangents(d_state, n_state), no_inputs,
                         len(ans)),
            _tangent_run(code, items, state, inputs, no_state,
                         _tangents(d_inputs, len(inputs)), len(ans)))


def _tangents(d, n: int) -> tuple:
    if runtime.is_zero(d):
        return (None,) * n
    return tuple(None if runtime.is_zero(runtime.part(d, i)) else runtime.part(d, i)
                 for i in range(n))


def _tangent_run(code, items, state, inputs, d_state, d_inputs, n_ans: int) -> tuple:
    """The tangent of the loop's outputs along ``(d_state, d_inputs)``."""
    if all(d is None for d in d_state + d_inputs):
        return (runtime.ZERO,) * n_ans
    jvp = _connected("jvp")
    spec, body, cond = (tuple(code) + (None,))[:3]
    state, n_state = tuple(state), len(state)
    if spec.kind == "for" and not hasattr(items, "__getitem__"):
        items = list(items)
    d_out = d_state
    j = 0
    while j < len(items) if spec.kind == "for" else cond(*state, *inputs):
        lead = (items[j],) if spec.kind == "for" else ()
        out, d_out = jvp(body, (*lead, *state, *inputs),
                         (*(None,) * len(lead), *d_state, *d_inputs))
        d_out = _tangents(d_out, n_state + len(spec.outputs))
        state, d_state, j = tuple(out[:n_state]), d_out[:n_state], j + 1
    return tuple(runtime.ZERO if d is None else d for d in d_out) + \
        (runtime.ZERO,) * (n_ans - len(d_out))


defrule(loop, loop_vjp, diff_args=(3, 4), jvp=_loop_jvp, second_order=False,
        name="srcgrad.checkpointed")
defrule(loop_vjp, _second_order, diff_args=(0, 5, 6), jvp=_second_order_jvp,
        second_order=False, name="srcgrad.checkpointed (backward)")
# the generated code reaches the primitive through the marker it replaced
checkpointed.loop = loop  # type: ignore[attr-defined]
checkpointed_while.loop = loop  # type: ignore[attr-defined]
