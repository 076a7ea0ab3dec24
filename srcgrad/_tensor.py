"""The PyTorch-compatible ``Tensor``: define-by-run recording over the shared rule registry.

``Tensor`` is composed here from its methods, grouped by concern in ``srcgrad/autograd/``:

* ``tensor_data``      shape and dtype, conversions, printing, Python protocols
* ``tensor_autograd``  requires_grad, ``.grad``, hooks, ``backward``, ``detach``
* ``tensor_math``      operators, comparisons, elementwise functions
* ``tensor_reduce``    sum, mean, max, norm...
* ``tensor_shape``     views (reshape, transpose...) and indexing
* ``tensor_inplace``   ``add_``, ``t[i] = v``, ``fill_``...

They record operations through ``autograd.dispatch``, which the class is handed to below.

Every differentiable operation runs the registry rule of a numpy function or Python operator
(``srcgrad.rules.lookup(np.exp)``...): the forward is ``rule.fn(*raw_args, **kw)`` on numpy
data, and the graph node keeps the rule, the raw arguments and ``ans`` so that ``backward``
calls ``rule.vjp``. There is no second set of derivative formulas here.

``__array_ufunc__`` and ``__array_function__`` route numpy calls on Tensors back into these
operations, so running a vjp body on Tensors (``create_graph=True``) records it too.

Deliberate differences from PyTorch (what users see is otherwise meant to be identical):

* ``2 / x`` shows ``DivBackward0`` (PyTorch records a reciprocal and ``MulBackward0``).
* In-place updates of a view made by indexing are recorded on its base as ``base[i] = new``
  (``CopySlices``), as PyTorch does; those of a view made by a reshape, transpose, permute or
  (un)squeeze as the base taking the view's new values in its own element order (an
  indexing node, where PyTorch shows ``AsStridedBackward0``). Views then take their history
  from the base again.
* The values a node claims for the version counter are those its registry vjp reads, plus
  what PyTorch's node saves where that differs (``relu`` and ``prod`` claim their result,
  ``mse_loss`` its input and target). Where the vjp reads more than PyTorch saves (``clamp``,
  ``x ** 2`` and ``1 / x`` read their result, ``max(dim)`` and ``where`` their input...),
  srcgrad refuses an in-place change before ``backward`` that PyTorch accepts, never the
  reverse.
* Memory layout follows numpy: a binary op of a transposed and a row-major tensor is laid
  out as numpy lays it out, so ``view`` may accept (or refuse) it where PyTorch does not.
* ``max(dim)``/``min(dim)`` share the gradient among tied elements, as the registry rule of
  ``np.max`` does; PyTorch sends it to the returned index only.
* Float sums use numpy's pairwise summation, so the last bit can differ from PyTorch's.
* More gradient accumulated into a ``.grad`` that has history (``create_graph=True``) gives
  ``AddBackward0``; PyTorch shows ``CopyBackwards``.
* Random draws reproduce PyTorch's CPU generator for the distributions ``generator.py``
  implements (uniform, normal, integers), so seeded tutorials print PyTorch's numbers.
"""
from __future__ import annotations

__all__ = ["Tensor", "dtype", "Size", "device", "tensor_from_data",
           "float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8",
           "bool_", "complex64", "complex128", "get_default_dtype", "as_dtype"]

from typing import Any

import numpy as np

from .autograd import dispatch
from .autograd.dtypes import (BY_NUMPY, Size, as_dtype, bool_, complex64, complex128, device,
                              dtype, float16, float32, float64, get_default_dtype, int8, int16,
                              int32, int64, shape_args, uint8)
from .autograd.tensor_autograd import AutogradMethods
from .autograd.tensor_data import DataMethods, _rebuild, tensor_from_data  # noqa: F401
from .autograd.tensor_inplace import InplaceMethods
from .autograd.tensor_math import MathMethods
from .autograd.tensor_reduce import ReductionMethods
from .autograd.tensor_shape import ShapeMethods

# (_rebuild: pickles of tensors made before the split name it here)


class Tensor(DataMethods, AutogradMethods, MathMethods, ReductionMethods, ShapeMethods,
             InplaceMethods):
    """A multi-dimensional array that records operations for reverse-mode differentiation.

    Only float tensors can require grad. The default dtype of floats is float32, as in
    PyTorch. ``torch.Tensor(data)`` (the legacy constructor) makes a float32 tensor.
    """

    # numpy data, requires grad, node that made it, .grad, version counter (shared by views),
    # rarely used state (dispatch.Meta: leaf hooks, base of a view)
    __slots__ = ("_data", "_rg", "grad_fn", "_grad", "_vc", "_meta", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, *args: Any):
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            data = tensor_from_data(args[0], float32)
        else:
            data = np.zeros(shape_args(args), dtype=np.float32)
        self._data = data
        self._rg = False
        self.grad_fn = None
        self._grad = None
        self._vc = [0]
        self._meta = None


dispatch.bind(Tensor, BY_NUMPY)
