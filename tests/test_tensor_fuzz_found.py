"""Programs the facade fuzzer (tests/facade_fuzzer.py) found srcgrad getting wrong, minimised.

Each runs the same text on srcgrad and on PyTorch (the oracle); the hand-derived expectation
is written next to it, so the cases also check something without PyTorch installed.
"""
import numpy as np
import pytest

import srcgrad

try:
    import torch
except ImportError:  # the hand-derived expectations still run
    torch = None

LIBS = [srcgrad] + ([torch] if torch is not None else [])


def _leaf(lib, values):
    return lib.tensor(np.array(values, dtype=np.float64), requires_grad=True)


def _np(t):
    return None if t is None else t.detach().numpy()


def _same_on_both(program, *values):
    """The program's results on srcgrad, checked equal to PyTorch's when it is installed."""
    ours = [_np(t) for t in program(srcgrad, *[_leaf(srcgrad, v) for v in values])]
    if torch is not None:
        theirs = [_np(t) for t in program(torch, *[_leaf(torch, v) for v in values])]
        for a, b in zip(ours, theirs):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    return ours


# ----------------------------------------------------------------------- views of a base
# (seed 1 programs 60, 82, 160, 222, 291: the value or the gradient missed the update)


def test_an_element_of_a_vector_sees_the_vector_changed_in_place():
    def program(lib, a):
        y = a * 1.0
        v = y[0]  # numpy gives a copied scalar here unless asked for a view
        y.mul_(3)
        out = v * 2
        out.backward()
        return out, a.grad

    out, grad = _same_on_both(program, [0.5, -1.0])
    assert out == 3.0  # 0.5 * 3 * 2
    np.testing.assert_array_equal(grad, [6.0, 0.0])


def test_an_element_updated_in_place_is_its_own_new_value():
    def program(lib, a):
        y = a * 1.0
        v = y[0]
        v.sub_(0.25)
        out = v.sigmoid()
        out.backward()
        return out, a.grad, y

    out, grad, y = _same_on_both(program, [0.5, 2.0])
    s = 1 / (1 + np.exp(-0.25))
    np.testing.assert_allclose(out, s)
    np.testing.assert_allclose(grad, [s * (1 - s), 0.0])
    np.testing.assert_array_equal(y, [0.25, 2.0])


def test_a_reshaped_view_takes_the_history_of_its_base_changed_in_place():
    def program(lib, a):
        y = a.clone()
        flat = y.view(-1)
        y.neg_()
        out = (flat * flat * flat).sum()
        out.backward()
        return out, a.grad

    out, grad = _same_on_both(program, [[0.5, -1.0], [2.0, 1.5]])
    x = np.array([[0.5, -1.0], [2.0, 1.5]])
    np.testing.assert_allclose(out, np.sum(-x ** 3))
    np.testing.assert_allclose(grad, -3 * x ** 2)  # 0 before: flat kept the clone's history


def test_a_slice_takes_the_history_of_its_base_clamped_in_place():
    def program(lib, a):
        y = a * 1.0
        tail = y[1:]
        y.clamp_(-0.5, 0.5)
        out = (tail * tail).sum()
        out.backward()
        return out, a.grad

    out, grad = _same_on_both(program, [0.25, 0.3, 2.0])
    np.testing.assert_allclose(out, 0.3 ** 2 + 0.5 ** 2)
    np.testing.assert_allclose(grad, [0.0, 0.6, 0.0])  # 2.0 was clamped: no gradient


def test_sibling_views_and_views_of_views_follow_an_update_through_one_of_them():
    def program(lib, a):
        y = a * 2.0
        first, rest = y[0], y[1:]
        inner = rest[0]
        first.mul_(3)  # written through y: rest and inner keep their values, y's history
        rest.add_(a[1:])
        out = (y * y).sum() + inner * 10
        out.backward()
        return out, a.grad, y

    out, grad, y = _same_on_both(program, [1.0, 2.0, -1.0])
    np.testing.assert_allclose(y, [6.0, 6.0, -3.0])
    # y = (6a0, 3a1, 3a2); out = 36a0^2 + 9a1^2 + 9a2^2 + 30a1
    np.testing.assert_allclose(grad, [72.0, 18 * 2.0 + 30, 18 * -1.0])


