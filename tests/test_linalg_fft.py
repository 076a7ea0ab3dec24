"""Linear algebra (svd, eigh, eigvalsh, eig, eigvals, qr, pinv, lstsq, matrix_power, matrix
norms of singular values) and FFT rules end to end: user functions differentiated by
``srcgrad.grad``, ``srcgrad.jvp`` and ``srcgrad.hessian``, against finite differences and
against PyTorch. The rules themselves are checked point by point in test_rules.py."""
import numpy as np
import pytest

import srcgrad
from fdcheck import check_grad
from srcgrad.errors import UnsupportedFeatureError

RNG = np.random.default_rng(10)
WEIGHTS4 = np.array([0.3, -1.2, 0.7, 2.0])
WEIGHTS3 = WEIGHTS4[:3]


def separated(m, n, values=(3.0, 1.9, 1.1, 0.5)):
    """An m x n matrix with singular values ``values`` (well apart: derivatives exist)."""
    left, _ = np.linalg.qr(RNG.standard_normal((m, m)))
    right, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    k = min(m, n)
    return (left[:, :k] * np.asarray(values[:k])) @ right[:, :k].T


def symmetric(n, values=(-1.2, 0.4, 1.5, 3.0)):
    q, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    return (q * np.asarray(values[:n])) @ q.T


TALL = separated(4, 3)
WIDE = separated(3, 4)
SYM = symmetric(3)
GENERAL = RNG.standard_normal((3, 3)) + np.array([[0.0, 2.0, 0.0], [-2.0, 0.0, 0.0],
                                                  [0.0, 0.0, 1.0]])
SIGNAL = RNG.standard_normal(8)
IMAGE = RNG.standard_normal((3, 4))
RHS = RNG.standard_normal(4)


# --------------------------------------------------------------------------- user functions

def singular_value_sum(A):
    return np.linalg.svd(A, compute_uv=False).sum()


def svd_everything(A):
    # Each term is invariant under the sign of a singular pair, as a loss should be.
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    return (np.sum(U[:, 0] ** 2 * WEIGHTS4[:U.shape[0]]) + np.sum(s ** 3)
            + np.sum(np.abs(Vt[1]) * WEIGHTS4[:Vt.shape[1]]))


def low_rank_error(A):
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    approx = (U[:, :2] * s[:2]) @ Vt[:2]
    return np.sum((A - approx) ** 2 * (1.0 + A))


def eigh_terms(S):
    w, v = np.linalg.eigh(S)
    return np.sum(w * WEIGHTS3) + np.sum(v[:, 0] ** 2 * WEIGHTS3) + np.sum(v[1] ** 2 * w)


def eigvalsh_cubes(S):
    return np.sum(np.linalg.eigvalsh(S, UPLO="U") ** 3)


def eig_terms(A):
    w, v = np.linalg.eig(A)
    # |w| and |v|^2 do not depend on the phase an eigenvector is normalized to
    return np.sum(np.abs(w) * WEIGHTS3) + np.sum(np.abs(v[:, 1]) ** 2 * WEIGHTS3)


def eigvals_real_parts(A):
    return np.sum(np.real(np.linalg.eigvals(A)) ** 2) + np.prod(np.abs(np.linalg.eigvals(A)))


def qr_terms(A):
    Q, R = np.linalg.qr(A)
    return np.sum(Q ** 2 * A) + np.sum(np.diag(R) ** 2) + np.sum(np.triu(R, 1))


def pinv_energy(A):
    return np.sum(np.linalg.pinv(A) ** 2 * np.arange(1.0, 1.0 + A.size).reshape(A.T.shape))


def matrix_powers(S):
    M = S + 3.0 * np.eye(3)
    return np.sum(np.linalg.matrix_power(M, 3) * SYM) + np.sum(np.linalg.matrix_power(M, -2))


def least_squares(A, b):
    x, residuals, rank, s = np.linalg.lstsq(A, b, rcond=None)
    return np.sum(x ** 2 * WEIGHTS3) + residuals[0] + s[-1]


def matrix_norms(A):
    return np.linalg.norm(A, 2) + 0.5 * np.linalg.norm(A, "nuc") - np.linalg.norm(A, -2) ** 2


def power_spectrum(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2)


def filtered(x):
    spectrum = np.fft.rfft(x, n=10) * np.exp(-np.arange(6.0))
    return np.sum(np.fft.irfft(spectrum, n=10) ** 3)


