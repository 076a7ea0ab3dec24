"""Reading a function's source: real file and line offsets, lambdas, gast parsing."""
from __future__ import annotations

__all__ = ["FunctionSource", "get_source"]

import inspect
import textwrap
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


def get_source(fn) -> FunctionSource:
    """Parse ``fn``'s definition; lambdas become a one-statement ``def``."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise SourceUnavailableError(
            f"cannot read the source of {fn!r}: it is not a Python function. Register a "
            f"derivative rule for it with @srcgrad.rule.")
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise SourceUnavailableError(
            f"cannot read the source of {fn.__qualname__}() ({e}). Define it in a file, or in a "
            f"REPL that keeps source (IPython), or register a rule with @srcgrad.rule.") from None
    filename = inspect.getsourcefile(fn) or code.co_filename
    text = textwrap.dedent("".join(lines))
    if fn.__name__ == "<lambda>":
        tree = _lambda_def(fn, text)
    else:
        module = gast.parse(text)
        tree = module.body[0]
        if not isinstance(tree, gast.FunctionDef):
            raise SourceUnavailableError(f"{filename}:{first_line}: expected a def of "
                                         f"{fn.__qualname__}()")
        tree.decorator_list = []
    return FunctionSource(tree, filename, first_line, text.splitlines())


def _lambda_def(fn, text: str) -> gast.FunctionDef:
    """Find ``fn``'s lambda in its source lines and turn it into ``def <lambda>(...)``."""
    module = None
    candidate = text
    # The lines may hold an incomplete statement (a lambda inside a call's arguments);
    # drop trailing characters until what remains parses.
    while candidate:
        try:
            module = gast.parse(candidate)
            break
        except SyntaxError:
            try:
                module = gast.parse("(" + candidate.strip() + ")")
                break
            except SyntaxError:
                candidate = candidate[:-1]
    if module is None:
        raise SourceUnavailableError(f"cannot parse the source of lambda in "
                                     f"{fn.__code__.co_filename}")
    code = fn.__code__
    want = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    lambdas = [n for n in gast.walk(module) if isinstance(n, gast.Lambda)
               and [a.id for a in n.args.args + n.args.kwonlyargs] == want]
    if len(lambdas) != 1:
        raise SourceUnavailableError(
            f"{code.co_filename}:{code.co_firstlineno}: cannot tell which lambda on this line "
            f"is being differentiated ({len(lambdas)} candidates); give it a def.")
    lam = lambdas[0]
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam.body)
    fdef = gast.FunctionDef(name="_lambda", args=lam.args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    gast.copy_location(fdef, lam)
    return fdef
