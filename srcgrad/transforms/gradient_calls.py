"""Guarantees afterwards: a gradient made and called in one expression from a function known
at transform time (``srcgrad.grad(f)(x)``, ``value_and_grad(f, argnums=1)(x, y)``) is called
through a name bound to that gradient function.

Such a call is then a call of a known function: differentiating the code around it
differentiates the gradient's generated wrapper (``api_forward.source_function``) through
its sweeps, like any helper's, instead of making the gradient and dispatching the call at
run time (``runtime.call_fwd``) on every call, and again at every higher order. ``grad``
returns the same function for the same ``f`` and options, so calling the one made here is
what the user's code would have done; the names ``f`` and ``srcgrad`` are watched like every
global a transformation resolved (a rebinding rebuilds the code).

A gradient of a local def or lambda reading differentiable variables of the enclosing
function (``grad(lambda y: x * y)(c)``, ``grad(inner)(c)``: the closure form of perturbation
confusion) reaches this pass closure-converted by desugar, ``_rt.apply(grad(_rt.bind(inner,
(), {'x': x})), (c,), {})``: ``inner`` reads ``x`` through a keyword parameter of its own.
Such a call is made to pass the captured values at the call instead, ``_rt.apply(grad(
_rt.stop_gradient(inner)), (c,), {'x': x})``: the gradient is taken with respect to the
positional arguments the user's call differentiates, and ``x`` is an argument of the call to
the gradient, which differentiating the code around it differentiates like any other
(dispatched at run time, ``runtime.call_fwd``, twice at most). ``inner`` itself then carries no
gradient: all it reads of the caller's differentiable values are those keywords. When ``inner``
is a ``def`` or a lambda (at the call, or assigned once) reading no other function of its
caller, the call is of the gradient of its module-level twin instead (``_call_closed_twin``),
the other locals it reads passed as keywords too: a known callee, differentiated at any order.

A gradient made and not called at once (``g = grad(inner)`` passed, stored or returned;
transforms/gradient_values.py has already made the ones only called at their calls) becomes a
bound function value, ``_rt.bind(grad(_rt.stop_gradient(inner)), (), {'x': x})`` (the same
for ``partial``'s positional values, the gradient's ``wrt`` counted past them), holding the
values as they were when it was made; desugar refuses a captured variable assigned again.
"""
from __future__ import annotations

import types

import gast

from ..errors import SrcgradError
from ..source import FunctionSource, compile_definition, get_source, register_source
from . import astutil as A
from .context import Context
from .resolve import known_value, static_value

# options of grad/value_and_grad/elementwise_grad that only choose which gradient is made
# (verbose prints, jit compiles, checkpoint changes how: those calls stay as written)
_OPTIONS = frozenset({"wrt", "argnums", "has_aux", "preserve_result", "holomorphic"})


def fold_gradient_calls(tree: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    for node in gast.walk(tree):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Call):
            made = _made_gradient(node.func, ctx)
            if made is not None:
                name = f"{made[1].__name__.replace('<lambda>', 'lambda')}_{made[2]}"
                node.func = A.located(A.load(ctx.helper(made[0], name)), node.func)
        elif A.called_attr(node, ctx.rt) == "apply" and len(node.args) == 3 and not node.keywords:
            if _pass_captures(node, ctx):
                _call_closed_twin(node, tree, ctx)
    tree = _BoundGradients(ctx).visit(tree)
    _refuse_bound_gradients(tree, ctx)
    return tree