def complex_transforms(x):
    z = np.fft.fft(x * x, norm="ortho")
    back = np.fft.ifft(z * np.conj(z))
    return np.sum(np.real(back) * np.arange(8.0)) + np.sum(np.imag(np.fft.ifft(z)) ** 2)


def two_dimensional(A):
    F = np.fft.fft2(A, s=(4, 5))
    G = np.fft.rfftn(A ** 2, axes=(0, 1), norm="forward")
    return (np.sum(np.abs(F) ** 2 * np.arange(5.0)) + np.sum(np.real(np.fft.ifftn(F)))
            + np.sum(np.fft.irfftn(G * G, s=A.shape, axes=(0, 1))))


# (id, function, arguments, wrt)
CASES = [
    ("svd_values", singular_value_sum, (TALL,), (0,)),
    ("svd_values_wide", singular_value_sum, (WIDE,), (0,)),
    ("svd_tall", svd_everything, (TALL,), (0,)),
    ("svd_wide", svd_everything, (WIDE,), (0,)),
    ("svd_low_rank", low_rank_error, (TALL,), (0,)),
    ("eigh", eigh_terms, (SYM,), (0,)),
    ("eigvalsh", eigvalsh_cubes, (SYM,), (0,)),
    ("eig", eig_terms, (GENERAL,), (0,)),
    ("eigvals", eigvals_real_parts, (GENERAL,), (0,)),
    ("qr_tall", qr_terms, (TALL,), (0,)),
    ("qr_square", qr_terms, (GENERAL,), (0,)),
    ("pinv_tall", pinv_energy, (TALL,), (0,)),
    ("pinv_wide", pinv_energy, (WIDE,), (0,)),
    ("matrix_power", matrix_powers, (SYM,), (0,)),
    ("lstsq", least_squares, (TALL, RHS), (0, 1)),
    ("norms", matrix_norms, (TALL,), (0,)),
    ("rfft", power_spectrum, (SIGNAL,), (0,)),
    ("irfft", filtered, (SIGNAL,), (0,)),
    ("fft_ifft", complex_transforms, (SIGNAL,), (0,)),
    ("fft2_fftn", two_dimensional, (IMAGE,), (0,)),
]


def by_id(cases):
    return pytest.mark.parametrize("fn,args,wrt", [c[1:] for c in cases],
                                   ids=[c[0] for c in cases])


def directions(args, wrt, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(np.shape(a)) if i in wrt else np.zeros_like(a)
            for i, a in enumerate(args)]


def shifted(args, vs, eps):
    return [a + eps * v for a, v in zip(args, vs)]


@by_id(CASES)
def test_grad_matches_finite_differences(fn, args, wrt):
    check_grad(fn, args, wrt=wrt)


@by_id(CASES)
def test_jvp_matches_finite_differences(fn, args, wrt):
    vs = directions(args, wrt, 1)
    value, tangent = srcgrad.jvp(fn, tuple(args), tuple(vs))
    eps = 1e-6
    numeric = (fn(*shifted(args, vs, eps)) - fn(*shifted(args, vs, -eps))) / (2 * eps)
    assert value == pytest.approx(fn(*args), rel=1e-12)
    assert tangent == pytest.approx(numeric, rel=1e-6, abs=1e-7)


@by_id(CASES)
def test_hessian_matches_finite_differences(fn, args, wrt):
    # every rule here has a second order: its vjp is made of functions with rules
    index = wrt[0]
    hessian = srcgrad.hessian(fn, wrt=index)(*args)
    x = args[index]
    assert hessian.shape == x.shape + x.shape
    np.testing.assert_allclose(hessian, np.swapaxes(hessian.reshape(x.size, x.size), 0, 1)
                               .reshape(hessian.shape), rtol=1e-6, atol=1e-8)
    v = directions(args, (index,), 2)
    gradient = srcgrad.grad(fn, wrt=index)
    eps = 1e-5
    numeric = (gradient(*shifted(args, v, eps)) - gradient(*shifted(args, v, -eps))) / (2 * eps)
    product = np.tensordot(hessian, v[index], axes=x.ndim)
    np.testing.assert_allclose(product, numeric, rtol=1e-5, atol=1e-6 * np.max(np.abs(numeric)))


