"""What ``srcgrad.source`` shows: the generated functions themselves (no factory around them),
under a header naming what srcgrad binds; exactly the text that runs; for every kind of
object the API returns."""
import ast
import inspect
import linecache
import re
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad import codegen, runtime
from srcgrad.api import get_adjoint
from srcgrad.api_forward import get_forward
from srcgrad.transforms import inline


def loss(x):
    return np.sum(np.sin(x) * x)


def mlp_loss(weights_first_layer, weights_second_layer, inputs):
    hidden = np.tanh(inputs @ weights_first_layer)
    out = hidden @ weights_second_layer
    return np.sum(out ** 2)


def scalar_fn(x):
    y = x * x
    return y * np.exp(x)


def vector_fn(x):
    return np.sin(x) * x[0]


def kept_dims(x):
    return np.sum(np.sum(x, axis=1, keepdims=True) * x)


X = np.array([0.3, -0.7, 1.1])


# -- the shown text is the code that runs ---------------------------------------------------
def _header_names(text: str) -> list[str]:
    """The names the header says srcgrad binds (``#   name = ...`` / ``#   name: ...``)."""
    return re.findall(r"^#   (\w+)(?: = |: )", text, flags=re.M)


def _factory_params(build) -> list[str]:
    code = build._make.__code__
    return list(code.co_varnames[:code.co_argcount])


def _run_shown(build, fn=None):
    """The functions of ``build`` made again from the text ``srcgrad.source`` shows, with
    the names its header lists bound to what srcgrad passes the factory."""
    code = build._make.__code__
    values = list(build._helpers)
    if build._closure_names:
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__))
        values += [cells[n].cell_contents for n in build._closure_names]
    namespace = dict(build.fn.__globals__)
    namespace.update(zip(code.co_varnames[:code.co_argcount], values))
    exec(compile(build.source, "<shown>", "exec"), namespace)
    return namespace


def _check_is_what_runs(build, running: tuple):
    """``build.source`` has no factory, names every factory parameter in its header, is
    the text linecache holds for the running functions, and defines each of them at the
    line its code object starts."""
    text = build.source
    assert "_make" not in text
    compile(text, "<shown>", "exec")
    assert _header_names(text) == _factory_params(build)
    assert "".join(linecache.getlines(build.filename)) == text
    lines = text.splitlines()
    for fn in running:
        assert fn.__code__.co_filename == build.filename
        assert lines[fn.__code__.co_firstlineno - 1].startswith(f"def {fn.__name__}(")
        shown = next(node for node in ast.parse(text).body if getattr(node, "name", None)
                     == fn.__name__)
        assert ast.dump(shown) == ast.dump(ast.parse(inspect.getsource(fn)).body[0])


def test_gradient_source_is_the_two_sweeps_under_a_header():
    text = srcgrad.source(srcgrad.grad(loss))
    assert text.startswith("# srcgrad: forward and backward sweeps of loss "
                           "(test_source_display.py:")
    assert "#   _rt = srcgrad.runtime\n" in text
    assert re.search(r"^#   expand_to = srcgrad\.rules\.[\w.]+\.expand_to$", text, re.M)
    assert re.search(r"^def loss_fwd\(x\):$", text, re.M)
    assert re.search(r"^def loss_bwd\(_saved, b\w+\):$", text, re.M)
    adj = get_adjoint(loss, (0,))
    _check_is_what_runs(adj, adj.sweeps_for(loss))


def test_shown_sweeps_compute_what_the_running_ones_compute():
    adj = get_adjoint(mlp_loss, (0, 1))
    w1, w2, x = np.ones((3, 4)) * 0.1, np.ones((4, 2)) * 0.2, np.arange(15.0).reshape(5, 3)
    shown = _run_shown(adj)
    fwd, bwd = adj.sweeps_for(mlp_loss)
    value, saved = fwd(w1, w2, x)
    shown_value, shown_saved = shown["mlp_loss_fwd"](w1, w2, x)
    assert shown_value == value
    for a, b in zip(bwd(saved, 1.0), shown["mlp_loss_bwd"](shown_saved, 1.0)):
        np.testing.assert_array_equal(a, b)


def test_closure_variables_are_named_in_the_header():
    scale = 2.5

    def scaled(x):
        return np.sin(x) * scale

    adj = get_adjoint(scaled, (0,))
    assert re.search(r"^#   scale: a variable of the closure of .*scaled$", adj.source, re.M)
    shown = _run_shown(adj, scaled)
    value, saved = shown["scaled_fwd"](0.5)
    assert value == pytest.approx(np.sin(0.5) * 2.5)
    assert shown["scaled_bwd"](saved, 1.0)[0] == pytest.approx(np.cos(0.5) * 2.5)