class _BoundGradients(gast.NodeTransformer):
    """``grad(_rt.bind(f, (a,), {'x': x}))`` not called at once (stored, passed, returned)
    made to read ``_rt.bind(grad(_rt.stop_gradient(f), wrt=1), (a,), {'x': x})``: a function
    value carrying ``a`` and ``x`` like any bound one, whose calls pass them to the gradient
    (see the module's doc). It holds the values they had when it was made: exact for
    ``partial``, and for a closure whose captured variables are assigned once, which
    desugar checks where it binds them."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def visit_Call(self, node):
        self.generic_visit(node)
        if not (is_maker(node.func, self.ctx) and constant_options(node)
                and A.called_attr(node.args[0], self.ctx.rt) == "bind"):
            return node
        bound = node.args[0]
        if len(bound.args) != 3 or bound.keywords or not isinstance(bound.args[1], gast.Tuple) \
                or any(isinstance(e, gast.Starred) for e in bound.args[1].elts):
            return node
        fn, positional, captured = bound.args
        shift = len(positional.elts)
        keywords = [k for k in node.keywords if k.arg not in ("wrt", "argnums")]
        if shift:
            wrt = _shifted(_wrt_option(node), shift)
            keywords.append(gast.keyword(arg="wrt", value=_constant_node(wrt)))
            args = [A.call(A.attr(self.ctx.rt, "stop_gradient"), fn)]
        else:
            args = [A.call(A.attr(self.ctx.rt, "stop_gradient"), fn)] + node.args[1:]
            keywords = node.keywords
        made = A.located(gast.Call(func=node.func, args=args, keywords=keywords), node)
        return A.located(A.call(A.attr(self.ctx.rt, "bind"), made, positional, captured),
                         bound)


def _wrt_option(call: gast.Call):
    """The arguments ``call`` (a gradient maker's, constant options) differentiates."""
    if len(call.args) > 1:
        return _constant(call.args[1])
    for k in call.keywords:
        if k.arg in ("wrt", "argnums"):
            return _constant(k.value)
    return 0


def _shifted(wrt, shift: int):
    """Argument positions ``wrt`` counted past ``shift`` bound positional arguments
    (a parameter's name stays as it is)."""
    if isinstance(wrt, tuple):
        return tuple(_shifted(w, shift) for w in wrt)
    return wrt + shift if isinstance(wrt, int) else wrt


def _constant_node(value):
    if isinstance(value, tuple):
        return gast.Tuple(elts=[_constant_node(v) for v in value], ctx=gast.Load())
    return A.const(value)


def _pass_captures(apply: gast.Call, ctx: Context) -> bool:
    """``_rt.apply(grad(_rt.bind(f, (), {'x': x})), args, {...})`` made to read
    ``_rt.apply(grad(_rt.stop_gradient(f)), args, {..., 'x': x})`` (see the module's doc)."""
    made, _, kwargs = apply.args
    if not (isinstance(made, gast.Call) and made.args and is_maker(made.func, ctx)
            and A.called_attr(made.args[0], ctx.rt) == "bind"):
        return False
    bound = made.args[0]
    if len(bound.args) != 3 or bound.keywords:
        return False
    fn, positional, captured = bound.args
    if not (isinstance(positional, gast.Tuple) and not positional.elts
            and _constant_keys(captured) and _constant_keys(kwargs)):
        return False
    if {k.value for k in captured.keys} & {k.value for k in kwargs.keys}:
        return False  # (a keyword named like a captured variable: the call raises, as written)
    made.args[0] = A.located(A.call(A.attr(ctx.rt, "stop_gradient"), fn), bound)
    kwargs.keys += captured.keys
    kwargs.values += captured.values
    return True


def _call_closed_twin(apply: gast.Call, tree: gast.FunctionDef, ctx: Context) -> None:
    """``_rt.apply(grad(_rt.stop_gradient(inner)), (c,), {'x': x})`` made to read
    ``inner_grad(c, x=x)`` when ``inner`` reads nothing of the enclosing function but those
    keywords: ``inner_grad`` is the gradient of ``inner``'s twin, the same definition compiled
    once at module level taking ``x`` as a keyword-only parameter, so that the call is of a
    known function (differentiated at any order, not twice at most at run time)."""
    made, args, kwargs = apply.args
    if ctx.own_code or not (isinstance(args, gast.Tuple) and constant_options(made)) \
            or any(isinstance(a, gast.Starred) for a in args.elts):
        return
    fn = made.args[0].args[0]
    src = get_source(ctx.fn)
    node = _definition(fn, tree, src)
    if node is None:
        return
    found = _closed_twin(node, [k.value for k in kwargs.keys], ctx, src)
    if found is None:
        return
    twin, others = found
    values = _names_at_call(others, node, tree)
    if values is None:
        return
    try:
        maker = static_value(made.func, ctx)
        gradient = maker(twin, *[_constant(a) for a in made.args[1:]],
                         **{k.arg: _constant(k.value) for k in made.keywords})
    except (SrcgradError, KeyError, TypeError, ValueError):
        return
    if getattr(gradient, "__srcgrad_grad__", None) is None:
        return
    apply.func = A.located(A.load(ctx.helper(gradient, f"{node.name}_{maker.__name__}")),
                           apply)
    apply.args = list(args.elts)
    # the other locals it reads, passed as Python's closure would read them: at this call
    apply.keywords = [gast.keyword(arg=k.value, value=v)
                      for k, v in zip(kwargs.keys, kwargs.values)] + [
        gast.keyword(arg=k, value=A.located(A.load(v), apply)) for k, v in zip(others, values)]


def _names_at_call(others: list, node: gast.FunctionDef, tree: gast.FunctionDef):
    """The names ``others`` (as the user's source spells them) have in ``tree`` now, found
    by the positions of their reads in ``node`` (a lowered comprehension renamed its
    variable: ``i`` is ``_i``); None when one is not found there, or read under two names."""
    now = {(n.lineno, n.col_offset): n.id for n in gast.walk(tree)
           if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
           and getattr(n, "lineno", None) is not None}
    values = []
    for k in others:
        names = {now.get((n.lineno, n.col_offset)) for n in gast.walk(node)
                 if isinstance(n, gast.Name) and n.id == k and isinstance(n.ctx, gast.Load)}
        if len(names) != 1 or None in names:
            return None
        values.append(names.pop())
    return values


def _definition(fn, tree: gast.FunctionDef, src: FunctionSource):
    """The definition ``fn`` (a name, or a lambda written at the call) stands for in the
    user's source, as a ``def``: a nested ``def`` not assigned otherwise, a lambda assigned
    to a name once (``g = lambda y: ...``), or the lambda itself; None otherwise."""
    if isinstance(fn, gast.Lambda):
        lams = [n for n in gast.walk(src.tree) if isinstance(n, gast.Lambda)
                and (n.lineno, n.col_offset) == (getattr(fn, "lineno", None),
                                                 getattr(fn, "col_offset", None))]
        return _lambda_as_def(lams[0], "lambda") if len(lams) == 1 else None
    if not isinstance(fn, gast.Name):
        return None
    stores = [n for n in gast.walk(src.tree) if isinstance(n, gast.Name)
              and isinstance(n.ctx, gast.Store) and n.id == fn.id]
    defs = [c for n in A.own_nodes(src.tree) for c in gast.iter_child_nodes(n)
            if isinstance(c, gast.FunctionDef) and c.name == fn.id]
    if not stores and len(defs) == 1 and fn.id not in A.names_written(tree):
        return defs[0]
    lams = [n.value for n in A.own_nodes(src.tree) if isinstance(n, gast.Assign)
            and isinstance(n.value, gast.Lambda) and len(n.targets) == 1
            and isinstance(n.targets[0], gast.Name) and n.targets[0].id == fn.id]
    if len(stores) == 1 and not defs and len(lams) == 1:
        return _lambda_as_def(lams[0], fn.id)
    return None


def _lambda_as_def(lam: gast.Lambda, name: str) -> gast.FunctionDef:
    ret = A.located(gast.Return(value=lam.body), lam.body)
    return A.located(A.function_def(name, lam.args, [ret]), lam)


def _closed_twin(node: gast.FunctionDef, keywords: list, ctx: Context, src: FunctionSource):
    """``(twin, others)``: the nested definition ``node`` of ``ctx.fn``, as the user wrote it
    plus keyword-only parameters ``keywords`` (the captured variables desugar lifted, and the
    call's other keywords) and ``others`` (the other locals of the enclosing function it
    reads, passed at the call), compiled at module level; None when it reads anything else
    of the enclosing function (a function, itself, a closure's cell), or is not plainly one
    definition."""
    name = node.name
    a = node.args
    if node.decorator_list or a.defaults or a.kw_defaults or a.vararg or a.kwarg or any(
            isinstance(n, (gast.Global, gast.Nonlocal)) for n in gast.walk(node)):
        return None
    own = {p.id for p in a.posonlyargs + a.args}
    lifted = [k for k in keywords if k not in own]
    if not set(lifted) <= ctx.local_names:
        return None  # (a keyword inner does not take: the call raises, as written)
    bound_inside = own | {n.id for n in gast.walk(node) if isinstance(n, gast.Name)
                          and isinstance(n.ctx, (gast.Store, gast.Param))}
    others = sorted({n.id for n in gast.walk(node) if isinstance(n, gast.Name)
                     and isinstance(n.ctx, gast.Load)} - bound_inside - set(lifted)
                    & ctx.local_names)
    functions = {n.name for n in gast.walk(src.tree) if isinstance(n, gast.FunctionDef)} | {
        t.id for n in gast.walk(src.tree) if isinstance(n, gast.Assign)
        and isinstance(n.value, gast.Lambda) for t in n.targets if isinstance(t, gast.Name)}
    if (set(lifted) | set(others)) & (functions | {name}):
        return None  # (a function desugar lifted too: called in the twin without its keywords)
    node = A.deepcopy(node)
    a = node.args
    for k in lifted + others:
        a.kwonlyargs.append(gast.Name(id=k, ctx=gast.Param(), annotation=None,
                                      type_comment=None))
        a.kw_defaults.append(None)
    code = compile_definition(node, src)
    enclosing = set(getattr(getattr(ctx.fn, "__code__", None), "co_freevars", ()))
    if _global_names(code) & (ctx.local_names | set(ctx.closure) | enclosing):
        return None
    twin = types.FunctionType(code, ctx.globals, name)
    twin.__qualname__ = f"{ctx.fn.__qualname__}.<locals>.{name}"
    twin.__module__ = getattr(ctx.fn, "__module__", None)
    register_source(code, FunctionSource(node, src.filename, src.first_line, src.lines))
    return twin, others


def _global_names(code: types.CodeType) -> set[str]:
    """Names ``code`` (and the functions it defines) look up outside itself (and attribute
    names, which only make the answer cautious)."""
    return set(code.co_names).union(*[_global_names(c) for c in code.co_consts
                                      if isinstance(c, types.CodeType)])


def _refuse_bound_gradients(tree, ctx: Context) -> None:
    """A gradient made of a function value carrying differentiable values (a closure over
    them not called where the gradient is made, a ``functools.partial`` of them)."""
    for node in gast.walk(tree):
        if isinstance(node, gast.Call) and is_maker(node.func, ctx) and any(
                A.called_attr(a, ctx.rt) in ("bind", "bind_again")
                for a in node.args):
            ctx.problem(node, "a gradient of a function reading differentiable values of "
                              "its caller, made here but not called at once",
                        "Call the gradient where it is made (grad(inner)(y)), or pass those "
                        "values to the function as arguments.")


def is_maker(func, ctx: Context) -> bool:
    if not _static(func, ctx):
        return False
    return getattr(known_value(func, ctx), "__srcgrad_makes_gradient__", False)


def constant_options(call: gast.Call) -> bool:
    """Whether ``call`` (a gradient maker's) passes a function and constant options only."""
    if any(isinstance(a, gast.Starred) for a in call.args) or not call.args \
            or len(call.args) > 2 or any(k.arg not in _OPTIONS for k in call.keywords):
        return False
    try:
        [_constant(a) for a in call.args[1:]] + [_constant(k.value) for k in call.keywords]
    except ValueError:
        return False
    return True


def _constant_keys(node) -> bool:
    return isinstance(node, gast.Dict) and all(
        isinstance(k, gast.Constant) and isinstance(k.value, str) for k in node.keys)


def _made_gradient(call: gast.Call, ctx: Context):
    """``(gradient, f, maker name)`` for ``call`` making a gradient of a function known at
    transform time with constant options; None for any other call."""
    if any(isinstance(a, gast.Starred) for a in call.args) or not call.args \
            or len(call.args) > 2:
        return None
    if any(k.arg not in _OPTIONS for k in call.keywords):
        return None
    if not all(_static(n, ctx) for n in [call.func, call.args[0]]):
        return None
    try:
        maker = static_value(call.func, ctx)
        if not getattr(maker, "__srcgrad_makes_gradient__", False):
            return None
        f = static_value(call.args[0], ctx)
        if not isinstance(f, types.FunctionType):
            return None
        options = [_constant(a) for a in call.args[1:]]
        keywords = {k.arg: _constant(k.value) for k in call.keywords}
        made = maker(f, *options, **keywords)
    except (SrcgradError, KeyError, TypeError, ValueError):
        # not constant, or grad refuses it: then it refuses it at run time, as written
        return None
    if getattr(made, "__srcgrad_grad__", None) is None:
        return None  # (made some other way, e.g. for a function with *args)
    return made, f, maker.__name__


def _static(node, ctx: Context) -> bool:
    """Whether ``node`` is a name or attribute chain whose value is fixed for this build: not
    a local, and not a closure's cell, which differs between closures sharing a build (as
    resolve does; srcgrad's own generated code has one fixed set)."""
    root = node
    while isinstance(root, gast.Attribute):
        root = root.value
    if not isinstance(root, gast.Name) or root.id in ctx.local_names:
        return False
    return root.id not in ctx.closure or ctx.own_code or isinstance(
        ctx.closure[root.id], types.ModuleType)


def _constant(node):
    """The value of a constant option (a number, a name string, a tuple of those)."""
    if isinstance(node, gast.Constant):
        return node.value
    if isinstance(node, (gast.Tuple, gast.List)):
        return tuple(_constant(e) for e in node.elts)
    raise ValueError("not a constant")