def test_svd_values_hessian_is_exact_for_the_frobenius_norm():
    # sum(s**2) == sum(A**2): the Hessian through the SVD rules is 2 I
    def f(A):
        return np.sum(np.linalg.svd(A, compute_uv=False) ** 2)
    np.testing.assert_allclose(srcgrad.hessian(f)(TALL).reshape(12, 12), 2.0 * np.eye(12),
                               atol=1e-9)


def test_parseval():
    # sum |fft(x)|^2 == n sum x^2: gradient 2 n x, Hessian 2 n I
    def f(x):
        return np.sum(np.abs(np.fft.fft(x)) ** 2)
    np.testing.assert_allclose(srcgrad.grad(f)(SIGNAL), 16.0 * SIGNAL, rtol=1e-12)
    np.testing.assert_allclose(srcgrad.hessian(f)(SIGNAL), 16.0 * np.eye(8), atol=1e-10)


# --------------------------------------------------------------------------- documented choices

def test_eigh_reads_only_the_lower_triangle():
    # numpy.linalg.eigh reads the UPLO triangle only: no gradient reaches the other one
    noisy = np.tril(SYM) + np.triu(RNG.standard_normal((3, 3)), 1)
    g = srcgrad.grad(eigh_terms)(noisy)
    assert np.all(np.triu(g, 1) == 0.0)
    check_grad(eigh_terms, (noisy,))
    upper = srcgrad.grad(eigvalsh_cubes)(noisy.T)
    assert np.all(np.tril(upper, -1) == 0.0)


def full_svd_of(A):
    return np.sum(np.linalg.svd(A)[0])


def wide_qr(A):
    return np.sum(np.linalg.qr(A)[1])


def complex_svd(A):
    return np.sum(np.linalg.svd(A * (1.0 + 1.0j), compute_uv=False))


@pytest.mark.parametrize("fn,arg,match", [
    (full_svd_of, TALL, "full_matrices=False"),
    (wide_qr, WIDE, "tall"),
    (complex_svd, TALL, "complex"),
], ids=["svd_full_matrices", "qr_wide", "svd_complex"])
def test_undefined_derivatives_raise(fn, arg, match):
    with pytest.raises(UnsupportedFeatureError, match=match):
        srcgrad.grad(fn)(arg)


def repeated_singular_values(A):
    return np.sum(np.linalg.svd(A, full_matrices=False).S ** 2) + np.sum(
        np.linalg.svd(A, compute_uv=False))


def repeated_eigenvalues(S):
    return np.sum(np.linalg.eigh(S).eigenvalues ** 3) + np.sum(np.linalg.eigvalsh(S))


def test_values_alone_have_gradients_at_repeated_values():
    # only the vectors' derivatives need distinct values: S and eigenvalues alone do not
    a = separated(4, 3, values=(2.0, 2.0, 1.0))
    g = srcgrad.grad(repeated_singular_values)(a)
    assert np.all(np.isfinite(g))
    check_grad(repeated_singular_values, (a,))
    s = symmetric(3, values=(1.5, 1.5, -0.5))
    assert np.all(np.isfinite(srcgrad.grad(repeated_eigenvalues)(s)))
    check_grad(repeated_eigenvalues, (s,))


def named_fields(A):
    return (np.linalg.slogdet(A).logabsdet + np.sum(np.linalg.svd(A, full_matrices=False).S)
            + np.sum(np.linalg.eigh(A + A.T).eigenvalues ** 2) + np.sum(np.linalg.qr(A).R))


def test_named_fields_of_tuple_results_carry_tangents():
    # the tangent of a named tuple is a named tuple of the same kind: `.S` reads it
    a = GENERAL + 3.0 * np.eye(3)
    v = directions((a,), (0,), 3)[0]
    value, tangent = srcgrad.jvp(named_fields, (a,), (v,))
    assert tangent == pytest.approx(np.sum(srcgrad.grad(named_fields)(a) * v), rel=1e-9)
    check_grad(named_fields, (a,))


def test_full_matrices_of_a_square_matrix_is_the_reduced_svd():
    check_grad(full_svd_of, (GENERAL,))


def singular_values_of_full_svd(A):
    U, s, Vt = np.linalg.svd(A)
    return np.sum(s ** 3)


