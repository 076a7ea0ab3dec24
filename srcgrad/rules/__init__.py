"""Derivative rules: one registry shared by the transformer and the Tensor facade.

Importing this package registers every built-in rule. See ``registry.py`` for the contract.
"""
from .registry import (Rule, all_rules, defjvp, defrule, is_nondifferentiable, lookup,
                       nondifferentiable, rule, rule_name)
from . import operators  # noqa: F401  (registers rules on import)

__all__ = ["Rule", "all_rules", "defjvp", "defrule", "is_nondifferentiable", "lookup",
           "nondifferentiable", "rule", "rule_name"]
from . import runtime_rules  # noqa: E402,F401  (rules of the runtime's functional updates)