def test_a_reshaped_view_of_a_plain_tensor_updated_with_history_gives_its_base_history():
    # (refused before as 'a reshape or a transpose', seed 2: 101 of 2000 programs)
    def program(lib, a):
        base = lib.zeros(2, 3, dtype=lib.float64)
        flat = base.view(-1)
        flat.add_(a)
        cols = base.t()
        cols[0].mul_(a[:2])  # a transpose's row is a column of the base
        out = (base * base).sum() + (flat * flat).sum()
        out.backward()
        return base, a.grad

    a = np.array([0.5, -1.0, 2.0, 1.5, 0.25, -0.5])
    base, grad = _same_on_both(program, a)
    expected = a.reshape(2, 3).copy()
    expected[:, 0] *= a[:2]
    np.testing.assert_allclose(base, expected)
    # out = 2 * sum(base^2): base[0,0] = a0^2, base[1,0] = a3 a1, the rest a_k
    grad_expected = 4 * a
    grad_expected[0] = 4 * a[0] ** 2 * 2 * a[0]
    grad_expected[1] = 4 * a[1] + 4 * a[3] * a[1] * a[3]  # (a1 is base[0,1] too)
    grad_expected[3] = 4 * a[3] * a[1] * a[1]
    np.testing.assert_allclose(grad, grad_expected)


def test_an_expanded_view_refuses_an_update_as_pytorch_does():
    for lib in LIBS:
        y = lib.zeros(1, 3, dtype=lib.float64) * 1.0
        with pytest.raises(RuntimeError, match="more than one element of the written-to"):
            y.expand(2, 3).add_(_leaf(lib, [1.0, 2.0, 3.0]))


def test_view_refuses_memory_it_cannot_view_as_pytorch_does():
    for lib in LIBS:
        a = _leaf(lib, np.ones((2, 3)))
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            (a.T * 1.0).view(-1)  # (elementwise results keep the transpose's layout)
        flat = (a.T * 1.0).contiguous().view(-1)
        (flat * lib.arange(6, dtype=lib.float64)).sum().backward()
        np.testing.assert_array_equal(_np(a.grad), [[0, 2, 4], [1, 3, 5]])


def test_retain_grad_follows_the_tensor_changed_in_place():
    # seed 3 programs 932, 1645: .grad was the gradient of the value before the change
    def program(lib, a):
        y = 3 - a
        y.retain_grad()
        seen = []
        y.register_hook(lambda g: seen.append(g))  # stays with the value before the change
        y[:2].mul_(2)
        (y * y).sum().backward()
        return y.grad, a.grad, seen[0]

    yg, ag, seen = _same_on_both(program, [0.5, 1.0, 2.0])
    y = np.array([5.0, 4.0, 1.0])
    np.testing.assert_allclose(yg, 2 * y)
    np.testing.assert_allclose(seen, 2 * y * [2, 2, 1])
    np.testing.assert_allclose(ag, -2 * y * [2, 2, 1])


# ----------------------------------------------------------------------- create_graph


def test_second_derivative_through_an_index_assignment():
    # seed 1 programs 27, 52, 191: setitem's vjp treated the Tensor cotangent as a list
    def program(lib, a, b):
        y = a * a
        y[1:] = b * b
        y[..., 0] = 0.5
        out = (y * y * y).sum()
        (ga, gb) = lib.autograd.grad(out, [a, b], create_graph=True)
        (ga.sum() + gb.sum()).backward()
        return ga, gb, a.grad, b.grad

    ga, gb, a2, b2 = _same_on_both(program, [0.5, 1.5, -1.0], [2.0, -0.5])
    np.testing.assert_allclose(ga, [0, 0, 0])
    np.testing.assert_allclose(gb, [6 * 2.0 ** 5, 6 * (-0.5) ** 5])  # y = (0.5, b0^2, b1^2)
    np.testing.assert_allclose(b2, [30 * 2.0 ** 4, 30 * (-0.5) ** 4])


def test_second_derivative_through_a_repeated_index_assignment_counts_the_last_write():
    # the cotangent of the value written: only the last of two writes to one place survives
    ours = _leaf(srcgrad, [1.0, 2.0])
    y = srcgrad.zeros(3, dtype=srcgrad.float64)
    y[srcgrad.tensor([0, 0])] = ours * ours
    (g,) = srcgrad.autograd.grad((y * y).sum(), [ours], create_graph=True)
    np.testing.assert_allclose(_np(g), [0.0, 4 * 8.0])  # d/db of (b1^2)^2, b0 overwritten
    g.sum().backward()
    np.testing.assert_allclose(_np(ours.grad), [0.0, 12 * 4.0])


# ----------------------------------------------------------------------- version counter
# (seed 1 programs 9, 65, 179: srcgrad raised where PyTorch computes the gradient)


def test_a_product_with_a_number_keeps_no_claim_on_its_operand():
    def program(lib, a):
        h = a * 1.0
        y = h * 2.0  # MulBackward0 with a number saves nothing of h
        h.add_(1)
        out = (y * h).sum()
        out.backward()
        return out, a.grad

    out, grad = _same_on_both(program, [0.5, -1.0])
    np.testing.assert_allclose(grad, 4 * np.array([0.5, -1.0]) + 2)


def test_indexing_and_reshaping_keep_no_claim_on_their_input():
    def program(lib, a):
        h = a * 1.0
        picked = h[[0, 0]] + h.reshape(-1)[:2] + h.sum()
        h.mul_(3)
        out = (picked * h[:2]).sum()
        out.backward()
        return out, a.grad

    _same_on_both(program, [0.5, -1.0, 2.0])


