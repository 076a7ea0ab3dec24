"""The backward pass of the Tensor facade: walk the graph, call each node's ``rule.vjp``.

Nodes run in dependency order (a node runs once every node that feeds it a gradient has run).
Without ``create_graph`` gradients are plain numpy arrays and nothing is recorded; with it,
vjp bodies run on Tensors under grad mode, so the gradients are themselves differentiable.

Leaf gradients are added to ``.grad`` at the end of the walk, after the leaf's hooks ran, so
an error half-way (freed buffers, modified saved values) leaves every ``.grad`` untouched.
"""
from __future__ import annotations

__all__ = ["backward", "grad", "nodes_in_order"]

from typing import Any

import numpy as np

from ..errors import UnsupportedFeatureError
from . import dispatch
from .dispatch import wrap
from .dtypes import Size, as_dtype, type_label
from .grad_mode import STATE
from .graph import FREED_MESSAGE, Node

_ndarray = np.ndarray


def _as_tuple(x: Any) -> tuple:
    if x is None:
        return ()
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,)


def _root_grads(outputs: tuple, grad_outputs: tuple, create_graph: bool) -> list:
    """One initial gradient per output: given ones checked, implicit ones for scalars."""
    Tensor = dispatch.Tensor
    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if i < len(grad_outputs) else None
        data = out._data
        if g is None:
            if data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = np.ones(data.shape, data.dtype)
        else:
            graw = g._data if isinstance(g, Tensor) else np.asarray(g)
            if graw.shape != data.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of "
                    f"{Size(graw.shape)!r} and output[{i}] has a shape of "
                    f"{Size(data.shape)!r}.")
            if create_graph and isinstance(g, Tensor):
                g = g if graw.dtype == data.dtype else g.to(as_dtype(data.dtype))
                grads.append(g)
                continue
            g = graw if graw.dtype == data.dtype else graw.astype(data.dtype)
        grads.append(wrap(g) if create_graph else g)
    return grads


def _check_outputs(outputs: tuple) -> None:
    for i, out in enumerate(outputs):
        if not isinstance(out, dispatch.Tensor):
            raise TypeError(f"expected a Tensor as element {i} of tensors, but got "
                            f"{type(out).__name__}")
        if not out._rg:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of leaves (or of ``inputs``)."""
    outputs = _as_tuple(tensors)
    _check_outputs(outputs)
    grads = _root_grads(outputs, _as_tuple(grad_tensors), create_graph)
    targets = _as_tuple(inputs) if inputs is not None else None
    if targets is not None and not targets:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    _Walk(outputs, grads, create_graph if retain_graph is None else retain_graph,
          create_graph, targets, accumulate=True).run()


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated)."""
    if is_grads_batched:
        raise UnsupportedFeatureError("is_grads_batched=True is not supported by srcgrad")
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    _check_outputs(outs)
    for t in ins:
        if not t._rg:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if allow_unused is None:
        allow_unused = materialize_grads
    grads = _root_grads(outs, _as_tuple(grad_outputs), create_graph)
    walk = _Walk(outs, grads, create_graph if retain_graph is None else retain_graph,
                 create_graph, ins, accumulate=False)
    walk.run()
    result = []
    for i, t in enumerate(ins):
        g = walk.captured.get(id(t))
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is "
                                   "the desired behavior.")
            if materialize_grads:
                g = np.zeros_like(t._data)
        result.append(None if g is None else walk.as_tensor(g, t, copy=True))
    return tuple(result)


