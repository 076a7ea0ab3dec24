"""srcgrad: automatic differentiation by source transformation.

Function transformations (JAX names): ``grad``, ``value_and_grad``, ``vjp``, ``jvp``,
``jacfwd``, ``jacrev``, ``hessian``, ``hvp``, ``vmap``, ``elementwise_grad``, ``source``;
pytrees: ``tree_map``, ``tree_flatten``, ``tree_unflatten``, ``tree_leaves``; derivative
rules: ``rule``, ``nondifferentiable``, ``custom_vjp``, ``custom_jvp``; user-defined vector
spaces: ``register_vspace``; errors under
``SrcgradError``.

The PyTorch-style Tensor facade shares the namespace, so ``import srcgrad as torch`` runs
define-by-run code: ``tensor``, ``ones``, ``Tensor``, ``no_grad``, ``autograd.grad``,
``nn.functional``...
"""
from . import rules as _rules  # noqa: F401  (registers the built-in derivative rules)
from .checkpoint import checkpointed, checkpointed_while
from .api import (custom_jvp, custom_vjp, elementwise_grad, grad, stop_gradient,
                  value_and_grad, vjp)
from .errors import (InternalError, MissingRuleError, NonDifferentiableError, SrcgradError,
                     UnsupportedSyntaxError)
from .rules import nondifferentiable, rule
from .api_forward import hessian, hvp, jacfwd, jacobian, jacrev, jvp
from . import dispatch as _dispatch  # noqa: F401  (installs the run-time call helpers: runtime.py)
from . import api as _api, checkpoint as _checkpoint
_checkpoint.connect(_api.get_adjoint, _api.dynamic_wrt, jvp)  # (checkpointed loops' steps)
from .vmap import VmapFallbackWarning, vmap
from .show import source
from .tree import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from .vspace import register_vspace

# entry points whose own machinery srcgrad cannot differentiate: called on differentiable
# values inside a function being differentiated, they are refused at the caller's line
for _f, _name in ((vjp, "vjp"), (jvp, "jvp"), (hvp, "hvp"), (vmap, "vmap")):
    _f.__srcgrad_not_nested__ = _name
del _f, _name

__version__ = "0.1.0"

from . import torch_api as _torch_api
from .torch_api import *  # noqa: E402,F401,F403  (the facade: import srcgrad as torch)
from . import autograd, nn  # noqa: E402,F401  (torch.autograd, torch.nn)

__all__ = [
    "grad", "value_and_grad", "vjp", "source", "stop_gradient", "rule", "nondifferentiable",
    "SrcgradError", "UnsupportedSyntaxError", "MissingRuleError", "NonDifferentiableError",
    "InternalError",
    "jvp", "jacfwd", "jacrev", "jacobian", "hessian", "hvp", "vmap", "VmapFallbackWarning",
    "elementwise_grad", "custom_vjp", "custom_jvp", "checkpointed", "checkpointed_while",
    "tree_map", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
    "register_vspace",
]
__all__ += [name for name in _torch_api.__all__ if name not in __all__]
