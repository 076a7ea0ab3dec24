"""srcgrad: automatic differentiation by source transformation.

Function transformations (JAX names): ``grad``, ``value_and_grad``, ``vjp``, ``source``;
derivative rules: ``rule``, ``nondifferentiable``; errors under ``SrcgradError``.
"""
from . import rules as _rules  # registers the built-in derivative rules
from .api import grad, source, value_and_grad, vjp
from .errors import (InternalError, MissingRuleError, NonDifferentiableError, SrcgradError,
                     UnsupportedSyntaxError)
from .rules import nondifferentiable, rule
from .api_forward import hessian, hvp, jacfwd, jacobian, jacrev, jvp

__version__ = "0.1.0"

__all__ = [
    "grad", "value_and_grad", "vjp", "source", "rule", "nondifferentiable",
    "SrcgradError", "UnsupportedSyntaxError", "MissingRuleError", "NonDifferentiableError",
    "InternalError",
    "jvp", "jacfwd", "jacrev", "jacobian", "hessian", "hvp",
]
