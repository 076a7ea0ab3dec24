"""Tensor printing matches PyTorch's ``repr`` character for character."""
import numpy as np
import pytest

import srcgrad

if hasattr(srcgrad, "Tensor"):
    torch = srcgrad
else:  # until srcgrad/__init__.py re-exports the torch-like namespace
    import srcgrad.torch_api as torch

T = torch.tensor


@pytest.mark.parametrize("make, text", [
    (lambda: torch.ones(2, 2, requires_grad=True),
     "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"),
    (lambda: torch.ones(2, 2, requires_grad=True) + 2,
     "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)"),
    (lambda: T(27.0), "tensor(27.)"),
    (lambda: T([4.5, 4.5]), "tensor([4.5000, 4.5000])"),
    (lambda: T([-214.0495, -737.4357, 1294.8801]),
     "tensor([-214.0495, -737.4357, 1294.8801])"),
    (lambda: T([204.8, 2048.0, 2.048]), "tensor([ 204.8000, 2048.0000,    2.0480])"),
    (lambda: T([51.2, 512.0, 0.0512]), "tensor([5.1200e+01, 5.1200e+02, 5.1200e-02])"),
    (lambda: T(True), "tensor(True)"),
    (lambda: T([1, 2]), "tensor([1, 2])"),
    (lambda: T([1.0, 2.0], dtype=torch.float64), "tensor([1., 2.], dtype=torch.float64)"),
    (lambda: T([]), "tensor([])"),
    (lambda: torch.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: torch.zeros(0, dtype=torch.long), "tensor([], dtype=torch.int64)"),
    (lambda: T([float("nan"), float("inf"), -1.5]), "tensor([    nan,     inf, -1.5000])"),
    (lambda: T([0.0, 0.0]), "tensor([0., 0.])"),
    (lambda: T([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: T([1e9, 1.0]), "tensor([1.0000e+09, 1.0000e+00])"),
    (lambda: torch.Size([4]), "torch.Size([4])"),
    (lambda: torch.float32, "torch.float32"),
    (lambda: torch.long, "torch.int64"),
])
def test_known_reprs(make, text):
    assert repr(make()) == text


def test_str_is_repr_and_format_of_scalars():
    x = T([1.5, 2.5])
    assert str(x) == repr(x)
    assert f"{T(2.5):.2f}" == "2.50"


def test_grad_fn_repr_names_the_node():
    y = torch.ones(2, requires_grad=True) * 2
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")


def test_max_with_dim_prints_like_return_types():
    out = T([[1.0, 5.0], [3.0, 2.0]]).max(1)
    assert repr(out) == ("torch.return_types.max(\nvalues=tensor([5., 3.]),\n"
                         "indices=tensor([1, 0]))")
    values, indices = out
    assert out.values is values and out.indices is indices


def _random_arrays(rng, count):
    for _ in range(count):
        kind = int(rng.integers(0, 11))
        shape = tuple(int(s) for s in rng.integers(0, 5, size=int(rng.integers(0, 4))))
        if kind == 0:
            a = rng.standard_normal(shape)
        elif kind == 1:
            a = rng.standard_normal(shape) * 10.0 ** int(rng.integers(-6, 9))
        elif kind == 2:
            a = rng.integers(-100, 100, size=shape).astype(float)
        elif kind == 3:
            a = rng.integers(-10 ** 6, 10 ** 6, size=shape)
        elif kind == 4:
            a = rng.random(shape) > 0.5
        elif kind == 5:
            a = rng.standard_normal(shape)
            a.flat[:1] = np.inf
            a.flat[1:2] = np.nan
        elif kind == 6:
            a = np.zeros(shape)
        elif kind == 7:
            a = rng.integers(-3, 3, size=shape) * 10.0 ** int(rng.integers(-5, 10))
        elif kind == 8:  # long vectors wrap at 80 columns
            a = rng.standard_normal((int(rng.integers(1, 60)),)) * 100
        elif kind == 9:  # more than 1000 elements: summarized with ...
            a = rng.standard_normal(tuple(int(s) for s in rng.integers(1, 30, size=3)))
        else:
            a = np.round(rng.standard_normal(shape) * 1000, 1)
        yield a, bool(rng.integers(0, 3) == 2)


def test_repr_matches_pytorch_on_random_tensors():
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(1234)
    mismatches = []
    for a, double in _random_arrays(rng, 600):
        if a.dtype.kind == "f":
            a = a.astype(np.float64 if double else np.float32)
        requires_grad = a.dtype.kind == "f" and rng.random() < 0.3
        theirs = real.tensor(a, requires_grad=requires_grad)
        ours = torch.tensor(a, requires_grad=requires_grad)
        if requires_grad and rng.random() < 0.5:
            theirs, ours = theirs * 2, ours * 2
        if repr(theirs) != repr(ours):
            mismatches.append((repr(theirs), repr(ours)))
    assert not mismatches, mismatches[:3]


def test_set_printoptions_precision():
    try:
        torch.set_printoptions(precision=2)
        assert repr(T([1.23456, 2.0])) == "tensor([1.23, 2.00])"
    finally:
        torch.set_printoptions(profile="default")
    assert repr(T([1.23456, 2.0])) == "tensor([1.2346, 2.0000])"
