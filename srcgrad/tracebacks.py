"""Tracebacks through generated code that show the user's own lines.

An exception raised while generated code runs (a shape mismatch in the user's loop) gets,
just above each generated frame of its traceback, a frame at the user's file and line the
generated statement comes from (codegen keeps that map per compiled file), and a note
naming both. The generated frames stay visible below.
"""
from __future__ import annotations

__all__ = ["user_tracebacks", "relocated_traceback"]

import functools
import linecache
import sys
import types
from typing import Callable

from . import codegen


def user_tracebacks(entry: Callable) -> Callable:
    """Wrap a public entry point so that an exception raised inside generated code shows the
    user's own file and line: a frame at that line is put just above each generated frame
    of the traceback (which stays visible below it), and a note names it."""

    @functools.wraps(entry)
    def run(*args, **kwargs):
        try:
            return entry(*args, **kwargs)
        except Exception as e:
            tb = relocated_traceback(e)
            if tb is None:
                raise
            try:
                raise e.with_traceback(tb)
            finally:  # the traceback holds this frame: no cycle keeping the tapes alive
                del tb

    # what srcgrad differentiates when the wrapped function is transformed again (a pullback
    # under jvp): the entry's own source, not this wrapper's
    run.__srcgrad_entry__ = entry
    return run


def relocated_traceback(e: BaseException):
    """``e``'s traceback with a user frame above each generated frame, or None when no
    generated frame has a known user line; adds a note naming the innermost one."""
    entries, tb = [], e.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    if getattr(e, "_srcgrad_relocated", False):
        return None
    located = [(tb, _user_where(tb.tb_frame.f_code.co_filename, tb.tb_lineno))
               for tb in entries]
    if not any(where for _, where in located):
        return None
    new = None
    for tb, where in reversed(located):
        new = types.TracebackType(new, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
        if where is not None and not where[0].startswith("<srcgrad"):
            frame = _frame_at(*where)
            if frame is not None:
                # (no instruction offset: the caret line would point into the stand-in)
                new = types.TracebackType(new, frame, -1, where[2])
    inner = [(tb, w) for tb, w in located if w is not None
             and not w[0].startswith("<srcgrad")]
    if inner:
        tb, (filename, function, line) = inner[-1]
        generated = tb.tb_frame.f_code.co_filename
        text, generated_text = (_source_line(filename, line),
                                _source_line(generated, tb.tb_lineno))
        _add_note(e, f"srcgrad: raised at {filename}:{line} in {function}()"
                  + (f": {text}" if text else "")
                  + f"\n  (generated code: {generated}, line {tb.tb_lineno}"
                  + (f": {generated_text})" if generated_text else ")")
                  + _callers(inner[:-1], (filename, line)))
    try:
        e._srcgrad_relocated = True
    except AttributeError:
        pass
    return new


def _user_where(filename: str, line: int):
    """``codegen.user_line`` of a generated line, followed through generated code made from
    generated code (the sweeps of a gradient differentiated again map to the lines of the
    sweeps they differentiate) back to the user's own file when it gets there."""
    where = codegen.user_line(filename, line)
    for _ in range(_MAX_ORDERS):
        if where is None or not where[0].startswith("<srcgrad"):
            break
        deeper = codegen.user_line(where[0], where[2])
        if deeper is None:
            break
        where = deeper
    return where


_MAX_ORDERS = 32  # (a generated file maps to an older one: no cycle, but bound the walk)


def _callers(outer, innermost) -> str:
    """Lines naming the user lines that called the one raising, innermost first: a refusal
    inside a library function srcgrad differentiates (collections' ``_replace``, scipy's
    source) then names the user's call site too."""
    lines, seen = [], {innermost}
    for _, (filename, function, line) in reversed(outer):
        if (filename, line) in seen:
            continue
        seen.add((filename, line))
        text = _source_line(filename, line)
        lines.append(f"\n  called from {filename}:{line} in {function}()"
                     + (f": {text}" if text else ""))
    return "".join(lines)


def _add_note(e: BaseException, note: str) -> None:
    if hasattr(e, "add_note"):
        e.add_note(note)
    else:  # Python 3.10: keep the note where 3.11 keeps it; the backport prints it
        import exceptiongroup  # noqa: F401  (makes traceback show __notes__)
        try:
            e.__notes__ = [*getattr(e, "__notes__", []), note]
        except AttributeError:
            pass


_STAND_INS: dict = {}
_MAX_STAND_INS = 4096


def _frame_at(filename: str, function: str, line: int):
    """A frame of code in ``filename`` named ``function``, at ``line``: what a traceback entry
    needs to show the user's line. It is the frame of a suspended generator, kept here, so it
    refers to no caller (a finished frame would keep its callers, and their exceptions and
    tapes, alive)."""
    key = (filename, function, line)
    stand_in = _STAND_INS.get(key)
    if stand_in is None:
        if line < 1 or len(_STAND_INS) >= _MAX_STAND_INS:
            return None
        head = "\n" * (line - 2) + "def _stand_in():\n    yield\n" if line > 1 else \
            "def _stand_in(): yield\n"
        namespace: dict = {}
        exec(compile(head, filename, "exec"), namespace)
        make = namespace["_stand_in"]
        names = {"co_name": function}
        if sys.version_info >= (3, 11):  # code objects have a qualname since 3.11
            names["co_qualname"] = function
        make.__code__ = make.__code__.replace(**names)
        stand_in = make()
        next(stand_in)
        _STAND_INS[key] = stand_in
    return stand_in.gi_frame


def _source_line(filename: str, line: int) -> str:
    return linecache.getline(filename, line).strip()
