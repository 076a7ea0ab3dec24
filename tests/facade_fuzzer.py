"""A seeded random-program fuzzer for the Tensor facade, with PyTorch as the oracle.

Each program is torch-style define-by-run text written once, run with ``lib = srcgrad`` and
with ``lib = torch`` from the same float64 inputs. Compared: every value the program records
(``obs(...)``), the ``.grad`` of every leaf, retained grads and what hooks saw, and errors.
Program ``i`` of seed ``s`` depends on ``(s, i)`` only.

    python tests/facade_fuzzer.py --programs 2000 --seed 0 --log facade.jsonl
    python tests/facade_fuzzer.py --seed 0 --show 57        # one program, its text and outcome
    python tests/facade_fuzzer.py --summarize facade.jsonl

Outcomes:

* **agree**: same numbers (``rtol 1e-10``, ``atol 1e-10 * max(1, max |torch|)``: sums are
  ordered differently) and, where PyTorch raises, srcgrad raises too at the same statement;
* **refused**: PyTorch gives a number and srcgrad raises a ``SrcgradError`` (a clear refusal);
* **wrong**: a different number or shape (``value``), PyTorch raises and srcgrad does not
  (``missing-error``), or srcgrad raises something other than a ``SrcgradError`` where
  PyTorch gives a number (``crash``).

Values stay on safe domains (``log(x*x + 0.5)``, denominators ``x*x + 1``...), and ``max``/``min``
along a dimension only see tensors without structural ties (PyTorch sends a tied maximum's
gradient to one index, srcgrad shares it: a documented difference).
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import traceback
import warnings
from typing import NamedTuple

import numpy as np

SIZES = (2, 3, 4)
RTOL = 1e-10


class Var(NamedTuple):
    name: str
    shape: tuple | None  # None: not known to the generator (a boolean mask's result)
    grad: bool  # depends on a leaf requiring grad
    leaf: bool  # a leaf requiring grad (in-place updates of it must raise)
    tiefree: bool  # no two entries equal by construction


class Program(NamedTuple):
    text: str
    inputs: list  # float64 arrays, in the order of the leaves a0, a1, ...


def broadcast(a: tuple, b: tuple) -> tuple | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


class Writer:
    """Writes one program: statements over named tensors whose shapes it tracks."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.lines: list[str] = []
        self.vars: list[Var] = []
        self.count = 0
        self.indent = ""
        self.inputs: list = []
        self.hooks = 0

    # ------------------------------------------------------------------ helpers

    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def add(self, expr: str, shape, grad: bool, tiefree=False, leaf=False) -> Var:
        v = Var(self.fresh(), shape, grad, leaf, tiefree)
        self.emit(f"{v.name} = {expr}")
        self.vars.append(v)
        return v

    def pick(self, pred=lambda v: True, prefer_recent=True) -> Var | None:
        cands = [v for v in self.vars if v.shape is not None and pred(v)]
        if not cands:
            return None
        if prefer_recent and self.rng.random() < 0.5:
            return cands[-1]
        return self.rng.choice(cands)

    def shape(self, rank=None) -> tuple:
        rank = self.rng.choice((0, 1, 1, 2, 2, 2, 3)) if rank is None else rank
        return tuple(self.rng.choice(SIZES) for _ in range(rank))

    def leaf(self, shape=None, grad=True) -> Var:
        shape = self.shape() if shape is None else shape
        data = np.round(np.random.default_rng(self.rng.getrandbits(32)).uniform(-1.5, 1.5, shape),
                        6)
        self.inputs.append(data)
        k = len(self.inputs) - 1
        v = Var(f"a{k}", shape, grad, grad, True)
        self.emit(f"{v.name} = lib.tensor(IN[{k}], dtype=lib.float64, requires_grad={grad})")
        self.vars.append(v)
        return v

    def compatible_shape(self, s: tuple) -> tuple:
        """A shape broadcasting with ``s``: its suffix, ones in some places, or ``s``."""
        r = self.rng.random()
        if r < 0.3 or not s:
            return s
        if r < 0.6:
            return s[self.rng.randrange(len(s) + 1):]
        return tuple(1 if self.rng.random() < 0.4 else n for n in s)

    # ------------------------------------------------------------------ operations

    UNARY = [
        ("{x}.exp()", True), ("lib.exp({x}.tanh())", True), ("{x}.sin()", True),
        ("lib.cos({x})", False), ("{x}.tanh()", True), ("lib.sigmoid({x})", True),
        ("{x}.relu()", False), ("F.relu({x})", False), ("{x}.abs()", False),
        ("lib.log({x} * {x} + 0.5)", False), ("({x} * {x} + 0.25).sqrt()", False),
        ("{x}.square()", False), ("-{x}", True), ("{x} ** 2", False), ("{x} ** 3", True),
        ("lib.reciprocal({x} * {x} + 1)", False), ("{x}.clamp(-0.5, 0.7)", False),
        ("lib.clamp({x}, min=-0.3)", False), ("{x}.clamp(max=0.4)", False),
        ("lib.log1p({x} * {x})", False), ("{x}.tanh().expm1()", True),
        ("({x} * {x} + 0.5) ** 1.5", False), ("lib.rsqrt({x} * {x} + 1)", False),
        ("F.sigmoid({x})", True), ("F.tanh({x})", True), ("{x} * 2.5", True),
        ("3 - {x}", True), ("{x} / 4", True), ("0.5 + {x}", True), ("{x}.clone()", True),
        ("{x}.detach()", True), ("{x}.sigmoid() * {x}", False),
    ]

    def unary(self):
        x = self.pick(lambda v: v.shape is not None)
        form, keeps = self.rng.choice(self.UNARY)
        grad = x.grad and ".detach()" not in form
        self.add(form.format(x=x.name), x.shape, grad, tiefree=x.tiefree and keeps)

    BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / ({b} * {b} + 1)",
              "lib.maximum({a}, {b})", "lib.minimum({a}, {b})", "lib.where({a} > 0, {a}, {b})",
              "{a}.add({b}, alpha=0.5)", "lib.mul({a}, {b})", "{a}.sub({b})",
              "{a} * {b}.sin()", "lib.atan2({a}, {b} * {b} + 1)"]

    def binary(self):
        a = self.pick()
        others = [v for v in self.vars if v.shape is not None and broadcast(a.shape, v.shape)]
        if self.rng.random() < 0.3 or not others:
            shape = self.compatible_shape(a.shape)
            b = self.leaf(shape, grad=self.rng.random() < 0.7)
        else:
            b = self.rng.choice(others)
        if self.rng.random() < 0.5:
            a, b = b, a
        form = self.rng.choice(self.BINARY[:-1])
        out = broadcast(a.shape, b.shape)
        tiefree = a.shape == b.shape == out and a.tiefree and "m" not in form[:6]
        self.add(form.format(a=a.name, b=b.name), out, a.grad or b.grad, tiefree=tiefree)

    def reduce(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return self.unary()
        d = self.rng.randrange(len(x.shape))
        keep = self.rng.random() < 0.4
        out = tuple(1 if i == d else n for i, n in enumerate(x.shape)) if keep else \
            x.shape[:d] + x.shape[d + 1:]
        kd = ", keepdim=True" if keep else ""
        choices = [(f"{x.name}.sum({d}{kd})", out), (f"{x.name}.sum()", ()),
                   (f"lib.sum({x.name}, dim={d}{kd})", out), (f"{x.name}.mean({d}{kd})", out),
                   (f"{x.name}.mean()", ()), (f"{x.name}.logsumexp({d}{kd})", out),
                   (f"lib.softmax({x.name}, {d})", x.shape),
                   (f"F.log_softmax({x.name}, dim={d})", x.shape),
                   (f"F.softmax({x.name}, dim={d})", x.shape),
                   (f"{x.name}.var({d}{kd})" if x.shape[d] > 1 else f"{x.name}.sum()",
                    out if x.shape[d] > 1 else ()),
                   (f"({x.name} * {x.name} + 1).norm(dim={d}{kd})", out),
                   (f"({x.name}.tanh() + 1.5).prod({d}{kd})", out),
                   (f"lib.amax({x.name}.sin(), {d}{kd})", out)]
        if x.tiefree:
            choices += [(f"{x.name}.max({d}{kd})[0]", out),
                        (f"{x.name}.min(dim={d}{kd}).values", out),
                        (f"{x.name}.max()", ())]
        expr, shape = self.rng.choice(choices)
        self.add(expr, shape, x.grad, tiefree=False)

    def matmul(self):
        x = self.pick(lambda v: len(v.shape) in (1, 2, 3))
        if x is None:
            return self.unary()
        k = x.shape[-1]
        n = self.rng.choice(SIZES)
        rank = len(x.shape)
        if rank == 1:
            other = self.rng.choice([(k,), (k, n)])
        elif rank == 2:
            other = self.rng.choice([(k,), (k, n)])
        else:
            other = self.rng.choice([(k, n), (x.shape[0], k, n)])
        cands = [v for v in self.vars if v.shape == other]
        y = self.rng.choice(cands) if cands and self.rng.random() < 0.6 else \
            self.leaf(other, grad=self.rng.random() < 0.8)
        out = x.shape[:-1] + other[1:] if len(other) <= 2 else x.shape[:-1] + (n,)
        if len(other) == 1:
            out = x.shape[:-1]
        forms = ["{x} @ {y}", "lib.matmul({x}, {y})"]
        if rank == 2 and len(other) == 2:
            forms += ["{x}.mm({y})", "lib.mm({x}, {y})"]
        if rank == 2 and len(other) == 1:
            forms += ["{x}.mv({y})"]
        if rank == 1 and len(other) == 1:
            forms += ["lib.dot({x}, {y})"]
        if rank == 3 and len(other) == 3:
            forms += ["lib.bmm({x}, {y})"] if hasattr_bmm else []
        self.add(self.rng.choice(forms).format(x=x.name, y=y.name), out, x.grad or y.grad)

    def view(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return self.unary()
        s = x.shape
        r = self.rng.randrange(10)
        if r == 0:
            expr, out = f"{x.name}.view(-1)", (int(np.prod(s)),)
        elif r == 1 and len(s) >= 2:
            expr, out = f"{x.name}.reshape({s[-1]}, -1)", (s[-1], int(np.prod(s[:-1])))
        elif r == 2 and len(s) >= 2:
            i, j = self.rng.sample(range(len(s)), 2)
            t = list(s)
            t[i], t[j] = t[j], t[i]
            expr, out = f"{x.name}.transpose({i}, {j})", tuple(t)
        elif r == 3 and len(s) >= 2:
            perm = list(range(len(s)))
            self.rng.shuffle(perm)
            expr, out = f"{x.name}.permute({', '.join(map(str, perm))})", \
                tuple(s[p] for p in perm)
        elif r == 4:
            d = self.rng.randrange(len(s) + 1)
            expr, out = f"{x.name}.unsqueeze({d})", s[:d] + (1,) + s[d:]
        elif r == 5 and 1 in s:
            d = s.index(1)
            expr, out = f"{x.name}.squeeze({d})", s[:d] + s[d + 1:]
        elif r == 6 and 1 in s:
            t = tuple(self.rng.choice(SIZES) if n == 1 else n for n in s)
            expr, out = f"{x.name}.expand({', '.join(map(str, t))})", t
        elif r == 7 and len(s) == 2:
            expr, out = f"{x.name}.T", (s[1], s[0])
        elif r == 8 and len(s) == 2:
            expr, out = f"{x.name}.t()", (s[1], s[0])
        else:
            return self.index(x)
        self.add(expr, out, x.grad, tiefree=x.tiefree and ".expand" not in expr)

    def index(self, x=None):
        x = x or self.pick(lambda v: len(v.shape) >= 1 and v.shape[0] >= 2)
        if x is None or x.shape[0] < 2:
            return self.unary()
        s = x.shape
        r = self.rng.randrange(8)
        n = s[0]
        if r == 0:
            expr, out = f"{x.name}[{n - 1}]", s[1:]
        elif r == 1:
            expr, out = f"{x.name}[1:]", (n - 1,) + s[1:]
        elif r == 2 and len(s) >= 2:
            expr, out = f"{x.name}[:, {s[1] - 1}]", s[:1] + s[2:]
        elif r == 3:
            expr, out = f"{x.name}[::2]", ((n + 1) // 2,) + s[1:]
        elif r == 4:
            idx = [self.rng.randrange(n) for _ in range(self.rng.randint(1, 4))]
            expr, out = f"{x.name}[{idx}]", (len(idx),) + s[1:]
            return self.add(expr, out, x.grad, tiefree=x.tiefree and len(set(idx)) == len(idx))
        elif r == 5:
            idx = [self.rng.randrange(n) for _ in range(self.rng.randint(1, 3))]
            expr, out = f"{x.name}[lib.tensor({idx})]", (len(idx),) + s[1:]
            return self.add(expr, out, x.grad, tiefree=False)
        elif r == 6:  # a boolean mask: the shape depends on the data, so reduce at once
            expr = f"({x.name}[{x.name} > 0.1] ** 2).sum()"
            return self.add(expr, (), x.grad)
        elif r == 7 and len(s) >= 2 and s[-1] >= 2:
            expr, out = f"{x.name}[..., 0:{s[-1] - 1}]", s[:-1] + (s[-1] - 1,)
        else:
            expr, out = f"{x.name}[0]", s[1:]
        self.add(expr, out, x.grad, tiefree=x.tiefree)

    def joined(self):
        x = self.pick()
        if not x.shape:
            return self.unary()
        others = [v for v in self.vars if v.shape == x.shape and v is not x]
        y = self.rng.choice(others) if others else self.leaf(x.shape)
        d = self.rng.randrange(len(x.shape))
        if self.rng.random() < 0.5:
            out = x.shape[:d] + (2 * x.shape[d],) + x.shape[d + 1:]
            self.add(f"lib.cat([{x.name}, {y.name}], dim={d})", out, x.grad or y.grad)
        else:
            out = x.shape[:d] + (2,) + x.shape[d:]
            self.add(f"lib.stack(({x.name}, {y.name}), {d})", out, x.grad or y.grad)

    # ------------------------------------------------------------------ in place

    def nonleaf_copy(self, pred=lambda v: True) -> Var:
        x = self.pick(lambda v: v.shape is not None and pred(v))
        return self.add(f"{x.name} * 1.0" if self.rng.random() < 0.5 else f"{x.name}.clone()",
                        x.shape, x.grad, tiefree=x.tiefree)

    def inplace(self):
        r = self.rng.randrange(12)
        if r == 0:  # on a leaf requiring grad: PyTorch raises
            x = self.pick(lambda v: v.leaf)
            if x is not None:
                self.emit(self.rng.choice([f"{x.name}.add_(1.0)", f"{x.name}.mul_(2)",
                                           f"{x.name}[0] = 0.5" if x.shape else
                                           f"{x.name}.clamp_(-1, 1)"]))
                return
        if r == 1:  # on a view of a leaf
            x = self.pick(lambda v: v.leaf and len(v.shape) >= 1)
            if x is not None:
                self.emit(f"{x.name}[1:].mul_(2)")
                return
        y = self.nonleaf_copy() if self.rng.random() < 0.6 else \
            self.pick(lambda v: not v.leaf and v.name.startswith("v"))
        if y is None:
            y = self.nonleaf_copy()
        others = [v for v in self.vars if v.shape is not None and v.shape != ()
                  and broadcast(y.shape, v.shape) == y.shape]
        other = self.rng.choice(others).name if others and self.rng.random() < 0.7 else "0.5"
        ops = [f"{y.name}.add_({other})", f"{y.name}.mul_({other})", f"{y.name}.sub_({other})",
               f"{y.name}.clamp_(-0.6, 0.8)", f"{y.name} += {other}", f"{y.name} *= {other}",
               f"{y.name}.div_({other} * {other} + 1)", f"{y.name}.exp_()" if False else
               f"{y.name}.neg_()", f"{y.name}.add_({other}, alpha=-2)"]
        if y.shape:
            n = y.shape[0]
            value = self.rng.choice(["2.0", "0.0"] + [v.name for v in self.vars
                                                      if v.shape == y.shape[1:]])
            ops += [f"{y.name}[{n - 1}] = {value}", f"{y.name}[1:] = {value}",
                    f"{y.name}[{y.name} > 0.2] = 0.0", f"{y.name}[{y.name} < 0] *= 3",
                    f"{y.name}[0] += {value}", f"{y.name}[:{n - 1}].mul_(2)"]
            if len(y.shape) >= 2:
                ops += [f"{y.name}[:, 0] = {value if value[0] != 'v' else '1.5'}",
                        f"{y.name}[0][1:] = 0.25", f"{y.name}[0, 0] = 3.0"]
            rows = [v.name for v in self.vars if v.shape == (1,) + y.shape[1:]
                    or v.shape == y.shape[1:]]
            if rows and n > 1:  # (PyTorch's gradient of a repeated index here is undefined)
                ops.append(f"{y.name}[[0, {n - 1}]] = {self.rng.choice(rows)}")
        self.emit(self.rng.choice(ops))
        self._mark_changed(y)

    def _mark_changed(self, y: Var) -> None:
        """After an in-place update the tensor has history and may have ties."""
        i = self.vars.index(y)
        self.vars[i] = y._replace(grad=True, tiefree=False)
        # its views share the change: their ties are unknown too
        self.vars = [v._replace(tiefree=False) if v.name != y.name and v.tiefree and
                     v.shape is not None and False else v for v in self.vars]

    def view_inplace(self):
        """A view of a non-leaf updated in place, then the base and the view both read."""
        if self.pick(lambda v: len(v.shape) >= 1 and v.shape[0] >= 2) is None:
            return self.unary()
        y = self.nonleaf_copy(lambda v: len(v.shape) >= 1 and v.shape[0] >= 2)
        n = y.shape[0]
        forms = [(f"{y.name}[1:]", (n - 1,) + y.shape[1:]), (f"{y.name}[0]", y.shape[1:])]
        if len(y.shape) >= 2 and y.shape[1] >= 2:
            forms.append((f"{y.name}[:, 1:]", y.shape[:1] + (y.shape[1] - 1,) + y.shape[2:]))
            forms.append((f"{y.name}.transpose(0, 1)",
                          (y.shape[1], y.shape[0]) + y.shape[2:]))
        forms.append((f"{y.name}.view(-1)", (int(np.prod(y.shape)),)))
        expr, shape = self.rng.choice(forms)
        w = self.add(expr, shape, y.grad)
        target = self.rng.choice([w, y])
        op = self.rng.choice([".mul_(3)", ".add_(1)", ".clamp_(-0.5, 0.5)", ".sin_()"
                              if False else ".neg_()", ".sub_(0.25)"])
        self.emit(f"{target.name}{op}")
        self._mark_changed(w)
        self._mark_changed(y)

    def saved_then_changed(self):
        """An op that saves its input, then the input changed in place: PyTorch raises at
        backward (the version counter) when the saved value is needed."""
        y = self.nonleaf_copy()
        form = self.rng.choice(["{y}.sin()", "{y}.exp()", "{y} * {y}", "{y}.tanh()",
                                "{y}.sigmoid()", "{y} * 2", "{y} + 1", "{y}.relu()",
                                "{y}.pow(2)", "{y}.sum()"])
        out_shape = () if form.endswith(".sum()") else y.shape
        z = self.add(form.format(y=y.name), out_shape, True)
        self.emit(self.rng.choice([f"{y.name}.add_(1)", f"{y.name}.mul_(2)",
                                   f"{y.name}[...] = 0.5" if y.shape else f"{y.name}.zero_()"]))
        self._mark_changed(y)
        if self.rng.random() < 0.5:  # z's result changed in place (exp/tanh/sigmoid save it)
            self.emit(f"{z.name}.mul_(1.5)")
            self._mark_changed(z)

    # ------------------------------------------------------------------ autograd features

    def detach_nograd(self):
        x = self.pick()
        r = self.rng.randrange(4)
        if r == 0:
            self.emit("with lib.no_grad():")
            self.indent = "    "
            self.add(f"{x.name} * 2 + 1", x.shape, False)
            self.indent = ""
        elif r == 1:
            leaf = self.pick(lambda v: v.leaf)
            if leaf is None:
                return
            self.emit("with lib.no_grad():")
            self.emit(f"    {leaf.name}.mul_(0.5)")
        elif r == 2:
            self.add(f"{x.name}.detach().requires_grad_()", x.shape, True, leaf=True)
        else:
            self.add(f"{x.name}.detach() * {x.name}", x.shape, x.grad)

    def retain_or_hook(self):
        x = self.pick(lambda v: v.grad)
        if x is None:
            return
        r = self.rng.randrange(3)
        if r == 0 and not x.leaf:
            self.emit(f"{x.name}.retain_grad()")
            self.emit(f"RETAINED.append({x.name})")
        elif r == 1:
            self.emit(f"HOOKS.append({x.name}.register_hook("
                      "lambda g: SEEN.append(g.detach().clone())))")
        else:
            self.emit(f"HOOKS.append({x.name}.register_hook(lambda g: g * 2))")

    def control(self):
        x = self.pick()
        cond = self.rng.choice([f"{x.name}.sum() > 0", f"float({x.name}.mean()) < 0.3",
                                f"({x.name} > 0).any()", f"{x.name}.abs().max().item() > 1"])
        n = self.fresh()
        first, second = self.rng.sample(self.UNARY[:20], 2)
        self.emit(f"if {cond}:")
        self.emit(f"    {n} = {first[0].format(x=x.name)}")
        self.emit("else:")
        self.emit(f"    {n} = {second[0].format(x=x.name)}")
        self.vars.append(Var(n, x.shape, x.grad, False, False))

    def loop(self):
        x = self.pick()
        n = self.fresh()
        k = self.rng.randint(2, 4)
        self.emit(f"{n} = {x.name}")
        self.emit(f"for i in range({k}):")
        body = self.rng.choice([f"{n} = {n} * 0.5 + {x.name}.tanh()",
                                f"{n} = ({n} + i).sin() * {x.name}",
                                f"if {n}.sum() > i:\n        {n} = {n} - 0.5\n    else:\n"
                                f"        {n} = {n} * 1.5",
                                f"{n} = {n} * 0.9\n    {n}.add_({x.name})" if not x.leaf else
                                f"{n} = {n} * 0.9 + {x.name}"])
        self.emit("    " + body)
        self.vars.append(Var(n, x.shape, x.grad, False, False))

    def functional(self):
        r = self.rng.randrange(4)
        if r == 0:
            x = self.pick(lambda v: len(v.shape) == 2)
            if x is None:
                return self.unary()
            tgt = [self.rng.randrange(x.shape[1]) for _ in range(x.shape[0])]
            red = self.rng.choice(["", ", reduction='sum'", ", reduction='none'"])
            out = (x.shape[0],) if "none" in red else ()
            self.add(f"F.cross_entropy({x.name}, lib.tensor({tgt}){red})", out, x.grad)
        elif r == 1:
            x = self.pick()
            others = [v for v in self.vars if v.shape == x.shape and v is not x]
            y = self.rng.choice(others) if others else self.leaf(x.shape)
            red = self.rng.choice(["", ", reduction='sum'"])
            self.add(f"F.mse_loss({x.name}, {y.name}{red})", (), x.grad or y.grad)
        elif r == 2:
            x = self.pick(lambda v: len(v.shape) in (1, 2))
            if x is None:
                return self.unary()
            k, n = x.shape[-1], self.rng.choice(SIZES)
            w = self.leaf((n, k))
            if self.rng.random() < 0.5:
                b = self.leaf((n,))
                self.add(f"F.linear({x.name}, {w.name}, {b.name})", x.shape[:-1] + (n,), True)
            else:
                self.add(f"F.linear({x.name}, {w.name})", x.shape[:-1] + (n,), True)
        else:
            x = self.pick(lambda v: len(v.shape) >= 1)
            if x is None:
                return self.unary()
            self.add(f"F.log_softmax({x.name}, dim=-1)", x.shape, x.grad)

    STEPS = [("unary", 6), ("binary", 6), ("reduce", 3), ("matmul", 2), ("view", 3),
             ("index", 3), ("joined", 1), ("inplace", 4), ("view_inplace", 2),
             ("saved_then_changed", 1), ("detach_nograd", 1), ("retain_or_hook", 2),
             ("control", 1), ("loop", 1), ("functional", 2)]

    def body(self, steps: int) -> None:
        names = [n for n, w in self.STEPS for _ in range(w)]
        for _ in range(steps):
            getattr(self, self.rng.choice(names))()


hasattr_bmm = True

ENDINGS = ("backward", "gradient", "twice", "autograd.grad", "create_graph", "inputs")


def write_program(seed: int, index: int) -> Program:
    rng = random.Random(seed * 1_000_003 + index)
    w = Writer(rng)
    w.emit("RETAINED, SEEN, HOOKS = [], [], []")
    for _ in range(rng.randint(1, 3)):
        w.leaf()
    w.body(rng.randint(3, 9))
    out = w.pick(lambda v: v.grad) or w.vars[-1]
    leaves = [v.name for v in w.vars if v.leaf]
    w.emit(f"obs({out.name})")
    ending = rng.choice(ENDINGS)
    loss = f"({out.name} * {out.name}).sum()" if out.shape else f"({out.name} * {out.name})"
    if ending == "backward":
        w.emit(f"{loss}.backward()")
    elif ending == "gradient" and out.shape:
        w.emit(f"{out.name}.backward(gradient=lib.ones_like({out.name}) * 0.5 + "
               f"lib.arange({int(np.prod(out.shape))}, dtype=lib.float64)"
               f".reshape({list(out.shape)}) / 7)")
    elif ending == "twice":
        w.emit(f"L = {loss}")
        w.emit("L.backward(retain_graph=True)")
        if leaves and rng.random() < 0.4:  # clear one leaf's gradient between the two
            first = leaves[0]
            w.emit(f"if {first}.grad is not None:")
            w.emit(rng.choice([f"    {first}.grad.zero_()", f"    {first}.grad = None"]))
        w.emit("L.backward()" if rng.random() < 0.7 else "L.backward()\nL.backward()")
    elif ending == "inputs" and leaves:  # only some leaves accumulate
        w.emit(f"{loss}.backward(inputs=[{', '.join(leaves[:rng.randint(1, len(leaves))])}])")
    elif ending == "autograd.grad" and leaves:
        w.emit(f"G = lib.autograd.grad({loss}, [{', '.join(leaves)}], allow_unused=True)")
        w.emit("for g in G:\n    obs(g)")
    elif ending == "create_graph" and leaves:
        w.emit(f"G = lib.autograd.grad({loss}, [{', '.join(leaves)}], create_graph=True, "
               "allow_unused=True)")
        w.emit("S = sum(((g * g).sum() if g is not None and g.requires_grad else 0) for g in G)")
        w.emit("for g in G:\n    obs(g)")
        # The second backward runs through the graph of the first one, which differs between
        # the libraries (a vjp reading the result or the input): the gradient reaching an
        # intermediate tensor there, hence what its hooks and retain_grad see, is not comparable
        # (the leaves' gradients are).
        w.emit("for r in RETAINED:\n    obs(r.grad)")
        w.emit("for h in HOOKS:\n    h.remove()")
        w.emit("RETAINED.clear()")
        w.emit("if isinstance(S, lib.Tensor):\n    S.backward()")
    else:
        w.emit(f"{loss}.backward()")
    for name in leaves:
        w.emit(f"obs({name}.grad)")
    w.emit("for r in RETAINED:\n    obs(r.grad)")
    w.emit("for s in SEEN:\n    obs(s)")
    return Program("\n".join(w.lines), w.inputs)


# ---------------------------------------------------------------------------- running


class Run(NamedTuple):
    observed: list  # numpy arrays, None, or a dtype mismatch marker
    error: BaseException | None
    line: int | None  # the program line the error came from


def run(program: Program, lib) -> Run:
    observed: list = []

    def obs(t):
        observed.append(None if t is None else np.array(t.detach().numpy(), copy=True))

    env = {"lib": lib, "F": lib.nn.functional, "IN": [a.copy() for a in program.inputs],
           "obs": obs}
    code = compile(program.text, "<facade program>", "exec")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(code, env)
    except Exception as e:  # noqa: BLE001 - the error is part of what is compared
        tb = traceback.extract_tb(e.__traceback__)
        lines = [f.lineno for f in tb if f.filename == "<facade program>"]
        return Run(observed, e, lines[-1] if lines else None)
    return Run(observed, None, None)


def _differs(ours, theirs, zeros=None) -> str | None:
    """How the observations differ, or None. A zero gradient where the other side has None
    (or the reverse) is listed in ``zeros``, not a difference."""
    zeros = [] if zeros is None else zeros
    if len(ours) != len(theirs):
        return f"{len(ours)} observations, PyTorch {len(theirs)}"
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if (a is None) != (b is None):
            if not np.any(a if b is None else b):
                zeros.append(k)
                continue
            return f"observation {k}: {'None' if a is None else 'a value'}, PyTorch " \
                   f"{'None' if b is None else 'a value'}"
        if a is None:
            continue
        if a.shape != b.shape:
            return f"observation {k}: shape {a.shape}, PyTorch {b.shape}"
        if a.dtype != b.dtype:
            return f"observation {k}: dtype {a.dtype}, PyTorch {b.dtype}"
        finite = np.abs(b[np.isfinite(b)])
        scale = max(1.0, float(np.max(finite))) if finite.size else 1.0
        if not np.allclose(a, b, rtol=RTOL, atol=RTOL * scale, equal_nan=True):
            err = float(np.max(np.abs(a - b)))
            return f"observation {k}: differs by {err:.3g} (scale {scale:.3g})"
    return None


class Outcome(NamedTuple):
    kind: str  # agree, refused, wrong
    what: str  # the class: value, missing-error, crash, or the refusal's message
    detail: str


def compare(program: Program, torch, srcgrad) -> Outcome:
    from srcgrad.errors import SrcgradError
    theirs = run(program, torch)
    ours = run(program, srcgrad)
    if theirs.error is not None:
        if ours.error is None:
            return Outcome("wrong", "missing-error",
                           f"PyTorch line {theirs.line}: {type(theirs.error).__name__}: "
                           f"{_first(theirs.error)}")
        if ours.line != theirs.line:
            where = f"srcgrad line {ours.line}: {_first(ours.error)}; PyTorch line " \
                    f"{theirs.line}: {_first(theirs.error)}"
            if (ours.line or 0) > (theirs.line or 0):
                return Outcome("wrong", "missing-error", where)
            if isinstance(ours.error, SrcgradError):
                return Outcome("refused", _first(ours.error)[:90], where)
            if "modified by an inplace operation" in str(ours.error):
                return Outcome("strict", "version counter", where)
            return Outcome("wrong", "crash", where)
        n = min(len(ours.observed), len(theirs.observed))
        diff = _differs(ours.observed[:n], theirs.observed[:n])
        if diff is not None:
            return Outcome("wrong", "value", diff)
        return Outcome("agree", "both raise", f"{type(theirs.error).__name__}")
    if ours.error is not None:
        if isinstance(ours.error, SrcgradError):
            return Outcome("refused", _first(ours.error)[:90], f"line {ours.line}")
        if "modified by an inplace operation" in str(ours.error):
            return Outcome("strict", "version counter", f"line {ours.line}: "
                           f"{_first(ours.error)}")
        return Outcome("wrong", "crash", f"line {ours.line}: {type(ours.error).__name__}: "
                       f"{_first(ours.error)}")
    zeros: list = []
    diff = _differs(ours.observed, theirs.observed, zeros)
    if diff is not None:
        return Outcome("wrong", "value", diff)
    if zeros:
        return Outcome("agree", "zero for None", f"observations {zeros}")
    return Outcome("agree", "", "")


def _first(e: BaseException) -> str:
    return (str(e).splitlines() or [""])[0]


def show(seed: int, index: int) -> None:
    import torch

    import srcgrad
    program = write_program(seed, index)
    for k, line in enumerate(program.text.splitlines(), 1):
        print(f"{k:3d}  {line}")
    for k, a in enumerate(program.inputs):
        print(f"IN[{k}] = {a.tolist()!r}")
    print(compare(program, torch, srcgrad))


def _outcome(seed: int, index: int) -> Outcome:
    import torch

    import srcgrad
    return compare(write_program(seed, index), torch, srcgrad)


def _quiet_worker() -> None:
    # A worker forked from pytest inherits its faulthandler, which would print every thread's
    # stack to the test log when PyTorch crashes the worker: an expected, counted outcome.
    import faulthandler
    faulthandler.disable()


def outcomes(seed: int, indices):
    """Each program's outcome, run in a worker process: PyTorch itself can crash the process
    (a hook registered on a view whose base changed in place segfaults in 2.13), which then
    counts as ``oracle-crash`` and a new worker takes over."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    # spawned, not forked: a process forked from a threaded one (a pytest-xdist worker runs
    # execnet's threads; torch and numba start their own) can inherit a lock held by another
    # thread and wait on it forever, which hung the suite under xdist
    spawn = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(1, mp_context=spawn, initializer=_quiet_worker)
    try:
        for i in indices:
            try:
                yield i, pool.submit(_outcome, seed, i).result()
            except BrokenProcessPool:
                pool.shutdown(wait=False)
                pool = ProcessPoolExecutor(1, mp_context=spawn, initializer=_quiet_worker)
                yield i, Outcome("oracle", "oracle-crash", "PyTorch or srcgrad killed the process")
    finally:
        pool.shutdown()


def fuzz(programs: int, seed: int, start: int = 0, log: str | None = None, every: int = 0):
    counts = collections.Counter()
    classes = collections.Counter()
    examples: dict = {}
    sink = open(log, "a") if log else None
    try:
        for i, outcome in outcomes(seed, range(start, start + programs)):
            counts[outcome.kind] += 1
            key = (outcome.kind, outcome.what)
            classes[key] += 1
            examples.setdefault(key, []).append(i)
            if sink:
                sink.write(json.dumps({"seed": seed, "index": i, **outcome._asdict()}) + "\n")
                sink.flush()
            if every and (i - start + 1) % every == 0:
                print(f"{i - start + 1} programs: {dict(counts)}", file=sys.stderr, flush=True)
    finally:
        if sink:
            sink.close()
    return counts, classes, examples


def report(counts, classes, examples) -> str:
    total = sum(counts.values())
    lines = [f"{total} programs: " + ", ".join(f"{counts[k]} {k}"
                                               for k in ("agree", "refused", "strict", "wrong",
                                                         "oracle"))]
    for (kind, what), n in classes.most_common():
        if kind != "agree" or what not in ("", "both raise"):
            lines.append(f"  {kind:8s} {n:5d}  {what}  e.g. {examples[(kind, what)][:5]}")
    return "\n".join(lines)


def summarize(path: str) -> str:
    counts, classes, examples = collections.Counter(), collections.Counter(), {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            counts[r["kind"]] += 1
            classes[(r["kind"], r["what"])] += 1
            examples.setdefault((r["kind"], r["what"]), []).append(r["index"])
    return report(counts, classes, examples)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--show", type=int)
    p.add_argument("--log")
    p.add_argument("--every", type=int, default=0)
    p.add_argument("--summarize")
    a = p.parse_args(argv)
    if a.summarize:
        print(summarize(a.summarize))
    elif a.show is not None:
        show(a.seed, a.show)
    else:
        print(report(*fuzz(a.programs, a.seed, a.start, a.log, a.every)))


if __name__ == "__main__":
    main()
