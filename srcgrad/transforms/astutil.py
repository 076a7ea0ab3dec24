"""Small helpers to build and inspect gast trees."""
from __future__ import annotations

import ast
import inspect
import copy

import gast


def load(name: str) -> gast.Name:
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def store(name: str) -> gast.Name:
    return gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None)


def const(value) -> gast.Constant:
    return gast.Constant(value=value, kind=None)


def assign(target, value, at=None) -> gast.Assign:
    if isinstance(target, str):
        target = store(target)
    node = gast.Assign(targets=[target], value=value, type_comment=None)
    if at is not None:
        located(node, at)
    return node


def expr_stmt(value, at=None) -> gast.Expr:
    node = gast.Expr(value=value)
    return located(node, at) if at is not None else node


def call(func, *args, keywords=()) -> gast.Call:
    if isinstance(func, str):
        func = parse_expr(func)
    return gast.Call(func=func, args=list(args), keywords=list(keywords))


def attr(value, name: str) -> gast.Attribute:
    if isinstance(value, str):
        value = load(value)
    return gast.Attribute(value=value, attr=name, ctx=gast.Load())


def parse_expr(text: str):
    return gast.parse(text, mode="eval").body


def parse_stmts(text: str) -> list:
    return gast.parse(text).body


def located(node, at):
    """Copy ``at``'s line/column onto ``node`` and every child lacking one."""
    if at is None:
        return node
    line = getattr(at, "lineno", None)
    if line is None:
        return node
    for n in gast.walk(node):
        if hasattr(n, "_attributes") and "lineno" in n._attributes:
            if getattr(n, "lineno", None) is None:
                n.lineno = line
                n.col_offset = getattr(at, "col_offset", 0)
                n.end_lineno = getattr(at, "end_lineno", line)
                n.end_col_offset = getattr(at, "end_col_offset", 0)
    return node


def deepcopy(node):
    """A copy of a gast tree (several times faster than copy.deepcopy, which it replaces)."""
    return _clone(node, None)


def _clone(node, mapping):
    if isinstance(node, list):
        return [_clone(n, mapping) for n in node]
    if not isinstance(node, gast.AST):
        return node
    if mapping is not None and type(node) is gast.Name and node.id in mapping \
            and type(node.ctx) is gast.Load:
        return _clone(mapping[node.id], None)
    new = node.__class__.__new__(node.__class__)
    for field in node._fields:
        setattr(new, field, _clone(getattr(node, field, None), mapping))
    for attribute in node._attributes:
        value = getattr(node, attribute, None)
        if value is not None:
            setattr(new, attribute, value)
    return new


class Parameters(list):
    """A function's named parameters (positional ones, then keyword-only ones), knowing how
    many are positional and the names of its ``*args`` and ``**kwargs`` (or None)."""

    def __init__(self, names, positional: int, vararg: str | None, kwarg: str | None):
        super().__init__(names)
        self.positional, self.vararg, self.kwarg = positional, vararg, kwarg


def parameters_of(fn) -> Parameters:
    """``fn``'s ``Parameters``, read from its code object."""
    code = fn.__code__
    n = code.co_argcount + code.co_kwonlyargcount
    vararg = code.co_varnames[n] if code.co_flags & inspect.CO_VARARGS else None
    kwarg = code.co_varnames[n + (vararg is not None)] \
        if code.co_flags & inspect.CO_VARKEYWORDS else None
    return Parameters(code.co_varnames[:n], code.co_argcount, vararg, kwarg)


def bind_arguments(params: list[str], offset: int, call: gast.Call) -> list | None:
    """``(parameter index, argument node)`` for each argument of a call of a function with
    parameters ``params`` (``offset`` of them bound already, a method's ``self``), or None
    when a ``*``/``**`` unpacking hides which parameter an argument reaches. The one binder
    of user calls, for reverse and forward mode. With ``Parameters``, positional arguments
    past the positional parameters (those ``*args`` gathers) are bound to none."""
    if any(isinstance(a, gast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        return None
    positional = getattr(params, "positional", len(params))
    out = [(i + offset, a) for i, a in enumerate(call.args) if i + offset < positional]
    out += [(params.index(k.arg), k.value) for k in call.keywords if k.arg in params]
    return out


def setattr_arguments(call, builtin=lambda name: True) -> list | None:
    """``[obj, name, value]`` (as written, any number) of a call storing an attribute:
    ``setattr(obj, "W", v)``, ``object.__setattr__(obj, "W", v)`` or ``obj.__setattr__("W",
    v)``; else None. ``builtin(name)`` tells whether ``setattr`` or ``object`` is Python's
    there (analyses run before names are resolved read them by name)."""
    func = call.func
    if isinstance(func, gast.Name) and func.id == "setattr" and builtin("setattr"):
        return list(call.args)
    if not (isinstance(func, gast.Attribute) and func.attr == "__setattr__"):
        return None
    if isinstance(func.value, gast.Name) and func.value.id == "object" and builtin("object"):
        return list(call.args)
    return [func.value] + list(call.args)


def called_attr(node, owner: str) -> str | None:
    """``f`` when ``node`` is a call ``owner.f(...)`` with ``owner`` a plain name (the runtime
    alias ``ctx.rt``, a tape), else None. Reads gast and ast trees (the jit rewrites ast)."""
    if isinstance(node, _CALL) and isinstance(node.func, _ATTRIBUTE) \
            and isinstance(node.func.value, _NAME) and node.func.value.id == owner:
        return node.func.attr
    return None


_CALL, _ATTRIBUTE, _NAME = (gast.Call, ast.Call), (gast.Attribute, ast.Attribute), \
    (gast.Name, ast.Name)


def names_read(node) -> set[str]:
    return {n.id for n in gast.walk(node)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def names_written(node) -> set[str]:
    return {n.id for n in gast.walk(node)
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del))}


# operators whose result, on numpy arrays and numbers, is a new value holding no reference
# to its operands (an array made by a ufunc or a matrix product)
FRESH_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow,
             gast.MatMult)


