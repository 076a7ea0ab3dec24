"""The public API: grad (wrt forms, decorator, preserve_result, verbose, cache),
value_and_grad, vjp, source, the command line, linecache registration, lambdas, dtypes."""
import functools
import linecache
import math
import os
import subprocess
import sys
import textwrap
import traceback

import numpy as np
import pytest

import srcgrad
import srcgrad.api

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def f3(x, y, z):
    return x * y ** 2 + np.sin(z) * x


X, Y, Z = 0.7, 1.3, -0.4
DX = Y ** 2 + np.sin(Z)
DY = 2 * X * Y
DZ = np.cos(Z) * X


# -- wrt forms --------------------------------------------------------------------------------
def test_wrt_default_is_first_argument():
    assert srcgrad.grad(f3)(X, Y, Z) == pytest.approx(DX)


@pytest.mark.parametrize("wrt, expected", [
    (1, DY), ("y", DY), ("z", DZ), (2, DZ),
    ((0, 2), (DX, DZ)), (("x", "y"), (DX, DY)), ((2, "x"), (DZ, DX)), ([1], (DY,)),
    ((0,), (DX,)),
])
def test_wrt_as_index_name_or_tuple(wrt, expected):
    g = srcgrad.grad(f3, wrt=wrt)(X, Y, Z)
    if isinstance(expected, tuple):
        assert isinstance(g, tuple) and len(g) == len(expected)
        for gi, ei in zip(g, expected):
            assert gi == pytest.approx(ei)
    else:
        assert not isinstance(g, tuple)
        assert g == pytest.approx(expected)


def test_keyword_arguments_at_call_time():
    g = srcgrad.grad(f3, wrt=("x", "z"))
    gx, gz = g(X, y=Y, z=Z)
    assert gx == pytest.approx(DX) and gz == pytest.approx(DZ)


def test_wrt_parameter_with_default_value():
    def f(x, scale=3.0):
        return scale * x * x

    assert srcgrad.grad(f)(2.0) == pytest.approx(12.0)
    assert srcgrad.grad(f, wrt="scale")(2.0) == pytest.approx(4.0)
    assert srcgrad.grad(f, wrt="scale")(2.0, scale=5.0) == pytest.approx(4.0)


def test_unknown_wrt_name_lists_parameters():
    with pytest.raises(srcgrad.SrcgradError, match="x, y, z"):
        srcgrad.grad(f3, wrt="w")


# -- decorator forms --------------------------------------------------------------------------
@srcgrad.grad
def decorated_square(x):
    return x * x + 1


@srcgrad.grad(wrt="b")
def decorated_with_wrt(a, b):
    return a * b * b


def test_bare_decorator():
    assert decorated_square(3.0) == 6.0
    assert decorated_square.__name__ == "decorated_square"


def test_decorator_with_arguments():
    assert decorated_with_wrt(2.0, 3.0) == 12.0


@srcgrad.value_and_grad
def decorated_value_and_grad(x):
    return np.exp(x)


def test_value_and_grad_decorator():
    value, g = decorated_value_and_grad(0.5)
    assert value == pytest.approx(math.exp(0.5)) and g == pytest.approx(math.exp(0.5))


# -- results ----------------------------------------------------------------------------------
def test_preserve_result():
    # (value, gradient), the order of value_and_grad (issue 13)
    value, g = srcgrad.grad(f3, wrt=(0, 1), preserve_result=True)(X, Y, Z)
    assert value == pytest.approx(f3(X, Y, Z))
    assert g[0] == pytest.approx(DX) and g[1] == pytest.approx(DY)


def test_value_and_grad():
    value, g = srcgrad.value_and_grad(f3, wrt="y")(X, Y, Z)
    assert value == pytest.approx(f3(X, Y, Z)) and g == pytest.approx(DY)


def test_value_and_grad_of_array_function():
    def loss(w, x):
        return np.mean(np.tanh(x @ w) ** 2)

    rng = np.random.default_rng(0)
    w, x = rng.standard_normal(3), rng.standard_normal((4, 3))
    value, gw = srcgrad.value_and_grad(loss)(w, x)
    assert value == pytest.approx(loss(w, x))
    assert gw.shape == w.shape


