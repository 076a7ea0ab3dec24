"""Reading a function's source: real file and line offsets, lambdas, gast parsing."""
from __future__ import annotations

__all__ = ["FunctionSource", "get_source"]

import ast
import copy
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass

import gast

from .errors import SourceUnavailableError


@dataclass
class FunctionSource:
    """A user function's definition as a gast ``FunctionDef`` plus where it came from."""

    tree: gast.FunctionDef
    filename: str
    first_line: int  # line in ``filename`` of the tree's line 1
    lines: list[str]  # the (dedented) source lines, tree line 1 first

    def real_line(self, node) -> int:
        return self.first_line + getattr(node, "lineno", 1) - 1

    def text_of(self, node) -> str:
        """The user's source line of ``node``, stripped."""
        i = getattr(node, "lineno", 1) - 1
        return self.lines[i].strip() if 0 <= i < len(self.lines) else ""


# definitions srcgrad compiled itself from a user's tree (adapters.py's fixed-arity twins of
# functions with *args/**kwargs), by code object: their text in the user's file differs
_REGISTERED: dict = {}


def register_source(code, source: FunctionSource) -> None:
    """Make ``get_source`` of functions with ``code`` return (a copy of) ``source``."""
    _REGISTERED[code] = source


def compile_definition(node: gast.FunctionDef, src: FunctionSource) -> types.CodeType:
    """The code of ``node`` (a def from ``src``'s tree) compiled as a module-level function,
    its lines those of the user's file."""
    module = gast.gast_to_ast(gast.Module(body=[copy.deepcopy(node)], type_ignores=[]))
    for n in ast.walk(module):
        if getattr(n, "lineno", None) is not None:
            n.lineno += src.first_line - 1
            if getattr(n, "end_lineno", None) is not None:
                n.end_lineno += src.first_line - 1
    ast.fix_missing_locations(module)
    code = compile(module, src.filename, "exec")
    return next(c for c in code.co_consts if isinstance(c, types.CodeType))


def get_source(fn) -> FunctionSource:
    """Parse ``fn``'s definition; lambdas become a one-statement ``def``."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise SourceUnavailableError(
            f"cannot read the source of {fn!r}: it is not a Python function. Register a "
            f"derivative rule for it with @srcgrad.rule.")
    known = _REGISTERED.get(code)
    if known is not None:
        return FunctionSource(copy.deepcopy(known.tree), known.filename, known.first_line,
                              known.lines)
    try:
        # the code object, not the function: inspect would follow a decorator's
        # __wrapped__ to the undecorated function, whose behaviour differs
        lines, first_line = inspect.getsourcelines(code)
    except (OSError, TypeError) as e:
        where = {"<string>": "in 'python -c' code", "<stdin>": "in code piped to python"}.get(
            code.co_filename)
        if where is not None:  # Python keeps no source there (before 3.13's REPL)
            raise SourceUnavailableError(
                f"cannot read the source of {fn.__qualname__}(): it was defined {where}, "
                f"whose text Python does not keep. srcgrad reads source from a .py file "
                f"(python file.py), from IPython or Jupyter (they keep every cell), or from "
                f"the interactive REPL of Python 3.13+; or register a rule with "
                f"@srcgrad.rule.") from None
        raise SourceUnavailableError(
            f"cannot read the source of {fn.__qualname__}() ({e}). Define it in a file, or in a "
            f"REPL that keeps source (IPython), or register a rule with @srcgrad.rule.") from None
    filename = inspect.getsourcefile(code) or code.co_filename
    text = textwrap.dedent("".join(lines))
    if fn.__name__ == "<lambda>":
        tree = _lambda_def(fn, text)
    else:
        module = gast.parse(text)
        tree = module.body[0]
        if isinstance(tree, gast.AsyncFunctionDef):
            # validation reports it with the user's line, like every unsupported construct
            tree = gast.FunctionDef(name=tree.name, args=tree.args,
                                    body=[gast.copy_location(gast.AsyncFunctionDef(
                                        name=tree.name, args=tree.args, body=tree.body,
                                        decorator_list=[], returns=None, type_comment=None,
                                        type_params=[]), tree)],
                                    decorator_list=[], returns=None, type_comment=None,
                                    type_params=[])
            gast.copy_location(tree, module.body[0])
        if not isinstance(tree, gast.FunctionDef):
            raise SourceUnavailableError(f"{filename}:{first_line}: expected a def of "
                                         f"{fn.__qualname__}()")
        tree.decorator_list = []
    return FunctionSource(tree, filename, first_line, text.splitlines())


def _lambda_def(fn, text: str) -> gast.FunctionDef:
    """Find ``fn``'s lambda in its source lines and turn it into ``def _lambda(...)``.

    The lines may hold any statement around the lambda (a call's arguments, a dict value),
    so each ``lambda`` keyword is tried as the start of an expression, trimmed from the end
    until it parses.
    """
    code = fn.__code__
    want = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = []
    for start in [i for i in range(len(text)) if text.startswith("lambda", i)]:
        candidate = text[start:]
        while candidate:
            try:
                node = gast.parse("(" + candidate + ")", mode="eval").body
            except SyntaxError:
                node = None
            if not isinstance(node, gast.Lambda):  # not yet just the lambda: trim more
                candidate = candidate[:-1]
                continue
            if [a.id for a in node.args.args + node.args.kwonlyargs] == want:
                line_start = text.rfind("\n", 0, start) + 1
                body_col = None if node.body.lineno != 1 else \
                    start - line_start + node.body.col_offset - 1  # (the "(" added above)
                _shift_lines(node, text[:start].count("\n"))
                found.append((node, body_col))
            break
    if len(found) > 1:  # two lambdas with the same parameters on one line: the code's columns
        found = [f for f in found if f[1] is not None and f[1] == _body_column(code, text)]
    if len(found) != 1:
        raise SourceUnavailableError(
            f"{code.co_filename}:{code.co_firstlineno}: cannot tell which lambda on this line "
            f"is being differentiated ({len(found)} candidates); give it a def.")
    lam = found[0][0]
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam.body)
    fdef = gast.FunctionDef(name="_lambda", args=lam.args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    gast.copy_location(fdef, lam)
    return fdef


def _body_column(code, text: str) -> int | None:
    """The column, in the dedented ``text``, where the lambda's body starts: the first
    column its instructions come from on its first line (Python 3.11+ records columns)."""
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return None
    cols = [col for line, _, col, end in positions()  # ((0, 0): RESUME and the like)
            if line == code.co_firstlineno and col is not None and (col, end) != (0, 0)]
    original = linecache.getline(code.co_filename, code.co_firstlineno)
    first = text.splitlines()[0] if text else ""
    if not cols or not original:
        return None
    dedented_by = (len(original) - len(original.lstrip())) - (len(first) - len(first.lstrip()))
    return min(cols) - dedented_by


def _shift_lines(node, offset: int) -> None:
    """Line numbers of a snippet parsed on its own, moved to where it stands in the text."""
    for n in gast.walk(node):
        if getattr(n, "lineno", None) is not None:
            n.lineno += offset
            if getattr(n, "end_lineno", None) is not None:
                n.end_lineno += offset
