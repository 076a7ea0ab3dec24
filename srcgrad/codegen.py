"""Tree to text and text to function: emission with astor, comments, in-memory compilation.

Generated code is registered with ``linecache`` under a readable pseudo-filename
(``<srcgrad: f adjoint #1>``) so tracebacks and ``pdb`` show it; nothing touches the disk.

The passes build a factory ``def _make(_rt, helpers..., closure values...)`` returning the
generated functions. What is shown (``srcgrad.source``, linecache, tracebacks) is the text of
those functions alone, under a header naming what the factory binds; ``compile_factory``
compiles that very text as the factory's body, so the positions of the code that runs are
positions in the text shown.
"""
from __future__ import annotations

__all__ = ["to_source", "compile_source", "COMMENT_PREFIX", "line_map", "UserLines",
           "user_line", "generated_filenames", "Factory", "take_apart", "show", "compile_factory"]

import ast
import itertools
import linecache
import re
import sys
import warnings
from typing import Any, Callable, NamedTuple

import gast

from .errors import InternalError

# astor reads ast.Num and friends, deprecated since Python 3.8 (warning on 3.12+) and removed
# in 3.14: its warnings are ours to silence, and where it cannot run the standard library's
# ast.unparse prints the tree instead
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import astor
        from astor.code_gen import SourceGenerator as _AstorGenerator
    except Exception:  # (an astor that no longer imports on this Python)
        astor = None
        _AstorGenerator = object

# Comments cannot live in an AST, so passes emit string-expression statements that start with
# this marker; ``to_source`` turns them into real ``#`` comments.
COMMENT_PREFIX = "#:"
_COMMENT_LINE = re.compile(r"^(\s*)(?:\"\"\"|'''|'|\")#:(.*?)(?:\"\"\"|'''|'|\")\s*$")

_counter = itertools.count(1)


def comment(text: str) -> gast.Expr:
    """A statement that ``to_source`` renders as ``# text``."""
    return gast.Expr(value=gast.Constant(value=COMMENT_PREFIX + " " + text, kind=None))


class _Generator(_AstorGenerator):
    """astor's generator, keeping the parentheses of a one-element tuple: ``return (bx,)``
    rather than ``return bx,``."""

    def visit_Tuple(self, node):
        if len(node.elts) != 1:
            return super().visit_Tuple(node)
        with self.delimit(node) as delimiters:
            delimiters.discard = False
            self.comma_list(node.elts, True)


def _no_wrapping(fragments) -> str:
    """astor's ``pretty_source`` hook: the text as generated. astor's own pretty-printer
    breaks lines longer than 79 columns at odd places (``_rt.densify(bW2, W2\n )``);
    generated statements are one operation each, short enough unbroken."""
    return "".join(fragments)


def emit(tree: ast.AST) -> str:
    """Python source of an ``ast`` tree: astor, or ``ast.unparse`` where astor cannot run
    (a Python whose ``ast`` lacks the node classes astor reads)."""
    if astor is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                return astor.to_source(tree, indent_with="    ", pretty_source=_no_wrapping,
                                       source_generator_class=_Generator)
        except AttributeError:  # ast.Str and friends, gone in Python 3.14
            pass
    return ast.unparse(tree) + "\n"


def _as_ast(tree: Any) -> ast.AST:
    """A gast tree converted to ``ast`` (gast's classes derive from ``ast.AST`` too);
    an ``ast`` tree as it is."""
    return gast.gast_to_ast(tree) if type(tree).__module__.startswith("gast") else tree


def to_source(tree: Any) -> str:
    """Readable Python source of a gast or ast tree, with comment markers turned to comments."""
    tree = _as_ast(tree)
    ast.fix_missing_locations(tree)
    text = emit(tree)
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
    lines: dict  # generated line -> user line, or (file, function, line) of another file


# pseudo-filename -> UserLines, for tracebacks through generated code (see errors.relocate)
_USER_LINES: dict[str, UserLines] = {}