# -- vjp --------------------------------------------------------------------------------------
def scaled_power(x, n, label):
    assert isinstance(label, str)
    return x ** n * 2


def test_vjp_gives_none_for_integer_and_string_arguments():
    x = np.array([1.0, 2.0, 3.0])
    value, pullback = srcgrad.vjp(scaled_power, x, 3, "cube")
    np.testing.assert_allclose(value, 2 * x ** 3)
    grads = pullback(np.array([1.0, 0.5, -1.0]))
    assert isinstance(grads, tuple) and len(grads) == 3
    np.testing.assert_allclose(grads[0], 6 * x ** 2 * np.array([1.0, 0.5, -1.0]))
    assert grads[1] is None and grads[2] is None


def test_vjp_none_for_bool_and_none_arguments():
    def f(x, flag, extra):
        return x * 3 if flag and extra is None else x

    value, pullback = srcgrad.vjp(f, 2.0, True, None)
    assert value == 6.0
    assert pullback(1.0) == (3.0, None, None)


def test_vjp_of_structured_output_and_input():
    def f(p):
        return {"s": p["a"] * p["b"], "t": (p["a"] ** 2, p["b"])}

    value, pullback = srcgrad.vjp(f, {"a": 2.0, "b": 3.0})
    (g,) = pullback({"s": 1.0, "t": (1.0, 0.5)})
    assert g["a"] == pytest.approx(3.0 + 4.0) and g["b"] == pytest.approx(2.0 + 0.5)


def test_vjp_kwargs_are_not_differentiated():
    def f(x, scale=1.0):
        return x * scale

    value, pullback = srcgrad.vjp(f, 2.0, scale=4.0)
    assert value == 8.0 and pullback(1.0) == (4.0,)


# -- source -----------------------------------------------------------------------------------
def test_source_of_grad_function_pullback_and_plain_function():
    text = srcgrad.source(srcgrad.grad(f3))
    assert "def f3_fwd" in text and "def f3_bwd" in text
    assert "# forward sweep" in text and "# backward sweep" in text
    _, pullback = srcgrad.vjp(f3, X, Y, Z)
    assert "def f3_bwd" in srcgrad.source(pullback)
    assert srcgrad.source(f3) == srcgrad.source(srcgrad.grad(f3, wrt=0))
    compile(text, "<test>", "exec")


def test_source_of_other_objects_raises():
    with pytest.raises(srcgrad.SrcgradError):
        srcgrad.source(42)
    with pytest.raises(srcgrad.SrcgradError):
        srcgrad.source(np.sin)


def test_source_depends_on_wrt():
    assert srcgrad.source(srcgrad.grad(f3, wrt=0)) != srcgrad.source(srcgrad.grad(f3, wrt=2))


# -- verbose and cache -----------------------------------------------------------------------
def verbose_target(x):
    return x * x * 4


def test_verbose_prints_the_generated_source(capsys):
    g = srcgrad.grad(verbose_target, verbose=True)
    assert g(1.0) == 8.0
    out = capsys.readouterr()
    printed = out.out + out.err
    assert "def verbose_target_bwd" in printed
    assert srcgrad.source(g).strip() in printed


def test_not_verbose_prints_nothing(capsys):
    srcgrad.grad(verbose_target)(2.0)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def cached_target(x, y):
    return np.sin(x) * y


def test_second_grad_reuses_the_cached_adjoint():
    first = srcgrad.grad(cached_target)
    second = srcgrad.grad(cached_target)
    assert first.__srcgrad_adjoint__() is second.__srcgrad_adjoint__()
    assert first(0.5, 2.0) == second(0.5, 2.0)
    other_wrt = srcgrad.grad(cached_target, wrt=1)
    assert other_wrt.__srcgrad_adjoint__() is not first.__srcgrad_adjoint__()
    assert srcgrad.grad(cached_target, wrt="y").__srcgrad_adjoint__() is \
        other_wrt.__srcgrad_adjoint__()


