"""The PyTorch autograd tutorial, run unchanged on srcgrad's Tensor facade.

Every code cell of the tutorial's common variants, in order, with ``import srcgrad as torch``
as the only change. Cells that the notebooks show failing (a second ``backward`` through
freed buffers, ``backward`` of a non-scalar without a gradient) print the error the way the
notebooks show it. Random draws are seeded and follow PyTorch's generator, so the output is
the one ``import torch`` prints, memory addresses aside; the last cell goes beyond PyTorch
and prints the backward pass as Python source.

    python examples/autograd_tutorial.py
"""
import srcgrad as torch

torch.manual_seed(0)


def cell(title):
    print(f"\n# --- {title} " + "-" * max(0, 70 - len(title)))


# =============================================================================== Tensor
cell("Create a tensor and set requires_grad=True to track computation with it")
x = torch.ones(2, 2, requires_grad=True)
print(x)

cell("Do a tensor operation")
y = x + 2
print(y)

cell("y was created as a result of an operation, so it has a grad_fn")
print(y.grad_fn)

cell("Do more operations on y")
z = y * y * 3
out = z.mean()
print(z, out)

cell(".requires_grad_( ... ) changes an existing Tensor's requires_grad flag in-place")
a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)

# ============================================================================ Gradients
cell("Before backprop, x.grad is None")
print(x.grad)

cell("Let's backprop now: out.backward() is out.backward(torch.tensor(1.))")
out.backward()
print(x.grad)

cell("Running the same cell again: the graph's buffers were freed")
try:
    out.backward()
    print(x.grad)
except RuntimeError as e:
    print(f"RuntimeError: {e}")

cell("You can do many crazy things with autograd!")
x = torch.randn(3, requires_grad=True)
y = x * 2
while y.data.norm() < 1000:
    y = y * 2
print(y)

cell("y is not a scalar: backward() needs a gradient argument")
try:
    y.backward()
    print(x.grad)
except RuntimeError as e:
    print(f"RuntimeError: {e}")

cell("Pass the vector of the vector-Jacobian product to backward")
gradients = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(gradients)
print(x.grad)

cell("Stop autograd from tracking history with torch.no_grad()")
print(x.requires_grad)
print((x ** 2).requires_grad)
with torch.no_grad():
    print((x ** 2).requires_grad)

cell(".detach() gives a new Tensor with the same content that does not require gradients")
print(x.requires_grad)
y = x.detach()
print(y.requires_grad)
print(x.eq(y).all())

# ======================================================== The same steps, in one cell
cell("One cell: backward, then detach and no_grad")
x = torch.ones(2, 2, requires_grad=True)
y = x + 2
z = y * y * 3
out = z.mean()
out.backward()
print(x.grad)
x = x.detach()
print(x.requires_grad, x.grad)
with torch.no_grad():
    print((x ** 2).requires_grad)

cell("Backward of b = sum(a * a) gives 2 * a")
a = torch.rand(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
b.backward()
print(a.grad)

# ============================================================ Creation of a tensor (repr)
cell("A vector that requires grad")
x = torch.randn(4, requires_grad=True)
print(repr(x))

cell("y = x + 2")
y = x + 2
print(repr(y))

cell("y.grad_fn")
print(repr(y.grad_fn))

cell("z = y.mean()")
z = y.mean()
print(repr(z))

cell("z.backward(); x.grad is dz/dx = 1/4")
z.backward()
print(repr(x.grad))

cell("Non-scalar output: y = x ** 2")
x = torch.randn(4, requires_grad=True)
y = x ** 2
print((y, y.shape))

cell("y.backward(v) with a random v: x.grad = 2 * x * v")
v = torch.rand(4)
y.backward(v)
print(repr(x.grad))

cell("A matrix output")
x = torch.randn((2, 5), requires_grad=True)
print(repr(x))
y = x + 8
print((y, y.shape))

cell("y.backward(m) with a random matrix m: x.grad = m")
m = torch.rand([2, 5])
y.backward(m)
print(repr(x.grad))

cell("Three ways to stop tracking history")
a = torch.randn(2, requires_grad=True)
b = torch.randn(2, requires_grad=True)
c = torch.randn(2, requires_grad=True)
print((a, b, c))

cell("x.requires_grad_(False)")
a.requires_grad_(False)
print(repr(a))

cell("x.detach()")
print(repr(b.detach()))

cell("with torch.no_grad()")
with torch.no_grad():
    c = c + 0
print(repr(c))

# ============================================================ Beyond the tutorial
cell("srcgrad: the backward pass that out.backward() runs, as Python source")
x = torch.ones(2, 2, requires_grad=True)
y = x + 2
z = y * y * 3
out = z.mean()
print(out._backward_source())
