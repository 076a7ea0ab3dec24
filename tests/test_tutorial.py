"""Every code cell of the five variants of the PyTorch autograd tutorial (shared/seeds/).

Cells run as in a notebook (a final expression is displayed), on ``import srcgrad as torch``.
Deterministic output is compared exactly, with memory addresses masked; random draws are
checked by the layout of what is printed and by the math (``x.grad == v * 2**k``...). Each
cell is copied verbatim from its notebook, except its ``import torch`` line.
"""
import ast
import contextlib
import importlib
import io
import re
import types

import numpy as np
import pytest

import srcgrad


def _facade():
    """``import srcgrad as torch``, or the same namespace assembled until that import works."""
    if hasattr(srcgrad, "Tensor"):
        return srcgrad
    api = importlib.import_module("srcgrad.torch_api")
    shim = types.ModuleType("torch")
    shim.__dict__.update({name: getattr(api, name) for name in api.__all__})
    return shim


try:
    from IPython.lib.pretty import pretty as _display
except ImportError:  # plain repr: what a notebook shows, less IPython's line breaking
    _display = repr


class Notebook:
    """Runs cells in one namespace, like a Jupyter kernel, capturing what they show."""

    def __init__(self):
        self.namespace = {"torch": _facade(), "__name__": "__notebook__"}
        self.namespace["torch"].manual_seed(0)  # same draws whatever ran before

    def run(self, source: str) -> str:
        tree = ast.parse(source)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(tree, "<cell>", "exec"), self.namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<cell>", "eval"),
                             self.namespace)
                if value is not None:
                    print(_display(value))
        return out.getvalue()

    def __getitem__(self, name):
        return self.namespace[name]


def masked(text: str) -> str:
    return re.sub(r"0x[0-9a-fA-F]+", "0x...", text).rstrip("\n")


_NUMBER = re.compile(r"-?\d+\.\d*(?:e[+-]\d+)?|-?\d+(?=[,\]])|nan|inf")


def numbers(text: str) -> np.ndarray:
    """The numbers printed inside ``tensor(...)`` texts, in order."""
    text = re.sub(r",\s+(?:grad_fn=<\w+>|requires_grad=True)", "", text)
    inside = re.findall(r"tensor\(\[?(.*?)\]?\)", text, re.S)
    return np.array([float(n) for part in inside for n in _NUMBER.findall(part)])


def assert_printed(text: str, values, decimals: int = 4) -> None:
    """``text`` shows ``values`` as PyTorch rounds them (fixed or scientific notation)."""
    shown = numbers(text)
    expected = np.asarray(values, dtype=np.float64).reshape(-1)
    np.testing.assert_allclose(shown, expected, rtol=10.0 ** -decimals, atol=10.0 ** -decimals)


MATRIX_1 = "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"
MATRIX_3 = "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)"
MATRIX_27 = ("tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>) "
             "tensor(27., grad_fn=<MeanBackward0>)")
GRAD_45 = "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"
FREED = ("RuntimeError: Trying to backward through the graph a second time (or directly "
         "access saved tensors after they have already been freed). Saved intermediate values "
         "of the graph are freed when you call .backward() or autograd.grad(). Specify "
         "retain_graph=True if you need to backward through the graph a second time or if you "
         "need to access saved tensors after calling backward.")
IMPLICIT = "RuntimeError: grad can be implicitly created only for scalar outputs"


def run_error(nb: Notebook, source: str) -> str:
    """A cell that the notebook shows failing: its error as the notebook prints it."""
    with pytest.raises(RuntimeError) as info:
        nb.run(source)
    return f"RuntimeError: {info.value}"


def check_requires_grad_cell(nb: Notebook, output: str, grad_fn: bool = True) -> None:
    lines = masked(output).splitlines()
    assert lines[:2] == ["False", "True"]
    if grad_fn:
        assert lines[2] == "<SumBackward0 object at 0x...>"
    a = nb["a"].detach().numpy()
    assert np.all(np.isfinite(a)) and nb["a"].requires_grad and nb["a"].is_leaf


# ------------------------------------------------------------------ 000: "Tutorial 2 Autograd"