def test_cache_clear_rebuilds():
    before = srcgrad.grad(cached_target).__srcgrad_adjoint__()
    srcgrad.api._CACHE.clear()
    after = srcgrad.grad(cached_target).__srcgrad_adjoint__()
    assert after is not before and after.source == before.source


def test_closures_from_one_def_share_an_adjoint_but_use_their_own_cells():
    def make(k):
        def f(x):
            return x * k * k
        return f

    f2, f5 = make(2.0), make(5.0)
    assert srcgrad.grad(f2)(1.0) == 4.0
    assert srcgrad.grad(f5)(1.0) == 25.0
    assert srcgrad.grad(f2).__srcgrad_adjoint__() is srcgrad.grad(f5).__srcgrad_adjoint__()


# -- command line -----------------------------------------------------------------------------
_CLI_MODULE = textwrap.dedent("""\
    import numpy as np


    def model(x, w):
        h = np.tanh(x * w)
        return h * h


    def broken(x):
        global G
        return x
""")


def _run_cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "srcgrad", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=60)


def test_cli_show(tmp_path):
    path = tmp_path / "mymodel.py"
    path.write_text(_CLI_MODULE)
    result = _run_cli("show", f"{path}:model", "--wrt", "w", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "def model_bwd" in result.stdout
    assert "# backward sweep" in result.stdout
    assert "mymodel.py:5  h = np.tanh(x * w)" in result.stdout
    assert "bw" in result.stdout


def test_cli_show_several_wrt_and_relative_path(tmp_path):
    (tmp_path / "mymodel.py").write_text(_CLI_MODULE)
    result = _run_cli("show", "mymodel.py:model", "--wrt", "x,1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "bx" in result.stdout and "bw" in result.stdout


def test_cli_reports_errors(tmp_path):
    (tmp_path / "mymodel.py").write_text(_CLI_MODULE)
    result = _run_cli("show", "mymodel.py:broken", cwd=tmp_path)
    assert result.returncode == 1
    assert "mymodel.py:10" in result.stderr and "global" in result.stderr
    missing = _run_cli("show", "nothere.py:f", cwd=tmp_path)
    assert missing.returncode != 0 and "nothere.py" in missing.stderr


# -- linecache: tracebacks show generated code ------------------------------------------------
def divides(x, y):
    z = x * 2
    return z / y


def test_traceback_inside_generated_code_shows_generated_lines():
    g = srcgrad.grad(divides)
    with pytest.raises(ZeroDivisionError) as info:
        g(1.0, 0.0)
    frames = [fr for fr in traceback.extract_tb(info.value.__traceback__)
              if fr.filename.startswith("<srcgrad")]
    assert frames, "the exception should pass through generated code"
    frame = frames[-1]
    assert frame.line, "linecache must know the generated source"
    assert frame.line in srcgrad.source(g)
    assert "/" in frame.line
    text = "".join(traceback.format_exception(info.value))
    assert frame.line in text and "divides" in frame.filename


def test_generated_file_is_registered_with_linecache():
    g = srcgrad.grad(divides)
    adj = g.__srcgrad_adjoint__()
    lines = linecache.getlines(adj.filename)
    assert "".join(lines) == adj.source


def test_backward_sweep_error_traceback_points_at_generated_code():
    def f(x):
        return np.sin(x) * 2

    _, pullback = srcgrad.vjp(f, np.ones(3))
    with pytest.raises(srcgrad.SrcgradError, match="cotangent must have the shape"):
        pullback(np.ones(4))  # wrong cotangent shape: refused at the boundary
    with pytest.raises(TypeError) as info:
        pullback(np.array(["a", "b", "c"]))  # the right shape, but no arithmetic on it
    frames = [fr for fr in traceback.extract_tb(info.value.__traceback__)
              if fr.filename.startswith("<srcgrad")]
    assert frames and all(fr.line for fr in frames)
    assert any("_bwd" in fr.name for fr in frames)


# -- lambdas ----------------------------------------------------------------------------------
def test_grad_of_lambdas():
    assert srcgrad.grad(lambda x: x ** 3)(2.0) == pytest.approx(12.0)
    assert srcgrad.grad(lambda x, y: x * y ** 2, wrt=1)(2.0, 3.0) == pytest.approx(12.0)
    assert srcgrad.grad(lambda x, y: x * y ** 2, wrt="y")(2.0, 3.0) == pytest.approx(12.0)
    square = lambda v: np.sum(v * v)  # noqa: E731
    np.testing.assert_allclose(srcgrad.grad(square)(np.array([1.0, -2.0])), [2.0, -4.0])


def test_lambdas_on_one_line_with_different_parameters():
    double, triple = (lambda a: a * 2), (lambda b: b * 3)
    assert srcgrad.grad(double)(1.0) == 2.0 and srcgrad.grad(triple)(1.0) == 3.0


def test_ambiguous_lambdas_on_one_line_raise_a_clear_error():
    double, triple = (lambda a: a * 2), (lambda a: a * 3)
    try:
        assert srcgrad.grad(double)(1.0) == 2.0
        assert srcgrad.grad(triple)(1.0) == 3.0
    except srcgrad.SrcgradError as e:
        assert "lambda" in str(e) and "def" in str(e)


def test_lambda_with_default_and_closure():
    k = 1.5
    f = lambda x, p=2.0: k * x ** p  # noqa: E731
    assert srcgrad.grad(f)(2.0) == pytest.approx(6.0)
    assert srcgrad.grad(f, wrt="p")(2.0, 3.0) == pytest.approx(1.5 * 8 * math.log(2.0))


def test_lambda_spanning_lines_in_a_call():
    g = srcgrad.grad(
        lambda x: np.sum(
            x * x),
    )
    np.testing.assert_allclose(g(np.array([3.0])), [6.0])


def test_lambda_as_dict_value():
    losses = {
        "square": lambda x: x * x,
        "cube": lambda x: x ** 3,
    }
    assert srcgrad.grad(losses["square"])(3.0) == 6.0
    assert srcgrad.grad(losses["cube"])(1.0) == 3.0


# -- dtypes -----------------------------------------------------------------------------------
def f32_elementwise(x, w):
    return x[0, 0] * w[1, 0] + x[1, 2] ** 2


def f32_model(x, w):
    h = np.tanh(x @ w)
    for _ in range(2):
        h = h * 1.5 + 0.1
    return np.sum(h ** 2) / 2 + np.mean(x * 3)


def test_float32_inputs_keep_float32_gradients_without_reductions():
    x = np.full((2, 3), 0.5, np.float32)
    w = np.full((3, 2), 0.1, np.float32)
    gx, gw = srcgrad.grad(f32_elementwise, wrt=(0, 1))(x, w)
    assert gx.dtype == np.float32 and gw.dtype == np.float32


def test_float32_inputs_keep_float32_gradients():
    x = np.full((2, 3), 0.5, np.float32)
    w = np.full((3, 2), 0.1, np.float32)
    gx, gw = srcgrad.grad(f32_model, wrt=(0, 1))(x, w)
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    g64 = srcgrad.grad(f32_model, wrt=(0, 1))(x.astype(np.float64), w.astype(np.float64))
    np.testing.assert_allclose(gx, g64[0], rtol=1e-5)


def test_float32_scalar_keeps_its_type():
    def f(x):
        return x * x + np.sin(x)

    g = srcgrad.grad(f)(np.float32(0.5))
    assert np.asarray(g).dtype == np.float32


def test_python_float_gradient_for_python_float_input():
    g = srcgrad.grad(lambda x: x * x * 3)(2.0)
    assert isinstance(g, float) or np.ndim(g) == 0
    assert g == 12.0


# -- what exactly is differentiated -----------------------------------------------------------
class _Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return self.w * x * x


def test_grad_of_bound_method():
    m = _Model(2.0)
    assert srcgrad.grad(m.loss)(1.5) == pytest.approx(6.0)


def test_grad_of_unbound_method_with_respect_to_self():
    g = srcgrad.grad(_Model.loss, wrt=0)(_Model(2.0), 1.5)
    assert isinstance(g, _Model) and g.w == pytest.approx(2.25)


def _passthrough(f):
    @functools.wraps(f)
    def wrapper(x):
        return f(x) * 2
    return wrapper


@_passthrough
def _wrapped_square(x):
    return x * x


@_passthrough
def _wrapped_cube(x):
    return x ** 3


def test_functools_wraps_decorated_functions():
    assert srcgrad.grad(_wrapped_square)(2.0) == pytest.approx(8.0)
    assert srcgrad.grad(_wrapped_cube)(2.0) == pytest.approx(24.0)


def test_call_to_decorated_function_inside_differentiated_code():
    def uses_wrapped(x):
        return _wrapped_square(x) + x

    assert srcgrad.grad(uses_wrapped)(1.5) == pytest.approx(4 * 1.5 + 1)


def test_plain_decorator_closures_are_distinguished():
    def doubler(f):
        def wrapper(x):
            return f(x) * 2
        return wrapper

    g1 = doubler(lambda x: x * x)
    g2 = doubler(lambda x: x ** 3)
    assert srcgrad.grad(g1)(2.0) == pytest.approx(8.0)
    assert srcgrad.grad(g2)(2.0) == pytest.approx(24.0)


# -- stop_gradient, no_grad blocks, user rules ------------------------------------------------
def _with_no_grad(x):
    with srcgrad.no_grad():
        scale = np.sum(x ** 2)
    return np.sum(x * scale) + np.sum(srcgrad.stop_gradient(x) * x)


def test_no_grad_block_and_stop_gradient_cut_the_gradient():
    x = np.array([1.0, 2.0])
    # d/dx [sum(x) * c + sum(c' * x)] with c = |x|^2 and c' = x held constant
    np.testing.assert_allclose(srcgrad.grad(_with_no_grad)(x), np.sum(x ** 2) + x)


def _opaque_softsign(x):
    return x / (1.0 + np.abs(x))


@srcgrad.rule(_opaque_softsign)
def _opaque_softsign_vjp(g, ans, x):
    return g / (1.0 + np.abs(x)) ** 2   # a single cotangent may be returned bare


def test_user_rule_is_used_instead_of_the_source():
    def f(x):
        return np.sum(_opaque_softsign(x) ** 2)

    x = np.array([0.5, -1.5, 2.0])
    expected = 2 * _opaque_softsign(x) / (1.0 + np.abs(x)) ** 2
    np.testing.assert_allclose(srcgrad.grad(f)(x), expected)


def test_registering_the_same_user_rule_again_replaces_it():
    # (re-running a notebook cell; tests/test_packaging.py has the rest)
    srcgrad.rule(_opaque_softsign)(_opaque_softsign_vjp)
    test_user_rule_is_used_instead_of_the_source()


def _jumpy(x):
    return float(np.floor(x))


def test_nondifferentiable_marks_a_function_as_constant():
    srcgrad.nondifferentiable(_jumpy)

    def f(x):
        return x * _jumpy(x)

    assert srcgrad.grad(f)(2.5) == 2.0


# -- two lambdas with the same parameters on one line (issue 13) -----------------------------
_TWICE, _THRICE = (lambda x: np.sin(x) * 2.0), (lambda x: np.sin(x) * 3.0)
_SQUARE_AND_CUBE = [lambda x: x ** 2, lambda x: x ** 3]


def test_lambdas_on_one_line_are_told_apart_by_their_columns():
    import sys
    if sys.version_info < (3, 11):
        pytest.skip("code objects record columns from Python 3.11")
    assert srcgrad.grad(_TWICE)(0.5) == pytest.approx(2 * np.cos(0.5))
    assert srcgrad.grad(_THRICE)(0.5) == pytest.approx(3 * np.cos(0.5))
    assert srcgrad.grad(_SQUARE_AND_CUBE[0])(2.0) == pytest.approx(4.0)
    assert srcgrad.grad(_SQUARE_AND_CUBE[1])(2.0) == pytest.approx(12.0)
