"""Seeded random-program fuzzer for srcgrad (issue 8).

Each program is the source text of a small numpy module: a few helper functions and a
function ``f`` mixing elementwise math on safe domains, broadcasting, reductions, indexing,
element stores, branches and loops on data, early exits, keyword calls, closures and
containers. Program ``i`` of seed ``s`` depends on ``(s, i)`` only.

Every program is run plainly first; programs that raise, produce non-finite or huge values,
or whose data-dependent comparisons (``if``/``while`` conditions, ``np.where``, ``abs``,
``np.maximum``...) come within ``MARGIN`` of flipping at the test point are regenerated,
so that finite differences never cross a branch or a kink. Then ``grad``, ``vjp``, ``jvp``
and ``hvp`` are compared with central finite differences along random directions (the
dot-product test), and the program is classified:

- correct: every check agrees;
- refused: srcgrad raised a ``SrcgradError`` other than ``InternalError``;
- wrong: a number (or a shape) differs;
- internal: ``InternalError``, any other exception out of srcgrad, or a time-out.

Run as a command for a long campaign (docs/fuzzing.md)::

    python tests/fuzzer.py --programs 10000 --seed 0 --jobs 2 --out fuzz-failures --log run.jsonl
    python tests/fuzzer.py --seed 0 --show 17       # print program 17 and its outcome
    python tests/fuzzer.py --summarize run.jsonl    # the summary of a logged (partial) run
"""
from __future__ import annotations

import argparse
import ast
import collections
import contextlib
import importlib.util
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

# -- tolerances ------------------------------------------------------------------------------
EPS = 1e-6          # central-difference step, float64
RTOL = 1e-5         # |ad - fd| <= RTOL * max(1, |ad|, |fd|)
MARGIN = 1e-2       # every data comparison stays this far from its threshold at the test point
MAX_VALUE = 1e3     # larger outputs are regenerated: their differences lose too many digits
TIMEOUT = 30.0      # seconds for srcgrad on one check (a hang is an internal error)
PLAIN_TIMEOUT = 5.0  # seconds for the plain runs of a program (a generator bug if it hangs)
MAX_ATTEMPTS = 50   # regenerations of one program before giving up on it

# -- shapes ----------------------------------------------------------------------------------
SCALAR, VEC, MAT, ROW, COL, VEC2 = (), (3,), (2, 3), (1, 3), (2, 1), (2,)
SHAPES = (SCALAR, VEC, MAT, ROW, COL, VEC2)
PARAM_SHAPES = (SCALAR, VEC, MAT)


def broadcast(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def fits(small, big) -> bool:
    """Whether ``small`` broadcasts to exactly ``big``."""
    return broadcast(small, big) == big


# shape conversions: target -> [(source, template)]; {e} is the (parenthesized) source,
# {i2}/{i3} an index below 2/3 (a constant or an enclosing loop's counter)
CONVERSIONS = {
    SCALAR: [(VEC, "np.sum({e})"), (VEC, "np.mean({e})"), (VEC, "np.max({e})"),
             (VEC, "{e}[{i3}]"), (VEC, "{e}.sum()"), (VEC, "{e}[-1]"),
             (VEC, "np.linalg.norm({e})"), (MAT, "np.sum({e})"), (MAT, "{e}.mean()"),
             (MAT, "np.min({e})"), (MAT, "{e}[{i2}, {i3}]"), (MAT, "{e}[{i2}][{i3}]"),
             (MAT, "np.sum({e} ** 2)"), (VEC2, "np.sum({e})"), (VEC2, "{e}[{i2}]"),
             (ROW, "np.sum({e})"), (ROW, "{e}[0, {i3}]"), (COL, "np.mean({e})"),
             (COL, "{e}[{i2}, 0]")],
    VEC: [(MAT, "np.sum({e}, axis=0)"), (MAT, "{e}.mean(axis=0)"), (MAT, "np.max({e}, axis=0)"),
          (MAT, "{e}[{i2}]"), (MAT, "{e}[{i2}, :]"), (MAT, "{e}[-1]"), (ROW, "{e}[0]"),
          (ROW, "{e}.reshape(3)"), (ROW, "{e}.ravel()"), (VEC, "{e}[::-1]"),
          (VEC, "{e}[[2, 0, 1]]"), (VEC, "{e}[np.array([1, 1, 0])]"),
          (SCALAR, "{e} * np.ones(3)"), (SCALAR, "np.full(3, {e})")],
    MAT: [(VEC, "{e} * np.ones((2, 1))"), (VEC, "np.stack([{e}, {e} ** 2])"),
          (VEC, "np.vstack([{e}, -{e}])"), (SCALAR, "{e} * np.ones((2, 3))"),
          (MAT, "{e}[::-1]"), (MAT, "{e}[[1, 0]]"), (MAT, "{e}[:, [2, 1, 0]]"), (MAT, "{e}.T.T"),
          (COL, "{e} * np.ones(3)"), (ROW, "{e} + np.zeros((2, 1))"),
          (VEC2, "{e}[:, None] * np.ones(3)"), (VEC2, "np.outer({e}, np.ones(3))")],
    ROW: [(MAT, "np.sum({e}, axis=0, keepdims=True)"), (MAT, "{e}.max(axis=0, keepdims=True)"),
          (MAT, "{e}[:1]"), (MAT, "{e}[[{i2}]]"), (VEC, "{e}[None, :]"),
          (VEC, "{e}.reshape(1, 3)"), (VEC, "{e}[np.newaxis]")],
    COL: [(MAT, "np.mean({e}, axis=1, keepdims=True)"),
          (MAT, "np.sum({e}, axis=-1, keepdims=True)"), (MAT, "{e}[:, [{i3}]]"),
          (MAT, "{e}[:, :1]"), (VEC2, "{e}[:, None]"), (VEC2, "{e}.reshape(2, 1)"),
          (VEC2, "{e}.reshape(-1, 1)")],
    VEC2: [(MAT, "np.sum({e}, axis=1)"), (MAT, "{e}[:, {i3}]"), (MAT, "np.max({e}, axis=1)"),
           (MAT, "{e}.mean(axis=-1)"), (VEC, "{e}[1:]"), (VEC, "{e}[:2]"),
           (VEC, "{e}[[0, 2]]"), (VEC, "{e}[np.array([2, 0])]"),
           (VEC, "{e}[np.array([True, False, True])]"), (COL, "{e}[:, 0]"),
           (COL, "{e}.ravel()")],
}

# products: target -> [(template, shape of a, shape of b)]
PRODUCTS = {
    SCALAR: [("{a} @ {b}", VEC, VEC), ("np.dot({a}, {b})", VEC, VEC),
             ("{a} @ {b}", VEC2, VEC2)],
    VEC2: [("{a} @ {b}", MAT, VEC), ("np.dot({a}, {b})", MAT, VEC)],
    VEC: [("{a} @ {b}", VEC2, MAT), ("{a}.T @ {b}", MAT, VEC2)],
    MAT: [("np.outer({a}, {b})", VEC2, VEC), ("{a} @ {b}", COL, ROW),
          ("{a} @ ({b}.T @ {b})", MAT, MAT), ("({a} @ {b}.T) @ {a}", MAT, MAT)],
    COL: [("{a} @ {b}.T", MAT, ROW)],
    ROW: [("({a} @ {b}.T) @ {b}", ROW, MAT)],
}

# smooth elementwise functions, total on the reals and bounded where it matters
UNARY = ["np.sin({e})", "np.cos({e})", "np.tanh({e})", "np.exp(np.sin({e}))",
         "np.exp(-{e} ** 2)", "np.log(1.0 + {e} ** 2)", "np.sqrt(1.0 + {e} ** 2)",
         "1.0 / (2.0 + np.cos({e}))", "np.arctan({e})", "np.square({e})", "{e} ** 2",
         "-{e}", "np.log1p({e} ** 2)", "0.5 * {e}", "np.negative({e})"]
UNARY_SCALAR = ["math.sin({e})", "math.exp(math.tanh({e}))", "math.sqrt(1.0 + {e} ** 2)",
                "float({e})"]
# kinks: kept a MARGIN away from them by the probes
KINKS = ["np.abs({a})", "np.maximum({a}, {b})", "np.minimum({a}, {b})",
         "np.clip({a}, -0.5, 0.8)"]
KINKS_SCALAR = ["abs({a})", "max({a}, {b})", "min({a}, {b})"]
BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / (1.5 + np.cos({b}))",
          "np.add({a}, {b})", "np.multiply({a}, {b})", "{a} * {b} ** 2"]


def literal(shape, rng) -> str:
    """A constant of ``shape``."""
    if shape == SCALAR:
        return repr(round(rng.uniform(-1.5, 1.5), 2))
    values = np.round(np.array([rng.uniform(-1.5, 1.5) for _ in range(int(np.prod(shape)))]), 2)
    return f"np.array({values.reshape(shape).tolist()!r})"


def paren(e: str) -> str:
    """``e`` safe to use as an operand."""
    if re.fullmatch(r"[\w.]+(\[[^\[\]]*\])?", e) or (e.startswith("(") and _balanced(e[1:-1])
                                                     and e.endswith(")")):
        return e
    return f"({e})"


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


# -- what the generator knows about each name --------------------------------------------------
@dataclass(frozen=True)
class Spec:
    """A container value: a 'list' of ``n`` items of shape ``parts[0]``, a 'tuple' of items of
    the shapes ``parts``, a 'dict' of ``(key, shape)`` parts, or 'layers': a list of ``n``
    tuples of the shapes ``parts`` (``[(W, b), ...]``, as autograd's examples pass weights).
    A leaf shape of ``()`` is a Python float."""
    kind: str
    parts: tuple
    n: int = 0

    def same(self, other) -> bool:
        """Whether a value of ``other`` may stand where one of ``self`` is read (any length)."""
        return isinstance(other, Spec) and (self.kind, self.parts) == (other.kind, other.parts)


@dataclass
class Var:
    name: str
    kind: str                 # 'array' | 'list' | 'tuple' | 'dict' | 'layers' | 'func' | 'index'
    shape: tuple = ()         # arrays; a list's element shape; a function's result shape
    parts: tuple = ()         # tuple/layers item shapes; dict (key, shape) pairs; function params
    assigned: int = 1         # how many assignments the generator made to it
    frozen: bool = False      # read by a closure: never assigned again
    bound: int = 0            # index: values range over [0, bound); a list's least length

    def spec(self) -> Spec | None:
        if self.kind == "list":
            return Spec("list", (self.shape,), self.bound)
        if self.kind in ("tuple", "dict", "layers"):
            return Spec(self.kind, self.parts, self.bound)
        return None


def var_of(name: str, spec: Spec) -> Var:
    """The generator's record of a container of ``spec`` bound to ``name``."""
    if spec.kind == "list":
        return Var(name, "list", spec.parts[0], bound=spec.n)
    return Var(name, spec.kind, parts=spec.parts, bound=spec.n)


@dataclass
class Helper:
    name: str
    params: list              # [(name, shape or Spec)] required positional
    defaults: list            # [(name, literal)] positional with default (scalars)
    kwonly: list              # [(name, literal)] keyword-only (scalars)
    shape: object             # result: a shape, or a Spec (kind 'cont' only)
    kind: str = "plain"       # 'plain' | 'gen' (yields its items) | 'star' (*rest, **kw)
    #                           | 'cont' (takes or returns containers)