def test_forward_mode_source_is_what_runs():
    built = get_forward(loss, (0,))
    _check_is_what_runs(built, (built.function_for(loss),))
    assert built.source.startswith("# srcgrad: forward mode (jvp) of loss")


# -- rule defaults, line wraps, one runtime alias -------------------------------------------
def test_inlined_rule_calls_leave_out_defaults():
    text = srcgrad.source(srcgrad.grad(loss))
    assert "None" not in text and "False" not in text
    assert re.search(r"= expand_to\(b\w+, \w+\)$", text, re.M), text


def test_a_non_default_after_a_default_is_passed_by_keyword():
    text = srcgrad.source(srcgrad.grad(kept_dims))
    assert re.search(r"expand_to\(b\w+, x, axis=1, keepdims=True\)", text), text
    srcgrad.grad(kept_dims)(np.ones((2, 3)))  # (and it runs)


def _callee(g, x, axis=None, keepdims=False, *, scale=1.0):
    return g


def test_leave_out_defaults_on_a_call_node():
    scope = {"callee": _callee}

    def rewritten(text, mapping_values):
        call = inline.gast.parse(text).body[0].value
        mapping = {k: inline.gast.Constant(value=v, kind=None) for k, v in mapping_values.items()}
        inline._leave_out_defaults(call, scope, mapping)
        return codegen.to_source(inline.gast.Module(body=[inline.gast.Expr(value=call)],
                                                    type_ignores=[])).strip()

    assert rewritten("callee(g, x, axis, keepdims)", {"axis": None, "keepdims": False}) \
        == "callee(g, x)"
    # (names are substituted afterwards: the arguments are still the template's)
    assert rewritten("callee(g, x, axis, keepdims)", {"axis": None, "keepdims": True}) \
        == "callee(g, x, keepdims=keepdims)"
    assert rewritten("callee(g, x, axis, keepdims)", {"axis": 0, "keepdims": False}) \
        == "callee(g, x, axis=axis)"
    assert rewritten("callee(g, x, axis, keepdims, scale=s)", {"axis": None, "keepdims": 0,
                                                                "s": 1.0}) \
        == "callee(g, x, keepdims=keepdims)"  # 0 is not False: kept
    assert rewritten("callee(g, x, axis)", {"axis": 1.0}) == "callee(g, x, axis=axis)"
    assert rewritten("callee(g, x, axis)", {}) == "callee(g, x, axis=axis)"


def test_no_line_is_wrapped():
    long_call = ("result = some_helper_function(first_long_argument_name, "
                 "second_long_argument_name, third_long_argument_name)")
    assert codegen.to_source(ast.parse(long_call)) == long_call + "\n"
    text = srcgrad.source(srcgrad.grad(mlp_loss, wrt=(0, 1)))
    for line in text.splitlines():
        assert line.strip() not in (")", "]", "}"), text
        assert not line.rstrip().endswith(("(", ",")), line


def test_single_element_tuples_keep_their_parentheses():
    text = srcgrad.source(srcgrad.grad(loss))
    assert re.search(r"^    return \(.+,\)$", text, re.M), text
    assert codegen.to_source(ast.parse("return x,")) == "return (x,)\n"


def test_one_runtime_alias_at_higher_order():
    second = srcgrad.grad(srcgrad.grad(scalar_fn))
    assert second(0.3) == pytest.approx((2 + 4 * 0.3 + 0.09) * np.exp(0.3))
    texts = [srcgrad.source(second), srcgrad.source(srcgrad.hessian(loss))]
    srcgrad.hvp(loss, (X,), (np.ones(3),))
    texts.append(srcgrad.source(loss, "hvp"))
    for text in texts:
        assert "_rt" in text and not re.search(r"\b_rt_\d", text), text
        assert text.count("#   _rt = srcgrad.runtime") == text.count("# srcgrad: ")


# -- everything the API returns ---------------------------------------------------------------
def test_source_of_gradient_variants():
    for make in (srcgrad.grad, srcgrad.value_and_grad, srcgrad.elementwise_grad):
        g = make(loss)
        g(X)
        assert srcgrad.source(g) == get_adjoint(loss, (0,)).source


def test_source_of_a_pullback_and_of_f_after_vjp():
    _, pullback = srcgrad.vjp(vector_fn, X)
    text = srcgrad.source(pullback)
    assert "def vector_fn_bwd(" in text
    assert srcgrad.source(vector_fn, "vjp") == text


