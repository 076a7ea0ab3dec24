"""Tree to text and text to function: emission with astor, comments, in-memory compilation.

Generated code is registered with ``linecache`` under a readable pseudo-filename
(``<srcgrad: f adjoint #1>``) so tracebacks and ``pdb`` show it; nothing touches the disk.
"""
from __future__ import annotations

__all__ = ["to_source", "compile_source", "COMMENT_PREFIX"]

import ast
import itertools
import linecache
import re
from typing import Any

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


def compile_source(source: str, name: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Execute generated ``source`` in ``namespace`` under a linecache pseudo-filename.

    Returns the namespace; the filename is stored in it as ``__srcgrad_file__``.
    """
    filename = f"<srcgrad: {name} #{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec")
    exec(code, namespace)
    namespace["__srcgrad_file__"] = filename
    return namespace