@dataclass
class Program:
    source: str
    params: list              # [(name, shape or Spec)] of f
    out_shape: tuple
    loss: str                 # name of a scalar function of the same parameters


# -- the generator --------------------------------------------------------------------------
class _Expressions:
    """Expressions of a given shape (mixed into Generator, which holds the scope)."""

    def index(self, bound: int) -> str:
        loops = [v for v in self.of_kind("index") if 0 < v.bound <= bound]
        if loops and self.chance(0.6):
            return self.pick(loops).name
        return str(self.rng.randrange(-1, bound))

    def expr(self, shape, depth=2) -> str:
        options = [("var", 4)] if self.arrays(shape) else []
        options.append(("convert", 2))
        if depth > 0:
            options += [("unary", 3), ("binary", 4), ("product", 1 if shape in PRODUCTS else 0),
                        ("kink", 0.6), ("call", 1.5 if self.callable_for(shape) else 0),
                        ("container", 1 if self.containers_for(shape) else 0),
                        ("ifexp", 0.3), ("where", 0.3 if shape != SCALAR else 0),
                        ("stack", 0.3 if shape == VEC else 0), ("iterate", 0.4)]
        kinds, weights = zip(*options)
        kind = self.rng.choices(kinds, weights)[0]
        return getattr(self, "expr_" + kind)(shape, depth)

    def expr_var(self, shape, depth):
        return self.pick(self.arrays(shape)).name

    def expr_convert(self, shape, depth):
        have = {v.shape for v in self.arrays()}
        choices = [(s, t) for s, t in CONVERSIONS[shape] if s in have or depth > 0]
        if not choices or self.chance(0.05):
            return literal(shape, self.rng)
        source, template = self.pick(choices)
        inner = self.expr(source, depth - 1) if depth > 0 and self.chance(0.4) else \
            self.leaf(source)
        return template.format(e=paren(inner), i2=self.index(2), i3=self.index(3))

    def leaf(self, shape) -> str:
        if self.arrays(shape):
            return self.pick(self.arrays(shape)).name
        return self.expr_convert(shape, 0)

    def expr_unary(self, shape, depth):
        templates = UNARY + (UNARY_SCALAR if shape == SCALAR else [])
        return self.pick(templates).format(e=paren(self.expr(shape, depth - 1)))

    def expr_binary(self, shape, depth):
        small = self.pick([s for s in SHAPES if fits(s, shape)])
        a, b = self.expr(shape, depth - 1), self.expr(small, depth - 1)
        if self.chance(0.5):
            a, b = b, a
        if self.chance(0.15):  # both smaller, broadcasting to shape
            pairs = [(p, q) for p in SHAPES for q in SHAPES if broadcast(p, q) == shape]
            p, q = self.pick(pairs)
            a, b = self.expr(p, depth - 1), self.expr(q, depth - 1)
        return self.pick(BINARY).format(a=paren(a), b=paren(b))

    def expr_product(self, shape, depth):
        template, sa, sb = self.pick(PRODUCTS[shape])
        return template.format(a=paren(self.expr(sa, depth - 1)), b=paren(self.expr(sb, depth - 1)))

    def expr_kink(self, shape, depth):
        templates = KINKS + (KINKS_SCALAR if shape == SCALAR else [])
        return self.pick(templates).format(a=self.expr(shape, depth - 1),
                                           b=self.expr(shape, depth - 1))

    def expr_ifexp(self, shape, depth):
        return (f"({self.expr(shape, depth - 1)} if {self.condition()} "
                f"else {self.expr(shape, depth - 1)})")

    def expr_where(self, shape, depth):
        return (f"np.where({paren(self.expr(shape, depth - 1))} > {literal(SCALAR, self.rng)}, "
                f"{self.expr(shape, depth - 1)}, {self.expr(shape, depth - 1)})")

    def expr_stack(self, shape, depth):
        items = [self.expr(SCALAR, depth - 1) for _ in range(3)]
        return f"np.array([{', '.join(items)}])"

    def expr_iterate(self, shape, depth):
        """The language's iteration idioms over a few items: a generator expression or a map
        over a lambda, consumed by sum (single-pass iterators: issue 9)."""
        item_shape = self.pick([s for s in SHAPES if fits(s, shape)])
        items = [self.expr(item_shape, depth - 1) for _ in range(self.rng.randrange(1, 4))]
        seq = f"[{', '.join(items)}]" if self.chance(0.7) else f"({', '.join(items)},)"
        u = self.fresh("u")
        saved = self.vars
        self.vars = dict(saved, **{u: Var(u, "array", item_shape, frozen=True)})
        try:
            body = self.expr(shape, depth - 1)
        finally:
            self.vars = saved
        if self.chance(0.5):
            return f"sum({body} for {u} in {seq})"
        return f"sum(map(lambda {u}: {body}, {seq}))"

    def callable_for(self, shape):
        helpers = [h for h in self.helpers if h.shape == shape
                   and (h.kind != "cont" or self.can_call(h))]
        funcs = [v for v in self.of_kind("func") if v.shape == shape]
        return helpers + funcs

    def expr_call(self, shape, depth):
        target = self.pick(self.callable_for(shape))
        if isinstance(target, Var):  # a closure or lambda: one parameter, maybe a default
            args = [self.expr(target.parts[0], depth - 1)]
            if len(target.parts) > 1 and self.chance(0.5):
                args.append(f"k={literal(SCALAR, self.rng)}")
            return f"{target.name}({', '.join(args)})"
        return self.helper_call(target, depth)

    def helper_call(self, h: Helper, depth) -> str:
        if h.kind == "gen":  # a generator function, consumed where it is called
            call = f"{h.name}({self.expr(h.params[0][1], depth - 1)})"
            if self.chance(0.3):
                return f"np.sum(np.stack(list({call})), axis=0)"
            return f"sum({call})"
        if h.kind == "cont":
            return f"{h.name}({', '.join(self.container_args(h, depth))})"
        if h.kind == "star":
            shape = h.params[0][1]
            lists = [v for v in self.of_kind("list") if v.shape == shape]
            if lists and self.chance(0.3):  # h(*params): the whole list spread
                spread = self.pick(lists).name
                if self.chance(0.5):
                    return f"{h.name}(*{spread})"
                return f"{h.name}({self.expr(shape, depth - 1)}, *{spread})"
            items = [self.expr(shape, depth - 1) for _ in range(self.rng.randrange(1, 4))]
            keyword = [f"t={self.expr(SCALAR, depth - 1)}"] if self.chance(0.4) else []
            if len(items) > 1 and self.chance(0.4):  # the rest spread from a list
                return f"{h.name}({items[0]}, *[{', '.join(items[1:])}])"
            if self.chance(0.2):
                keyword = [f"**{{'t': {self.expr(SCALAR, depth - 1)}}}"]
            return f"{h.name}({', '.join(items + keyword)})"
        required = [(n, self.expr(s, depth - 1)) for n, s in h.params]
        optional = [(n, self.expr(SCALAR, depth - 1)) for n, _ in h.defaults if self.chance(0.5)]
        kwonly = [(n, self.expr(SCALAR, depth - 1)) for n, _ in h.kwonly if self.chance(0.5)]
        if self.chance(0.2):  # everything by keyword, in any order
            named = required + optional + kwonly
            self.rng.shuffle(named)
            return f"{h.name}({', '.join(f'{n}={e}' for n, e in named)})"
        positional = [e for _, e in required]
        keywords = kwonly[:]
        names = [n for n, _ in h.defaults]
        for n, e in optional:  # a default after a skipped one must go by keyword
            if self.chance(0.5) and names.index(n) == len(positional) - len(required):
                positional.append(e)
            else:
                keywords.append((n, e))
        return f"{h.name}({', '.join(positional + [f'{n}={e}' for n, e in keywords])})"

    def containers_for(self, shape):
        out = []
        for v in self.vars.values():
            if v.kind == "list" and v.shape == shape:
                out += [f"{v.name}[0]", f"{v.name}[-1]"]
            elif v.kind == "tuple":
                out += [f"{v.name}[{k}]" for k, s in enumerate(v.parts) if s == shape]
            elif v.kind == "dict":
                out += [f"{v.name}[{k!r}]" for k, s in v.parts if s == shape]
            elif v.kind == "layers":
                out += [f"{v.name}[{i}][{k}]" for k, s in enumerate(v.parts) if s == shape
                        for i in ("0", "-1")]
        return out

    def expr_container(self, shape, depth):
        return self.pick(self.containers_for(shape))

    def condition(self) -> str:
        """A scalar comparison with a constant threshold (the probes check its margin)."""
        op = self.pick([">", "<", ">=", "<="])
        cond = f"{self.expr(SCALAR, 1)} {op} {literal(SCALAR, self.rng)}"
        if self.chance(0.1):
            cond = f"not {cond}" if self.chance(0.5) else \
                f"{cond} and {self.expr(SCALAR, 1)} > {literal(SCALAR, self.rng)}"
        return cond