CELL_000_TENSOR = '''
# Create a tensor and set ``requires_grad=True`` to track computation with it
x = torch.ones(2, 2, requires_grad=True)
print(x)
# Do a tensor operation:
y = x + 2
print(y)
# y was created as a result of an operation, so it has a grad_fn
print(y.grad_fn)
# Do more operations on y
z = y * y * 3
out = z.mean()
print(z, out)

\'\'\'
change an existing tensor's ``.requires_grad_( ... )'' by setting its ``requires_grad flag``
in-place, whose flag is default to ``False`` if not given
\'\'\'

a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)
'''

CELL_000_GRADIENT = '''
out.backward()
print(x.grad)
'''


def test_tutorial_000_tensor_and_gradient():
    nb = Notebook()
    output = nb.run(CELL_000_TENSOR)
    lines = masked(output).split("\n")
    assert "\n".join(lines[:7]) == "\n".join(
        [MATRIX_1, MATRIX_3, "<AddBackward0 object at 0x...>", MATRIX_27])
    check_requires_grad_cell(nb, "\n".join(lines[7:]))
    assert masked(nb.run(CELL_000_GRADIENT)) == GRAD_45
    # The notebook shows this cell run a second time: the buffers are freed by then.
    assert run_error(nb, CELL_000_GRADIENT) == FREED


# ------------------------------------------------------------------ 001: one long cell

CELL_001_MAIN = '''
# The autograd package provides automatic differentiation for all operations on Tensors.
x = torch.ones(2, 2, requires_grad=True)

y = x + 2

z = y * y * 3

out = z.mean()

# Becaues out contains a single scalar, out.backward() is equivlant to out.backward(torch.tensor(1.))
out.backward()

print(x.grad)

# Could stop a tensor from tracking history
x = x.detach()
print(x.requires_grad, x.grad)

# can also stop autograd from tracking history on Tensors by wrapping the code block in 'with torch.no_grad()'
with torch.no_grad():
    print((x ** 2).requires_grad)
'''

CELL_001_RAND = '''
a = torch.rand(2,2)
a = ((a * 3) / (a - 1))

print(a.requires_grad)

# .requires_grad_() changes an existing Tensor's requires_grad flag in-place.
a.requires_grad_(True)
print(a.requires_grad)

# equivlant to \\sum(a \\odot a)
b = (a * a).sum()

b.backward()
print(a.grad)
'''


def test_tutorial_001_backward_detach_no_grad():
    nb = Notebook()
    assert masked(nb.run(CELL_001_MAIN)) == GRAD_45 + "\nFalse None\nFalse"
    output = nb.run(CELL_001_RAND)
    check_requires_grad_cell(nb, output, grad_fn=False)
    grad_text = "\n".join(output.splitlines()[2:])
    assert grad_text.startswith("tensor([[") and grad_text.endswith("]])")
    a = nb["a"].detach().numpy()
    np.testing.assert_allclose(nb["a"].grad.numpy(), 2 * a, rtol=1e-6)
    assert_printed(grad_text, 2 * a)


# ------------------------------------------------------------------ 002: the official tutorial

CELLS_002 = [
    ("x = torch.ones(2, 2, requires_grad=True)\nprint(x)", MATRIX_1),
    ("y = x + 2\nprint(y)", MATRIX_3),
    ("print(y.grad_fn)", "<AddBackward0 object at 0x...>"),
    ("z = y * y * 3\nout = z.mean()\nprint(z, out)", MATRIX_27),
]

CELL_002_REQUIRES_GRAD = '''
a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)
'''

CELL_002_WHILE = '''
x = torch.randn(3, requires_grad=True)
y = x * 2
while y.data.norm() < 1000:
    y = y * 2
print(y)
'''

CELL_002_GRADIENTS = '''
gradients = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(gradients)
print(x.grad)
'''

CELL_NO_GRAD = '''
print(x.requires_grad)
print((x ** 2).requires_grad)
with torch.no_grad():
    print((x ** 2).requires_grad)
'''


