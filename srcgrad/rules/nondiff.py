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
    # (full, full_like, linspace, logspace have rules: their values carry gradients;
    # geomspace and meshgrid have none yet, so differentiable arguments give a clear error)
    "zeros_like", "ones_like", "empty_like", "zeros", "ones", "empty",
    "eye", "identity", "arange", "tri", "indices", "mgrid", "ogrid",
    # indices, orderings, counts
    "argmax", "argmin", "argsort", "argpartition", "argwhere", "nonzero", "flatnonzero",
    "searchsorted", "digitize", "count_nonzero", "bincount", "lexsort", "unravel_index", "ravel_multi_index",
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
    # casts to integer and boolean scalar types (np.int64(x)): piecewise constant
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "intp",
    "uintp", "bool_", "int_", "uint",
]

# Draws that take no distribution parameters. Those that do (normal(loc, scale), uniform,
# gamma...) are deliberately not marked: a differentiable parameter would get a silent zero
# gradient, so it raises MissingRuleError instead (write loc + scale * randn() to
# reparameterize, or register a rule).
_RANDOM = [
    "randn", "rand", "randint", "random", "random_sample", "ranf", "sample", "seed",
    "standard_normal", "default_rng", "get_state", "set_state", "bytes", "standard_cauchy",
    "standard_exponential", "shuffle",
]

_BUILTINS = [
    "len", "isinstance", "issubclass", "range", "int", "bool", "print", "type", "str", "repr",
    "id", "hash", "callable", "round", "slice", "format", "hasattr", "ord", "chr", "bin", "hex", "oct",
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