class _Statements:
    """Statements, each a list of source lines (mixed into Generator)."""

    def statements(self, count: int) -> list[str]:
        lines = []
        for _ in range(count):
            lines += self.statement()
        return lines

    def statement(self) -> list[str]:
        options = [("assign", 5), ("reassign", 3), ("augassign", 2), ("store", 1.5),
                   ("if", 2), ("for", 1.5), ("while", 0.8), ("list", 1.2), ("tuple", 0.5),
                   ("dict", 0.6), ("closure", 0.8), ("alias", 0.1), ("try", 0.2),
                   ("idiom", 1.5), ("container", 2.5 if self.containers() else 0),
                   ("tuple_call", 0.8 if self.returning_tuples() else 0)]
        if self.in_loop:
            options += [("exit", 1)]
        if self.in_main:
            options += [("early_return", 0.4)]
        if self.depth >= 2:  # no deeper nesting
            options = [o for o in options if o[0] not in ("if", "for", "while", "try",
                                                          "closure", "idiom")]
        kinds, weights = zip(*options)
        return getattr(self, "stmt_" + self.rng.choices(kinds, weights)[0])()

    def new_array(self, name, shape):
        old = self.vars.get(name)
        self.vars[name] = Var(name, "array", shape, assigned=old.assigned + 1 if old else 1)

    def stmt_assign(self):
        shape = self.pick(SHAPES)
        name, text = self.fresh(), self.expr(shape)
        self.new_array(name, shape)
        return [f"{name} = {text}"]

    def stmt_reassign(self):
        targets = self.arrays(writable=True)
        if not targets:
            return self.stmt_assign()
        v = self.pick(targets)
        text = self.expr(v.shape)
        while text == v.name and not self.chance(0.05):  # `x = x` is rare in real code
            text = self.expr(v.shape)
        v.assigned += 1
        return [f"{v.name} = {text}"]

    def stmt_augassign(self):
        targets = [v for v in self.arrays(writable=True) if not v.name.startswith("row")]
        if not targets:
            return self.stmt_assign()
        v = self.pick(targets)
        small = self.pick([s for s in SHAPES if fits(s, v.shape)])
        v.assigned += 1
        return [f"{v.name} {self.pick(['+=', '-=', '*='])} {self.expr(small)}"]

    def stmt_store(self):
        """A fresh array filled by element stores, often in a loop over its indices."""
        shape = self.pick([VEC, MAT])
        name = self.fresh()
        lines = [f"{name} = np.zeros({shape[0] if len(shape) == 1 else shape})"]
        self.new_array(name, shape)
        self.vars[name].frozen = True  # not an operand of assignments while being filled
        if self.chance(0.5):
            i = self.fresh("i")
            body_shape = SCALAR if shape == VEC else VEC
            lines.append(f"for {i} in range({shape[0]}):")

            def body():
                self.vars[i] = Var(i, "index", bound=shape[0])
                op = self.pick(["=", "+=", "="])
                return self.statements(self.rng.randrange(0, 2)) + \
                    [f"{name}[{i}] {op} {self.expr(body_shape)}"]
            lines += self.block(body)
        else:
            for _ in range(self.rng.randrange(1, 3)):
                if shape == VEC:
                    target, s = self.pick([(f"[{self.index(3)}]", SCALAR), ("[1:]", VEC2),
                                           ("[[0, 2]]", VEC2)])
                else:
                    target, s = self.pick([(f"[{self.index(2)}, {self.index(3)}]", SCALAR),
                                           (f"[{self.index(2)}]", VEC), ("[:, 1]", VEC2)])
                lines.append(f"{name}{target} {self.pick(['=', '+='])} {self.expr(s)}")
        self.vars[name].frozen = False
        return lines

    def stmt_if(self):
        lines = [f"if {self.condition()}:"]
        lines += self.block(lambda: self.statements(self.rng.randrange(1, 3)))
        if self.chance(0.3):
            lines.append(f"elif {self.condition()}:")
            lines += self.block(lambda: self.statements(self.rng.randrange(1, 3)))
        if self.chance(0.6):
            lines.append("else:")
            lines += self.block(lambda: self.statements(self.rng.randrange(1, 3)))
        return lines

    def loop_body(self, extra=None):
        def make():
            was, self.in_loop = self.in_loop, True
            try:
                if extra:
                    extra()
                return self.statements(self.rng.randrange(1, 4))
            finally:
                self.in_loop = was
        return self.block(make)

    def stmt_for(self):
        kind = self.pick(["range", "range", "list", "enumerate", "rows", "zip"])
        if kind == "range" or (kind in ("list", "enumerate") and not self.of_kind("list")):
            i, n = self.fresh("i"), self.rng.randrange(1, 5)
            head = f"for {i} in range({n}):"
            return [head] + self.loop_body(lambda: self.vars.__setitem__(
                i, Var(i, "index", bound=n)))
        if kind in ("list", "enumerate"):
            lst, t, i = self.pick(self.of_kind("list")), self.fresh("t"), self.fresh("i")
            head = f"for {t} in {lst.name}:" if kind == "list" else \
                f"for {i}, {t} in enumerate({lst.name}):"
            return [head] + self.loop_body(lambda: self.vars.__setitem__(
                t, Var(t, "array", lst.shape, frozen=True)))
        if kind == "rows":
            row, m = self.fresh("row"), self.leaf(MAT)
            return [f"for {row} in {m}:"] + self.loop_body(lambda: self.vars.__setitem__(
                row, Var(row, "array", VEC, frozen=True)))
        a, b = self.fresh("a"), self.fresh("b")
        head = f"for {a}, {b} in zip({self.leaf(VEC)}, {self.leaf(VEC)}):"

        def names():
            self.vars[a] = Var(a, "array", SCALAR, frozen=True)
            self.vars[b] = Var(b, "array", SCALAR, frozen=True)
        return [head] + self.loop_body(names)

    def stmt_while(self):
        k, bound = self.fresh("k"), self.rng.randrange(1, 5)
        lines = [f"{k} = 0"]
        if self.chance(0.5):
            lines.append(f"while {k} < {bound} and {self.condition()}:")
            lines += self.loop_body(lambda: None)
            lines.insert(2, f"    {k} += 1")
        else:  # the exit test first: a `continue` in the body must not skip it
            lines += ["while True:", f"    {k} += 1",
                      f"    if {k} > {bound} or {self.condition()}:", "        break"]
            lines += self.loop_body(lambda: None)
        return lines

    def stmt_exit(self):
        word = self.pick(["break", "continue"])
        return [f"if {self.condition()}:", f"    {word}"]

    def stmt_early_return(self):
        return [f"if {self.condition()}:", f"    return {self.expr(self.out_shape)}"]

    def stmt_list(self):
        targets = self.of_kind("list")
        if targets and self.chance(0.5):
            lst = self.pick(targets)
            if self.chance(0.7):
                return [f"{lst.name}.append({self.expr(lst.shape)})"]
            name = self.fresh()
            self.new_array(name, lst.shape)
            return [f"{name} = sum({lst.name})" if self.chance(0.5) else
                    f"{name} = np.sum(np.stack({lst.name}), axis=0)"]
        if targets and self.chance(0.6):  # a comprehension over a list
            lst, name = self.pick(targets), self.fresh("lst")
            saved = self.vars
            self.vars = dict(saved, t=Var("t", "array", lst.shape, frozen=True))
            try:
                item = self.expr(lst.shape, 1)
            finally:
                self.vars = saved
            self.vars[name] = Var(name, "list", lst.shape)
            return [f"{name} = [{item} for t in {lst.name}]"]
        shape, name = self.pick(SHAPES), self.fresh("lst")
        items = [self.expr(shape, 1) for _ in range(self.rng.randrange(1, 4))]
        self.vars[name] = Var(name, "list", shape)
        return [f"{name} = [{', '.join(items)}]"]

    def stmt_tuple(self):
        shapes = [self.pick(SHAPES) for _ in range(2)]
        items = [self.expr(s, 1) for s in shapes]
        if self.chance(0.5):
            name = self.fresh("t")
            self.vars[name] = Var(name, "tuple", parts=tuple(shapes))
            return [f"{name} = ({', '.join(items)})"]
        names = [self.fresh(), self.fresh()]
        for n, s in zip(names, shapes):
            self.new_array(n, s)
        if self.chance(0.3) and shapes[0] == shapes[1]:
            return [f"{names[0]}, {names[1]} = {', '.join(items)}",
                    f"{names[0]}, {names[1]} = {names[1]}, {names[0]}"]
        return [f"{', '.join(names)} = {', '.join(items)}"]

    def stmt_dict(self):
        dicts = self.of_kind("dict")
        if dicts and self.chance(0.6):
            d = self.pick(dicts)
            key, shape = self.pick(d.parts)
            return [f"{d.name}[{key!r}] {self.pick(['=', '+='])} {self.expr(shape)}"]
        name = self.fresh("d")
        parts = tuple((k, self.pick(SHAPES)) for k in ("a", "b", "c")[:self.rng.randrange(1, 4)])
        items = ", ".join(f"{k!r}: {self.expr(s, 1)}" for k, s in parts)
        self.vars[name] = Var(name, "dict", parts=parts)
        return [f"{name} = {{{items}}}"]

    def stmt_closure(self):
        """A nested def or lambda reading variables assigned once so far."""
        name, shape = self.fresh("g"), self.pick(SHAPES)
        outer = {n: v for n, v in self.vars.items()
                 if v.kind == "array" and v.assigned == 1 and fits(v.shape, shape)}
        saved = self.vars
        self.vars = dict(outer)
        for v in outer.values():
            v.frozen = True
        self.vars["t"] = Var("t", "array", shape, frozen=True)
        has_default = self.chance(0.3)
        if has_default:
            self.vars["k"] = Var("k", "array", SCALAR, frozen=True)
        params = "t, k=0.5" if has_default else "t"
        try:
            if self.chance(0.4):
                lines = [f"{name} = lambda {params}: {self.expr(shape)}"]
            else:
                lines = [f"def {name}({params}):", f"    return {self.expr(shape)}"]
        finally:
            self.vars = saved
        parts = (shape, SCALAR) if has_default else (shape,)
        self.vars[name] = Var(name, "func", shape, parts=parts)
        return lines

    def stmt_alias(self):
        sources = self.arrays()
        if not sources:
            return self.stmt_assign()
        v, name = self.pick(sources), self.fresh()
        self.new_array(name, v.shape)
        return [f"{name} = {v.name}"]

    def stmt_try(self):
        name, shape = self.fresh(), self.pick(SHAPES)
        body, fallback = self.expr(shape), self.expr(shape)
        self.new_array(name, shape)
        return ["try:", f"    {name} = {body}", "except (ValueError, IndexError):",
                f"    {name} = {fallback}"]