def is_fresh(node) -> bool:
    """Arithmetic (``a * b``, ``-a``): its value is new, it keeps no reference to operands."""
    return isinstance(node, gast.BinOp) and isinstance(node.op, FRESH_OPS) or isinstance(
        node, gast.UnaryOp) and isinstance(node.op, gast.USub)


def names_kept(node) -> set[str]:
    """Names ``node`` reads other than as a direct operand of arithmetic: the places where
    their value itself may be passed on, stored, returned, or viewed (``a`` in ``f(a)``,
    ``a[i]``, ``a.T``, ``b = a``), where ``a`` in ``a * 2`` only gives its elements."""
    consumed = {id(child) for n in gast.walk(node) if is_fresh(n)
                for child in gast.iter_child_nodes(n) if isinstance(child, gast.Name)}
    # (a lambda or a comprehension may read its names later, or repeatedly: never consumed)
    deferred = {id(m) for n in gast.walk(node) if isinstance(n, _DEFERRED)
                for m in gast.walk(n)}
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load) and (id(n) not in consumed or id(n) in deferred)}


_DEFERRED = (gast.Lambda, gast.GeneratorExp, gast.ListComp, gast.SetComp, gast.DictComp)


def map_blocks(s, fn) -> None:
    """Replace each block of statement ``s`` (its body, orelse, finalbody, handlers' and
    match cases' bodies) by ``fn(block)``."""
    for field in ("body", "orelse", "finalbody"):
        if isinstance(getattr(s, field, None), list):
            setattr(s, field, fn(getattr(s, field)))
    for part in (*getattr(s, "handlers", ()), *getattr(s, "cases", ())):
        part.body = fn(part.body)


def header_nodes(s):
    """The nodes of statement ``s`` itself, not of the statements in its blocks."""
    if isinstance(s, (gast.If, gast.While)):
        roots = [s.test]
    elif isinstance(s, gast.For):
        roots = [s.iter]
    elif isinstance(s, gast.With):
        roots = [item.context_expr for item in s.items]
    elif isinstance(s, (gast.FunctionDef, gast.ClassDef, gast.Try)):
        roots = []
    else:
        roots = [s]
    for root in roots:
        yield from gast.walk(root)


def pure_reference(node) -> bool:
    """A variable, or attributes and items of one by constants or variables (``m``,
    ``ms[0].layer``): evaluating it again reads the same object and runs nothing else."""
    while isinstance(node, (gast.Attribute, gast.Subscript)):
        if isinstance(node, gast.Subscript) and not isinstance(node.slice,
                                                               (gast.Constant, gast.Name)):
            return False
        node = node.value
    return isinstance(node, gast.Name)


def is_atomic(node) -> bool:
    """Names, constants and (tuples/slices of) them: operands that need no temporary."""
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        return isinstance(node.operand, gast.Constant)
    if isinstance(node, gast.Slice):
        return all(p is None or is_atomic(p) for p in (node.lower, node.upper, node.step))
    if isinstance(node, gast.Tuple):
        return all(is_atomic(e) for e in node.elts)
    return False


class NameReplacer(gast.NodeTransformer):
    """Replace Name loads by expressions (deep-copied at each use)."""

    def __init__(self, mapping: dict):
        self.mapping = mapping

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.mapping:
            return copy.deepcopy(self.mapping[node.id])
        return node


def substitute(expr, mapping: dict):
    """A copy of ``expr`` with Name loads replaced by (copies of) ``mapping``'s nodes."""
    return _clone(expr, mapping)


def signature_of(args):
    """A copy of a function's parameters for a generated function with the same signature:
    default values that are not literals become None placeholders (the generated function
    gets the user's own default objects when it is made; evaluating the expressions again
    could fail, e.g. a lambda's default reading a local of its enclosing function)."""
    new = _clone(args, None)
    new.defaults = [d if _literal(d) else const(None) for d in new.defaults]
    new.kw_defaults = [d if d is None or _literal(d) else const(None) for d in new.kw_defaults]
    for a in new.posonlyargs + new.args + new.kwonlyargs:
        a.annotation = None  # annotations are evaluated at def time too
    return new


def _literal(node) -> bool:
    """A literal: ``2.0``, ``-0.5``, ``None``, ``"mean"``, tuples of literals."""
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        return isinstance(node.operand, gast.Constant)
    if isinstance(node, gast.Tuple):
        return all(_literal(e) for e in node.elts)
    return False


def own_nodes(node):
    """Nodes of ``node`` outside nested functions and lambdas (their scopes are their own)."""
    yield node
    for child in gast.iter_child_nodes(node):
        if not isinstance(child, (gast.FunctionDef, gast.Lambda)):
            yield from own_nodes(child)


def parameters(names) -> gast.arguments:
    """The parameter list ``(a, b, ...)`` of a generated function."""
    return gast.arguments(args=[gast.Name(id=n, ctx=gast.Param(), annotation=None,
                                          type_comment=None) for n in names],
                          posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                          kwarg=None, defaults=[])


def function_def(name: str, args: gast.arguments, body: list) -> gast.FunctionDef:
    """``def name(args): body``, undecorated."""
    return gast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None,
                            type_comment=None, type_params=[])


# expressions ANF splits when they read differentiable values, so that the transforms see names
# as their operands: meeting one of them there with an active name inside is a broken invariant
SPLIT_BY_ANF = (gast.Attribute, gast.Subscript, gast.BinOp, gast.UnaryOp, gast.IfExp)
