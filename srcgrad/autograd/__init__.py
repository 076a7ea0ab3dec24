"""``torch.autograd`` of the Tensor facade: ``grad``, ``backward``, ``Function``, grad modes.

Importing this package does not import the Tensor class; ``engine`` and ``function`` do.
"""
from __future__ import annotations

from . import grad_mode, graph  # noqa: F401  (srcgrad.autograd.graph, as torch.autograd.graph)
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs`` (returned, not accumulated).

    Same arguments as ``torch.autograd.grad``; ``create_graph=True`` makes the returned
    gradients differentiable, for higher-order derivatives.
    """
    from . import engine
    return engine.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs,
                       allow_unused, is_grads_batched, materialize_grads)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the graph's leaves."""
    from . import engine
    engine.backward(tensors, grad_tensors if grad_tensors is not None else grad_variables,
                    retain_graph, create_graph, inputs)


def __getattr__(name):
    # Function imports the Tensor class, which imports this package: load it on first use.
    if name in ("Function", "FunctionCtx", "function", "once_differentiable"):
        import importlib
        function = importlib.import_module(f"{__name__}.function")
        return function if name == "function" else getattr(function, name)
    if name == "Variable":
        from .._tensor import Tensor
        return Tensor
    raise AttributeError(f"module 'srcgrad.autograd' has no attribute '{name}'")


__all__ = ["grad", "backward", "Function", "FunctionCtx", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "inference_mode", "Variable"]
