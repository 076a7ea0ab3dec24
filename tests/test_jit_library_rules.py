"""The rules of ``math``, ``statistics`` and numpy functions added in session 33
(tests/test_library_rules.py's functions) under compiled gradients: each gradient with
``jit=True`` is compiled and equal to the interpreted one, or refused with a located
``JitUnsupportedError``, and ``jit='auto'`` then gives the interpreted gradient with a warning;
never a wrong number or another exception. Second order and forward mode for representative
cases (numba's compiles are slow): the ones that compile, and one refusal per kind of
reason (a rule helper without a compiled form, a container helper, a math function numba
lacks, a differentiated stdlib function).
"""
import math
import sys
import warnings
from math import ldexp

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402

import test_library_rules as lib  # noqa: E402
from fdcheck import check_grad  # noqa: E402

ALL = lib.CASES + lib.NONE_LISTS + [lib.a_helper_s_list_joined_twice,
                                    lib.a_list_grown_by_a_helper_in_a_loop]
COMPILED = {lib.copysign_ldexp}  # (the others need rule helpers numba cannot run)
SECOND_ORDER = [lib.copysign_ldexp, lib.fsum_of_products, lib.gamma_lgamma, lib.fmod_of_both,
                lib.statistics_means, lib.none_then_tuple]
TANGENT = np.array([0.3, -0.7, 1.1, 0.5])


def _skip_unsupported(f):
    if f is lib.weighted_fmean and sys.version_info < (3, 11):
        pytest.skip("statistics.fmean takes weights from Python 3.11")


def _refusal_is_located(e):
    """At the user's line, with the hint; not at srcgrad's own code or the standard
    library's alone (a rule's helper differentiated again for an hvp was located in
    srcgrad/rules/, statistics.median in statistics.py)."""
    message = str(e)
    assert message.startswith(lib.__file__ + ":"), message
    assert "jit=False" in message and "jit='auto'" in message, message


@pytest.mark.parametrize("f", ALL, ids=[f.__name__ for f in ALL])
def test_gradient_is_compiled_or_refused_never_wrong(f):
    _skip_unsupported(f)
    want = srcgrad.grad(f)(lib.X4.copy())
    try:
        got = srcgrad.grad(f, jit=True)(lib.X4.copy())
    except JitUnsupportedError as e:
        assert f not in COMPILED, str(e)
        _refusal_is_located(e)
        with pytest.warns(RuntimeWarning, match="jit='auto' runs the interpreted gradient"):
            got = srcgrad.grad(f, jit="auto")(lib.X4.copy())
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def _compiled_or_refused(compute, interpreted):
    try:
        got = compute()
    except JitUnsupportedError as e:
        _refusal_is_located(e)
        return None
    np.testing.assert_allclose(got, interpreted(), rtol=1e-12, atol=1e-14)
    return got


@pytest.mark.parametrize("f", SECOND_ORDER, ids=[f.__name__ for f in SECOND_ORDER])
def test_hvp_jvp_and_vjp_compiled_or_refused_never_wrong(f):
    x = lib.X4.copy()
    hvp = _compiled_or_refused(lambda: srcgrad.hvp(f, (x,), (TANGENT,), jit=True),
                               lambda: srcgrad.hvp(f, (x,), (TANGENT,)))
    jvp = _compiled_or_refused(lambda: srcgrad.jvp(f, (x,), (TANGENT,), jit=True)[1],
                               lambda: srcgrad.jvp(f, (x,), (TANGENT,))[1])
    vjp = _compiled_or_refused(lambda: srcgrad.vjp(f, x, jit=True)[1](1.0),
                               lambda: srcgrad.vjp(f, x)[1](1.0))
    if f in COMPILED:
        assert hvp is not None and jvp is not None and vjp is not None