class _Idioms:
    """The language's idioms a tracing tool never sees (issue 9), one statement group each
    (mixed into Generator)."""

    def stmt_idiom(self):
        kinds = ["walrus", "with", "raise", "match", "nonlocal", "starred", "dict_call",
                 "item_update", "nested_try"]
        if any(h.kind == "plain" and len(h.params) == 1 for h in self.helpers):
            kinds.append("partial")
        return getattr(self, "idiom_" + self.pick(kinds))()

    def indented(self, make) -> list[str]:
        """Lines of a block that always runs (with, try): its names stay defined after it."""
        self.depth += 1
        try:
            return ["    " + line for line in make()]
        finally:
            self.depth -= 1

    def idiom_walrus(self):
        name = self.fresh("w")
        head = f"if ({name} := {self.expr(SCALAR, 1)}) {self.pick(['>', '<'])} " \
               f"{literal(SCALAR, self.rng)}:"
        self.new_array(name, SCALAR)
        return [head] + self.block(lambda: self.statements(self.rng.randrange(1, 3)))

    def idiom_with(self):
        manager = self.pick(['np.errstate(divide="ignore", invalid="ignore")',
                             "warnings.catch_warnings()", "np.errstate(all='ignore')"])
        return [f"with {manager}:"] + self.indented(
            lambda: self.statements(self.rng.randrange(1, 3)))

    def idiom_raise(self):
        """try/except/else/finally where the body may really raise: only the statements that
        ran may be reversed."""
        name, shape = self.fresh(), self.pick(SHAPES)
        lines = ["try:", f"    if {self.condition()}:", "        raise ValueError('fuzz')",
                 f"    {name} = {self.expr(shape)}", "except ValueError:",
                 f"    {name} = {self.expr(shape)}"]
        self.new_array(name, shape)
        if self.chance(0.5):
            lines += ["else:", f"    {name} = {name} * {paren(self.expr(SCALAR, 1))}"]
        if self.chance(0.5):
            other, s2 = self.fresh(), self.pick(SHAPES)
            lines += ["finally:", f"    {other} = {self.expr(s2)}"]
            self.new_array(other, s2)
        return lines

    def idiom_nested_try(self):
        """A try in a try body, sometimes inside a with block there: the inner body may
        raise an exception its handler takes, or one that escapes (through the inner
        finally) to the outer handler; only the statements that ran may be reversed."""
        name, shape = self.fresh(), self.pick(SHAPES)
        raised = self.pick(["ValueError", "KeyError"])
        inner = ["try:", f"    if {self.condition()}:", f"        raise {raised}('fuzz')",
                 f"    {name} = {self.expr(shape)}", "except KeyError:",
                 f"    {name} = {self.expr(shape)}"]
        self.new_array(name, shape)
        if self.chance(0.5):
            other, s2 = self.fresh(), self.pick(SHAPES)
            inner += ["finally:", f"    {other} = {self.expr(s2)}"]
            self.new_array(other, s2)
        if self.chance(0.5):
            manager = self.pick(['np.errstate(invalid="ignore")', "warnings.catch_warnings()"])
            inner = [f"with {manager}:"] + ["    " + line for line in inner]
        after = [f"{name} = {name} * {paren(self.expr(SCALAR, 1))}"] if self.chance(0.5) else []
        return (["try:"] + ["    " + line for line in inner + after]
                + ["except ValueError:", f"    {name} = {self.expr(shape)}"])

    def idiom_match(self):
        name, shape = self.fresh(), self.pick(SHAPES)
        first, second = self.expr(shape), self.expr(shape)
        if self.chance(0.5):
            lines = [f"match int({self.expr(SCALAR, 1)} > {literal(SCALAR, self.rng)}):",
                     "    case 0:", f"        {name} = {first}",
                     "    case _:", f"        {name} = {second}"]
        else:  # a sequence pattern with a guard
            p, q = self.fresh("p"), self.fresh("q")
            pair = f"({self.expr(SCALAR, 1)}, {self.expr(shape, 1)})"
            saved = self.vars
            self.vars = dict(saved, **{p: Var(p, "array", SCALAR, frozen=True),
                                       q: Var(q, "array", shape, frozen=True)})
            try:
                guarded = self.expr(shape)
            finally:
                self.vars = saved
            lines = [f"match {pair}:",
                     f"    case ({p}, {q}) if {p} > {literal(SCALAR, self.rng)}:",
                     f"        {name} = {guarded}", "    case _:", f"        {name} = {second}"]
        self.new_array(name, shape)
        return lines

    def idiom_nonlocal(self):
        """A nested function accumulating into its caller's variable."""
        acc, add, shape = self.fresh("acc"), self.fresh("add"), self.pick(SHAPES)
        lines = [f"{acc} = {self.expr(shape)}"]
        saved = self.vars
        self.vars = {"t": Var("t", "array", shape, frozen=True),
                     acc: Var(acc, "array", shape, frozen=True)}
        try:
            step = self.expr(shape, 1)
        finally:
            self.vars = saved
        lines += [f"def {add}(t):", f"    nonlocal {acc}", f"    {acc} = {acc} + {step}"]
        lines += [f"{add}({self.expr(shape, 1)})" for _ in range(self.rng.randrange(1, 3))]
        self.new_array(acc, shape)
        return lines

    def idiom_starred(self):
        shape = self.pick(SHAPES)
        if self.chance(0.3):  # zip(*pairs): two tuples
            other = self.pick(SHAPES)
            pairs = [f"({self.expr(shape, 1)}, {self.expr(other, 1)})" for _ in range(2)]
            a, b = self.fresh("t"), self.fresh("t")
            self.vars[a] = Var(a, "tuple", parts=(shape, shape))
            self.vars[b] = Var(b, "tuple", parts=(other, other))
            return [f"{a}, {b} = zip(*[{', '.join(pairs)}])"]
        items = [self.expr(shape, 1) for _ in range(self.rng.randrange(2, 4))]
        one, rest = self.fresh(), self.fresh("lst")
        target = f"{one}, *{rest}" if self.chance(0.6) else f"*{rest}, {one}"
        self.new_array(one, shape)
        self.vars[rest] = Var(rest, "list", shape)
        return [f"{target} = [{', '.join(items)}]"]

    def idiom_dict_call(self):
        name = self.fresh("d")
        parts = tuple((k, self.pick(SHAPES)) for k in ("a", "b")[:self.rng.randrange(1, 3)])
        self.vars[name] = Var(name, "dict", parts=parts)
        return [f"{name} = dict({', '.join(f'{k}={self.expr(s, 1)}' for k, s in parts)})"]

    def idiom_item_update(self):
        """Arrays held in a list updated in place, an element, a slice or the whole item
        (``rows[i][1:] += e``): new containers when nothing else holds them, refused when the
        list repeats one array (``[a] * n``), whose every slot Python changes."""
        shape, n, name = self.pick([VEC, MAT]), self.rng.randrange(1, 4), self.fresh("lst")
        zeros = f"np.zeros({shape[0] if len(shape) == 1 else shape})"
        made = f"[{zeros}] * {n}" if self.chance(0.1) else \
            f"[{zeros} + {paren(self.expr(shape, 1))} for _ in range({n})]"
        i = self.fresh("i")
        parts = [("[0]", SCALAR), ("[1:]", VEC2), ("", VEC)] if shape == VEC else \
            [("[1, 2]", SCALAR), ("[0]", VEC), ("[:, 1]", VEC2), ("", MAT)]

        def body():
            self.vars[i] = Var(i, "index", bound=n)
            lines = []
            for _ in range(self.rng.randrange(1, 3)):
                sub, s = self.pick(parts)
                op = self.pick(["+=", "*="] if not sub else ["=", "+=", "-="])
                lines.append(f"{name}[{i}]{sub} {op} {self.expr(s)}")
            return lines
        lines = [f"{name} = {made}", f"for {i} in range({n}):"] + self.block(body)
        self.vars[name] = Var(name, "list", shape)
        return lines

    def idiom_partial(self):
        h = self.pick([h for h in self.helpers if h.kind == "plain" and len(h.params) == 1])
        bound = [(n, self.expr(SCALAR, 1)) for n, _ in h.defaults + h.kwonly if self.chance(0.7)]
        made = f"functools.partial({h.name}{''.join(f', {n}={e}' for n, e in bound)})"
        if self.chance(0.4):  # map(partial(f, params), data)
            name = self.fresh()
            items = [self.expr(h.params[0][1], 1) for _ in range(self.rng.randrange(1, 3))]
            self.new_array(name, h.shape)
            return [f"{name} = sum(map({made}, [{', '.join(items)}]))"]
        name = self.fresh("g")
        self.vars[name] = Var(name, "func", h.shape, parts=(h.params[0][1],))
        return [f"{name} = {made}"]


# container parameters of f: (kind, name); shapes of (W, b) pairs in 'layers'
CONTAINER_KINDS = [("layers", "params"), ("layers", "params"), ("list", "ws"),
                   ("dict", "cfg"), ("tuple", "pair")]
LAYER_PARTS = [(MAT, VEC2), (MAT, COL), (VEC, SCALAR), (MAT, MAT), (VEC, VEC), (SCALAR, VEC)]


