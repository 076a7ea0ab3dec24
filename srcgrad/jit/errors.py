"""Errors of compiled gradients: located at the user's line, numba's typing errors translated.

numba reports failures against the generated text (registered with linecache); each of its
``File "<srcgrad: ...>", line N`` references is mapped back to the user's file and line
through codegen's line table, and the common messages are restated with a hint.
"""
from __future__ import annotations

__all__ = ["JitUnsupportedError", "located_error", "translate", "untyped_argument",
           "argument_type", "run_time_refusal"]

import inspect
import linecache
import os
import re

from .. import codegen
from ..errors import UnsupportedFeatureError

_HINT = "use jit=False (interpreted), or jit='auto' to fall back to it with a warning"


class JitUnsupportedError(UnsupportedFeatureError):
    """What numba cannot compile in a gradient, located at the user's line."""


def location(ctx, node=None) -> str:
    """``file:line`` of a node of the generated tree (its line is the user's)."""
    src = ctx.src
    lineno = getattr(node, "lineno", None)
    return "{}:{}".format(*through_generated(
        src.filename, src.first_line + lineno - 1 if lineno else src.first_line))


def through_generated(filename: str, line: int) -> tuple[str, int]:
    """The user's ``(file, line)`` behind a line of generated text that was transformed
    again (the fused gradient a compiled hvp differentiates: second.py), else the same."""
    for _ in range(4):  # (a generated text maps to its source, once or twice)
        found = codegen.user_line(filename, line)
        if found is None:
            break
        filename, line = found[0], found[2]
    return filename, line


def located_error(what: str, ctx, node=None) -> JitUnsupportedError:
    """``file:line: <what> ...`` for a node of the generated tree (its line is the user's)."""
    return refusal(location(ctx, node), what, ctx.fn)


def refusal(line: str, what: str, fn) -> JitUnsupportedError:
    """``line: <what>, in compiled code of f(); <what to do>``."""
    return JitUnsupportedError(f"{line}: {what}, in compiled code of {fn.__qualname__}(); "
                               f"{_HINT}.")


_LOCATION = re.compile(r'File "([^"]+)", line (\d+)|Raised from (<srcgrad:[^>]*>) \((\d+)\)')

# numba's message (first line) -> what it means for the user's code
_TRANSLATIONS = [
    # srcgrad's own refusals from inside numba's typing (srcgrad/jit/runtime.py); those that
    # carry the interpreted sweeps' located message say where already
    (re.compile(r"(?:Error: |^)srcgrad: (?:\S+:\d+: )?([^\n]+)", re.M),
     lambda m: m.group(1).rstrip(".")),
    (re.compile(r"Cannot unify (.+?) and (.+?) for '([^']+)'"),
     lambda m: f"variable '{_variable(m.group(3))}' is {_type(m.group(1))} on one path and "
               f"{_type(m.group(2))} on another; numba needs one type per variable (make "
               f"both branches produce the same kind of value, e.g. float(...) or np.asarray"
               f"(...), and arrays of the same rank)"),
    (re.compile(r"Untyped global name '([^']+)'(?::.*?type (\S+))?"),
     lambda m: f"'{m.group(1)}' is not something numba can call or read in nopython mode "
               f"(decorate a helper with @numba.njit, or pass the value as an argument)"),
    (re.compile(r"No implementation of function (?:Function\()?(?:<[^>]*?(?:function|method)"
                r" )?'?([\w.]+)'?.*?found for signature:\s*\n?\s*>>> (.*)"),
     lambda m: f"numba has no compiled '{m.group(1)}' for arguments {m.group(2).strip()} "
               f"(an unsupported numpy function, keyword or argument type)"),
    (re.compile(r"Unknown attribute '([^']+)' of type ([^\n]+)"),
     lambda m: f"numba does not support '.{m.group(1)}' on {_type(m.group(2))}"),
    (re.compile(r"non-precise type (\w+)"),
     lambda m: "a value numba cannot type (a Python object, an empty or mixed list, a dict, "
               "or a class instance); compiled gradients take floats, ints and numpy arrays"),
    (re.compile(r"format spec in f-strings not supported"),
     lambda m: "numba does not compile f-strings with a format spec ({x:.3f}); format "
               "outside the differentiated function"),
    (re.compile(r"Use of unsupported opcode \((\w+)\)"),
     lambda m: f"a construct numba does not compile (opcode {m.group(1)})"),
    (re.compile(r"Use of unknown opcode '?(\w+)'?"),
     lambda m: f"a construct numba does not compile (opcode {m.group(1)})"),
]


