"""The backward pass of a recorded graph as readable, runnable straight-line Python.

``Tensor._backward_source()`` walks the graph that ``backward()`` would walk, in the same
order, and writes one block per node: a comment naming the node and its forward operation,
then the node's vjp, inlined when the rule's vjp body is a single ``return`` of a tuple whose
free names are numpy or ``srcgrad.runtime`` (as the transformer does), else a call of the vjp.
Adjoints are named ``b_<name>`` after the caller's variables; unnamed intermediates are
``_t1, _t2...`` in forward order. The text is built as a gast tree and printed by
``srcgrad.codegen.to_source``, the transformer's code generator.

Hooks and ``retain_grad`` are not part of the source; dtype casts the engine applies to
gradients are not either, so float32 graphs may differ from ``.grad`` in the last bits.
"""
from __future__ import annotations

__all__ = ["backward_source", "BackwardSource"]

import builtins
import sys
from typing import Any

import gast
import numpy as np

from .. import codegen, runtime
from . import dispatch
from .engine import nodes_in_order
from .graph import FREED_MESSAGE, Node
from .specialize import vjp_return

_HELPERS = {"np", "_rt"}


class BackwardSource(str):
    """Source text of a backward pass, with the values it reads.

    ``namespace`` maps every free name of the source to its saved value; ``inputs`` lists the
    leaf tensors whose adjoints the generated function returns, in order; ``run(g)`` executes
    the source and returns those adjoints (one array, or a tuple of them).
    """

    namespace: dict
    inputs: list
    function_name: str

    def run(self, g: Any = None) -> Any:
        ns = dict(self.namespace)
        codegen.compile_source(str(self), self.function_name, ns)
        fn = ns[self.function_name]
        return fn() if g is None else fn(np.asarray(g))


def backward_source(root: Any, names: dict | None = None, depth: int = 1) -> BackwardSource:
    """The backward pass of ``root.backward()`` as source (see the module docstring)."""
    if not root.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                           "grad_fn")
    if root.grad_fn is None:
        raise RuntimeError("the tensor is a leaf: its backward pass is empty")
    if names is None:
        names = _caller_variables(depth + 1)
    return _Writer(root, names).write()


def _caller_variables(depth: int) -> dict:
    """The variables of the first calling frame outside srcgrad (e.g. ``srcgrad.source``)."""
    frame = sys._getframe(depth)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("srcgrad."):
        frame = frame.f_back
    return dict(frame.f_locals) if frame is not None else {}