class _Walk:
    """One backward pass over the graph reachable from ``outputs``."""

    __slots__ = ("outputs", "grads", "retain", "create", "targets", "accumulate", "captured",
                 "target_ids", "target_nodes")

    def __init__(self, outputs, grads, retain, create, targets, accumulate):
        self.outputs = outputs
        self.grads = grads
        self.retain = retain
        self.create = create
        self.targets = targets
        self.accumulate = accumulate
        self.captured: dict[int, Any] = {}
        self.target_ids = None if targets is None else {id(t) for t in targets}
        self.target_nodes = None if targets is None else \
            {t.grad_fn: t for t in targets if t.grad_fn is not None}

    # ------------------------------------------------------------------ graph

    def _plan(self, starts: list) -> tuple[dict, set | None]:
        """Dependency counts of the nodes that will run, and the set of those that need to."""
        reachable = nodes_in_order(starts)
        needed = None if self.targets is None else self._needed(reachable)
        deps = dict.fromkeys(reachable, 0)
        for n in reachable:
            if needed is not None and n not in needed:
                continue
            for _, _, t in n.edges:
                if isinstance(t, Node):
                    deps[t] += 1
        return deps, needed

    def _needed(self, reachable: list) -> set:
        """Nodes from which a target is reachable (their vjp must run)."""
        ids, tnodes = self.target_ids, self.target_nodes
        needed: set = set()
        for n in reversed(reachable):  # reachable is topologically ordered, roots first
            for _, _, t in n.edges:
                if (id(t) in ids) if not isinstance(t, Node) else (t in tnodes or t in needed):
                    needed.add(n)
                    break
        return needed

    # ------------------------------------------------------------------ run

    def run(self) -> None:
        grads: dict = {}
        leaves: dict[int, list] = {}
        starts: list = []
        for out, g in zip(self.outputs, self.grads):
            node = out.grad_fn
            if node is None:
                self._add_leaf(leaves, out, g)
            else:
                if node not in grads:
                    starts.append(node)
                    grads[node] = g
                else:
                    grads[node] = grads[node] + g
        if starts:
            if self.targets is None and not self.create:
                self._walk_fast(starts, grads, leaves)
            else:
                self._walk(starts, grads, leaves)
        self._finish_leaves(leaves)

    def _walk_fast(self, starts: list, grads: dict, leaves: dict) -> None:
        _walk_arrays(starts, grads, leaves, self.retain)

    def _walk(self, starts: list, grads: dict, leaves: dict) -> None:
        deps, needed = self._plan(starts)
        ready = [n for n in starts if deps[n] == 0]
        create = self.create
        tnodes = self.target_nodes
        while ready:
            node = ready.pop()
            g = grads.pop(node, None)
            if g is not None:
                # (a node backward(inputs=...) does not need runs no hooks, as in PyTorch)
                if node.hooks is not None and (needed is None or node in needed or
                                               (tnodes is not None and node in tnodes)):
                    g = self._node_hooks(node, g)
                if tnodes is not None and node in tnodes:
                    self._capture(tnodes[node], g)
            run = g is not None and (needed is None or node in needed)
            if run:
                gs = self._vjp(node, g) if not create else self._vjp_graph(node, g)
            for j, k, t in node.edges:
                gi = None
                if run:
                    gi = gs[j] if k is None else gs[j][k]
                if isinstance(t, Node):
                    if gi is not None:
                        prev = grads.get(t)
                        grads[t] = gi if prev is None else prev + gi
                    if needed is None or node in needed:
                        d = deps[t] - 1
                        deps[t] = d
                        if d == 0:
                            ready.append(t)
                elif gi is not None:
                    self._add_leaf(leaves, t, gi)
            if run and not self.retain and node.saves:
                node.raw = node.ans = node.args = None

    def _vjp(self, node: Node, g: Any) -> tuple:
        raw = node.raw
        if raw is None:
            raise RuntimeError(FREED_MESSAGE)
        if node.vers is not None:
            _check_versions(node)
        ans = node.ans
        if type(ans) is _ndarray and (type(g) is not _ndarray or g.dtype is not ans.dtype):
            g = _match(g, ans)
        return node.pullback(g, ans, *raw, **node.kw)

    def _vjp_graph(self, node: Node, g: Any) -> tuple:
        if node.raw is None:
            raise RuntimeError(FREED_MESSAGE)
        if not getattr(node.rule, "second_order", True):
            raise RuntimeError(
                f"create_graph=True differentiates the vjp of '{node.rule.name}' "
                f"({type(node).__name__}), whose rule is registered with second_order=False")
        if node.vers is not None:
            _check_versions(node)
        Tensor = dispatch.Tensor
        ans = node.ans
        if isinstance(ans, _ndarray):
            if not isinstance(g, Tensor):
                g = wrap(_match(g, ans))
            ans = wrap(ans)
            ans.grad_fn = node  # the saved output, still attached to the node that made it
            ans._rg = True
        prev = STATE.enabled
        STATE.enabled = True
        try:
            return node.pullback(g, ans, *node.args, **node.kw)
        finally:
            STATE.enabled = prev

    # ------------------------------------------------------------------ hooks, leaves

    def _node_hooks(self, node: Node, g: Any) -> Any:
        return _node_hooks(node, g, self.create)

    def _call_hook(self, hook, g: Any, like: Any) -> Any:
        return _call_hook(hook, g, like, self.create)

    def _capture(self, t: Any, g: Any) -> None:
        prev = self.captured.get(id(t))
        self.captured[id(t)] = g if prev is None else prev + g

    def _add_leaf(self, leaves: dict, leaf: Any, g: Any) -> None:
        entry = leaves.get(id(leaf))
        if entry is None:
            leaves[id(leaf)] = [leaf, g]
        else:
            entry[1] = entry[1] + g

    def _finish_leaves(self, leaves: dict) -> None:
        ids = self.target_ids
        for leaf, g in leaves.values():
            target = ids is not None and id(leaf) in ids
            if not target and (ids is not None or not self.accumulate):
                continue  # (nor are its hooks run: PyTorch does not run its AccumulateGrad)
            meta = leaf._meta
            if meta is not None and meta.hooks:
                for hook in list(meta.hooks.values()):
                    g = self._call_hook(hook, g, leaf._data)
            if target:
                self._capture(leaf, g)
                if not self.accumulate:
                    continue
            self._deposit(leaf, g)
        if self.accumulate and ids is not None:
            for t in self.targets:
                if t.grad_fn is not None and id(t) in self.captured:
                    g = self.captured[id(t)]
                    t._grad = self.as_tensor(g, t, copy=True) if t._grad is None else \
                        self.as_tensor(_plus(t._grad, g, self.create), t, copy=False)

    def _deposit(self, leaf: Any, g: Any) -> None:
        _deposit(leaf, g, self.create)

    def as_tensor(self, g: Any, like: Any, copy: bool) -> Any:
        return _as_tensor(g, like, copy)


