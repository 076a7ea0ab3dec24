"""Deterministic names for generated code that never collide with the user's names.

``bx`` is the adjoint of ``x`` (x-bar), ``dx`` its tangent (x-dot), ``_t1, _t2`` temporaries,
``_c1`` saved branch decisions, ``_n1`` saved loop trip counts. Only counters: the same
function always produces the same text.
"""
from __future__ import annotations

__all__ = ["Namer"]

import gast


class Namer:
    """Hands out fresh names, avoiding every name in the user's function."""

    def __init__(self, taken=()):
        self.taken: set[str] = set(taken)
        self.counters: dict[str, int] = {}
        self.adjoints: dict[str, str] = {}
        self.tangents: dict[str, str] = {}

    @classmethod
    def for_tree(cls, tree) -> "Namer":
        names = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)}
        names |= {n.name for n in gast.walk(tree) if isinstance(n, gast.FunctionDef)}
        return cls(names)

    def reserve(self, name: str) -> str:
        self.taken.add(name)
        return name

    def fresh(self, prefix: str = "_t") -> str:
        """``_t1``, ``_t2``, ... skipping names already taken."""
        while True:
            n = self.counters.get(prefix, 0) + 1
            self.counters[prefix] = n
            name = f"{prefix}{n}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def unique(self, base: str) -> str:
        """``base`` itself if free, else ``base_1``, ``base_2``..."""
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def adjoint(self, name: str) -> str:
        """The adjoint (x-bar) name of primal ``name``: ``bx`` (``b_x`` for ``_x``)."""
        if name not in self.adjoints:
            base = "b" + name if not name.startswith("_") else "b" + name
            self.adjoints[name] = self.unique(base)
        return self.adjoints[name]

    def tangent(self, name: str) -> str:
        """The tangent (x-dot) name of primal ``name``: ``dx``."""
        if name not in self.tangents:
            self.tangents[name] = self.unique("d" + name)
        return self.tangents[name]
