"""``torch.autograd`` of the Tensor facade: ``grad``, ``backward``, ``Function``, grad modes.

The package's modules, bottom-up: ``grad_mode``, ``graph``, ``ops``, ``specialize``,
``dtypes``, ``printing``, ``generator`` (no Tensor) -> ``dispatch`` (recording ops) ->
``engine``, ``function``, ``backward_source`` (the backward pass) -> ``tensor_*`` (the
methods ``srcgrad._tensor.Tensor`` is composed of). The Tensor class reaches the modules below
it through ``dispatch.bind``.
"""
from __future__ import annotations

from . import dispatch, engine, function, grad_mode, graph  # noqa: F401  (torch.autograd.graph)
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs`` (returned, not accumulated).

    Same arguments as ``torch.autograd.grad``; ``create_graph=True`` makes the returned
    gradients differentiable, for higher-order derivatives.
    """
    return engine.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs,
                       allow_unused, is_grads_batched, materialize_grads)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the graph's leaves."""
    engine.backward(tensors, grad_tensors if grad_tensors is not None else grad_variables,
                    retain_graph, create_graph, inputs)


def __getattr__(name):
    if name == "Variable":  # the Tensor class, defined above this package (srcgrad._tensor)
        return dispatch.Tensor
    raise AttributeError(f"module 'srcgrad.autograd' has no attribute '{name}'")


__all__ = ["grad", "backward", "Function", "FunctionCtx", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "inference_mode", "Variable"]