def doubling_power(nb: Notebook) -> int:
    """k with y == x * 2**k for the while-loop cell (checked, not assumed)."""
    x, y = nb["x"].detach().numpy(), nb["y"].detach().numpy()
    k = int(round(np.log2(np.linalg.norm(y) / np.linalg.norm(x))))
    np.testing.assert_allclose(y, x * 2.0 ** k, rtol=1e-6)
    assert np.linalg.norm(y) >= 1000 > np.linalg.norm(y) / 2
    return k


def check_while_cell(nb: Notebook, output: str) -> int:
    text = output.rstrip("\n")
    assert re.fullmatch(r"tensor\(\[[-\d., e+]+\],\s+grad_fn=<MulBackward0>\)", text), text
    k = doubling_power(nb)
    assert_printed(text, nb["x"].detach().numpy() * 2.0 ** k)
    return k


def test_tutorial_002_official():
    nb = Notebook()
    for source, expected in CELLS_002:
        assert masked(nb.run(source)) == expected
    check_requires_grad_cell(nb, nb.run(CELL_002_REQUIRES_GRAD))
    assert nb.run("out.backward()") == ""
    assert masked(nb.run("print(x.grad)")) == GRAD_45
    k = check_while_cell(nb, nb.run(CELL_002_WHILE))
    output = nb.run(CELL_002_GRADIENTS)
    expected = np.array([0.1, 1.0, 0.0001], dtype=np.float32) * 2.0 ** k
    np.testing.assert_allclose(nb["x"].grad.numpy(), expected, rtol=1e-6)
    assert_printed(output, expected)
    assert masked(nb.run(CELL_NO_GRAD)) == "True\nTrue\nFalse"


# ------------------------------------------------------------------ 003: cells one by one

CELLS_003_START = [
    ("# Create a tensor and set `requires_grad=True`to track computation with it\n"
     "x = torch.ones(2, 2, requires_grad=True)\nprint(x)", MATRIX_1),
    ("# do some operations\ny = x + 2\nprint(y)", MATRIX_3),
    ("print(y.grad_fn)", "<AddBackward0 object at 0x...>"),
    ("z = y * y * 3\nout = z.mean()\n\nprint(z, out)", MATRIX_27),
]

CELL_003_REQUIRES_GRAD = '''
# 生成tensor时`requires_grad`默认为False
a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)  # 修改`requires_grad`属性，_后缀代表in-place
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)
'''

CELL_003_V = '''
# Now in this case y is no longer a scalar. torch.autograd could not compute 
# the full Jacobian directly, but if we just want the vector-Jacobian product, 
# simply pass the vector to backward as argument:
v = torch.tensor([0.1, 1.0, 0.001], dtype=torch.float)
y.backward(v)
print(x.grad)
'''

CELL_003_DETACH = '''
print(x.requires_grad)
y = x.detach()
print(y.requires_grad)
print(x.eq(y).all())
'''


def test_tutorial_003_cell_by_cell():
    nb = Notebook()
    for source, expected in CELLS_003_START:
        assert masked(nb.run(source)) == expected
    check_requires_grad_cell(nb, nb.run(CELL_003_REQUIRES_GRAD))
    assert nb.run("# out.backward()\nprint(x.grad)  # before backprop") == "None\n"
    assert masked(nb.run("out.backward()\nprint(x.grad)  # after backprop")) == GRAD_45
    assert nb.run("x = torch.randn(3, requires_grad=True)\n\ny = x * 2") == ""
    k = check_while_cell(nb, nb.run("while y.data.norm() < 1000:\n    y = y * 2\nprint(y)"))
    assert run_error(nb, "y.backward()  # y这里不为标量\nprint(x.grad)") == IMPLICIT
    output = nb.run(CELL_003_V)
    expected = np.array([0.1, 1.0, 0.001], dtype=np.float32) * 2.0 ** k
    np.testing.assert_allclose(nb["x"].grad.numpy(), expected, rtol=1e-6)
    assert_printed(output, expected)
    assert masked(nb.run(CELL_NO_GRAD.replace("with", "\nwith"))) == "True\nTrue\nFalse"
    assert masked(nb.run(CELL_003_DETACH)) == "True\nFalse\ntensor(True)"


# ------------------------------------------------------------------ 004: displayed values

VECTOR = r"tensor\(\[[-\d., e+]+\]{suffix}\)"


