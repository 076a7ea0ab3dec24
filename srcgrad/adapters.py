"""Fixed-arity adapters for calls whose shape is known only at run time.

Differentiated code reaches a call through ``runtime.call_fwd`` (and its forward-mode and
second-order kin) when the callee is a value. Two kinds of call have no fixed arity in the
source, and this module turns each into a call of a small generated function that has one:

* ``runtime.apply(f, args, kwargs)`` (``f(*xs, **d)``, or a call of a function value that
  may be a ``runtime.Bound``): an adapter ``(f, args, kwargs)`` that indexes ``args`` and
  ``kwargs`` (and the parts of ``f`` when it is a ``Bound``) and calls the function inside,
  so gradients flow to the tuple, the dict and the bound values like to any container;
* a function with ``*args``/``**kwargs`` parameters called with ``n`` positional arguments
  and some keywords: an adapter with exactly those parameters calling the function's
  *twin*, the same definition compiled with the starred parameters as plain keyword-only
  ones (``def cm(weights, *, args)``), which the transformer differentiates like any
  function.

Adapters are ordinary Python source, so every mode and order of differentiation goes through
them unchanged. Each is built once per call shape.
"""
from __future__ import annotations

__all__ = ["route", "twin_of", "instance_call", "receiver_method", "record_adapter",
           "constructor_adapter"]

import ast
import copy
import inspect
import keyword
import types
import weakref

import gast

from . import runtime
from .codegen import compile_source
from .errors import UnsupportedFeatureError
from .rules import lookup
from .vspace import space_of
from .source import FunctionSource, get_source, register_source

_STARRED = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_APPLY: dict = {}  # call shape -> adapter
_DIRECT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # func -> {shape: adapter}
_TWINS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # func -> twin
_RECORDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # namedtuple -> adapter


def route(fn, args, kwargs):
    """The function to run in place of ``fn`` for ``fn(*args, **kwargs)`` (``fn`` itself
    unless it is ``runtime.apply`` or has starred parameters)."""
    if fn is runtime.apply:
        return _apply_adapter(args[0], len(args[1]), tuple(args[2]))
    if runtime.is_record_class(fn):
        return record_adapter(fn)
    if runtime.constructed_class(fn):
        return constructor_adapter(fn)
    for_call = getattr(fn, "__srcgrad_starred__", None)
    if for_call is not None:  # grad of a function with *args: its form for these arguments
        return for_call(args, kwargs)
    if type(fn) is types.FunctionType and has_starred_parameters(fn):
        return _direct_adapter(fn, len(args), tuple(kwargs))
    return fn


def has_starred_parameters(fn) -> bool:
    """A user's function with ``*args``/``**kwargs`` (srcgrad's own wrappers, such as a
    ``grad(f)``, have their own way of being differentiated)."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    module = getattr(fn, "__module__", None) or ""
    # (rule vjps such as atleast_vjp(g, ans, *arys) are plain Python like a user's)
    return code is not None and bool(code.co_flags & _STARRED) \
        and (not module.startswith("srcgrad") or module.startswith("srcgrad.rules")) \
        and not hasattr(fn, "__srcgrad_grad__") and lookup(fn) is None  # (a ruled wrapper:
    # scipy's functions behind a *args batching decorator are called through their rule)


# -- apply(f, args, kwargs) ---------------------------------------------------------------
def _callee_parts(expr: str, f):
    """The innermost function of ``f`` (unwrapping ``Bound``s) as an expression, with the
    positional and keyword arguments the ``Bound``s add, and the shape they have."""
    if isinstance(f, runtime.Bound):
        fn, positional, keywords, shape = _callee_parts(f"{expr}[0]", f[0])
        positional = positional + [f"{expr}[1][{i}]" for i in range(len(f[1]))]
        keywords = {**keywords, **{k: f"{expr}[2][{k!r}]" for k in f[2]}}
        return fn, positional, keywords, (shape, len(f[1]), tuple(f[2]))
    return expr, [], {}, None


def instance_call(f):
    """``type(f).__call__`` for a called object whose class defines ``__call__`` in Python
    (or registered a vector space, vspace.py): called with the object as its first argument,
    as a method call ``m.__call__(x)`` is, so that the object gets its derivative (the
    rule's, or the method's own). Bound to the object instead, its attributes were constants
    of the call: ``m(x)`` gave ``w`` no gradient where ``m.__call__(x)`` gave it. Else None."""
    if isinstance(f, (types.FunctionType, types.MethodType, type, runtime.Bound)):
        return None
    call = getattr(type(f), "__call__", None)
    if space_of(f) is not None or isinstance(call, types.FunctionType):
        return call
    return None


_INSTANCE_CALLS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # cls -> adapters


def _instance_adapter(call, f, n: int, keys: tuple):
    """``def apply_adapter(f, args, kwargs): return _call(f, args[0], .., k=kwargs['k'])``
    with ``_call`` the class's ``__call__`` (``instance_call``)."""
    shapes = _INSTANCE_CALLS.setdefault(type(f), {})
    adapter = shapes.get((n, keys))
    if adapter is None:
        _check_keywords(keys)
        passed = ["f"] + [f"args[{i}]" for i in range(n)] + [f"{k}=kwargs[{k!r}]" for k in keys]
        source = (f"def apply_adapter(f, args, kwargs):\n"
                  f"    return _call({', '.join(passed)})\n")
        adapter = shapes[(n, keys)] = _compiled(source, "apply adapter", "apply_adapter",
                                                {"_call": call})
    return adapter


