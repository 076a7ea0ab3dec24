"""Command line: ``srcgrad show path/to/file.py:function [--wrt x,y]``.

The ``srcgrad`` console script and ``python -m srcgrad`` both run ``main``.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import srcgrad


def _load_function(spec: str):
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise SystemExit(f"expected path/to/file.py:function, got {spec!r}")
    if not os.path.exists(path):
        raise SystemExit(f"no such file: {path}")
    module_name = os.path.splitext(os.path.basename(path))[0]
    spec_ = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec_)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    sys.modules[module_name] = module
    spec_.loader.exec_module(module)
    obj = module
    for part in name.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            names = sorted(n for n, v in vars(module).items()
                           if callable(v) and not n.startswith("_")
                           and getattr(v, "__module__", None) == module_name)
            raise SystemExit(f"error: {path} has no function '{name}' (its functions: "
                             f"{', '.join(names) or 'none'})") from None
    return obj


def _highlight(text: str) -> str:
    if not sys.stdout.isatty():
        return text
    try:
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return text
    return highlight(text, PythonLexer(), TerminalFormatter())


def _program_name() -> str:
    """How the user invoked us, for usage lines: the console script or the module."""
    if os.path.basename(sys.argv[0]) == "__main__.py":
        return "python -m srcgrad"
    return "srcgrad"


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    parser = argparse.ArgumentParser(prog=_program_name(),
                                     description="Show the adjoint srcgrad generates.")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print the generated gradient source of a function")
    show.add_argument("target", help="path/to/file.py:function")
    show.add_argument("--wrt", default="0",
                      help="comma-separated parameter names or indices (default: 0)")
    args = parser.parse_args(argv)
    fn = _load_function(args.target)
    items = [int(w) if w.strip().isdigit() else w.strip() for w in args.wrt.split(",")]
    wrt = items[0] if len(items) == 1 else tuple(items)
    try:
        text = srcgrad.source(srcgrad.grad(fn, wrt=wrt))
    except srcgrad.SrcgradError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(_highlight(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
