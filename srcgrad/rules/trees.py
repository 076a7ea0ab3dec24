"""Rules of srcgrad's own pytree functions (``srcgrad.tree_leaves``, ``tree_flatten``,
``tree_unflatten``), so that differentiated code may call them: flattening parameters for an
L2 penalty, ``x -> objective(unflatten(x))`` over a flat vector (autograd's ``flatten`` and
``flatten_func`` idioms). Each only moves leaves between a tree and a list: it is linear, and
its derivatives are the two linear maps ``to_tree`` (a list of leaves into a tree) and
``to_leaves`` (a tree into its list of leaves), each the other's transpose. Those two have
rules of their own, so gradients of gradients and Hessian-vector products go through them
too. ``tree_structure`` has no derivative."""
from __future__ import annotations

from .. import runtime as rt
from ..tree import TreeDef, tree_flatten, tree_leaves, tree_structure, tree_unflatten
from .domains import draw
from .registry import defrule, nondifferentiable


def _children(treedef: TreeDef, value) -> list:
    """The children of ``value`` (a tree or a tangent/cotangent of one) in the order of
    ``treedef``; an object's tangent may be a dict of its attributes, and a dict's cotangent
    leaves out the keys nothing read (their lazy zero)."""
    if treedef.kind in ("dict", "dataclass") and isinstance(value, dict):
        return [value.get(k, rt.ZERO) for k in treedef.keys]
    if treedef.kind == "dataclass":
        return [getattr(value, k, rt.ZERO) for k in treedef.keys]
    return list(value)


def _leaves_along(treedef: TreeDef, value) -> list:
    """The leaves of ``value`` (structured like ``treedef``, lazy zeros allowed anywhere) in
    tree_flatten's order, a lazy zero standing for every leaf of a zero subtree."""
    if treedef.kind == "leaf":
        return [value]
    if treedef.kind == "none":
        return []
    if rt.is_zero(value):
        return [rt.ZERO] * treedef.num_leaves
    return [leaf for child, v in zip(treedef.children, _children(treedef, value))
            for leaf in _leaves_along(child, v)]


def _dense_list(g, like) -> list:
    """``g`` (a list of leaves, or a lazy zero) as dense values shaped like ``like``."""
    like = list(like)
    if rt.is_zero(g):
        return [rt.zeros_like(x) for x in like]
    return [rt.densify(gi, x) for gi, x in zip(g, like)]


def to_tree(leaves, treedef: TreeDef, like):
    """The tree of ``treedef`` holding ``leaves`` (lazy zeros become zeros like ``like``'s)."""
    return tree_unflatten(treedef, _dense_list(leaves, like))


def to_leaves(value, treedef: TreeDef, like) -> list:
    """The leaves of ``value``, a tree of ``treedef`` (or a tangent or cotangent of one, with
    lazy zeros), densified like ``like``'s."""
    return _dense_list(_leaves_along(treedef, value), like)


def to_tree_vjp(c, ans, leaves, treedef, like):
    return (to_leaves(c, treedef, like),)


def to_tree_jvp(d, ans, leaves, treedef, like):
    return (to_tree(d, treedef, like),)


def to_leaves_vjp(c, ans, value, treedef, like):
    return (to_tree(c, treedef, like),)


def to_leaves_jvp(d, ans, value, treedef, like):
    return (to_leaves(d, treedef, like),)


def tree_leaves_vjp(g, ans, tree, is_leaf=None):
    return (to_tree(g, tree_structure(tree, is_leaf), ans),)


def tree_leaves_jvp(d, ans, tree, is_leaf=None):
    return (to_leaves(d, tree_structure(tree, is_leaf), ans),)


def tree_flatten_vjp(g, ans, tree, is_leaf=None):
    leaves, treedef = ans
    return (to_tree(rt.ZERO if rt.is_zero(g) else g[0], treedef, leaves),)


def tree_flatten_jvp(d, ans, tree, is_leaf=None):
    leaves, treedef = ans
    return ((to_leaves(d, treedef, leaves), rt.ZERO),)


def tree_unflatten_vjp(g, ans, treedef, leaves):
    return (to_leaves(g, treedef, leaves),)


def tree_unflatten_jvp(d, ans, treedef, leaves):
    return (to_tree(d, treedef, leaves),)


def _tree(rng):
    return {"w": draw(rng, (2, 3)), "b": [draw(rng, (3,)), draw(rng, None)], "c": (draw(rng, (2,)),)}


def _tree_domain(rng):
    return [((_tree(rng),), {}), (([draw(rng, (2,)), (draw(rng, None), None)],), {})]


def _unflatten_domain(rng):
    tree = _tree(rng)
    return [((tree_structure(tree), tree_leaves(tree)), {})]


def _to_tree_domain(rng):
    tree = _tree(rng)
    return [((tree_leaves(_tree(rng)), tree_structure(tree), tree_leaves(tree)), {})]


def _to_leaves_domain(rng):
    tree = _tree(rng)
    return [((_tree(rng), tree_structure(tree), tree_leaves(tree)), {})]


defrule(tree_leaves, tree_leaves_vjp, jvp=tree_leaves_jvp, domain=_tree_domain, linear=True,
        name="srcgrad.tree_leaves")
defrule(tree_flatten, tree_flatten_vjp, jvp=tree_flatten_jvp, domain=_tree_domain, linear=True,
        name="srcgrad.tree_flatten")
defrule(tree_unflatten, tree_unflatten_vjp, diff_args=(1,), jvp=tree_unflatten_jvp,
        domain=_unflatten_domain, linear=True, name="srcgrad.tree_unflatten")
defrule(to_tree, to_tree_vjp, jvp=to_tree_jvp, domain=_to_tree_domain, linear=True,
        name="rules.trees.to_tree")
defrule(to_leaves, to_leaves_vjp, jvp=to_leaves_jvp, domain=_to_leaves_domain, linear=True,
        name="rules.trees.to_leaves")
nondifferentiable(tree_structure)