def receiver_method(f) -> bool:
    """Whether ``f`` is an object bound to a Python method of its class (``m.apply``): called
    as ``f.__func__(f.__self__, ..)``, so that the receiver gets its derivative, which is the
    bound method's (runtime.is_receiver_method)."""
    return type(f) is types.MethodType and type(f.__func__) is types.FunctionType and \
        not isinstance(f.__self__, (type, types.ModuleType))


_METHOD_CALLS: dict = {}  # (n, keys) -> adapter


def _method_adapter(n: int, keys: tuple):
    adapter = _METHOD_CALLS.get((n, keys))
    if adapter is None:
        _check_keywords(keys)
        passed = ["f.__self__"] + [f"args[{i}]" for i in range(n)] + \
            [f"{k}=kwargs[{k!r}]" for k in keys]
        source = (f"def apply_adapter(f, args, kwargs):\n"
                  f"    method = f.__func__\n"
                  f"    return method({', '.join(passed)})\n")
        adapter = _METHOD_CALLS[(n, keys)] = _compiled(source, "apply adapter",
                                                       "apply_adapter", {})
    return adapter


def _apply_adapter(f, n: int, keys: tuple):
    call = instance_call(f)
    if call is not None:
        return _instance_adapter(call, f, n, keys)
    if receiver_method(f):
        return _method_adapter(n, keys)
    fn, positional, keywords, shape = _callee_parts("f", f)
    key = (shape, n, keys)
    adapter = _APPLY.get(key)
    if adapter is None:
        positional = positional + [f"args[{i}]" for i in range(n)]
        keywords = {**keywords, **{k: f"kwargs[{k!r}]" for k in keys}}
        _check_keywords(keywords)
        call = ", ".join(positional + [f"{k}={v}" for k, v in keywords.items()])
        source = (f"def apply_adapter(f, args, kwargs):\n"
                  f"    fn = {fn}\n"
                  f"    return fn({call})\n")
        adapter = _APPLY[key] = _compiled(source, "apply adapter", "apply_adapter", {})
    return adapter


def _check_keywords(names) -> None:
    for k in names:
        if not isinstance(k, str) or not k.isidentifier() or keyword.iskeyword(k):
            raise UnsupportedFeatureError(
                f"unpacking the keyword {k!r}, which is not a Python name, into a call in "
                f"differentiated code; use keys that are names, or pass a dict argument")


# -- functions with *args / **kwargs ------------------------------------------------------
def _direct_adapter(func, n: int, keys: tuple):
    shapes = _DIRECT.setdefault(func, {})
    adapter = shapes.get((n, keys))
    if adapter is None:
        adapter = shapes[(n, keys)] = _build_direct(func, n, keys)
    return adapter