def test_tutorial_004_displays():
    nb = Notebook()
    shown = nb.run("x = torch.randn(4, requires_grad=True)\nx")
    assert re.fullmatch(VECTOR.format(suffix=r",\s+requires_grad=True"), shown.strip())
    x = nb["x"].detach().numpy()
    assert_printed(shown, x)
    shown = nb.run("y = x+2\ny")
    assert re.fullmatch(VECTOR.format(suffix=r",\s+grad_fn=<AddBackward0>"), shown.strip())
    assert_printed(shown, x + 2)
    assert re.fullmatch(r"<AddBackward0( object)? at 0x\.\.\.>", masked(nb.run("y.grad_fn")))
    shown = nb.run("z = y.mean()\nz")
    assert re.fullmatch(r"tensor\(-?\d+\.\d{4}, grad_fn=<MeanBackward0>\)", shown.strip())
    assert_printed(shown, [np.mean(x + 2)])
    assert nb.run("z.backward() ## backward propagation") == ""
    assert nb.run("x.grad").strip() == "tensor([0.2500, 0.2500, 0.2500, 0.2500])"

    shown = nb.run("x = torch.randn(4, requires_grad=True)\ny = x**2\ny, y.shape")
    assert re.fullmatch(r"\(tensor\(\[[\d., e+-]+\],\s+grad_fn=<PowBackward0>\),\s+"
                        r"torch\.Size\(\[4\]\)\)", shown.strip())
    x = nb["x"].detach().numpy()
    assert_printed(shown, x ** 2)
    nb.run("v = torch.rand(4)\ny.backward(v)")
    v = nb["v"].numpy()
    np.testing.assert_allclose(nb["x"].grad.numpy(), 2 * x * v, rtol=1e-6)
    assert_printed(nb.run("x.grad"), 2 * x * v)

    shown = nb.run("x = torch.randn((2, 5), requires_grad=True)\nx")
    assert shown.startswith("tensor([[") and shown.strip().endswith("]], requires_grad=True)")
    assert "\n        [" in shown
    x = nb["x"].detach().numpy()
    assert_printed(shown, x)
    shown = nb.run("y = x + 8\ny, y.shape")
    assert "grad_fn=<AddBackward0>)," in shown and shown.strip().endswith(
        "torch.Size([2, 5]))")
    assert_printed(shown.split("torch.Size")[0], x + 8)
    nb.run("m = torch.rand([2,5])\ny.backward(m)")
    np.testing.assert_allclose(nb["x"].grad.numpy(), nb["m"].numpy())
    assert_printed(nb.run("x.grad"), nb["m"].numpy())

    shown = nb.run("a = torch.randn(2, requires_grad=True)\n"
                   "b = torch.randn(2, requires_grad=True)\n"
                   "c = torch.randn(2, requires_grad=True)\na, b, c")
    assert shown.count("requires_grad=True") == 3
    values = {name: nb[name].detach().numpy().copy() for name in "abc"}
    shown = nb.run("a.requires_grad_(False)\na")
    assert re.fullmatch(VECTOR.format(suffix=""), shown.strip())
    assert_printed(shown, values["a"])
    shown = nb.run("b.detach()")
    assert re.fullmatch(VECTOR.format(suffix=""), shown.strip())
    assert_printed(shown, values["b"])
    shown = nb.run("with torch.no_grad():\n    c = c+0\nc")
    assert re.fullmatch(VECTOR.format(suffix=""), shown.strip())
    assert_printed(shown, values["c"])


# ------------------------------------------------------------------ the example script


def test_example_script_runs_end_to_end(monkeypatch, capsys):
    import runpy
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "autograd_tutorial.py"
    if not hasattr(srcgrad, "Tensor"):
        for name, value in vars(_facade()).items():
            if not name.startswith("__"):
                monkeypatch.setattr(srcgrad, name, value, raising=False)
    runpy.run_path(str(path), run_name="__main__")
    text = masked(capsys.readouterr().out)
    assert GRAD_45 in text and FREED in text and IMPLICIT in text
    assert "tensor(True)" in text and "def out_backward(b_out=1.0):" in text