def test_relu_refuses_when_its_result_changed_as_pytorch_does():
    # srcgrad's vjp reads the input, but PyTorch's node saves the result and raises
    for lib in LIBS:
        h = _leaf(lib, [0.5, -1.0]) * 1.0
        y = h.relu()
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_a_product_still_refuses_when_the_operand_it_reads_changed():
    for lib in LIBS:
        a, b = _leaf(lib, [0.5, -1.0]), _leaf(lib, [2.0, 3.0])
        h = b * 1.0
        y = a * h  # a's cotangent reads h
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_bmm():
    def program(lib, a, b):
        out = lib.bmm(a, b)
        out.sum().backward()
        return out, a.grad, b.grad

    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (2, 3, 4)), rng.uniform(-1, 1, (2, 4, 2))
    out, ga, gb = _same_on_both(program, a, b)
    np.testing.assert_allclose(out, a @ b)
    with pytest.raises(RuntimeError, match="batch2 must be a 3D tensor"):
        srcgrad.bmm(_leaf(srcgrad, a), _leaf(srcgrad, b[0]))


OVERLAPS = {  # in-place updates reading memory they partly write: PyTorch refuses them
    "y.add_(y.T)": (lambda y: y.add_(y.T), True),
    "y.add_(y[0])": (lambda y: y.add_(y[0]), True),
    "y[1:] = y[:2]": (lambda y: y.__setitem__(slice(1, None), y[:2]), True),
    "y[[0, 1]] = y[1:]": (lambda y: y.__setitem__([0, 1], y[1:]), True),
    "y[0:2].copy_(y[1:3])": (lambda y: y[0:2].copy_(y[1:3]), True),
    "y[[0, 1]] = y[1, 1]": (lambda y: y.__setitem__([0, 1], y[1, 1]), True),  # (one element)
    "y.add_(y)": (lambda y: y.add_(y), False),
    "y[0].add_(y[1])": (lambda y: y[0].add_(y[1]), False),
    "y[:, 0].sub_(y[:, 1])": (lambda y: y[:, 0].sub_(y[:, 1]), False),
    "y[0] = y[0]": (lambda y: y.__setitem__(0, y[0]), False),
    "y[0] = y[:, 0]": (lambda y: y.__setitem__(0, y[:, 0]), False),
}


@pytest.mark.parametrize("name", sorted(OVERLAPS))
def test_partly_overlapping_in_place_updates_refuse_as_pytorch_does(name):
    # seed 3 program 730, seed 4 program 1074: srcgrad computed numpy's answer
    update, refused = OVERLAPS[name]
    for lib in LIBS:
        y = _leaf(lib, np.arange(9.0).reshape(3, 3)) * 1.0
        if refused:
            with pytest.raises(RuntimeError, match="refer to a single memory location"):
                update(y)
        else:
            update(y)


def test_backward_with_inputs_runs_no_hook_off_the_path_to_them():
    # seed 7 program 883: a hook on a tensor that only leads to other leaves ran
    def program(lib, a, b):
        seen = []
        h = b * 3
        h.register_hook(lambda g: seen.append(g))
        y = lib.where(a > 0, a, h)
        (y * y).sum().backward(inputs=[a])
        return a.grad, b.grad, lib.tensor(float(len(seen)))

    ga, gb, calls = _same_on_both(program, [0.5, -1.0], [2.0, 1.0])
    np.testing.assert_allclose(ga, [1.0, 0.0])
    assert gb is None and calls == 0


def test_backward_with_inputs_runs_no_hook_of_another_leaf():
    # seed 8 program 1586: the hook of a leaf left out of inputs ran
    def program(lib, a, b):
        seen = []
        b.register_hook(lambda g: seen.append(g))
        y = lib.where(a > 0, a, b)
        (y * y).sum().backward(inputs=[a], retain_graph=True)
        grads = lib.autograd.grad((y * y).sum(), [a])
        return a.grad, b.grad, grads[0], lib.tensor(float(len(seen)))

    ga, gb, g, calls = _same_on_both(program, [0.5, -1.0], [2.0, 1.0])
    np.testing.assert_allclose(ga, [1.0, 0.0])
    np.testing.assert_allclose(g, [1.0, 0.0])
    assert gb is None and calls == 0


def test_mse_loss_refuses_when_its_target_changed_as_pytorch_does():
    # seed 7 program 291: PyTorch's MseLossBackward0 saves input and target
    for lib in LIBS:
        a, b = _leaf(lib, [0.5, -1.0]), _leaf(lib, [2.0, 1.0])
        loss = lib.nn.functional.mse_loss(a, b, reduction="sum")
        with lib.no_grad():
            b.mul_(0.5)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