def _variable(name: str) -> str:
    name = name.split(".")[0]
    if name.startswith("$") or name.startswith("_t"):
        return "(an intermediate value)"
    return name


def _type(numba_type: str) -> str:
    t = numba_type.strip()
    if t.startswith("array("):
        m = re.match(r"array\((\w+), (\d+)d", t)
        return f"a {m.group(2)}-d {m.group(1)} array" if m else "an array"
    if t in ("float64", "float32", "int64", "int32", "bool", "complex128"):
        return f"a {t}"
    if t == "none":
        return "None"
    if t.startswith("OptionalType(") or t.startswith("Optional("):
        return f"{_type(t[t.index('(') + 1:-1])} or None"
    if t.startswith("reflected list") or t.startswith("list("):
        return "a list"
    if t.startswith("UniTuple") or t.startswith("Tuple"):
        return "a tuple"
    return t


def _user_locations(message: str) -> list[tuple[str, int]]:
    """``(file, line)`` of each reference in ``message`` to a line of srcgrad's generated
    text that maps back to source code, innermost first."""
    out = []
    for groups in _LOCATION.findall(message):
        filename, lineno = (groups[0], groups[1]) if groups[0] else (groups[2], groups[3])
        found = codegen.user_line(filename, int(lineno))
        if found is None:
            for name in codegen.generated_filenames():
                if name.endswith(filename) or filename.endswith(name.strip("<>")):
                    found = codegen.user_line(name, int(lineno))
                    break
        if found is not None:
            out.append(through_generated(found[0], found[2]))
    return out


_SRCGRAD = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_location(found: list[tuple[str, int]]) -> tuple[str | None, str]:
    """``file:line`` of the first of ``found`` in the user's code (else the first), and a
    note naming srcgrad's own line where the failure is in srcgrad's code differentiated
    again (a rule's helper: its line alone told the user little)."""
    if not found:
        return None, ""
    ours = [os.path.abspath(f).startswith(_SRCGRAD) for f, _ in found]
    first = "{}:{}".format(*found[0])
    if not ours[0] or all(ours):
        return first, ""
    user = found[ours.index(False)]
    return "{}:{}".format(*user), f" (at {first}, srcgrad's code differentiated again)"


def _lowered_at(exc: Exception) -> str:
    """``File "...", line N`` of each statement numba was typing or lowering (innermost
    first) when ``exc``, one of Python's own exceptions, escaped numba unwrapped, with no
    location in its message: the traceback's frames holding a numba IR statement (``inst``)
    or location (``loc``). The innermost may be numba's own code made from a string or a
    helper of srcgrad's; ``_user_location`` takes the first that maps to the user's line."""
    found = []
    tb = exc.__traceback__
    while tb is not None:
        local = tb.tb_frame.f_locals
        for loc in (getattr(local.get("inst"), "loc", None), local.get("loc")):
            if type(loc).__name__ == "Loc" and getattr(loc, "filename", None) \
                    and getattr(loc, "line", None):
                found.append(f'File "{loc.filename}", line {loc.line}')
        tb = tb.tb_next
    return "\n".join(reversed(found))


def translate(exc: Exception, fn) -> JitUnsupportedError:
    """A located, readable error for numba's compile error ``exc`` on ``fn``'s gradient."""
    message = str(exc)
    where, note = _user_location(_user_locations(message)
                                 or _user_locations(_lowered_at(exc)))
    what = None
    for pattern, explain in _TRANSLATIONS:
        m = pattern.search(message)
        if m:
            what = explain(m)
            break
    if what is None:
        lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
        first = next((ln for ln in lines if not ln.startswith("Failed in")), "")
        what = f"numba cannot compile this: {first[:300]}"
    prefix = f"{where}: " if where else ""
    error = JitUnsupportedError(f"{prefix}{what}{note}, in compiled code of "
                                f"{getattr(fn, '__qualname__', fn)}(); {_HINT}.")
    error.numba_message = message
    return error