def test_refusals_in_srcgrad_s_or_the_standard_library_s_code_name_the_user_s_line():
    # fsum_vjp differentiated again (a callee of the compiled hvp), unresize inlined in it
    # (numba's typing error): both were located in srcgrad/rules/ only; statistics.median
    # (differentiated from its source) in statistics.py only
    x = lib.X4.copy()
    with pytest.raises(JitUnsupportedError, match=r"test_library_rules\.py:\d+: .*fsum_vjp"):
        srcgrad.hvp(lib.fsum_of_products, (x,), (TANGENT,), jit=True)
    with pytest.raises(JitUnsupportedError) as refused:
        srcgrad.hvp(lib.np_resize, (x,), (TANGENT,), jit=True)
    message = str(refused.value)
    assert message.startswith(lib.__file__ + ":"), message
    assert "unindex" in message and "numpy_shape.py:" in message, message
    with pytest.raises(JitUnsupportedError, match=r"test_library_rules\.py:\d+: .*"
                                                  r"statistics\.median\(\).*statistics\.py:"):
        srcgrad.grad(lib.statistics_means, jit=True)(x)


def copysign_in_a_loop(x, y):
    # the compiled Hessian-vector product pops the tangent of x * x * i, a variable bound to
    # None before the loop, and copysign's jvp densifies it: numba typed it as maybe None,
    # which densify had no compiled form for (refused: "no compiled gradient of type
    # OptionalType(float64)")
    s = 0.0
    for i in range(4):
        s = s + math.copysign(x * x * i, y - 0.3 * i) + math.ldexp(s * x, -1)
    return s


def test_copysign_in_a_loop_second_order_compiles():
    args, v = (0.7, 1.3), (1.0, -0.5)
    got = srcgrad.hvp(copysign_in_a_loop, args, v, jit=True)
    np.testing.assert_allclose(got, srcgrad.hvp(copysign_in_a_loop, args, v), rtol=1e-12)
    hessian = srcgrad.hessian(copysign_in_a_loop, jit=True)(*args)
    assert hessian == pytest.approx(srcgrad.hessian(copysign_in_a_loop)(*args), rel=1e-12)
    g = srcgrad.grad(copysign_in_a_loop, wrt=(0, 1))
    eps = 1e-6
    plus, minus = g(args[0] + eps * v[0], args[1] + eps * v[1]), \
        g(args[0] - eps * v[0], args[1] - eps * v[1])
    numeric = [(p - m) / (2 * eps) for p, m in zip(plus, minus)]
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)
    check_grad(copysign_in_a_loop, args, wrt=(0, 1),
               grads=srcgrad.grad(copysign_in_a_loop, wrt=(0, 1), jit=True)(*args))


def ldexp_of_a_square(x, i):
    return math.ldexp(x * x, i) + x


def ldexp_imported_from_math(x, i):
    return ldexp(x * x, i) + x


LDEXPS = [ldexp_of_a_square, ldexp_imported_from_math]


@pytest.mark.parametrize("f", LDEXPS, ids=[f.__name__ for f in LDEXPS])
def test_ldexp_overflow_raises_as_in_python(f):
    """numba's math.ldexp gives inf where Python's raises OverflowError: the compiled
    gradient returned inf (and nan for ldexp(x, 1100) * 0.0 + x) where the interpreted one
    raises."""
    compiled = {"grad": lambda *a: srcgrad.grad(f, jit=True)(*a),
                "jvp": lambda *a: srcgrad.jvp(f, a, (1.0, 0), jit=True)[1],
                "hvp": lambda *a: srcgrad.hvp(f, a, (1.0, 0), jit=True)[0]}
    interpreted = {"grad": lambda *a: srcgrad.grad(f)(*a),
                   "jvp": lambda *a: srcgrad.jvp(f, a, (1.0, 0))[1],
                   "hvp": lambda *a: srcgrad.hvp(f, a, (1.0, 0))[0]}
    for kind, run in compiled.items():
        assert run(0.7, -3) == pytest.approx(interpreted[kind](0.7, -3), rel=1e-12)
        with pytest.raises(OverflowError, match="math range error"):
            interpreted[kind](0.7, 1100)
        with pytest.raises(OverflowError, match="math range error"):
            run(0.7, 1100)


def test_vmap_of_compiled_gradients_batches_the_interpreted_one():
    """vmap(grad(f, jit=True)) batches the interpreted gradient: the same numbers for the
    compiled case and for refused ones (no error, as vmap(grad(f)))."""
    xs = np.random.default_rng(5).uniform(0.4, 1.2, (3, 4))
    for f in (lib.copysign_ldexp, lib.np_interp, lib.statistics_spreads):
        want = np.array([srcgrad.grad(f)(x) for x in xs])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", srcgrad.VmapFallbackWarning)
            got = srcgrad.vmap(srcgrad.grad(f, jit=True))(xs)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