def backward_scalar(out: Any, retain_graph: bool = False) -> None:
    """``out.backward()`` without arguments: the common case, on its shortest path."""
    if not out._rg:
        _check_outputs((out,))
    data = out._data
    if data.size != 1:
        raise RuntimeError("grad can be implicitly created only for scalar outputs")
    g = np.array(1, data.dtype) if not data.ndim else np.ones(data.shape, data.dtype)
    node = out.grad_fn
    leaves: dict = {}
    if node is None:
        leaves[id(out)] = [out, g]
    else:
        _walk_arrays([node], {node: g}, leaves, retain_graph)
    for leaf, gl in leaves.values():
        meta = leaf._meta
        if meta is not None and meta.hooks:
            for hook in list(meta.hooks.values()):
                gl = _call_hook(hook, gl, leaf._data, False)
        _deposit(leaf, gl, False)


def _walk_arrays(starts: list, grads: dict, leaves: dict, retain: bool) -> None:
    """The common walk: every node runs and gradients are arrays; calls are inlined."""
    deps = dict.fromkeys(starts, 0)
    stack = list(starts)
    while stack:
        for _, _, t in stack.pop().edges:
            if isinstance(t, Node):
                c = deps.get(t)
                if c is None:
                    deps[t] = 1
                    stack.append(t)
                else:
                    deps[t] = c + 1
    ready = [n for n in starts if deps[n] == 0]
    while ready:
        node = ready.pop()
        g = grads.pop(node, None)
        if g is None:
            for _, _, t in node.edges:
                if isinstance(t, Node):
                    d = deps[t] - 1
                    deps[t] = d
                    if d == 0:
                        ready.append(t)
            continue
        if node.hooks is not None:
            g = _node_hooks(node, g, False)
        raw = node.raw
        if raw is None:
            raise RuntimeError(FREED_MESSAGE)
        if node.vers is not None:
            _check_versions(node)
        ans = node.ans
        if type(ans) is _ndarray and (type(g) is not _ndarray or g.dtype is not ans.dtype):
            g = _match(g, ans)
        gs = node.pullback(g, ans, *raw, **node.kw)
        if not retain and node.saves:
            node.raw = node.ans = node.args = None
        for j, k, t in node.edges:
            gi = gs[j] if k is None else gs[j][k]
            if isinstance(t, Node):
                if gi is not None:
                    prev = grads.get(t)
                    grads[t] = gi if prev is None else prev + gi
                d = deps[t] - 1
                deps[t] = d
                if d == 0:
                    ready.append(t)
            elif gi is not None:
                entry = leaves.get(id(t))
                if entry is None:
                    leaves[id(t)] = [t, gi]
                else:
                    entry[1] = entry[1] + gi