@pytest.mark.parametrize("api", ["jacfwd", "jacrev", "jacobian"])
def test_source_of_jacobians(api):
    jac = getattr(srcgrad, api)(vector_fn)
    jac(X)
    text = srcgrad.source(jac)
    if api == "jacfwd":
        built = get_forward(vector_fn, (0,))
        assert text == built.source and "def vector_fn_jvp(dx, x):" in text
    else:
        assert text == get_adjoint(vector_fn, (0,)).source


def test_source_of_a_hessian_is_the_forward_over_reverse_code_that_runs():
    h = srcgrad.hessian(loss)
    h(X)
    text = srcgrad.source(h)
    assert text.startswith("# srcgrad: forward mode (jvp) of loss_grad")
    assert "def loss_grad_jvp(dx, x):" in text
    # then the forward mode of the sweeps it calls, not the reverse sweeps themselves
    assert "def loss_fwd_jvp(" in text and "def loss_bwd_jvp(" in text
    assert not re.search(r"^def loss_(fwd|bwd)\(", text, re.M)
    compile(text, "<shown>", "exec")


def test_source_of_a_hessian_of_several_arguments():
    def two(x, y):
        return np.sum(x * x * y)

    h = srcgrad.hessian(two, wrt=(0, 1))
    h(X, X)
    text = srcgrad.source(h)
    assert "def two_grad_jvp(" in text
    compile(text, "<shown>", "exec")


def test_source_of_jvp_and_hvp_after_a_call():
    def cubic(x):
        return np.sum(x ** 3)

    with pytest.raises(srcgrad.SrcgradError, match=r"call srcgrad\.jvp\(cubic, \.\.\.\) first"):
        srcgrad.source(cubic, "jvp")
    with pytest.raises(srcgrad.SrcgradError, match=r"call srcgrad\.hvp\(cubic"):
        srcgrad.source(cubic, "hvp")
    srcgrad.jvp(cubic, (X,), (np.ones(3),))
    text = srcgrad.source(cubic, "jvp")
    assert text == get_forward(cubic, (0,)).source and "def cubic_jvp(dx, x):" in text
    product = srcgrad.hvp(cubic, (X,), (np.ones(3),))
    np.testing.assert_allclose(product, 6 * X)
    assert "def cubic_grad_jvp(" in srcgrad.source(cubic, "hvp")


def test_unknown_kind_is_refused():
    with pytest.raises(srcgrad.SrcgradError, match="kind is one of"):
        srcgrad.source(loss, "backward")


def test_source_of_vmap():
    v = srcgrad.vmap(loss)
    v(np.ones((2, 3)))
    assert "def loss_batched(" in srcgrad.source(v)


def test_differentiating_a_hessian_is_never_the_hessian_again():
    """``functools.wraps`` copied the gradient's markers onto jacfwd's result, so
    differentiating ``hessian(f)`` again silently gave the Hessian instead of the third
    derivative. It is now right or refused."""
    def quartic(x):
        return np.sum(x ** 4)

    x = np.array([1.0, 2.0])
    try:
        third = srcgrad.jacfwd(srcgrad.hessian(quartic))(x)
    except srcgrad.SrcgradError:
        return
    expected = np.zeros((2, 2, 2))
    expected[0, 0, 0], expected[1, 1, 1] = 24 * x
    np.testing.assert_allclose(third, expected)


# -- the emitter ----------------------------------------------------------------------------
def _sample_tree():
    return ast.parse("def f(x):\n    '#: a comment'\n    y = (x,)\n    return f'{y!r}', y\n")


def test_ast_unparse_stands_in_where_astor_cannot_run(monkeypatch):
    with_astor = codegen.to_source(_sample_tree())
    monkeypatch.setattr(codegen, "astor", None)
    without = codegen.to_source(_sample_tree())
    assert "# a comment" in without
    assert ast.dump(ast.parse(without)) == ast.dump(ast.parse(with_astor))


def test_astor_failing_on_removed_node_classes_falls_back(monkeypatch):
    """Python 3.14 removed ast.Str, which astor reads for f-strings."""
    monkeypatch.delattr(ast, "Str", raising=False)
    text = codegen.to_source(_sample_tree())
    assert "f'{y!r}'" in text or 'f"{y!r}"' in text


def test_generation_raises_no_deprecation_warning():
    def fresh(x):
        return np.cos(x) * x

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        text = srcgrad.source(srcgrad.grad(fresh))
    assert "def fresh_bwd(" in text


def test_runtime_is_what_the_header_says():
    adj = get_adjoint(loss, (0,))
    assert adj._helpers[0] is runtime and _factory_params(adj)[0] == "_rt"