class _Containers:
    """Containers passed around (the differentiated function's parameters, helpers' arguments
    and results): reading, unpacking, iterating (zip, enumerate, items), copying and rebuilding
    them, updating the copies or the arrays they hold, while the old container stays in use
    (mixed into Generator)."""

    def container_spec(self, kind: str) -> Spec:
        n = self.rng.randrange(1, 4)
        if kind == "layers":
            return Spec("layers", self.pick(LAYER_PARTS), n)
        if kind == "list":
            return Spec("list", (self.pick(SHAPES),), n)
        if kind == "tuple":
            return Spec("tuple", (self.pick(SHAPES), self.pick(SHAPES)))
        keys = ("w", "b", "lr")[:self.rng.randrange(1, 4)]
        return Spec("dict", tuple((k, self.pick(SHAPES)) for k in keys))

    def containers(self):
        return [v for v in self.vars.values() if v.spec() is not None]

    def can_call(self, h: Helper) -> bool:
        """Whether a container in scope fits each container parameter of ``h``."""
        return all(any(want.same(v.spec()) for v in self.containers())
                   for _, want in h.params if isinstance(want, Spec))

    def container_args(self, h: Helper, depth=1):
        """Arguments for a call of ``h``: None when no container in scope fits a parameter."""
        if not self.can_call(h):
            return None
        args = []
        for _, want in h.params:
            if isinstance(want, Spec):
                fitting = [v for v in self.containers() if want.same(v.spec())]
                if not fitting:
                    return None
                args.append(self.pick(fitting).name)
            else:
                args.append(self.expr(want, depth - 1) if depth > 0 else self.leaf(want))
        return args

    def with_names(self, names: dict, make):
        """``make()`` with extra frozen names in scope (loop targets of a comprehension)."""
        saved = self.vars
        self.vars = dict(saved, **{n: Var(n, "array", s, frozen=True) for n, s in names.items()})
        try:
            return make()
        finally:
            self.vars = saved

    # -- statements on a container in scope -------------------------------------------------
    def stmt_container(self):
        v = self.pick(self.containers())
        return getattr(self, "container_" + v.kind)(v)

    def new_container(self, name, spec: Spec):
        self.vars[name] = var_of(name, spec)

    def copy_of(self, v: Var) -> str:
        if v.kind == "dict":
            return self.pick([f"dict({v.name})", f"{v.name}.copy()", f"{{**{v.name}}}"])
        if v.kind == "tuple":
            return self.pick([f"tuple({v.name})", f"{v.name}[:]"])
        return self.pick([f"list({v.name})", f"{v.name}[:]", f"{v.name}.copy()",
                          f"[*{v.name}]"])

    def container_layers(self, v: Var):
        s1, s2 = v.parts
        w, b = self.fresh("W"), self.fresh("b")
        kind = self.pick(["loop", "enumerate", "unpack", "rebuild", "copy", "sum", "column",
                          "call"])
        if kind == "call" and not self.container_helpers(v):
            kind = "unpack"
        if kind in ("loop", "enumerate"):
            i = self.fresh("i")
            head = f"for {w}, {b} in {v.name}:" if kind == "loop" else \
                f"for {i}, ({w}, {b}) in enumerate({v.name}):"

            def names():
                self.vars[w] = Var(w, "array", s1, frozen=True)
                self.vars[b] = Var(b, "array", s2, frozen=True)
                if kind == "enumerate":
                    self.vars[i] = Var(i, "index", bound=max(v.bound, 1))
            return [head] + self.loop_body(names)
        if kind == "unpack":
            self.new_array(w, s1)
            self.new_array(b, s2)
            lines = [f"{w}, {b} = {v.name}[{self.index(max(v.bound, 1))}]"]
            if s1 != SCALAR and self.chance(0.3):  # an update of the array the container holds
                lines.append(f"{w} {self.pick(['+=', '-=', '*='])} {self.expr(s1, 1)}")
            return lines
        if kind == "rebuild":
            name = self.fresh("params")
            items = self.with_names({w: s1, b: s2},
                                    lambda: (self.expr(s1, 1), self.expr(s2, 1)))
            self.new_container(name, Spec("layers", v.parts, v.bound))
            return [f"{name} = [({items[0]}, {items[1]}) for {w}, {b} in {v.name}]"]
        if kind == "copy":
            name = self.fresh("params")
            lines = [f"{name} = {self.copy_of(v)}"]
            change = self.pick(["store", "append", "none"])
            if change == "store":
                lines.append(f"{name}[{self.index(max(v.bound, 1))}] = "
                             f"({self.expr(s1, 1)}, {self.expr(s2, 1)})")
            elif change == "append":
                lines.append(f"{name}.append(({self.expr(s1, 1)}, {self.expr(s2, 1)}))")
            self.new_container(name, Spec("layers", v.parts, v.bound))
            return lines
        if kind == "sum":
            name = self.fresh()
            body = self.with_names({w: s1, b: s2}, lambda: self.expr(SCALAR, 1))
            self.new_array(name, SCALAR)
            return [f"{name} = sum({body} for {w}, {b} in {v.name})"]
        if kind == "column":  # the weights alone, as a list
            name, k = self.fresh("lst"), self.rng.randrange(2)
            target = f"{w}, _" if k == 0 else f"_, {w}"
            self.vars[name] = Var(name, "list", v.parts[k], bound=v.bound)
            return [f"{name} = [{w} for {target} in {v.name}]"]
        return self.call_container_helper(v)

    def container_list(self, v: Var):
        kind = self.pick(["copy", "zip", "update", "call", "spread"])
        if kind == "call" and not self.container_helpers(v):
            kind = "copy"
        if kind == "update" and v.shape == SCALAR:
            kind = "copy"
        if kind == "copy":
            name = self.fresh("lst")
            lines = [f"{name} = {self.copy_of(v)}"]
            change = self.pick(["store", "append", "augment", "none"])
            index = self.index(max(v.bound, 1))
            if change == "store":
                lines.append(f"{name}[{index}] = {self.expr(v.shape, 1)}")
            elif change == "append":
                lines.append(f"{name}.append({self.expr(v.shape, 1)})")
            elif change == "augment":  # the copy holds the same arrays: numpy changes both
                lines.append(f"{name}[{index}] {self.pick(['+=', '*='])} {self.expr(v.shape, 1)}")
            self.vars[name] = Var(name, "list", v.shape, bound=v.bound)
            return lines
        if kind == "zip":
            others = self.of_kind("list")
            other = self.pick(others)
            a, b = self.fresh("a"), self.fresh("b")

            def names():
                self.vars[a] = Var(a, "array", v.shape, frozen=True)
                self.vars[b] = Var(b, "array", other.shape, frozen=True)
            return [f"for {a}, {b} in zip({v.name}, {other.name}):"] + self.loop_body(names)
        if kind == "update":  # an array the list holds, updated in place
            return [f"{v.name}[{self.index(max(v.bound, 1))}] {self.pick(['+=', '-='])} "
                    f"{self.expr(v.shape, 1)}"]
        if kind == "spread":  # first, *rest = ws
            first, rest = self.fresh(), self.fresh("lst")
            self.new_array(first, v.shape)
            if v.bound >= 2:
                self.vars[rest] = Var(rest, "list", v.shape, bound=v.bound - 1)
            return [f"{first}, *{rest} = {v.name}"]
        return self.call_container_helper(v)

    def container_dict(self, v: Var):
        kind = self.pick(["items", "values", "copy", "rebuild", "call"])
        if kind == "call" and not self.container_helpers(v):
            kind = "items"
        if kind in ("items", "values"):
            acc, k, e = self.fresh("acc"), self.fresh("k"), self.fresh("e")
            term = self.pick(["np.sum(np.sin({e}))", "np.mean({e} ** 2)",
                              "np.sum({e}) * {c}", "np.sum(np.tanh({e} * {c}))"])
            term = term.format(e=e, c=paren(self.expr(SCALAR, 1)))
            head = f"for {k}, {e} in {v.name}.items():" if kind == "items" else \
                f"for {e} in {v.name}.values():"
            if kind == "items" and self.chance(0.4):
                head, term = f"for {k} in {v.name}:", term.replace(e, f"{v.name}[{k}]")
            self.new_array(acc, SCALAR)
            return [f"{acc} = {self.expr(SCALAR, 1)}", head, f"    {acc} = {acc} + {term}"]
        if kind == "rebuild":
            name, k, e = self.fresh("d"), self.fresh("k"), self.fresh("e")
            self.new_container(name, v.spec())
            op = self.pick(["np.tanh({e})", "{e} * 0.5", "{e} + {e} ** 2", "np.sin({e}) * {c}"])
            return [f"{name} = {{{k}: {op.format(e=e, c=paren(self.expr(SCALAR, 1)))} "
                    f"for {k}, {e} in {v.name}.items()}}"]
        if kind == "call":
            return self.call_container_helper(v)
        name = self.fresh("d")
        key, shape = self.pick(v.parts)
        lines = [f"{name} = {self.copy_of(v)}",
                 f"{name}[{key!r}] {self.pick(['=', '=', '+='])} {self.expr(shape, 1)}"]
        self.new_container(name, v.spec())
        return lines

    def container_tuple(self, v: Var):
        kind = self.pick(["unpack", "swap", "call"])
        if kind == "call" and not self.container_helpers(v):
            kind = "unpack"
        if kind == "unpack":
            a, b = self.fresh(), self.fresh()
            self.new_array(a, v.parts[0])
            self.new_array(b, v.parts[1])
            return [f"{a}, {b} = {v.name}"]
        if kind == "swap":
            name = self.fresh("t")
            self.vars[name] = Var(name, "tuple", parts=v.parts[::-1])
            return [f"{name} = {v.name}[::-1]" if self.chance(0.5) else
                    f"{name} = ({v.name}[1], {v.name}[0])"]
        return self.call_container_helper(v)

    def container_helpers(self, v: Var):
        return [h for h in self.helpers if h.kind == "cont"
                and any(isinstance(s, Spec) and s.same(v.spec()) for _, s in h.params)]

    def call_container_helper(self, v: Var):
        return self.helper_statement(self.pick(self.container_helpers(v)))

    def returning_tuples(self):
        return [h for h in self.helpers if h.kind == "cont" and isinstance(h.shape, Spec)
                and self.can_call(h)]

    def stmt_tuple_call(self):
        return self.helper_statement(self.pick(self.returning_tuples()))

    def helper_statement(self, h: Helper):
        """``name = h(...)`` (or ``a, b = h(...)`` for a pair) of a container helper."""
        args = self.container_args(h)
        call = f"{h.name}({', '.join(args)})"
        if isinstance(h.shape, Spec):
            name = self.fresh({"dict": "d", "tuple": "t", "list": "lst"}.get(h.shape.kind,
                                                                           "params"))
            if h.shape.kind == "tuple" and self.chance(0.5):
                a, b = self.fresh(), self.fresh()
                self.new_array(a, h.shape.parts[0])
                self.new_array(b, h.shape.parts[1])
                return [f"{a}, {b} = {call}"]
            self.new_container(name, h.shape)
            return [f"{name} = {call}"]
        name = self.fresh()
        self.new_array(name, h.shape)
        return [f"{name} = {call}"]

    # -- module-level helpers taking or returning containers ----------------------------------
    def container_helper(self, index: int, spec: Spec) -> list[str]:
        """A helper reading, copying or rebuilding a container argument (maybe changing a
        caller's container, which srcgrad must refuse), or returning a tuple of arrays."""
        name = f"h{index}"
        self.out_shape, self.in_main, self.in_loop, self.depth = SCALAR, False, False, 0
        self.vars = {"p": var_of("p", spec)}
        if spec.kind == "tuple" and self.chance(0.5):  # a result of two arrays, from arrays
            return self.tuple_helper(name, spec)
        how = self.pick(["read", "read", "rebuild", "copy"] + ["change"] * (self.chance(0.2)))
        method = getattr(self, f"helper_{spec.kind}_{how}", None) or \
            getattr(self, f"helper_{spec.kind}_read")
        lines, result = method()
        self.helpers.append(Helper(name, [("p", spec)], [], [], result, "cont"))
        return [f"def {name}(p):"] + ["    " + line for line in lines]

    def tuple_helper(self, name, spec):
        s1, s2 = spec.parts
        self.out_shape, self.in_main, self.in_loop, self.depth = SCALAR, False, False, 0
        self.vars = {"a": Var("a", "array", s1)}
        body = self.statements(self.rng.randrange(0, 2))
        first, second = self.result(s1), self.expr(s2, 1)
        self.helpers.append(Helper(name, [("a", s1)], [], [], spec, "cont"))
        return [f"def {name}(a):"] + ["    " + line for line in body] + \
            [f"    return {first}, {second}"]

    def helper_layers_read(self):
        """An MLP's forward pass: ``for W, b in p: a = g(W, b, a)``."""
        s1, s2 = self.vars["p"].parts
        shape = self.pick(SHAPES)
        self.vars["a"] = Var("a", "array", shape)
        step = self.with_names({"W": s1, "b": s2}, lambda: self.expr(shape, 2))
        lines = [f"a = {self.expr(shape, 1)}", "for W, b in p:", f"    a = {step}"]
        return lines + [f"return {self.result(shape)}"], shape

    def helper_layers_rebuild(self):
        s1, s2 = self.vars["p"].parts
        items = self.with_names({"W": s1, "b": s2},
                                lambda: (self.expr(s1, 1), self.expr(s2, 1)))
        return [f"return [({items[0]}, {items[1]}) for W, b in p]"], self.vars["p"].spec()

    def helper_layers_copy(self):
        s1, s2 = self.vars["p"].parts
        change = self.pick([f"q[0] = ({self.expr(s1, 1)}, {self.expr(s2, 1)})",
                            f"q.append(({self.expr(s1, 1)}, q[-1][1]))"])
        return [f"q = {self.copy_of(self.vars['p'])}", change, "return q"], \
            self.vars["p"].spec()

    def helper_layers_change(self):
        s1, s2 = self.vars["p"].parts
        return [f"p[-1] = ({self.expr(s1, 1)}, {self.expr(s2, 1)})",
                f"return {self.expr(SCALAR, 1)}"], SCALAR

    def helper_list_read(self):
        shape = self.vars["p"].shape
        self.vars["a"] = Var("a", "array", shape)
        step = self.with_names({"w": shape}, lambda: self.expr(shape, 2))
        return ["a = p[0]", "for w in p[1:]:", f"    a = {step}",
                f"return {self.result(shape)}"], shape

    def helper_list_rebuild(self):
        shape = self.vars["p"].shape
        item = self.with_names({"w": shape}, lambda: self.expr(shape, 1))
        return [f"return [{item} for w in p]"], self.vars["p"].spec()

    def helper_list_copy(self):
        shape = self.vars["p"].shape
        change = self.pick([f"q[-1] = {self.expr(shape, 1)}", f"q.append({self.expr(shape, 1)})"])
        return [f"q = {self.copy_of(self.vars['p'])}", change, "return q"], self.vars["p"].spec()

    def helper_list_change(self):
        shape = self.vars["p"].shape
        return [f"p.append({self.expr(shape, 1)})", f"return {self.expr(shape, 1)}"], shape

    def helper_dict_read(self):
        parts = dict(self.vars["p"].parts)
        terms = [f"np.sum(np.sin(p[{k!r}]))" if s != SCALAR else f"p[{k!r}] ** 2"
                 for k, s in parts.items()]
        return [f"return {' + '.join(terms)}"], SCALAR

    def helper_dict_rebuild(self):
        return ["return {k: np.tanh(v) + 0.5 * v for k, v in p.items()}"], self.vars["p"].spec()

    def helper_dict_copy(self):
        key, shape = self.pick(self.vars["p"].parts)
        return [f"q = {self.copy_of(self.vars['p'])}", f"q[{key!r}] = {self.expr(shape, 1)}",
                "return q"], self.vars["p"].spec()

    def helper_dict_change(self):
        key, shape = self.pick(self.vars["p"].parts)
        return [f"p[{key!r}] = {self.expr(shape, 1)}", f"return {self.expr(SCALAR, 1)}"], SCALAR

    def helper_tuple_read(self):
        s1, s2 = self.vars["p"].parts
        self.new_array("u", s1)
        self.new_array("v", s2)
        return ["u, v = p", f"return {self.result(s1)}"], s1