def argument_type(value):
    """numba's type of the argument ``value``; ValueError where numba cannot pass it to
    compiled code: numba cannot type it, or it is a list whose items differ in type (numba
    types a list by its first item, then refuses to unbox the others)."""
    import numba
    if type(value) is list and len(value) > 1:
        first = type(value[0])
        # (items of one Python number type have one numba type: no typeof per item, which
        # would double the cost of a call taking a list of 100 floats)
        if not (first in _NUMBERS and all(type(item) is first for item in value)):
            kinds = {argument_type(item) for item in value}
            if len(kinds) > 1:
                raise ValueError(f"a list mixing {', '.join(sorted(map(str, kinds)))}")
    return numba.typeof(value)


_NUMBERS = (float, int, bool, complex)


def untyped_argument(fn, args: tuple, offset: int = 0) -> JitUnsupportedError | None:
    """The refusal naming the first of ``args`` numba cannot type (an instance of a user's
    class, a dict, a string in a list...), at ``fn``'s definition, or None when numba types
    them all. ``offset``: how many values come before ``fn``'s parameters in ``args``
    (a jvp's tangents)."""
    for i, value in enumerate(args):
        try:
            argument_type(value)
            continue
        except (ValueError, TypeError):
            pass
        params = list(inspect.signature(fn).parameters)
        k = i - offset
        name = f"argument '{params[k]}'" if 0 <= k < len(params) else f"argument {i + 1}"
        kind = type(value)
        what = kind.__qualname__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__}"
        code = getattr(fn, "__code__", None)
        try:
            line = f"{inspect.getsourcefile(fn)}:{code.co_firstlineno}: " if code else ""
        except TypeError:
            line = ""
        return JitUnsupportedError(
            f"{line}{name} of {fn.__qualname__}() is a {what}, which numba cannot type; "
            f"compiled gradients take floats, ints, numpy arrays and tuples or lists of "
            f"them, in compiled code of {fn.__qualname__}(); {_HINT}.")
    return None


# numba's NotImplementedErrors raised by compiled code while it runs (not at compile time;
# numba/np/arrayobj.py, numba/cpython/listobj.py) -> (the text of the operation in the
# compiled code, what it means). Only these: a NotImplementedError the user's own code
# raises (compiled too) is the user's, and passes through.
_RUN_TIME = {
    "incompatible shape for array":
        ("reshape(", "numba reshapes without copying only, and this array's layout (a "
                     "transpose, a strided slice) needs a copy, which numpy makes"),
    "unsupported del list[start:stop:step] with step != 1":
        ("del ", "numba deletes list slices with a step of 1 only"),
}


def run_time_refusal(exc: Exception, fn, compiled) -> JitUnsupportedError | None:
    """The located refusal for numba's NotImplementedError ``exc`` raised while the
    compiled code ``compiled`` (build.Compiled) of ``fn``'s gradient ran, or None for any
    other exception. numba's run-time errors carry no location: the user's lines of the
    compiled statements that make that operation are named (one of them raised); where the
    compiled code makes no such operation, the user's code raised it: None."""
    if not isinstance(exc, NotImplementedError) or not exc.args:
        return None
    found = _RUN_TIME.get(str(exc.args[0]))
    if found is None:
        return None
    token, meaning = found
    lines = []
    for part in _parts(compiled):
        for lineno, text in enumerate(linecache.getlines(part.filename), 1):
            code = text.split("#", 1)[0]
            if token in code:
                user = codegen.user_line(part.filename, lineno)
                if user is not None:
                    where = "{}:{}".format(*through_generated(user[0], user[2]))
                    if where not in lines:
                        lines.append(where)
    if not lines:  # (no such operation compiled: the user's code raised it)
        return None
    where = f"{lines[0]}: "
    also = f" (the same operation at {', '.join(lines[1:])} may be the one)" \
        if len(lines) > 1 else ""
    error = JitUnsupportedError(
        f"{where}numba raised NotImplementedError('{exc.args[0]}') while the compiled code "
        f"ran: {meaning}{also}, in compiled code of {getattr(fn, '__qualname__', fn)}(); "
        f"{_HINT}.")
    error.numba_message = str(exc)
    return error


def _parts(compiled) -> list:
    """``compiled`` and the Compiled of each callee in it, depth first."""
    out, todo = [], [compiled]
    while todo:
        part = todo.pop()
        out.append(part)
        todo.extend(getattr(part, "parts", ()))
    return out
