"""Derivative rules: one registry shared by the transformer and the Tensor facade.

Importing this package registers every built-in rule. See ``registry.py`` for the contract.
"""
from .registry import (Rule, all_rules, defjvp, defrule, is_nondifferentiable, lookup,
                       nondifferentiable, rule, rule_name)
# Importing a rule module registers its rules.
from . import operators  # noqa: F401
from . import math_rules  # noqa: F401
from . import statistics_rules  # noqa: F401
from . import numpy_elementwise  # noqa: F401
from . import numpy_complex  # noqa: F401
from . import numpy_reductions  # noqa: F401
from . import numpy_shape  # noqa: F401
from . import numpy_layout  # noqa: F401
from . import numpy_sequences  # noqa: F401
from . import numpy_linalg  # noqa: F401
from . import quotient  # noqa: F401  (divmod, np.divmod)
from . import numpy_fft  # noqa: F401
from . import nn  # noqa: F401
from . import nondiff  # noqa: F401
from . import constructors  # noqa: F401
from . import runtime_rules  # noqa: F401  (functional updates generated code calls)
from . import index_tricks  # noqa: F401  (np.r_[...], np.c_[...])
from . import trees  # noqa: F401  (srcgrad.tree_leaves/tree_flatten/tree_unflatten)
from .registry import defer as _defer
from .registry import seal_builtins as _seal_builtins
from .methods import ARRAY_ATTRIBUTES, ARRAY_METHODS, NONDIFF_ATTRIBUTES, NONDIFF_METHODS
from .nn import log_softmax, logsumexp, relu, sigmoid, softmax, softplus

__all__ = ["Rule", "all_rules", "defjvp", "defrule", "is_nondifferentiable", "lookup",
           "nondifferentiable", "rule", "rule_name", "ARRAY_METHODS", "ARRAY_ATTRIBUTES",
           "NONDIFF_METHODS", "NONDIFF_ATTRIBUTES", "sigmoid", "relu", "softplus", "logsumexp",
           "softmax", "log_softmax"]

# scipy's rules load when the user has imported the scipy module they cover (see registry.defer)
for _library in ("special", "stats", "linalg", "integrate", "signal"):
    _defer(f"scipy.{_library}", f"{__name__}.scipy_{_library}")
del _library
_seal_builtins()  # every rule registered from here on is a user's