def test_full_matrices_of_a_rectangular_matrix_when_only_s_is_used():
    # reverse mode knows U and Vt are unused; forward mode cannot, and refuses
    check_grad(singular_values_of_full_svd, (TALL,))
    with pytest.raises(UnsupportedFeatureError, match="full_matrices=False"):
        srcgrad.jvp(singular_values_of_full_svd, (TALL,), (TALL,))


@pytest.mark.parametrize("fn,arg", [(singular_value_sum, TALL), (power_spectrum, SIGNAL)],
                         ids=["svd_values", "rfft"])
def test_tensor_facade_agrees_with_the_transformer(fn, arg):
    # the facade reads the same rules (through __array_function__)
    t = srcgrad.tensor(arg, requires_grad=True)
    fn(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), srcgrad.grad(fn)(arg), rtol=1e-12)


# --------------------------------------------------------------------------- oracle: PyTorch

def _torch_svd(torch, A):
    U, s, Vt = torch.linalg.svd(A, full_matrices=False)
    w = torch.tensor(WEIGHTS4, dtype=A.dtype)
    return (torch.sum(U[:, 0] ** 2 * w[:U.shape[0]]) + torch.sum(s ** 3)
            + torch.sum(torch.abs(Vt[1]) * w[:Vt.shape[1]]))


def _torch_eigh(torch, S):
    w, v = torch.linalg.eigh(S)
    c = torch.tensor(WEIGHTS3, dtype=S.dtype)
    return torch.sum(w * c) + torch.sum(v[:, 0] ** 2 * c) + torch.sum(v[1] ** 2 * w)


def _torch_eig(torch, A):
    w, v = torch.linalg.eig(A)
    c = torch.tensor(WEIGHTS3, dtype=A.dtype)
    return torch.sum(torch.abs(w) * c) + torch.sum(torch.abs(v[:, 1]) ** 2 * c)


def _torch_qr(torch, A):
    Q, R = torch.linalg.qr(A)
    return torch.sum(Q ** 2 * A) + torch.sum(torch.diagonal(R) ** 2) + torch.sum(torch.triu(R, 1))


def _torch_lstsq(torch, A, b):
    x = torch.linalg.pinv(A) @ b  # torch's lstsq has no derivative on the CPU driver
    c = torch.tensor(WEIGHTS3, dtype=A.dtype)
    r = b - A @ x
    return torch.sum(x ** 2 * c) + torch.sum(r ** 2) + torch.linalg.svdvals(A)[-1]


def _torch_power_spectrum(torch, x):
    return torch.sum(torch.abs(torch.fft.rfft(x)) ** 2)


def _torch_filtered(torch, x):
    spectrum = torch.fft.rfft(x, n=10) * torch.exp(-torch.arange(6.0, dtype=x.dtype))
    return torch.sum(torch.fft.irfft(spectrum, n=10) ** 3)


TORCH_CASES = [
    ("svd_tall", svd_everything, _torch_svd, (TALL,)),
    ("svd_wide", svd_everything, _torch_svd, (WIDE,)),
    ("eigh", eigh_terms, _torch_eigh, (SYM,)),
    ("eig", eig_terms, _torch_eig, (GENERAL,)),
    ("qr", qr_terms, _torch_qr, (TALL,)),
    ("lstsq", least_squares, _torch_lstsq, (TALL, RHS)),
    ("rfft", power_spectrum, _torch_power_spectrum, (SIGNAL,)),
    ("irfft", filtered, _torch_filtered, (SIGNAL,)),
]


@pytest.mark.parametrize("fn,torch_fn,args", [c[1:] for c in TORCH_CASES],
                         ids=[c[0] for c in TORCH_CASES])
def test_grad_matches_torch(fn, torch_fn, args):
    torch = pytest.importorskip("torch")
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    out = torch_fn(torch, *tensors)
    assert out.item() == pytest.approx(fn(*args), rel=1e-10)
    theirs = torch.autograd.grad(out, tensors)
    ours = srcgrad.grad(fn, wrt=tuple(range(len(args))))(*args)
    ours = ours if isinstance(ours, tuple) else (ours,)
    for mine, other in zip(ours, theirs):
        other = other.numpy()
        if fn is eigh_terms:  # numpy reads the lower triangle, torch reports the symmetric part
            mine, other = mine + np.triu(mine.T, 1), other + other.T - np.diag(np.diag(other))
            mine, other = np.tril(mine), np.tril(other)
        np.testing.assert_allclose(mine, other, rtol=1e-8, atol=1e-10)
