"""``torch.nn`` of the Tensor facade: ``functional`` and ``Parameter``."""
from __future__ import annotations

from . import functional
from .parameter import Parameter

__all__ = ["functional", "Parameter"]