class _Writer:
    def __init__(self, root: Any, names: dict):
        self.root = root
        self.order = nodes_in_order([root.grad_fn])
        for node in self.order:
            if node.raw is None:
                raise RuntimeError(FREED_MESSAGE)
        self.node_names: dict[Node, str] = {}
        self.tensor_names: dict[int, str] = {}
        self.namespace: dict[str, Any] = {"np": np, "_rt": runtime}
        self.taken = set(_HELPERS) | set(dir(builtins))
        self.assigned: set[str] = set()
        self.leaves: list = []
        self.counter = 0
        self._name_from_variables(names)

    # ------------------------------------------------------------------ names

    def _name_from_variables(self, names: dict) -> None:
        nodes = set(self.order)
        for var, value in names.items():
            if not isinstance(value, dispatch.Tensor) or not var.isidentifier() \
                    or var in self.taken:
                continue
            if value.grad_fn in nodes and value.grad_fn not in self.node_names:
                self.node_names[value.grad_fn] = var
                self.taken.add(var)
                self.namespace[var] = value.grad_fn.ans
            elif value.grad_fn is None and id(value) not in self.tensor_names:
                self.tensor_names[id(value)] = var
                self.taken.add(var)
                self.namespace[var] = value._data
        for node in reversed(self.order):  # forward order: temporaries numbered as computed
            if node not in self.node_names:
                self.node_names[node] = self._fresh("_t")
                self.namespace[self.node_names[node]] = node.ans

    def _fresh(self, prefix: str) -> str:
        while True:
            self.counter += 1
            name = f"{prefix}{self.counter}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def _value_name(self, value: Any) -> str:
        """The name a tensor argument is read under in the generated code."""
        if isinstance(value, dispatch.Tensor):
            if value.grad_fn is not None and value.grad_fn in self.node_names:
                return self.node_names[value.grad_fn]
            if id(value) not in self.tensor_names:
                name = self._fresh("_c")
                self.tensor_names[id(value)] = name
                self.namespace[name] = value._data
            return self.tensor_names[id(value)]
        name = self._fresh("_c")
        self.namespace[name] = value
        return name

    def adjoint(self, primal: str) -> str:
        name = "b_" + primal.lstrip("_")
        while name in self.taken:
            name = "b_" + name
        self.taken.add(name)
        return name

    # ------------------------------------------------------------------ writing

    def write(self) -> BackwardSource:
        root_name = self.node_names[self.root.grad_fn]
        g_name = self.adjoint(root_name)
        self.adjoints: dict[Any, str] = {self.root.grad_fn: g_name}
        self.assigned.add(g_name)
        body: list = [codegen.comment(f"backward of {root_name}: reverse topological order")]
        self.last_use: dict[int, int] = {}
        for position, node in enumerate(self.order):
            self.position = position
            body.extend(self._node_block(node))
        # Return leaves in the order the forward pass first used them.
        self.leaves.sort(key=lambda leaf: -self.last_use[id(leaf)])
        outputs = [self.adjoints[id(leaf)] for leaf in self.leaves]
        body.append(_stmt(f"return {', '.join(outputs) or 'None'}"))
        fn_name = f"{root_name.lstrip('_')}_backward"
        fn = _stmt(f"def {fn_name}({g_name}=1.0):\n    pass")
        fn.body = body
        text = codegen.to_source(gast.Module(body=[fn], type_ignores=[]))
        src = BackwardSource(text)
        src.namespace = self.namespace
        src.inputs = list(self.leaves)
        src.function_name = fn_name
        return src

    def _node_block(self, node: Node) -> list:
        g = self.adjoints.get(node)
        if g is None:
            return []
        out_name = self.node_names[node]
        arg_exprs = [self._arg_expr(a) for a in node.args]
        call = _forward_text(node, arg_exprs)
        stmts = [codegen.comment(f"{type(node).__name__}: {out_name} = {call}")]
        targets = self._targets(node)
        inlined = _inline(node, g, out_name, arg_exprs, targets)
        if inlined is None:
            stmts.extend(self._call(node, g, out_name, arg_exprs, targets))
        else:
            for j, k, target, expr in inlined:
                stmts.append(self._accumulate(target, expr))
        return stmts

    def _arg_expr(self, a: Any) -> str:
        if isinstance(a, dispatch.Tensor):
            return self._value_name(a)
        if isinstance(a, (list, tuple)) and any(isinstance(x, dispatch.Tensor) for x in a):
            inner = ", ".join(self._arg_expr(x) for x in a)
            return f"[{inner}]" if isinstance(a, list) else f"({inner},)"
        literal = _literal(a)
        return literal if literal is not None else self._value_name(a)

    def _targets(self, node: Node) -> list:
        """(vjp output index, item index, adjoint variable) for each input needing a gradient."""
        targets = []
        for j, k, target in node.edges:
            if isinstance(target, Node):
                key = target
                primal = self.node_names[target]
            else:
                key = id(target)
                primal = self._value_name(target)
                if all(leaf is not target for leaf in self.leaves):
                    self.leaves.append(target)
                self.last_use[id(target)] = self.position
            if key not in self.adjoints:
                self.adjoints[key] = self.adjoint(primal)
            targets.append((j, k, self.adjoints[key]))
        return targets

    def _accumulate(self, target: str, expr: str) -> Any:
        if target in self.assigned:
            return _stmt(f"{target} = {target} + {expr}")
        self.assigned.add(target)
        return _stmt(f"{target} = {expr}")

    def _call(self, node: Node, g: str, out_name: str, arg_exprs: list, targets: list) -> list:
        fn = node.rule.vjp
        base = getattr(fn, "__name__", "vjp")
        if base == "vjp":  # a Function's context: name it after its class
            base = type(node).__name__ + "_vjp"
        name = base if self.namespace.get(base, fn) is fn else self._fresh(base + "_")
        self.namespace[name] = fn
        self.taken.add(name)
        args = ", ".join([g, out_name] + arg_exprs + [f"{k}={_literal(v) or self._value_name(v)}"
                                                      for k, v in node.kw.items()])
        tmp = self._fresh("_g")
        stmts = [_stmt(f"{tmp} = {name}({args})")]
        for j, k, target in targets:
            expr = f"{tmp}[{j}]" if k is None else f"{tmp}[{j}][{k}]"
            stmts.append(self._accumulate(target, expr))
        return stmts


