"""Text form of tensors, matching modern PyTorch's ``repr`` character for character.

The layout rules (what users see in every tutorial): one formatter per tensor decides between
whole-number mode (``1.``), fixed mode with ``precision`` decimals and scientific mode from
the nonzero finite values; every element is right-aligned to a common width; rows wrap at
``linewidth``; big tensors are summarized with ``...``; suffixes such as ``grad_fn=<...>``
and ``dtype=torch.float64`` follow the values.
"""
from __future__ import annotations

__all__ = ["PrintOptions", "PRINT_OPTS", "set_printoptions", "tensor_repr", "format_values"]

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """Change how tensors print (same arguments as ``torch.set_printoptions``)."""
    if profile is not None:
        for key, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, key, value)
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, key, value)
    PRINT_OPTS.sci_mode = sci_mode


class _Formatter:
    """Chooses the number format and the common width from (a summary of) the values."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.width = max(self.width, len(str(v)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size:
            self._measure(finite)
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def _measure(self, finite: np.ndarray) -> None:
        p = PRINT_OPTS.precision
        magnitudes = np.abs(finite).astype(np.float64)
        lo, hi = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        values = finite.astype(np.float64).tolist()
        if self.int_mode:
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                self.width = max(len(f"{v:.{p}e}") for v in values)
            else:
                self.width = max(len(f"{v:.0f}") + 1 for v in values)
        elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
            self.sci_mode = True
            self.width = max(len(f"{v:.{p}e}") for v in values)
        else:
            self.width = max(len(f"{v:.{p}f}") for v in values)

    def format(self, value) -> str:
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                text = f"{value:{self.width}.{p}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{p}f}"
        else:
            text = str(value)
        return " " * (self.width - len(text)) + text


def _summary(values: np.ndarray) -> np.ndarray:
    """The elements a summarized print shows: ``edgeitems`` at both ends of every axis."""
    n = PRINT_OPTS.edgeitems
    if values.ndim == 0:
        return values
    if values.ndim == 1:
        return np.concatenate([values[:n], values[-n:]]) if len(values) > 2 * n else values
    rows = range(len(values))
    if len(values) > 2 * n:
        rows = list(range(n)) + list(range(len(values) - n, len(values)))
    return np.stack([_summary(values[i]) for i in rows])


class _ComplexFormatter:
    """Real parts and imaginary parts formatted apart, joined as ``1.+2.0000j``."""

    def __init__(self, values: np.ndarray):
        self.real = _Formatter(np.ascontiguousarray(values.real))
        self.imag = _Formatter(np.ascontiguousarray(values.imag))
        self.width = self.real.width + self.imag.width + 1

    def format(self, value) -> str:
        value = complex(value)
        real = self.real.format(value.real)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    n = PRINT_OPTS.edgeitems
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / (fmt.width + 2))))
    if summarize and len(values) > 2 * n:
        items = ([fmt.format(v) for v in values[:n].tolist()] + [" ..."]
                 + [fmt.format(v) for v in values[-n:].tolist()])
    else:
        items = [fmt.format(v) for v in values.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if values.ndim == 0:
        return fmt.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, fmt)
    n = PRINT_OPTS.edgeitems
    if summarize and len(values) > 2 * n:
        parts = ([_nested(values[i], indent + 1, summarize, fmt) for i in range(n)] + ["..."]
                 + [_nested(values[i], indent + 1, summarize, fmt)
                    for i in range(len(values) - n, len(values))])
    else:
        parts = [_nested(v, indent + 1, summarize, fmt) for v in values]
    sep = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def format_values(values: np.ndarray, indent: int) -> str:
    """The bracketed values of a non-empty array, continuation lines indented by ``indent``."""
    if values.dtype == np.float16:
        values = values.astype(np.float32)
    summarize = values.size > PRINT_OPTS.threshold
    shown = _summary(values) if summarize else values
    fmt = _ComplexFormatter(shown) if values.dtype.kind == "c" else _Formatter(shown)
    return _nested(values, indent, summarize, fmt)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    # PyTorch measures the last line this way (one more than its length); kept for parity.
    last_line = len(text) - text.rfind("\n") + 1
    parts = [text]
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(values: np.ndarray, dtype_name: str, default_dtype: bool,
                grad_fn_name: str | None, requires_grad: bool, prefix: str = "tensor(") -> str:
    """``tensor([...], <suffixes>)`` for raw ``values`` of a Tensor.

    ``dtype_name`` is e.g. ``"torch.float64"``; ``default_dtype`` is True for the dtypes
    PyTorch leaves implicit (the default float dtype, int64 and bool).
    """
    indent = len(prefix)
    suffixes = []
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        if dtype_name != "torch.float32":
            suffixes.append(f"dtype={dtype_name}")
        body = "[]"
    else:
        if not default_dtype:
            suffixes.append(f"dtype={dtype_name}")
        body = format_values(values, indent)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
