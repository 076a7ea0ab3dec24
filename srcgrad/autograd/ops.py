"""Which registry rule each Tensor operation runs, and PyTorch's dtype promotion.

An ``Op`` names candidate keys of the rule registry (numpy functions first, then Python's
operators) and resolves them on first use: rule modules may still be registering when the
facade is imported. Nothing here computes a derivative; it only finds the one rule.
"""
from __future__ import annotations

__all__ = ["Op", "OPS", "promote_types", "vjp_reads", "torch_dtype_name"]

import dis
import importlib
import inspect
import operator
import pkgutil
from typing import Any

import numpy as np

from .. import rules as _rules
from ..errors import MissingRuleError
from .graph import node_class


def _load(key: Any) -> Any:
    """A key given as ``"module:attr"`` is imported lazily; others are used as they are."""
    if not isinstance(key, str):
        return key
    module, _, attr = key.partition(":")
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return None
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


_imported_all = False


def _import_rule_modules() -> None:
    """Import every module of ``srcgrad.rules`` (some may not be imported by its __init__)."""
    global _imported_all
    if _imported_all:
        return
    _imported_all = True
    for info in pkgutil.iter_modules(_rules.__path__):
        if info.name in ("registry", "domains") or info.name.startswith("__"):
            continue
        try:
            importlib.import_module(f"{_rules.__name__}.{info.name}")
        except ImportError:
            pass


class Op:
    """A Tensor operation: its rule (found in the registry) and its default node name."""

    __slots__ = ("label", "keys", "rule", "node", "cls", "reads", "read0", "read1", "read_ans",
                 "pullbacks", "reads_by", "result_saved", "binary_reads")

    def __init__(self, label: str, keys: tuple, node: str, reads: tuple | None = None,
                 reads_by: tuple | None = None, result_saved: bool = False):
        self.label = label
        self.keys = keys
        self.node = node
        self.cls = node_class(node)
        self.rule = None
        self.reads = reads  # None: found by reading the vjp's bytecode
        # for a binary op, the values (argument positions, ans) each operand's cotangent
        # reads, beyond shapes: only those of the operands requiring grad are version-checked
        self.reads_by = reads_by
        # PyTorch's node saves the result although the vjp does not read it: an in-place
        # update of the result then raises at backward there, so it must here too
        self.result_saved = result_saved
        self.pullbacks: dict = {}

    def resolve(self):
        rule = self._find()
        if rule is None:
            _import_rule_modules()
            rule = self._find()
        if rule is None:
            key = _load(self.keys[0])
            raise MissingRuleError(_rules.rule_name(key) if key is not None else self.label)
        if self.reads is None:
            self.reads = vjp_reads(rule)
        if self.result_saved:
            self.reads = (self.reads[0], True)
        self.read0 = 0 in self.reads[0]
        self.read1 = 1 in self.reads[0]
        self.read_ans = self.reads[1]
        self.binary_reads = self._binary_reads()
        self.rule = rule
        return rule

    def _binary_reads(self) -> tuple:
        """(reads operand 0, reads operand 1, reads the result) of a binary op's backward, by
        which operands require grad: index 2 * (operand 0 does) + (operand 1 does). With
        ``reads_by``, only what the needed cotangents read (``x * 3`` claims nothing of
        ``x``, as PyTorch's MulBackward0); else what the whole vjp reads."""
        every = (self.read0, self.read1, self.read_ans)
        if self.reads_by is None:
            return (every,) * 4
        (args0, ans0), (args1, ans1) = self.reads_by
        table = []
        for need0, need1 in ((False, False), (False, True), (True, False), (True, True)):
            table.append(((need0 and 0 in args0) or (need1 and 0 in args1),
                          (need0 and 1 in args0) or (need1 and 1 in args1),
                          (need0 and ans0) or (need1 and ans1)))
        return tuple(table)

    def _find(self):
        for key in self.keys:
            fn = _load(key)
            if fn is not None:
                rule = _rules.lookup(fn)
                if rule is not None:
                    return rule
        return None

    def __repr__(self) -> str:
        return f"Op({self.label!r})"


def vjp_reads(rule) -> tuple[tuple[int, ...], bool]:
    """Which primal arguments (positions) and whether ``ans`` the rule's vjp body reads.

    Used to check, like PyTorch, that values saved for backward were not modified in place.
    When the body cannot be analysed, every argument counts as read.
    """
    vjp = rule.vjp
    try:
        sig = inspect.signature(vjp)
        code = vjp.__code__
    except (TypeError, ValueError, AttributeError):
        return tuple(range(16)), True
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()) or len(params) < 2:
        return tuple(range(16)), True
    loaded = {ins.argval for ins in dis.get_instructions(code)
              if ins.opname in ("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_FAST_CHECK")}
    names = [p.name for p in params]
    reads = tuple(i for i, name in enumerate(names[2:]) if name in loaded)
    return reads, names[1] in loaded


def _op(label: str, *keys: Any, node: str, reads: tuple | None = None,
        reads_by: tuple | None = None, result_saved: bool = False) -> Op:
    return Op(label, keys, node, reads, reads_by, result_saved)


# The vjps of these read their operand only for its shape (np.shape, unbroadcast, unindex...),
# as PyTorch's nodes save sizes and indices, not the input: an input changed in place later
# does not stop their backward.
_SHAPES_ONLY = ((), False)
_NONE_READ = (((), False), ((), False))
_EACH_OTHER = (((1,), False), ((0,), False))  # x * y, x @ y: x's cotangent reads y, y's x