# --------------------------------------------------------------------------- inlining


def _stmt(text: str) -> Any:
    return gast.parse(text).body[0]


def _literal(value: Any) -> str | None:
    """Source of a constant that can be written literally, else None."""
    if value is None or isinstance(value, (bool, int, str)) or value is Ellipsis:
        return repr(value) if value is not Ellipsis else "..."
    if isinstance(value, float):
        return repr(value) if np.isfinite(value) else None
    if isinstance(value, slice):
        parts = [_literal(p) for p in (value.start, value.stop, value.step)]
        return None if None in parts else f"slice({', '.join(parts)})"
    if isinstance(value, (tuple, list)):
        parts = [_literal(p) for p in value]
        if None in parts:
            return None
        if isinstance(value, list):
            return "[" + ", ".join(parts) + "]"
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if isinstance(value, np.dtype):
        return f"np.dtype({value.name!r})"
    return None


def _forward_text(node: Node, arg_exprs: list) -> str:
    function = getattr(type(node), "_function", None)
    if function is not None:  # a custom Function's context node
        name = f"{function.__name__}.apply"
    else:
        name = node.rule.name.replace("numpy.", "np.")
    kws = [f"{k}={_literal(v) if _literal(v) is not None else '...'}"
           for k, v in node.kw.items()]
    return f"{name}({', '.join(arg_exprs + kws)})"


class _Substitute(gast.NodeTransformer):
    def __init__(self, mapping: dict, globals_: dict):
        self.mapping = mapping
        self.globals = globals_
        self.ok = True

    def visit_Name(self, node):
        if node.id in self.mapping:
            return gast.parse(self.mapping[node.id], mode="eval").body
        value = self.globals.get(node.id, getattr(builtins, node.id, _MISSING))
        if value is np:
            return gast.Name(id="np", ctx=gast.Load(), annotation=None, type_comment=None)
        if value is not _MISSING and getattr(runtime, node.id, _MISSING) is value:
            return gast.parse(f"_rt.{node.id}", mode="eval").body
        if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                _literal(value) is not None:
            return gast.parse(_literal(value), mode="eval").body
        if value is not _MISSING and getattr(builtins, node.id, _MISSING) is value:
            return node
        self.ok = False
        return node


_MISSING = object()


def _inline(node: Node, g: str, out_name: str, arg_exprs: list, targets: list):
    """The inlined cotangent expressions of ``node``'s vjp, or None when it must be called."""
    fn = node.rule.vjp
    parsed = vjp_return(fn)
    if parsed is None:
        return None
    _, params, defaults, elts = parsed
    if len(params) < 2 + len(arg_exprs) or \
            len(elts) <= max((j for j, _, _ in targets), default=-1):
        return None
    mapping = {params[0]: g, params[1]: out_name}
    for name, expr in zip(params[2:], arg_exprs):
        mapping[name] = expr
    for name in params[2 + len(arg_exprs):]:
        if name in node.kw:
            lit = _literal(node.kw[name])
            if lit is None:
                return None
            mapping[name] = lit
        elif name in defaults:
            mapping[name] = gast_to_text(defaults[name])
        else:
            return None
    if any(k not in params for k in node.kw):
        return None
    out = []
    for j, k, target in targets:
        if k is not None:
            return None
        tree = _copy(elts[j])
        sub = _Substitute(mapping, getattr(fn, "__globals__", {}))
        tree = sub.visit(tree)
        if not sub.ok:
            return None
        expr = codegen.to_source(gast.Module(body=[gast.Expr(value=tree)], type_ignores=[]))
        out.append((j, k, target, expr.strip()))
    return out


def gast_to_text(tree: Any) -> str:
    return codegen.to_source(gast.Module(body=[gast.Expr(value=_copy(tree))],
                                         type_ignores=[])).strip()


def _copy(tree: Any) -> Any:
    import copy
    return copy.deepcopy(tree)
