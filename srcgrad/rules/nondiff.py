"""Functions whose results never carry a gradient: constructors, integer-valued and boolean
functions, shape queries, piecewise-constant functions, random sampling, printing.

Piecewise-constant functions (``np.floor``, ``np.sign``, ``np.round``...) have a zero
derivative wherever they have one, so marking them non-differentiable is exact, not an
approximation. ``np.random.permutation`` and ``np.random.choice`` are left out on purpose: they
can select from a differentiable array, which would need a rule, not a mark.
"""
import builtins
import math
import operator

import numpy as np

from .registry import nondifferentiable

_NUMPY = [
    # constructors of constants
    "zeros_like", "ones_like", "empty_like", "full_like", "zeros", "ones", "empty", "full",
    "eye", "identity", "arange", "linspace", "logspace", "geomspace", "tri", "indices",
    "meshgrid", "mgrid", "ogrid",
    # indices, orderings, counts
    "argmax", "argmin", "argsort", "argwhere", "nonzero", "flatnonzero", "searchsorted",
    "digitize", "count_nonzero", "bincount", "lexsort", "unravel_index", "ravel_multi_index",
    "nanargmax", "nanargmin",
    # piecewise constant
    "sign", "floor", "ceil", "trunc", "rint", "fix", "round", "around", "heaviside",
    # predicates and comparisons
    "isnan", "isfinite", "isinf", "isposinf", "isneginf", "isclose", "allclose",
    "array_equal", "array_equiv", "all", "any", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "logical_xor",
    "signbit", "iscomplexobj", "isrealobj", "isscalar", "issubdtype", "iscomplex", "isreal",
    # shapes and types
    "shape", "ndim", "size", "result_type", "promote_types", "can_cast", "broadcast_shapes",
    "dtype", "finfo", "iinfo",
    # bitwise and integer arithmetic
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift", "gcd",
    "lcm",
]

_RANDOM = [
    "randn", "rand", "normal", "uniform", "randint", "random", "random_sample", "ranf",
    "sample", "seed", "standard_normal", "binomial", "poisson", "exponential", "beta", "gamma",
    "multivariate_normal", "default_rng", "get_state", "set_state", "bytes", "laplace",
    "lognormal", "logistic", "standard_cauchy", "standard_t", "chisquare", "dirichlet",
    "geometric", "gumbel", "multinomial", "rayleigh", "triangular", "vonmises", "wald",
    "weibull", "zipf", "hypergeometric", "f", "pareto", "power", "standard_exponential",
    "standard_gamma", "noncentral_chisquare", "noncentral_f", "negative_binomial", "logseries",
    "shuffle",
]

_BUILTINS = [
    "len", "isinstance", "issubclass", "range", "int", "bool", "print", "type", "str", "repr",
    "id", "hash", "callable", "round", "format", "hasattr", "ord", "chr", "bin", "hex", "oct",
]

_MATH = ["floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "isclose",
         "factorial", "comb", "perm", "gcd", "lcm", "isqrt"]

_OPERATOR = ["lt", "le", "eq", "ne", "gt", "ge", "not_", "truth", "is_", "is_not", "contains",
             "and_", "or_", "xor", "invert", "lshift", "rshift", "index"]


def _mark_all(module, names):
    for name in names:
        fn = getattr(module, name, None)
        if fn is not None and callable(fn):
            nondifferentiable(fn)


_mark_all(np, _NUMPY)
_mark_all(np.random, _RANDOM)
_mark_all(builtins, _BUILTINS)
_mark_all(math, _MATH)
_mark_all(operator, _OPERATOR)