def generated_filenames() -> list[str]:
    """The pseudo-filenames of the generated files that map back to user code."""
    return list(_USER_LINES)


def _statements(tree) -> list:
    return [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not (
        isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str) and n.value.value.startswith(COMMENT_PREFIX))]


def line_map(tree: Any, source: str, real_line) -> dict[int, int]:
    """``{generated line: user line}`` for the statements of ``tree`` (as ``to_source``
    printed it into ``source``) that carry a position in the user's function; ``real_line``
    turns a node's line into the line in the user's file."""
    tree = _as_ast(tree)
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
    line = found.lines[max(mapped)]
    if isinstance(line, tuple):  # (a statement inlined from another generated file)
        return line
    return found.filename, found.function, line


def _register(source: str, name: str, user_lines: UserLines | None) -> str:
    """A fresh pseudo-filename for ``source``, registered with linecache."""
    filename = f"<srcgrad: {name} #{next(_counter)}>"
    if user_lines is not None:
        _USER_LINES[filename] = user_lines
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return filename


def compile_source(source: str, name: str, namespace: dict[str, Any],
                   user_lines: UserLines | None = None) -> dict[str, Any]:
    """Execute generated ``source`` in ``namespace`` under a linecache pseudo-filename.

    Returns the namespace; the filename is stored in it as ``__srcgrad_file__``.
    """
    filename = _register(source, name, user_lines)
    code = compile(source, filename, "exec")
    exec(code, namespace)
    namespace["__srcgrad_file__"] = filename
    return namespace


# -- the factory, and what is shown of it ------------------------------------------------------
class Factory(NamedTuple):
    """A generated module ``def _make(<params>): <functions>; return <returned>`` taken
    apart."""

    params: list[str]  # srcgrad.runtime's alias first, then helpers, then closure values
    functions: list  # the generated functions (ast FunctionDefs)
    returned: list[str]  # the names of the functions _make returns, in order


def take_apart(module: Any) -> Factory:
    """The parts of a generated ``_make`` module (gast or ast); a parameter named twice (the
    runtime's alias, also a closure variable of a generated function) is passed once."""
    module = _as_ast(module)
    make = module.body[0] if len(module.body) == 1 else None
    if not (isinstance(make, ast.FunctionDef) and make.name == "_make"
            and isinstance(make.body[-1], ast.Return)):
        raise InternalError("codegen", "the generated module is not one 'def _make'")
    params = list(dict.fromkeys(a.arg for a in make.args.args))
    value = make.body[-1].value
    returned = [e.id for e in (value.elts if isinstance(value, ast.Tuple) else [value])]
    return Factory(params, list(make.body[:-1]), returned)


def show(functions: list, header: list[str]) -> str:
    """The text shown for generated ``functions``: ``# header`` lines, then the functions,
    two blank lines apart."""
    texts = []
    for fn in functions:
        texts.append(to_source(ast.Module(body=[fn], type_ignores=[])).strip("\n") + "\n")
    head = "".join(f"# {line}\n".replace("# \n", "#\n") for line in header)
    return head + ("\n" if head else "") + "\n\n".join(texts)


def compile_factory(text: str, params: list[str], returned: list[str], name: str,
                    user_lines: UserLines | None = None) -> tuple[Callable, str]:
    """``(_make, filename)``: the factory whose body is ``text`` (the functions as shown),
    compiled from ``text`` itself so that line and column positions are those of the text
    registered with linecache under ``filename``."""
    filename = _register(text, name, user_lines)
    body = ast.parse(text, filename).body
    returns = ast.Return(value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in returned],
                                         ctx=ast.Load()))
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    extra = {"type_params": []} if sys.version_info >= (3, 12) else {}
    make = ast.FunctionDef(name="_make", args=args, body=body + [returns], decorator_list=[],
                           returns=None, type_comment=None, **extra)
    module = ast.fix_missing_locations(ast.Module(body=[make], type_ignores=[]))
    namespace: dict[str, Any] = {}
    exec(compile(module, filename, "exec"), namespace)
    return namespace["_make"], filename