def _node_hooks(node: Node, g: Any, create: bool) -> Any:
    """Run a non-leaf tensor's hooks on its gradient ``g``, then store it if retained."""
    hooks = node.hooks
    for hook in list(hooks.pre.values()):
        g = _call_hook(hook, g, node.ans, create)
    if hooks.retain is not None:  # also during autograd.grad, as in PyTorch
        t = hooks.retain()
        if t is not None:
            t._grad = _as_tensor(g, t, copy=True) if t._grad is None else \
                _as_tensor(_plus(t._grad, g, create), t, copy=False)
    return g


def _call_hook(hook, g: Any, like: Any, create: bool) -> Any:
    Tensor = dispatch.Tensor
    gt = g if isinstance(g, Tensor) else wrap(_match(g, like))
    result = hook(gt)
    if result is None:
        return g
    if create:
        return result
    return result._data if isinstance(result, Tensor) else np.asarray(result)


def _deposit(leaf: Any, g: Any, create: bool) -> None:
    """Add ``g`` to ``leaf.grad``: in place, unless either side is part of a graph."""
    old = leaf._grad
    if old is None:
        leaf._grad = _as_tensor(g, leaf, copy=True)
    elif create or old._rg or isinstance(g, dispatch.Tensor) or \
            not old._data.flags.writeable:
        leaf._grad = _as_tensor(_plus(old, g, create), leaf, copy=False)
    else:
        old._data += _match(g, old._data)


def _as_tensor(g: Any, like: Any, copy: bool) -> Any:
    """``g`` as a Tensor shaped and typed like tensor ``like``."""
    Tensor = dispatch.Tensor
    if isinstance(g, Tensor):
        if g._data.dtype != like._data.dtype and not g._rg:
            return wrap(g._data.astype(like._data.dtype))
        return g
    data = _match(g, like._data)
    if copy or not data.flags.writeable:
        data = np.array(data, copy=True)
    return wrap(data)


def _plus(old: Any, g: Any, create: bool) -> Any:
    """``old + g`` where ``old`` is a Tensor and ``g`` an array or a Tensor.

    The sum is recorded when either side has history (a ``.grad`` made with
    ``create_graph=True`` stays differentiable as more gradient accumulates into it).
    """
    Tensor = dispatch.Tensor
    if create or isinstance(g, Tensor) or old._rg:
        prev = STATE.enabled
        STATE.enabled = True
        try:
            return old + (g if isinstance(g, Tensor) else wrap(np.asarray(g)))
        finally:
            STATE.enabled = prev
    return old._data + g


def _match(g: Any, like: np.ndarray) -> np.ndarray:
    """``g`` as an ndarray with the dtype and shape of ``like`` (casts, broadcasts scalars)."""
    g = np.asarray(g)
    if g.dtype != like.dtype:
        g = g.astype(like.dtype)
    if g.shape != like.shape:
        g = np.broadcast_to(g, like.shape)
    return g


def nodes_in_order(starts: list) -> list:
    """Nodes reachable from ``starts``, in a topological order (each before its inputs)."""
    order: list = []
    state: dict = {}
    for s in starts:
        if s in state:
            continue
        state[s] = 1
        stack = [(s, iter(s.edges))]
        while stack:
            node, it = stack[-1]
            for _, _, t in it:
                if isinstance(t, Node) and t not in state:
                    state[t] = 1
                    stack.append((t, iter(t.edges)))
                    break
            else:
                stack.pop()
                order.append(node)
    order.reverse()
    return order


def _check_versions(node: Node) -> None:
    for tensor, counter, version in node.vers:
        if counter[0] != version:
            if tensor is None:
                label, producer = _describe_output(node)
            else:
                label = type_label(tensor)
                producer = tensor.grad_fn
                producer = None if producer is None else _op_name(producer)
            where = f", which is output 0 of {producer}," if producer else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {label}{where} is at version {counter[0]}; expected "
                f"version {version} instead. Hint: enable anomaly detection to find the "
                "operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")


def _describe_output(node: Node) -> tuple[str, str]:
    t = wrap(node.ans)
    return type_label(t), _op_name(node)


def _op_name(node: Node) -> str:
    name = type(node).__name__
    i = name.rfind("Backward")
    return name[:i] if i > 0 else name