def _build_direct(func, n: int, keys: tuple):
    """``def adapter(_p0, .., _pn, *, k..): return twin(<bound as func would bind them>)``."""
    _check_keywords(keys)
    code = func.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    positional = names[:code.co_argcount]
    posonly = positional[:code.co_posonlyargcount]
    i = code.co_argcount + code.co_kwonlyargcount
    vararg = code.co_varnames[i] if code.co_flags & inspect.CO_VARARGS else None
    kwarg = code.co_varnames[i + bool(vararg)] if code.co_flags & inspect.CO_VARKEYWORDS \
        else None
    params = [f"_p{j}" for j in range(n)]
    args = dict(zip(positional, params))
    extra = params[len(positional):]
    if extra and vararg is None:
        raise TypeError(f"{func.__qualname__}() takes {len(positional)} positional "
                        f"arguments but {n} were given")
    rest = {}
    for k in keys:
        if k in names and k not in args and k not in posonly:  # else it goes to **kwargs
            args[k] = k
        elif kwarg is not None:
            rest[k] = k
        else:
            raise TypeError(f"{func.__qualname__}() got an unexpected keyword argument {k!r}")
    if vararg is not None:
        args[vararg] = "(" + "".join(p + ", " for p in extra) + ")"
    if kwarg is not None:
        args[kwarg] = "{" + ", ".join(f"{k!r}: {k}" for k in rest) + "}"
    signature = ", ".join(params + (["*"] + list(keys) if keys else []))
    # positional-only parameters cannot be named in the call
    call = ", ".join(value if name in posonly else f"{name}={value}"
                     for name, value in args.items())
    source = f"def adapter({signature}):\n    return twin({call})\n"
    name = f"{func.__name__} adapter".replace("<lambda>", "lambda")
    return _compiled(source, name, "adapter", {"twin": twin_of(func)})


def record_adapter(cls):
    """``def record(a, b=...): return _rt.make_record(cls, (a, b))`` for a namedtuple class:
    its call with differentiable values, as a function srcgrad differentiates."""
    adapter = _RECORDS.get(cls)
    if adapter is None:
        defaults = cls._field_defaults
        params = ", ".join(f"{f}=_defaults[{f!r}]" if f in defaults else f
                           for f in cls._fields)
        items = "".join(f"{f}, " for f in cls._fields)
        source = f"def record({params}):\n    return _rt.make_record(_cls, ({items}))\n"
        adapter = _RECORDS[cls] = _compiled(source, f"{cls.__name__} record adapter",
                                            "record", {"_rt": runtime, "_cls": cls,
                                                       "_defaults": defaults})
    return adapter


def constructor_adapter(cls):
    """``def construct(a, b=...): self = _rt.new_instance(cls); init(self, a, b); return
    self`` for a class runtime.constructed_class accepts: its ``__init__`` is a helper storing
    into its parameter's attributes, which srcgrad takes back at the call."""
    adapter = _RECORDS.get(cls)
    if adapter is None:
        signature = inspect.signature(cls.__init__)
        params = list(signature.parameters.values())[1:]  # (without self)
        defaults = {p.name: p.default for p in params if p.default is not p.empty}
        text, star = [], False
        for p in params:
            if p.kind is p.KEYWORD_ONLY and not star:
                text.append("*")
                star = True
            text.append(f"{p.name}=_defaults[{p.name!r}]" if p.name in defaults else p.name)
        names = [p.name for p in params]
        if {"_rt", "_init", "_cls", "_defaults", "_post_init", "made"} & set(names):
            raise UnsupportedFeatureError(f"{cls.__name__}.__init__'s parameter names clash "
                                          f"with srcgrad's adapter (_rt, _cls, _init, "
                                          f"_post_init, made)")
        call = ", ".join(["self"] + [f"{n}={n}" for n in names])
        self_name = "self" if "self" not in names else "_self"
        call = call.replace("self", self_name, 1)
        init = f"    _init({call})\n"
        namespace = {"_rt": runtime, "_cls": cls, "_init": cls.__init__, "_defaults": defaults}
        if runtime.plain_dataclass_fields(cls, frozen=True, post_init=True) is not None:
            # its __init__ is dataclasses' generated text, which srcgrad cannot read: what it
            # does, a store of each field (run as plain Python, its stores went unseen: the
            # fields' gradients were silently zero), bypassing a frozen class's __setattr__
            # as it does, then __post_init__ (a helper changing self, taken back at the call)
            store = "object.__setattr__({0}, {1!r}, {1})" if runtime.is_frozen_dataclass(cls) \
                else "{0}.{1} = {1}"
            init = "".join(f"    {store.format(self_name, n)}\n" for n in names)
            if hasattr(cls, "__post_init__"):
                namespace["_post_init"] = cls.__post_init__
                init += f"    _post_init({self_name})\n"
        elif _generated_init(cls):
            raise UnsupportedFeatureError(
                f"calling the dataclass {cls.__name__} with differentiable values: its "
                f"__init__ is dataclasses' generated code (init-only, init=False or "
                f"default_factory fields), which srcgrad cannot read. Give the fields plain "
                f"defaults (set what a factory makes in __post_init__), or use a class with "
                f"its own __init__.")
        # (the object returned under another name: returned as it is, its cotangent, the
        # sweep's parameter, was rebound to __init__'s and deleted, which the sweep's own
        # transformation, for grad of grad, read after the deletion)
        source = (f"def construct({', '.join(text)}):\n"
                  f"    {self_name} = _rt.new_instance(_cls)\n"
                  f"{init}"
                  f"    made = {self_name}\n"
                  f"    return made\n")
        adapter = _RECORDS[cls] = _compiled(source, f"{cls.__name__} constructor adapter",
                                            "construct", namespace)
    return adapter


