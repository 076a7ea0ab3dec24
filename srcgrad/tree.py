"""Pytrees: nested containers of arrays, flattened to a list of leaves and rebuilt.

The containers srcgrad accepts as arguments and returns as gradients: dicts (keys in sorted
order, like JAX), lists, tuples, namedtuples and dataclasses; ``None`` is an empty subtree
(no leaves). Everything else (arrays, numbers, strings, other objects) is a leaf. So a
training step is ``params = tree_map(lambda p, g: p - lr * g, params, grad(loss)(params))``.
"""
from __future__ import annotations

__all__ = ["TreeDef", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
           "tree_map"]

import dataclasses
from typing import Any, Callable, NamedTuple

from .errors import SrcgradError


class TreeDef(NamedTuple):
    """The structure of a pytree without its leaves.

    ``kind`` is ``"leaf"``, ``"none"``, ``"dict"``, ``"list"``, ``"tuple"``,
    ``"namedtuple"`` or ``"dataclass"``; ``node_type`` the container's class; ``keys`` the
    dict keys or field names (in flattening order); ``children`` one TreeDef per child.
    """

    kind: str
    node_type: Any = None
    keys: tuple = ()
    children: tuple = ()

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(child.num_leaves for child in self.children)

    def __repr__(self) -> str:
        return f"TreeDef({self.text()})"

    def text(self) -> str:
        """The structure as ``dict(a=*, b=list(*, None))``, ``*`` for a leaf."""
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        if self.kind in ("list", "tuple"):
            inner = ", ".join(c.text() for c in self.children)
        else:
            inner = ", ".join(f"{k}={c.text()}" for k, c in zip(self.keys, self.children))
        return f"{self.node_type.__name__}({inner})"


_LEAF = TreeDef("leaf")
_NONE = TreeDef("none")


def _sort_keys(keys) -> tuple:
    try:
        return tuple(sorted(keys))
    except TypeError:  # keys of mixed types: sorted by their text, then their type
        return tuple(sorted(keys, key=lambda k: (type(k).__name__, repr(k))))


def _node(x) -> tuple[TreeDef, list] | None:
    """``(TreeDef without children, children)`` of a container, or None for a leaf."""
    if x is None:
        return _NONE, []
    if isinstance(x, dict):
        keys = _sort_keys(x.keys())
        return TreeDef("dict", type(x), keys), [x[k] for k in keys]
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return TreeDef("namedtuple", type(x), tuple(type(x)._fields)), list(x)
    if isinstance(x, tuple):
        return TreeDef("tuple", type(x)), list(x)
    if isinstance(x, list):
        return TreeDef("list", type(x)), list(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        names = tuple(f.name for f in dataclasses.fields(x))
        return TreeDef("dataclass", type(x), names), [getattr(x, n) for n in names]
    return None


def _flatten(x, leaves: list, is_leaf) -> TreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    found = _node(x)
    if found is None:
        leaves.append(x)
        return _LEAF
    node, children = found
    return node._replace(children=tuple(_flatten(c, leaves, is_leaf) for c in children))


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list, TreeDef]:
    """``(leaves, treedef)``: the leaves of ``tree`` in order (dicts by sorted key) and its
    structure, which ``tree_unflatten`` rebuilds. ``is_leaf(x)`` True stops at ``x``."""
    leaves: list = []
    return leaves, _flatten(tree, leaves, is_leaf)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree``, in ``tree_flatten``'s order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> TreeDef:
    """The TreeDef of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def _build(treedef: TreeDef, leaves) -> Any:
    if treedef.kind == "leaf":
        return next(leaves)
    if treedef.kind == "none":
        return None
    children = [_build(c, leaves) for c in treedef.children]
    kind, cls = treedef.kind, treedef.node_type
    if kind == "dict":
        made = dict(zip(treedef.keys, children))
        return made if cls is dict else cls(made)
    if kind == "namedtuple":
        return cls(*children)
    if kind in ("tuple", "list"):
        return cls(children)
    return _build_dataclass(cls, dict(zip(treedef.keys, children)))


def _build_dataclass(cls, values: dict):
    init = {f.name for f in dataclasses.fields(cls) if f.init}
    made = cls(**{k: v for k, v in values.items() if k in init})
    for k, v in values.items():
        if k not in init:  # (object.__setattr__: frozen dataclasses too)
            object.__setattr__(made, k, v)
    return made


def tree_unflatten(treedef: TreeDef, leaves) -> Any:
    """The tree with structure ``treedef`` and the given leaves (in flattening order)."""
    if not isinstance(treedef, TreeDef):
        raise SrcgradError(f"tree_unflatten takes a TreeDef from tree_flatten first; got "
                           f"{type(treedef).__name__}")
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise SrcgradError(f"tree_unflatten: the structure {treedef!r} has "
                           f"{treedef.num_leaves} leaves, but {len(leaves)} were given")
    return _build(treedef, iter(leaves))


def tree_map(f: Callable, tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``f`` applied to each leaf of ``tree`` (and the corresponding leaves of the trees in
    ``rest``, which must have the same structure), in a tree of that structure."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for k, other in enumerate(rest, start=1):
        other_leaves, other_def = tree_flatten(other, is_leaf)
        if other_def != treedef:
            raise SrcgradError(f"tree_map: tree #{k} has structure {other_def!r}, but the "
                               f"first tree has {treedef!r}")
        others.append(other_leaves)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])