_NN = "srcgrad.rules.nn"
OPS: dict[str, Op] = {op.label: op for op in [
    _op("add", np.add, operator.add, node="AddBackward0", reads_by=_NONE_READ),
    _op("sub", np.subtract, operator.sub, node="SubBackward0", reads_by=_NONE_READ),
    _op("mul", np.multiply, operator.mul, node="MulBackward0", reads_by=_EACH_OTHER),
    _op("div", np.divide, operator.truediv, node="DivBackward0",
        reads_by=(((1,), False), ((0, 1), True))),  # (x: PyTorch saves it; the vjp reads ans)
    _op("neg", np.negative, operator.neg, node="NegBackward0"),
    _op("pow", np.power, operator.pow, node="PowBackward0"),
    _op("matmul", np.matmul, operator.matmul, node="MmBackward0", reads_by=_EACH_OTHER),
    _op("exp", np.exp, node="ExpBackward0"),
    _op("log", np.log, node="LogBackward0"),
    _op("sin", np.sin, node="SinBackward0"),
    _op("cos", np.cos, node="CosBackward0"),
    _op("tan", np.tan, node="TanBackward0"),
    _op("tanh", np.tanh, node="TanhBackward0"),
    _op("sqrt", np.sqrt, node="SqrtBackward0"),
    _op("abs", np.absolute, node="AbsBackward0"),
    _op("log1p", np.log1p, node="Log1PBackward0"),
    _op("expm1", np.expm1, node="Expm1Backward0"),
    _op("square", np.square, node="PowBackward0"),
    _op("reciprocal", np.reciprocal, node="ReciprocalBackward0"),
    _op("maximum", np.maximum, node="MaximumBackward0"),
    _op("minimum", np.minimum, node="MinimumBackward0"),
    _op("sigmoid", f"{_NN}:sigmoid", node="SigmoidBackward0"),
    _op("relu", f"{_NN}:relu", node="ReluBackward0", result_saved=True),
    _op("softmax", f"{_NN}:softmax", node="SoftmaxBackward0"),
    _op("log_softmax", f"{_NN}:log_softmax", node="LogSoftmaxBackward0"),
    _op("logsumexp", f"{_NN}:logsumexp", "scipy.special:logsumexp", node="LogsumexpBackward0"),
    _op("clip", np.clip, node="ClampBackward1"),
    _op("where", np.where, node="WhereBackward0"),
    _op("sum", np.sum, node="SumBackward0", reads=_SHAPES_ONLY),
    _op("mean", np.mean, node="MeanBackward0", reads=_SHAPES_ONLY),
    _op("max", np.max, node="MaxBackward1"),
    _op("min", np.min, node="MinBackward1"),
    _op("prod", np.prod, node="ProdBackward0", result_saved=True),
    _op("norm", np.linalg.norm, node="LinalgVectorNormBackward0"),
    _op("reshape", np.reshape, node="ViewBackward0", reads=_SHAPES_ONLY),
    _op("transpose", np.transpose, node="PermuteBackward0", reads=_SHAPES_ONLY),
    _op("swapaxes", np.swapaxes, node="TransposeBackward0", reads=_SHAPES_ONLY),
    _op("expand_dims", np.expand_dims, node="UnsqueezeBackward0", reads=_SHAPES_ONLY),
    _op("squeeze", np.squeeze, node="SqueezeBackward0", reads=_SHAPES_ONLY),
    _op("broadcast_to", np.broadcast_to, node="ExpandBackward0", reads=_SHAPES_ONLY),
    _op("getitem", operator.getitem, node="IndexBackward0", reads=_SHAPES_ONLY),
    _op("concatenate", np.concatenate, node="CatBackward0", reads=_SHAPES_ONLY),
    _op("stack", np.stack, node="StackBackward0", reads=_SHAPES_ONLY),
    _op("copy", np.copy, node="CloneBackward0"),
    # Its vjp reads the base and the value for their shapes only: nothing to version-check.
    _op("setitem", "srcgrad.runtime:setitem", node="CopySlices", reads=((), False)),
    _op("astype", "srcgrad.rules.numpy_shape:astype_method", np.asarray,
        node="ToCopyBackward0"),
]}


# --------------------------------------------------------------------------- dtypes

_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_DEFAULT_FLOAT = np.dtype(np.float32)
_DEFAULT_INT = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


def promote_types(*operands: Any, true_divide: bool = False) -> np.dtype:
    """The result dtype PyTorch gives an elementwise operation of ``operands``.

    Tensors with dimensions outrank 0-d tensors, which outrank Python numbers; a lower-ranked
    operand only matters when its kind (bool < int < float < complex) is higher. Operands are
    numpy arrays (raw tensor data, ``ndarray`` marks a dimensioned or 0-d tensor) or numbers.
    """
    groups: list[list[np.dtype]] = [[], [], []]
    for x in operands:
        if isinstance(x, (np.ndarray, np.generic)):
            groups[0 if x.ndim else 1].append(x.dtype)
        elif isinstance(x, bool):
            groups[2].append(_BOOL)
        elif isinstance(x, int):
            groups[2].append(_DEFAULT_INT)
        elif isinstance(x, float):
            groups[2].append(_DEFAULT_FLOAT)
        elif isinstance(x, complex):
            groups[2].append(np.dtype(np.complex64))
    top = max(_KIND_RANK[d.kind] for g in groups for d in g)
    result = None
    for g in groups:
        same = [d for d in g if _KIND_RANK[d.kind] == top]
        if same:
            result = np.result_type(*same)
            break
    if true_divide and result.kind in "biu":
        return _DEFAULT_FLOAT
    return result


_TORCH_NAMES = {
    "float32": "float32", "float64": "float64", "float16": "float16", "int64": "int64",
    "int32": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
    "complex64": "complex64", "complex128": "complex128",
}


def torch_dtype_name(dt: np.dtype) -> str:
    return "torch." + _TORCH_NAMES.get(dt.name, dt.name)