def _generated_init(cls) -> bool:
    """``cls.__init__`` is text dataclasses compiled (no source srcgrad can read)."""
    code = getattr(vars(cls).get("__init__"), "__code__", None)
    return code is not None and code.co_filename == "<string>"


def _compiled(source: str, title: str, name: str, namespace: dict):
    fn = compile_source(source, title, namespace)[name]
    fn.__srcgrad_adapter__ = True  # transforms/calls.py leaves its calls as they are
    return fn


def twin_of(func):
    """``func`` compiled with its ``*args``/``**kwargs`` parameters as required keyword-only
    ones (same globals, closure values, defaults; source and lines the user's own)."""
    twin = _TWINS.get(func)
    if twin is None:
        twin = _TWINS[func] = _build_twin(func)
    return twin


def _build_twin(func):
    src = get_source(func)
    tree = src.tree
    a = tree.args
    for starred in (a.vararg, a.kwarg):
        if starred is not None:
            a.kwonlyargs.append(gast.Name(id=starred.id, ctx=gast.Param(), annotation=None,
                                          type_comment=None))
            a.kw_defaults.append(None)
    if a.vararg is not None:  # a tuple, as the analyses can see: '+' concatenates it
        tree.body.insert(0, gast.copy_location(gast.Assign(
            targets=[gast.Name(id=a.vararg.id, ctx=gast.Store(), annotation=None,
                               type_comment=None)],
            value=gast.Call(func=gast.Name(id="tuple", ctx=gast.Load(), annotation=None,
                                           type_comment=None),
                            args=[gast.Name(id=a.vararg.id, ctx=gast.Load(), annotation=None,
                                            type_comment=None)], keywords=[]),
            type_comment=None), tree))
    a.vararg = a.kwarg = None
    for node in gast.walk(tree):  # annotations are not needed and may not resolve here
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Param):
            node.annotation = None
    tree.returns = None
    compiled = copy.deepcopy(tree)
    # defaults are the user's objects (set below), not expressions evaluated again
    compiled.args.defaults = [gast.Constant(value=None, kind=None) for _ in a.defaults]
    compiled.args.kw_defaults = [None if d is None else gast.Constant(value=None, kind=None)
                                 for d in a.kw_defaults]
    free = func.__code__.co_freevars
    maker = gast.FunctionDef(
        name="_make_twin", args=gast.arguments(
            args=[gast.Name(id=v, ctx=gast.Param(), annotation=None, type_comment=None)
                  for v in free], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
            kwarg=None, defaults=[]),
        body=[compiled, gast.Return(value=gast.Name(id=tree.name, ctx=gast.Load(),
                                                    annotation=None, type_comment=None))],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = gast.gast_to_ast(gast.Module(body=[maker], type_ignores=[]))
    for node in ast.walk(module):  # lines of the user's file
        if hasattr(node, "lineno") and getattr(node, "lineno", None) is not None:
            node.lineno += src.first_line - 1
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += src.first_line - 1
    ast.fix_missing_locations(module)
    code = compile(module, src.filename, "exec")
    make = types.FunctionType(next(c for c in code.co_consts if isinstance(c, types.CodeType)),
                              func.__globals__)
    cells = []
    for cell in func.__closure__ or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:
            cells.append(None)
    twin = make(*cells)
    twin.__defaults__ = func.__defaults__
    twin.__kwdefaults__ = dict(func.__kwdefaults__ or {})
    twin.__name__, twin.__qualname__ = func.__name__, func.__qualname__
    twin.__module__ = func.__module__
    register_source(twin.__code__, FunctionSource(tree, src.filename, src.first_line,
                                                  src.lines))
    return twin
