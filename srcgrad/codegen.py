"""Tree to text and text to function: emission with astor, comments, in-memory compilation.

Generated code is registered with ``linecache`` under a readable pseudo-filename
(``<srcgrad: f adjoint #1>``) so tracebacks and ``pdb`` show it; nothing touches the disk.
"""
from __future__ import annotations

__all__ = ["to_source", "compile_source", "COMMENT_PREFIX", "line_map", "UserLines",
           "user_line"]

import ast
import itertools
import linecache
import re
from typing import Any, NamedTuple

import astor
import gast

# Comments cannot live in an AST, so passes emit string-expression statements that start with
# this marker; ``to_source`` turns them into real ``#`` comments.
COMMENT_PREFIX = "#:"
_COMMENT_LINE = re.compile(r"^(\s*)(?:\"\"\"|'''|'|\")#:(.*?)(?:\"\"\"|'''|'|\")\s*$")

_counter = itertools.count(1)


def comment(text: str) -> gast.Expr:
    """A statement that ``to_source`` renders as ``# text``."""
    return gast.Expr(value=gast.Constant(value=COMMENT_PREFIX + " " + text, kind=None))


def to_source(tree: Any) -> str:
    """Readable Python source of a gast or ast tree, with comment markers turned to comments."""
    if isinstance(tree, gast.AST):
        tree = gast.gast_to_ast(tree)
    ast.fix_missing_locations(tree)
    text = astor.to_source(tree, indent_with="    ")
    lines = []
    for line in text.splitlines():
        m = _COMMENT_LINE.match(line)
        if m:
            body = m.group(2).replace("\\'", "'").replace('\\"', '"').replace("\\\\", "\\")
            lines.append(f"{m.group(1)}#{body}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


class UserLines(NamedTuple):
    """Where the lines of one generated file come from in the user's code."""

    filename: str
    function: str
    lines: dict  # generated line -> user line


# pseudo-filename -> UserLines, for tracebacks through generated code (see errors.relocate)
_USER_LINES: dict[str, UserLines] = {}


def _statements(tree) -> list:
    return [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not (
        isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str) and n.value.value.startswith(COMMENT_PREFIX))]


def line_map(tree: Any, source: str, real_line) -> dict[int, int]:
    """``{generated line: user line}`` for the statements of ``tree`` (as ``to_source``
    printed it into ``source``) that carry a position in the user's function; ``real_line``
    turns a node's line into the line in the user's file."""
    if isinstance(tree, gast.AST):
        tree = gast.gast_to_ast(tree)
    made, printed = _statements(tree), _statements(ast.parse(source))
    if len(made) != len(printed):
        return {}
    out = {}
    for a, b in zip(made, printed):
        if type(a) is type(b) and getattr(a, "lineno", None) is not None:
            out[b.lineno] = real_line(a)
    return out


def user_line(filename: str, lineno: int):
    """``(user file, function, user line)`` a generated line comes from, or None: the line
    of the nearest mapped statement at or above it."""
    found = _USER_LINES.get(filename)
    if found is None:
        return None
    mapped = [g for g in found.lines if g <= lineno]
    if not mapped:
        return None
    return found.filename, found.function, found.lines[max(mapped)]


def compile_source(source: str, name: str, namespace: dict[str, Any],
                   user_lines: UserLines | None = None) -> dict[str, Any]:
    """Execute generated ``source`` in ``namespace`` under a linecache pseudo-filename.

    Returns the namespace; the filename is stored in it as ``__srcgrad_file__``.
    """
    filename = f"<srcgrad: {name} #{next(_counter)}>"
    if user_lines is not None:
        _USER_LINES[filename] = user_lines
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec")
    exec(code, namespace)
    namespace["__srcgrad_file__"] = filename
    return namespace
