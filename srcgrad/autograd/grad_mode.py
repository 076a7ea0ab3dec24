"""Whether Tensor operations are recorded for differentiation (PyTorch's grad mode).

The flag is thread-local, as in PyTorch: a new thread starts with recording enabled.
``no_grad``, ``enable_grad`` and ``set_grad_enabled`` are context managers and decorators;
each restores the previous mode on exit, also when the block raises.
"""
from __future__ import annotations

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode"]

import functools
import inspect
import threading
from typing import Any, Callable


class _GradState(threading.local):
    enabled = True  # class default: every new thread starts with grad enabled


STATE = _GradState()
"""The thread-local mode. Hot paths read ``STATE.enabled`` directly."""


def is_grad_enabled() -> bool:
    """True when Tensor operations are being recorded."""
    return STATE.enabled


class _ModeContext:
    """Base of the grad-mode switches: context manager and function/generator decorator."""

    _mode: bool = True

    def __enter__(self) -> None:
        self._prev = STATE.enabled
        STATE.enabled = self._mode

    def __exit__(self, *exc: Any) -> None:
        STATE.enabled = self._prev

    def clone(self) -> "_ModeContext":
        return self.__class__()

    def __call__(self, func: Callable) -> Callable:
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, func: Callable) -> Callable:
        # The mode applies while the generator body runs, not while its consumer does.
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            gen = func(*args, **kwargs)
            value = None
            while True:
                with self.clone():
                    try:
                        item = gen.send(value)
                    except StopIteration as stop:
                        return stop.value
                value = yield item
        return wrapper


class no_grad(_ModeContext):
    """Disable recording inside a ``with`` block or a decorated function.

    Results computed inside have ``requires_grad=False`` even when their inputs require grad;
    in-place updates of leaves that require grad are allowed there.
    """

    _mode = False
    # what the source transformer looks for in `with no_grad():` (transforms/validate.py),
    # so that the transforms need not import the facade
    __srcgrad_stops_gradient__ = True

    def __init__(self, orig_func: Callable | None = None):
        pass

    def __new__(cls, orig_func: Callable | None = None):
        # ``@no_grad`` without parentheses works too, as in PyTorch.
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            return self(orig_func)
        return self


class enable_grad(_ModeContext):
    """Enable recording inside a ``with`` block or a decorated function (e.g. within no_grad)."""

    _mode = True


class set_grad_enabled(_ModeContext):
    """Set the mode now (as a function call), or for a ``with`` block (restored on exit)."""

    def __init__(self, mode: bool):
        self._prev = STATE.enabled
        self._mode = bool(mode)
        STATE.enabled = self._mode

    def __enter__(self) -> None:
        pass  # already set by the constructor

    def __exit__(self, *exc: Any) -> None:
        STATE.enabled = self._prev

    def clone(self) -> "set_grad_enabled":
        return self.__class__(self._mode)


class inference_mode(no_grad):
    """Same as ``no_grad`` in srcgrad (PyTorch adds a faster tensor kind; srcgrad has one)."""

    def __init__(self, mode: bool = True):
        self._mode = not mode

    def __new__(cls, mode: Any = True):
        self = object.__new__(cls)
        if callable(mode) and not isinstance(mode, bool):
            self.__init__(True)
            return self(mode)
        return self

    def clone(self) -> "inference_mode":
        return self.__class__(not self._mode)