class Generator(_Expressions, _Statements, _Idioms, _Containers):
    """Writes one random program; ``rng`` decides everything."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.counter = 0
        self.vars: dict[str, Var] = {}
        self.helpers: list[Helper] = []
        self.out_shape = SCALAR
        self.in_loop = False
        self.in_main = False
        self.depth = 0

    # names and scope
    def fresh(self, prefix="v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def arrays(self, shape=None, writable=False):
        return [v for v in self.vars.values() if v.kind == "array"
                and (shape is None or v.shape == shape)
                and not (writable and v.frozen)]

    def of_kind(self, kind):
        return [v for v in self.vars.values() if v.kind == kind]

    def block(self, make):
        """Lines of a nested block; names it creates are not used after it."""
        saved, self.depth = dict(self.vars), self.depth + 1
        try:
            return ["    " + line for line in make()]
        finally:
            self.vars, self.depth = saved, self.depth - 1

    def chance(self, p) -> bool:
        return self.rng.random() < p

    def pick(self, options):
        return self.rng.choice(options)

    # functions
    def helper(self, index: int) -> list[str]:
        """A module-level helper with positional, defaulted and keyword-only parameters."""
        name = f"h{index}"
        params = [(p, self.pick(SHAPES)) for p in ("a", "b")[:self.rng.randrange(1, 3)]]
        defaults = [("c", literal(SCALAR, self.rng))] if self.chance(0.6) else []
        kwonly = [("scale", literal(SCALAR, self.rng))] if self.chance(0.4) else []
        shape = self.pick(SHAPES)
        self.vars = {p: Var(p, "array", s) for p, s in params + [(n, SCALAR) for n, _ in
                                                                   defaults + kwonly]}
        self.out_shape, self.in_main, self.in_loop = shape, False, False
        signature = [p for p, _ in params] + [f"{n}={v}" for n, v in defaults]
        if kwonly:
            signature += ["*"] + [f"{n}={v}" for n, v in kwonly]
        lines = [f"def {name}({', '.join(signature)}):"]
        body = self.statements(self.rng.randrange(0, 3))
        body.append(f"return {self.result(shape)}")
        self.helpers.append(Helper(name, params, defaults, kwonly, shape))
        return lines + ["    " + line for line in body]

    def recursive_helper(self, index: int) -> list[str]:
        name, shape = f"h{index}", self.pick([SCALAR, VEC])
        self.vars = {"a": Var("a", "array", shape), "c": Var("c", "array", SCALAR)}
        step = self.expr(shape, 1)
        self.helpers.append(Helper(name, [("a", shape)], [("c", "0.5")], [], shape))
        return [f"def {name}(a, c=0.5, depth=2):", "    if depth == 0:", "        return a",
                f"    return {name}({step}, c=c, depth=depth - 1)"]

    def generator_helper(self, index: int) -> list[str]:
        """A generator function (issue 9): yields a few items, maybe stops early."""
        name, shape = f"h{index}", self.pick(SHAPES)
        self.vars = {"a": Var("a", "array", shape), "c": Var("c", "array", SCALAR)}
        self.out_shape, self.in_main, self.in_loop = shape, False, False
        n, j = self.rng.randrange(1, 4), self.fresh("j")
        lines = [f"def {name}(a, c=0.5):", f"    yield {self.expr(shape, 1)}"]
        self.vars[j] = Var(j, "index", bound=n)
        lines.append(f"    for {j} in range({n}):")
        if self.chance(0.3):
            lines += [f"        if {self.condition()}:", "            return"]
        lines.append(f"        yield {self.expr(shape, 1)}")
        self.helpers.append(Helper(name, [("a", shape)], [("c", "0.5")], [], shape, "gen"))
        return lines

    def star_helper(self, index: int) -> list[str]:
        """``def h(a, *rest, **kw)`` (autograd's rnn: concat_and_multiply(weights, *args))."""
        name, shape = f"h{index}", self.pick(SHAPES)
        self.vars = {"a": Var("a", "array", shape)}
        self.out_shape, self.in_main, self.in_loop = shape, False, False
        body = self.expr(shape, 1)
        rest = self.pick(["sum(rest)", "sum(r * a for r in rest)",
                          "len(rest) * a", "sum(np.tanh(r) for r in rest[::-1])"])
        lines = [f"def {name}(a, *rest, **kw):",
                 f"    return {body} + {rest} + kw.get('t', 0.0) * a"]
        self.helpers.append(Helper(name, [("a", shape)], [], [], shape, "star"))
        return lines

    def result(self, shape) -> str:
        """An expression of ``shape`` that reads the latest few variables (and, in ``f``,
        maybe an item of a container in scope)."""
        recent = self.arrays()[-3:]
        terms = [self.convert_name(v, shape) for v in recent if self.chance(0.8)]
        items = [(e, s) for s in SHAPES for e in self.containers_for(s)]
        if self.in_main and items and self.chance(0.8):
            item, s = self.pick(items)
            terms.append(item if s == shape else f"np.sum(np.tanh({item}))" if shape == SCALAR
                         else f"np.sum({item}) * np.ones({shape})")
        return " + ".join(terms) if terms else self.expr(shape)

    def convert_name(self, v: Var, shape) -> str:
        if v.shape == shape:
            return v.name
        choices = [t for s, t in CONVERSIONS[shape] if s == v.shape]
        if not choices:
            return self.expr(shape, 1)
        return self.pick(choices).format(e=v.name, i2=self.index(2), i3=self.index(3))

    def program(self) -> Program:
        lines = ["import functools", "import math", "import warnings", "", "import numpy as np", "", ""]
        names = ["x", "y", "z"][:self.rng.choice([1, 2, 2, 3])]
        params = [(n, self.rng.choice(PARAM_SHAPES)) for n in names]
        if self.chance(0.5):  # grad(f)(params, x): containers among the parameters
            kinds = dict(self.pick(CONTAINER_KINDS) for _ in range(self.rng.choice([1, 1, 2])))
            boxes = [(name, self.container_spec(kind)) for kind, name in kinds.items()]
            params = boxes + params[:2] if self.chance(0.7) else params[:2] + boxes
        specs = [s for _, s in params if isinstance(s, Spec)]
        for k in range(self.rng.choice([0, 1, 1, 2, 2, 3])):
            if specs and self.chance(0.5):
                lines += self.container_helper(k, self.pick(specs))
            elif self.chance(0.1):
                spec = Spec("tuple", (self.pick(SHAPES), self.pick(SHAPES)))
                lines += self.tuple_helper(f"h{k}", spec)
            else:
                make = self.rng.choices([self.helper, self.recursive_helper,
                                         self.generator_helper, self.star_helper],
                                        [0.72, 0.08, 0.1, 0.1])[0]
                lines += make(k)
            lines += ["", ""]
        names = [n for n, _ in params]
        self.vars = {n: var_of(n, s) if isinstance(s, Spec) else Var(n, "array", s)
                     for n, s in params}
        self.out_shape = self.pick([SCALAR] * 5 + [VEC, MAT, VEC2])
        self.in_main, self.in_loop, self.depth = True, False, 0
        body = self.statements(self.rng.randrange(2, 8))
        body.append(f"return {self.result(self.out_shape)}")
        lines += [f"def f({', '.join(names)}):"] + ["    " + line for line in body]
        loss = "f"
        if self.out_shape != SCALAR:
            loss = "f_loss"
            args = ", ".join(names)
            lines += ["", "", f"def f_loss({args}):", f"    return np.sum(np.sin(f({args})))"]
        return Program("\n".join(lines) + "\n", params, self.out_shape, loss)


# -- margins: the plain program instrumented to record how close each decision came ----------
class _Instrument(ast.NodeTransformer):
    """Wraps comparisons and kinked calls so that running the module records margins."""

    KINKED = {"abs", "max", "min", "maximum", "minimum", "clip", "norm"}

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            node.left = _call("_probe", [node.left, node.comparators[0]])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        name = getattr(node.func, "attr", getattr(node.func, "id", None))
        if name in self.KINKED and not node.keywords and len(node.args) in (1, 2, 3):
            return _call("_kink", [ast.Constant(name), node.func] + node.args)
        return node


def _call(name, args):
    return ast.Call(func=ast.Name(name, ast.Load()), args=args, keywords=[])


class Margins:
    """The smallest distance of any data decision from flipping, over one plain run."""

    def __init__(self):
        self.smallest = np.inf

    def note(self, distance):
        distance = np.asarray(distance, dtype=float)
        if distance.size:
            self.smallest = min(self.smallest, float(np.min(np.abs(distance))))

    def probe(self, value, threshold):
        if _is_float(value) and not isinstance(threshold, str):
            self.note(np.asarray(value, float) - np.asarray(threshold, float))
        return value

    def kink(self, name, fn, *args):
        if any(_is_float(a) for a in args):
            if name == "abs":
                self.note(args[0])
            elif name == "norm" and len(args) == 1:  # not differentiable at 0
                self.note(np.linalg.norm(args[0]))
            elif name in ("max", "min", "maximum", "minimum") and len(args) == 2:
                self.note(np.asarray(args[0], float) - np.asarray(args[1], float))
            elif name == "clip":
                self.note(np.asarray(args[0], float) - args[1])
                self.note(np.asarray(args[0], float) - args[2])
        return fn(*args)


def _is_float(x) -> bool:
    return isinstance(x, (float, np.floating)) or (isinstance(x, np.ndarray)
                                                   and x.dtype.kind == "f")


def smallest_margin(source: str, args) -> float:
    tree = _Instrument().visit(ast.parse(source))
    ast.fix_missing_locations(tree)
    margins = Margins()
    namespace = {"_probe": margins.probe, "_kink": margins.kink, "__name__": "fuzz_probe"}
    exec(compile(tree, "<fuzz probe>", "exec"), namespace)
    with np.errstate(all="ignore"):
        namespace["f"](*copies(args))
    return margins.smallest


# -- running programs ---------------------------------------------------------------------------
def tree_map(fn, tree, *others):
    """``fn`` of the leaves of ``tree`` (and of ``others`` at the same places), in containers
    of ``tree``'s structure (lists, tuples, dicts; anything else is a leaf)."""
    if isinstance(tree, dict):
        return {k: tree_map(fn, v, *(o[k] for o in others)) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(tree_map(fn, v, *(o[i] for o in others)) for i, v in enumerate(tree))
    return fn(tree, *others)


def leaves(value, like, what="value"):
    """The leaves of srcgrad's ``value`` in the order of ``like``'s; Mismatch when its
    containers differ from ``like``'s (type, length or keys)."""
    if isinstance(like, (dict, list, tuple)):
        if type(value) is not type(like) or len(value) != len(like) or \
                (isinstance(like, dict) and set(value) != set(like)):
            raise Mismatch(f"{what}: a {type(value).__name__} of {_length(value)} where the "
                           f"argument is a {type(like).__name__} of {len(like)}")
        keys = like.keys() if isinstance(like, dict) else range(len(like))
        return [leaf for k in keys for leaf in leaves(value[k], like[k], what)]
    if isinstance(value, (dict, list, tuple)):
        raise Mismatch(f"{what}: a {type(value).__name__} where the argument is a number or "
                       f"an array")
    return [value]


def _length(value):
    return len(value) if hasattr(value, "__len__") else "-"


def flat(value, like, what="value") -> np.ndarray:
    """srcgrad's ``value`` shaped like ``like`` as one float vector (leaves in order)."""
    parts = [np.ravel(np.asarray(v, float)) for v in leaves(value, like, what)]
    return np.concatenate(parts) if parts else np.zeros(0)


def copies(args):
    """Deep copies of the arguments' arrays and containers (programs may change them)."""
    return [tree_map(lambda a: a.copy() if isinstance(a, np.ndarray) else a, x) for x in args]


def load(source: str, directory: str, name: str):
    """Import ``source`` as a module backed by a real file, so srcgrad can read it."""
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_plain(fn, args):
    """``fn(*args)`` without srcgrad, on copies (programs may update arrays in place)."""
    with np.errstate(all="ignore"):
        out = fn(*copies(args))
    if not np.all(np.isfinite(out)):
        raise Unusable("non-finite value near the test point")
    return out


def random_like(shape, rng):
    """A value of ``shape`` (a float for ``()``), or of a container Spec."""
    if isinstance(shape, Spec):
        if shape.kind == "list":
            return [random_like(shape.parts[0], rng) for _ in range(shape.n)]
        if shape.kind == "tuple":
            return tuple(random_like(s, rng) for s in shape.parts)
        if shape.kind == "dict":
            return {k: random_like(s, rng) for k, s in shape.parts}
        return [tuple(random_like(s, rng) for s in shape.parts) for _ in range(shape.n)]
    return float(rng.standard_normal()) if shape == SCALAR else rng.standard_normal(shape)


def combine(xs, vs, eps):
    return [tree_map(lambda a, b: a + eps * b, x, v) for x, v in zip(xs, vs)]


def vdot(a, b) -> float:
    """<a, b> of srcgrad's ``a`` and the direction ``b`` (containers: over their leaves)."""
    return float(np.dot(flat(a, b, "gradient"), flat(b, b)))


def as_tuple(g, n, bare=False):
    """srcgrad's per-argument results as a tuple (``bare``: one argument's result is returned
    bare, as hvp's is, which may be a tuple itself)."""
    if n == 1 and (bare or not isinstance(g, tuple)):
        return (g,)
    return tuple(g)


class Mismatch(Exception):
    """srcgrad's number differs from finite differences."""


class Unusable(Exception):
    """The plain program is not a fair test case (raises, non-finite, not smooth)."""


class Timeout(BaseException):
    """srcgrad took longer than TIMEOUT (BaseException: no handler in srcgrad catches it)."""


def close(ad, fd, what):
    ad_arr, fd_arr = np.asarray(ad, dtype=float), np.asarray(fd, dtype=float)
    if ad_arr.shape != fd_arr.shape:
        raise Mismatch(f"{what}: shape {ad_arr.shape}, expected {fd_arr.shape}")
    scale = max(1.0, float(np.max(np.abs(fd_arr), initial=0)),
                float(np.max(np.abs(ad_arr), initial=0)))
    if not np.all(np.isfinite(ad_arr)) or np.max(np.abs(ad_arr - fd_arr), initial=0) > \
            RTOL * scale:
        raise Mismatch(f"{what}: srcgrad {_short(ad_arr)}, finite differences {_short(fd_arr)}")


def close_to_differences(ad, fd_at, what):
    """``close(ad, fd_at(EPS))``; when that fails, also against Richardson's extrapolation of
    the steps EPS and EPS/2, which cancels the leading truncation error of a steep function (a
    third derivative of 1e8 moves a central difference by 1e-4 relative): a wrong derivative
    stays wrong under it, a right one of a steep function agrees."""
    try:
        close(ad, fd_at(EPS), what)
    except Mismatch as first:
        try:
            coarse, fine = np.asarray(fd_at(EPS), float), np.asarray(fd_at(EPS / 2), float)
            close(ad, (4 * fine - coarse) / 3, what)
        except Mismatch:
            raise first from None


def _short(a) -> str:
    return np.array2string(np.asarray(a), precision=8, separator=", ").replace("\n", "")


@dataclass
class Case:
    """A program ready to check: module, inputs, directions."""

    program: Program
    f: object
    loss: object
    args: list
    direction: list
    cotangent: object
    value: object


class Checks:
    """Finite-difference checks of one case; each raises Mismatch or lets srcgrad's error out."""

    def __init__(self, case: Case):
        self.case = case

    def directional(self, fn, eps=EPS):
        """Central difference of ``fn`` along the case's direction."""
        c = self.case
        plus = run_plain(fn, combine(c.args, c.direction, eps))
        minus = run_plain(fn, combine(c.args, c.direction, -eps))
        return (np.asarray(plus, float) - np.asarray(minus, float)) / (2 * eps)

    def grad(self, srcgrad):
        c = self.case
        n = len(c.args)
        g = as_tuple(srcgrad.grad(c.loss, wrt=tuple(range(n)))(*copies(c.args)), n)
        predicted = sum(vdot(gi, vi) for gi, vi in zip(g, c.direction))
        self.shapes(g, "grad")
        close_to_differences(predicted, lambda eps: self.directional(c.loss, eps),
                             "grad <g, v>")

    def vjp(self, srcgrad):
        c = self.case
        value, pullback = srcgrad.vjp(c.f, *copies(c.args))
        close(value, c.value, "vjp value")
        g = pullback(c.cotangent)
        self.shapes(g, "vjp")
        predicted = sum(vdot(gi, vi) for gi, vi in zip(g, c.direction))
        close_to_differences(predicted, lambda eps: vdot(c.cotangent,
                                                         self.directional(c.f, eps)),
                             "vjp <J^T u, v>")

    def jvp(self, srcgrad):
        c = self.case
        value, tangent = srcgrad.jvp(c.f, tuple(copies(c.args)), tuple(c.direction))
        close(value, c.value, "jvp value")
        close_to_differences(tangent, lambda eps: self.directional(c.f, eps), "jvp J v")

    def hvp(self, srcgrad):
        c = self.case
        n = len(c.args)
        product = as_tuple(srcgrad.hvp(c.loss, tuple(copies(c.args)), tuple(c.direction)), n,
                           bare=True)
        grad = srcgrad.grad(c.loss, wrt=tuple(range(n)))

        def differences(eps):
            plus = as_tuple(grad(*combine(c.args, c.direction, eps)), n)
            minus = as_tuple(grad(*combine(c.args, c.direction, -eps)), n)
            return [(flat(p, x) - flat(m, x)) / (2 * eps)
                    for p, m, x in zip(plus, minus, c.args)]

        for k, h in enumerate(product):
            what = f"hvp H v [{c.program.params[k][0]}]"
            close_to_differences(flat(h, c.args[k], what), lambda eps: differences(eps)[k], what)

    def hessian(self, srcgrad):
        """The Hessian with respect to the first array argument (forward over reverse, batched
        over the basis) times the direction, against differences of the gradient."""
        c = self.case
        a = next(k for k, (_, s) in enumerate(c.program.params) if not isinstance(s, Spec))
        h = np.asarray(srcgrad.hessian(c.loss, wrt=a)(*copies(c.args)), float)
        v = np.asarray(c.direction[a], float)
        product = np.tensordot(h, v, axes=v.ndim) if v.ndim else h * v
        grad = srcgrad.grad(c.loss, wrt=a)
        only = [d if k == a else tree_map(np.zeros_like, d) for k, d in enumerate(c.direction)]

        def differences(eps):
            plus = grad(*combine(c.args, only, eps))
            minus = grad(*combine(c.args, only, -eps))
            return (np.asarray(plus, float) - np.asarray(minus, float)) / (2 * eps)
        close_to_differences(product, differences, "hessian H v")

    def jit(self, srcgrad):
        """The compiled gradient (numba): refused with a SrcgradError or right."""
        try:
            import numba  # noqa: F401
        except ImportError:
            raise Unusable("numba is not installed") from None
        c = self.case
        n = len(c.args)
        g = as_tuple(srcgrad.grad(c.loss, wrt=tuple(range(n)), jit=True)(*copies(c.args)), n)
        self.shapes(g, "jit")
        predicted = sum(vdot(gi, vi) for gi, vi in zip(g, c.direction))
        close_to_differences(predicted, lambda eps: self.directional(c.loss, eps),
                             "jit grad <g, v>")

    def batch(self, srcgrad):
        """vmap of the gradient over two points equals the gradient at each (the batched
        rewrite of a generated sweep against the sweep itself)."""
        c = self.case
        n = len(c.args)
        grad = srcgrad.grad(c.loss, wrt=tuple(range(n)))
        points = [c.args, combine(c.args, c.direction, 0.01)]
        stacked = [tree_map(lambda *xs: np.stack([np.asarray(x, float) for x in xs]),
                            *[p[k] for p in points]) for k in range(n)]
        batched = as_tuple(srcgrad.vmap(grad)(*stacked), n)
        for which, p in enumerate(points):
            alone = as_tuple(grad(*copies(p)), n)
            for k in range(n):
                what = f"vmap(grad) point {which} [{c.program.params[k][0]}]"
                rows = [np.asarray(b)[which] for b in leaves(batched[k], c.args[k], what)]
                close(np.concatenate([np.ravel(r) for r in rows]),
                      flat(alone[k], c.args[k], what), what)

    def shapes(self, grads, what):
        """Each gradient has its argument's containers and leaf shapes."""
        for (name, _), g, x in zip(self.case.program.params, grads, self.case.args):
            for gi, xi in zip(leaves(g, x, f"{what}: gradient of {name}"), leaves(x, x)):
                if np.shape(gi) != np.shape(xi):
                    raise Mismatch(f"{what}: gradient of {name} has a part of shape "
                                   f"{np.shape(gi)}, expected {np.shape(xi)}")

    def smooth(self):
        """Refuse a test point where one-sided differences disagree: a kink or a jump."""
        c = self.case
        at = np.asarray(run_plain(c.loss, c.args), float)
        ahead = (np.asarray(run_plain(c.loss, combine(c.args, c.direction, EPS)), float) - at)
        behind = at - np.asarray(run_plain(c.loss, combine(c.args, c.direction, -EPS)), float)
        if abs(ahead - behind) / EPS > 1e-3 * max(1.0, abs(ahead) / EPS):
            raise Unusable("one-sided differences disagree: not smooth at the test point")


CHECKS = ("grad", "vjp", "jvp", "hvp")
EXTRA_CHECKS = ("hessian", "jit", "batch")  # opt-in (--checks): slower, or need numba


# -- one program --------------------------------------------------------------------------------
@dataclass
class Result:
    index: int
    kind: str                        # correct | refused | wrong | internal | skipped
    source: str = ""
    outcomes: dict = field(default_factory=dict)   # check -> (kind, detail)
    attempts: int = 1
    args: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)   # check -> CPU seconds

    def failures(self):
        return {k: v for k, v in self.outcomes.items() if v[0] in ("wrong", "internal")}


def make_case(seed: int, index: int, directory: str):
    """Generate program ``index`` of ``seed``, regenerating until it is a fair test case."""
    for attempt in range(MAX_ATTEMPTS):
        rng = random.Random(f"{seed}:{index}:{attempt}")
        program = Generator(rng).program()
        data = np.random.default_rng([seed, index, attempt])
        args = [random_like(s, data) for _, s in program.params]
        try:
            case = prepare(program, args, data, directory, f"fz_s{seed}_{index}_{attempt}")
        except Unusable:
            continue
        return case, attempt + 1
    return None, MAX_ATTEMPTS


def prepare(program, args, data, directory, name) -> Case:
    """The case of ``program`` at ``args``; Unusable when it is not a fair test."""
    try:
        with time_limit(PLAIN_TIMEOUT), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _prepare(program, args, data, directory, name)
    except Unusable:
        raise
    except (Exception, Timeout) as e:  # the plain program raises or hangs: not a test case
        raise Unusable(f"{type(e).__name__}: {e}") from None


def _prepare(program, args, data, directory, name) -> Case:
    compile(program.source, name, "exec")
    if smallest_margin(program.source, args) < MARGIN:
        raise Unusable("a data decision is within MARGIN of flipping")
    module = load(program.source, directory, name)
    value = run_plain(module.f, args)
    if np.max(np.abs(value)) > MAX_VALUE:
        raise Unusable("value too large for finite differences")
    direction = [random_like(s, data) for _, s in program.params]
    cotangent = random_like(np.shape(value), data)
    case = Case(program, module.f, getattr(module, program.loss), args, direction, cotangent,
                value)
    Checks(case).smooth()
    return case


def classify(exc: BaseException):
    import srcgrad
    if isinstance(exc, Mismatch):
        return "wrong", str(exc)
    if isinstance(exc, Timeout):
        return "internal", f"timed out after {TIMEOUT:.0f} s"
    if isinstance(exc, srcgrad.InternalError) or not isinstance(exc, srcgrad.SrcgradError):
        return "internal", f"{type(exc).__name__}: {exc}"
    return "refused", f"{type(exc).__name__}: {exc}"


def _alarm(signum, frame):
    raise Timeout()


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise Timeout in the block after ``seconds`` (SIGALRM: main thread, Unix)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_check(checks: Checks, name: str):
    import srcgrad
    try:
        limit = TIMEOUT * (4 if name == "jit" else 1)  # numba compiles each program
        with time_limit(limit), warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            getattr(checks, name)(srcgrad)
        return "correct", ""
    except Unusable as e:
        return "skipped", str(e)
    except (Exception, Timeout) as e:
        return classify(e)


def run_program(seed: int, index: int, directory: str, checks=CHECKS) -> Result:
    case, attempts = make_case(seed, index, directory)
    if case is None:
        return Result(index, "skipped", attempts=attempts)
    result = Result(index, "correct", case.program.source, attempts=attempts, args=case.args)
    for name in checks:
        began = time.process_time()
        result.outcomes[name] = run_check(Checks(case), name)
        result.seconds[name] = time.process_time() - began
    kinds = {kind for kind, _ in result.outcomes.values()}
    for kind in ("internal", "wrong", "refused", "skipped"):
        if kind in kinds:
            result.kind = kind
            break
    return result


# -- a campaign --------------------------------------------------------------------------------
def refusal_reason(detail: str) -> str:
    """A refusal message without its location and generated names: the construct refused."""
    text = detail.split(": ", 1)[-1]
    text = re.sub(r"^\d+ unsupported constructs:\s*", "", text)
    text = re.sub(r"(^|\s)(at )?\S*\.py:\d+(: )?", " ", text).strip()
    text = re.sub(r" ?\(in \w+\(\)\)", "", text)
    text = re.sub(r"(?<!pass )'[A-Za-z_]\w*'", "'<name>'", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return text.split(". ")[0].split("\n")[0][:160]


@dataclass
class Summary:
    seed: int
    results: list = field(default_factory=list)
    seconds: float = 0.0

    def count(self, kind):
        return sum(r.kind == kind for r in self.results)

    def failures(self):
        return [r for r in self.results if r.kind in ("wrong", "internal")]

    def refusals(self):
        reasons = collections.Counter()
        for r in self.results:
            if r.kind == "refused":
                details = {refusal_reason(d) for k, d in r.outcomes.values() if k == "refused"}
                reasons.update(details)
        return reasons

    def failure_messages(self):
        """Failing programs grouped by their first failure, locations and names left out."""
        messages = collections.Counter()
        for r in self.failures():
            check, (kind, detail) = next(iter(r.failures().items()))
            if kind == "wrong":
                detail = detail.split(":")[0]  # what differed, not the numbers
            else:
                detail = detail.split(":")[0] + ": " + refusal_reason(detail)
            messages[f"{kind} in {check}: {detail}"] += 1
        return messages

    def report(self, top=12) -> str:
        tested = len(self.results) - self.count("skipped")
        lines = [f"seed {self.seed}: {len(self.results)} programs in {self.seconds:.0f} s"]
        for kind in ("correct", "refused", "wrong", "internal", "skipped"):
            lines.append(f"  {kind:9s} {self.count(kind)}")
        rate = self.count("refused") / tested if tested else 0.0
        lines.append(f"  refusal rate {rate:.1%} of {tested} tested programs")
        for name in CHECKS + EXTRA_CHECKS:
            if not any(name in r.outcomes for r in self.results):
                continue
            kinds = collections.Counter(r.outcomes[name][0] for r in self.results
                                        if name in r.outcomes)
            cpu = sum(r.seconds.get(name, 0.0) for r in self.results)
            lines.append(f"  {name:7s} " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
                         + f" ({cpu:.0f} s CPU)")
        regenerated = sum(r.attempts - 1 for r in self.results)
        lines.append(f"  regenerated {regenerated} times (plain failure, margin, size, kink)")
        lines.append("most common refusals (programs):")
        for reason, n in self.refusals().most_common(top):
            lines.append(f"  {n:5d}  {reason}")
        lines.append("wrong/internal programs by message:")
        for message, n in self.failure_messages().most_common():
            lines.append(f"  {n:5d}  {message}")
        for r in self.failures():
            lines.append(f"{r.kind}: program {r.index}")
            for check, (kind, detail) in r.failures().items():
                lines.append(f"  {check}: {detail[:300]}")
        return "\n".join(lines)


def describe(result: Result, seed: int) -> str:
    """A failing program as a reproducible Python file."""
    header = [f"# fuzzer seed {seed} program {result.index}: {result.kind}",
              f"# reproduce: python tests/fuzzer.py --seed {seed} --show {result.index}"]
    for check, (kind, detail) in result.outcomes.items():
        header.append(f"# {check}: {kind} {detail[:400]}".replace("\n", " "))
    header.append("# args: " + repr(result.args).replace("\n", " "))
    return "\n".join(header) + "\n\n" + result.source


_WORKER: dict = {}


def _start_worker(seed: int, directory: str, checks) -> None:
    _WORKER.update(seed=seed, directory=directory, checks=checks)


def _run_in_worker(index: int) -> Result:
    return run_program(_WORKER["seed"], index, _WORKER["directory"], _WORKER["checks"])


def results(programs: int, seed: int, start: int, directory: str, jobs: int, checks=CHECKS):
    """Results of programs ``start ...``, in order, computed by ``jobs`` processes."""
    indices = range(start, start + programs)
    if jobs <= 1:
        for index in indices:
            yield run_program(seed, index, directory, checks)
        return
    import multiprocessing
    context = multiprocessing.get_context("fork")
    with context.Pool(jobs, _start_worker, (seed, directory, checks)) as pool:
        yield from pool.imap(_run_in_worker, indices, chunksize=4)


def fuzz(programs: int, seed: int = 0, start: int = 0, out: str | None = None,
         progress=None, jobs: int = 1, log: str | None = None, checks=CHECKS) -> Summary:
    """Generate and check ``programs`` programs (indices ``start`` ...) of ``seed``."""
    summary, began = Summary(seed), time.time()
    with tempfile.TemporaryDirectory(prefix="srcgrad_fuzz_") as directory:
        for result in results(programs, seed, start, directory, jobs, checks):
            summary.results.append(result)
            if out and result.kind in ("wrong", "internal"):
                os.makedirs(out, exist_ok=True)
                name = f"{result.kind}_s{seed}_{result.index}.py"
                with open(os.path.join(out, name), "w") as handle:
                    handle.write(describe(result, seed))
            if log:
                with open(log, "a") as handle:
                    handle.write(json.dumps(as_record(result)) + "\n")
            if progress:
                progress(summary, result)
    summary.seconds = time.time() - began
    return summary


def as_record(result: Result) -> dict:
    """A result as JSON (failing programs keep their source)."""
    record = {"index": result.index, "kind": result.kind, "attempts": result.attempts,
              "outcomes": result.outcomes, "seconds": result.seconds}
    if result.kind in ("wrong", "internal"):
        record["source"] = result.source
    return record


def from_logs(paths, seed: int) -> Summary:
    """The summary of results logged by --log (several runs' logs may be merged)."""
    summary = Summary(seed)
    for path in paths:
        with open(path) as handle:
            for line in handle:
                record = json.loads(line)
                summary.results.append(Result(
                    record["index"], record["kind"], record.get("source", ""),
                    {k: tuple(v) for k, v in record["outcomes"].items()},
                    record["attempts"], seconds=record["seconds"]))
    summary.results.sort(key=lambda r: r.index)
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="index of the first program")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--out", help="directory for wrong/internal programs")
    parser.add_argument("--log", help="append one JSON line per program to this file")
    parser.add_argument("--summarize", nargs="+", metavar="LOG",
                        help="print the summary of logged runs instead of running")
    parser.add_argument("--show", type=int, help="print one program and its outcome")
    parser.add_argument("--every", type=int, default=500, help="progress line interval")
    parser.add_argument("--checks", default=",".join(CHECKS),
                        help=f"comma-separated, of {', '.join(CHECKS + EXTRA_CHECKS)}")
    opts = parser.parse_args(argv)
    checks = tuple(opts.checks.split(","))
    unknown = set(checks) - set(CHECKS + EXTRA_CHECKS)
    if unknown:
        parser.error(f"unknown checks: {', '.join(sorted(unknown))}")
    if opts.summarize:
        print(from_logs(opts.summarize, opts.seed).report())
        return 0
    if opts.show is not None:
        with tempfile.TemporaryDirectory(prefix="srcgrad_fuzz_") as directory:
            result = run_program(opts.seed, opts.show, directory, checks)
        print(describe(result, opts.seed))
        return 0

    def progress(summary, result):
        n = len(summary.results)
        if result.kind in ("wrong", "internal"):
            print(f"[{n}] program {result.index}: {result.kind}", flush=True)
        if n % opts.every == 0:
            counts = collections.Counter(r.kind for r in summary.results)
            print(f"[{n}] {dict(sorted(counts.items()))}", flush=True)

    summary = fuzz(opts.programs, opts.seed, opts.start, opts.out, progress, opts.jobs,
                   opts.log, checks)
    print(summary.report())
    return 1 if summary.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
