"""Errors that point at the user's code: unsupported syntax (every construct, all reported at
once, with file, real line, construct and hint), missing rules, non-differentiable arguments,
non-scalar outputs; and user names that collide with generated ones."""
import inspect
import math
import os

import numpy as np
import pytest

import srcgrad
from fdcheck import check_grad

THIS_FILE = os.path.basename(__file__)


def line_of(fn, text, occurrence=1):
    """Real line number in this file of the ``occurrence``-th line of ``fn`` containing
    ``text``."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, line in enumerate(lines) if text in line]
    assert len(hits) >= occurrence, f"{text!r} not in the source of {fn.__name__}"
    return hits[occurrence - 1]


def unsupported(fn, *args):
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(fn)(*args)
    assert isinstance(info.value, srcgrad.SrcgradError)
    return str(info.value)


# -- one unsupported construct per function ---------------------------------------------------
G_COUNTER = 0.0


def uses_yield(x):
    y = x * 2
    sent = yield y
    yield sent


def uses_yield_from(x):
    while True:
        yield from [x, x * 2]


def uses_try(x):
    try:
        y = x * 2
    except ValueError:
        y = x
    return y


def uses_try_finally(x):
    y = x
    try:
        y = y * 2
    finally:
        y = y + 1
    return y


def uses_global(x):
    global G_COUNTER
    G_COUNTER = G_COUNTER + 1
    return x * 2


class _Scaled:
    def __init__(self, k):
        self.k = k

    def __enter__(self):
        return self.k

    def __exit__(self, *exc):
        return False


def uses_with(x):
    with _Scaled(x * 2) as k:
        y = x / k
    return y


def uses_match(x, n):
    match [x, n]:
        case [y, 1] | [1, y]:
            pass
        case _:
            y = x * 2
    return y


def uses_walrus(x):
    if x > 5 or (y := x * 2) > 0:
        return x
    return x


def uses_generator_expression(x):
    squares = (v * v for v in [x, 2 * x])
    return next(squares)


def uses_set_comprehension(x):
    s = {round(v, 3) for v in [1.0, 2.0]}
    return x * len(s)


def uses_varargs(x, *args):
    return x * 2


def uses_kwargs(x, **options):
    return x * 2


def uses_class_def(x):
    class Local:
        scale = 2.0
    return x * Local.scale


def _make_nonlocal():
    total = 0.0

    def uses_nonlocal(x):
        nonlocal total
        total = x * 2
        return total * x
    return uses_nonlocal


uses_nonlocal = _make_nonlocal()


def uses_del_element(x):
    xs = [x, x * 2]
    del xs[0]
    return xs[0]


async def uses_async_def(x):
    return x * 2


def uses_await(x):
    async def inner():
        return x
    return x * 2


# (function, text on the construct's line, words the message must contain, hint words)
_CASES = [
    (uses_yield, "sent = yield", ["yield"], ["statement of its own"]),
    (uses_yield_from, "while True", ["infinite generator"], ["bounded"]),
    (uses_try, "try:", ["try"], ["outside"]),
    (uses_try_finally, "try:", ["try"], ["outside"]),
    (uses_global, "global G_COUNTER", ["global"], ["argument"]),
    (uses_with, "with _Scaled", ["context manager", "differentiable"], ["outside"]),
    (uses_match, "case [y, 1]", ["or-pattern that binds"], ["one case each"]),
    (uses_walrus, ":=", [":=", "only sometimes"], ["separate statement"]),
    (uses_generator_expression, "for v in", ["generator expression", "not consumed"],
     ["list comprehension"]),
    (uses_set_comprehension, "{round", ["set comprehension"], ["list comprehension"]),
    (uses_varargs, "def uses_varargs", ["*args"], ["Name each parameter"]),
    (uses_kwargs, "def uses_kwargs", ["**kwargs"], ["Name each parameter"]),
    (uses_class_def, "class Local", ["class"], ["module level"]),
    (uses_nonlocal, "nonlocal total", ["nonlocal"], ["argument"]),
    (uses_del_element, "del xs[0]", ["del"], ["new"]),
]


@pytest.mark.parametrize("fn, marker, construct_words, hint_words", _CASES,
                         ids=[c[0].__name__ for c in _CASES])
def test_unsupported_construct_is_reported_with_file_line_construct_and_hint(
        fn, marker, construct_words, hint_words):
    msg = unsupported(fn, 0.5) if fn is not uses_match else unsupported(fn, 0.5, 1)
    line = line_of(fn, marker)
    assert f"{THIS_FILE}:{line}" in msg, msg
    for word in construct_words:
        assert word in msg, msg
    for word in hint_words:
        assert word in msg, msg
    assert fn.__name__ in msg, msg


def test_async_def_is_unsupported_syntax():
    msg = unsupported(uses_async_def, 0.5)
    assert f"{THIS_FILE}:{line_of(uses_async_def, 'async def')}" in msg
    assert "async def" in msg


def test_async_def_raises_a_srcgrad_error():
    with pytest.raises(srcgrad.SrcgradError) as info:
        srcgrad.grad(uses_async_def)(0.5)
    assert f"{THIS_FILE}:{line_of(uses_async_def, 'async def')}" in str(info.value)


def test_nested_async_def_is_reported():
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(uses_await)(0.5)
    msg = str(info.value)
    assert f"{THIS_FILE}:{line_of(uses_await, 'async def inner')}" in msg
    assert "async def" in msg


def test_unsupported_error_lists_problems():
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(uses_try)(0.5)
    (problem,) = info.value.problems
    location, construct, hint = problem
    assert location.lineno == line_of(uses_try, "try:")
    assert os.path.basename(location.filename) == THIS_FILE
    assert "try" in construct and hint


# -- several constructs in one function: one error listing them all ---------------------------
def many_problems(x):
    global G_COUNTER
    total = x * 2
    labels = {round(v, 3) for v in [1.0, 2.0]}
    xs = [x, total]
    del xs[0]

    class Local:
        scale = 2.0
    return xs[0] * Local.scale * len(labels)


def test_all_unsupported_constructs_are_reported_in_one_error():
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(many_problems)(0.5)
    msg = str(info.value)
    expected = [("global G_COUNTER", "global"), ("{round", "set comprehension"),
                ("del xs[0]", "del"), ("class Local", "class")]
    assert len(info.value.problems) == len(expected), msg
    assert msg.startswith(f"{len(expected)} unsupported constructs")
    for marker, word in expected:
        line = line_of(many_problems, marker)
        located = [ln for ln in msg.splitlines() if f"{THIS_FILE}:{line}:" in ln]
        assert located, f"line {line} ({word}) missing from:\n{msg}"
        assert word in located[0]


def test_error_in_a_called_user_function_points_at_the_callee():
    def caller(x):
        return _callee_with_try(x) * 2

    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(caller)(0.5)
    msg = str(info.value)
    assert f"{THIS_FILE}:{line_of(_callee_with_try, 'try:')}" in msg
    assert "_callee_with_try" in msg


def _callee_with_try(v):
    try:
        return v * v
    except ValueError:
        return v


def test_unsupported_syntax_is_raised_again_on_a_second_attempt():
    # a failed build must not leave a half-built adjoint in the cache
    for _ in range(2):
        with pytest.raises(srcgrad.UnsupportedSyntaxError):
            srcgrad.grad(uses_try)(0.5)


# -- missing derivative rules -----------------------------------------------------------------
def uses_fft(x):
    spectrum = np.fft.fft(x)
    return np.sum(np.abs(spectrum))


def uses_math_gamma(x):
    return math.gamma(x) * 2


def test_missing_rule_for_c_function_names_it_and_shows_how_to_register():
    with pytest.raises(srcgrad.MissingRuleError) as info:
        srcgrad.grad(uses_fft)(np.array([1.0, 2.0, 0.5]))
    msg = str(info.value)
    assert isinstance(info.value, srcgrad.SrcgradError)
    assert "fft" in msg
    assert "@srcgrad.rule" in msg
    assert f"{THIS_FILE}:{line_of(uses_fft, 'np.fft.fft')}" in msg


def test_missing_rule_gives_the_full_dotted_name():
    with pytest.raises(srcgrad.MissingRuleError) as info:
        srcgrad.grad(uses_fft)(np.array([1.0, 2.0, 0.5]))
    assert "numpy.fft.fft" in str(info.value)
    assert info.value.name == "numpy.fft.fft"


def test_missing_rule_for_math_function():
    from srcgrad.rules import lookup
    if lookup(math.gamma) is not None:
        pytest.skip("math.gamma has a rule now")
    with pytest.raises(srcgrad.MissingRuleError) as info:
        srcgrad.grad(uses_math_gamma)(1.5)
    msg = str(info.value)
    assert "math.gamma" in msg and "@srcgrad.rule" in msg
    assert f"{THIS_FILE}:{line_of(uses_math_gamma, 'math.gamma')}" in msg


def _apply_fn(f, v):
    return f(v)


def passes_c_function_as_value(x):
    return np.sum(np.abs(_apply_fn(np.fft.fft, x)))


def test_missing_rule_for_function_passed_as_value():
    with pytest.raises(srcgrad.MissingRuleError) as info:
        srcgrad.grad(passes_c_function_as_value)(np.array([1.0, 2.0]))
    msg = str(info.value)
    assert "fft" in msg and "@srcgrad.rule" in msg


def test_missing_rule_not_raised_for_inactive_use():
    def only_constants(x):
        freq = np.fft.fftfreq(4)
        return x * float(np.sum(np.abs(np.fft.fft(np.arange(4.0)))) + freq[1])

    assert srcgrad.grad(only_constants)(0.5) == pytest.approx(8.0 + 4 * math.sqrt(2) + 0.25)


def test_missing_rule_for_opaque_callable():
    def softsign(v):
        return v / (1 + abs(v))

    opaque = np.frompyfunc(softsign, 1, 1)  # a C-level callable without source

    def uses_opaque(x):
        return float(opaque(x)) * 3

    with pytest.raises(srcgrad.MissingRuleError):
        srcgrad.grad(uses_opaque)(0.5)


# -- what wrt may be --------------------------------------------------------------------------
def scale(x, n):
    return x * n


@pytest.mark.parametrize("bad, kind", [
    (3, "integer"), (True, "bool"), (np.int64(2), "integer"), (np.bool_(True), "bool"),
    (np.arange(3), "int"), (np.array([True, False]), "bool"),
    ({"a": 1.0, "b": 2}, "integer"), ([1.0, 2], "integer"), ((0.5, False), "bool"),
], ids=["int", "bool", "np.int64", "np.bool_", "int_array", "bool_array", "dict_with_int",
        "list_with_int", "tuple_with_bool"])
def test_integer_or_bool_wrt_argument_raises(bad, kind):
    def f(x, n):
        return n * 2.0

    with pytest.raises(srcgrad.SrcgradError) as info:
        srcgrad.grad(f)(bad, 1.5)
    msg = str(info.value)
    assert "'x'" in msg and kind in msg and "float" in msg


def test_integer_wrt_by_name_raises_never_silent_zero():
    with pytest.raises(srcgrad.SrcgradError, match="'n'"):
        srcgrad.grad(scale, wrt="n")(0.5, 3)
    with pytest.raises(srcgrad.SrcgradError, match="'n'"):
        srcgrad.grad(scale, wrt=(0, 1))(0.5, 3)
    assert srcgrad.grad(scale, wrt=(0, 1))(0.5, 3.0) == (3.0, 0.5)


def test_integer_argument_outside_wrt_is_fine():
    assert srcgrad.grad(scale)(0.5, 3) == 3.0


@pytest.mark.parametrize("wrt", [5, -1, "nope", 1.0, None, (0, "zz")])
def test_bad_wrt_value_raises(wrt):
    with pytest.raises(srcgrad.SrcgradError):
        srcgrad.grad(scale, wrt=wrt)(0.5, 2.0)


# -- non-scalar outputs -----------------------------------------------------------------------
def vector_out(x):
    return x * 2


def list_out(x):
    return [x, x * x]


def tuple_out(x):
    y = x * 3
    return y, y * y


def dict_out(x):
    return {"a": x * 2}


@pytest.mark.parametrize("fn, arg", [(vector_out, np.ones(3)), (list_out, 0.5),
                                     (tuple_out, 0.5), (dict_out, 0.5),
                                     (vector_out, np.ones((1, 2)))],
                         ids=["array", "list", "tuple", "dict", "array_1x2"])
def test_non_scalar_output_with_grad_mentions_vjp(fn, arg):
    with pytest.raises(srcgrad.SrcgradError) as info:
        srcgrad.grad(fn)(arg)
    assert not isinstance(info.value, srcgrad.InternalError), str(info.value)
    assert "vjp" in str(info.value)
    assert "scalar" in str(info.value)


def test_size_one_array_output_is_a_scalar():
    def f(x):
        return np.sum(x * x, keepdims=True)

    g = srcgrad.grad(f)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [2.0, 4.0])


# -- user names colliding with generated names ------------------------------------------------
def collisions(x, bx, d, _tape, _rt, b_t1, _saved, _c1, _n1, _t1):
    _t2 = x * bx
    dx = _t2 * d
    if _c1 > 0:
        _n1 = _n1 + x
    for _k1 in range(2):
        _tape = _tape * x
    b_t2 = _rt * b_t1 + _saved
    _i1 = 0
    while _i1 < 2:
        _i1 += 1
        _saved = _saved * dx
    return dx + _n1 * _tape + b_t2 * x + _t1 * x + _saved


def test_user_names_like_generated_names_in_parameters():
    args = (0.5, 1.5, 2.0, 1.2, 0.3, 0.7, 0.9, 1.0, 0.4, 0.6)
    check_grad(collisions, args, wrt=tuple(range(10)))


_t1 = 4.0
bx = 2.0
_rt = 0.5
_tape = 1.5


def reads_globals_named_like_generated(x):
    b_x = x * _t1
    return b_x + bx * x * _rt + _tape * x ** 2


def test_user_globals_named_like_generated_names():
    assert srcgrad.grad(reads_globals_named_like_generated)(2.0) == pytest.approx(
        4.0 + 1.0 + 2 * 1.5 * 2.0)


def scale_fwd(v):
    return v * 10.0


def scale_bwd(v):
    return v + 1.0


def scale_adj(v):
    return v * v


def calls_helpers_named_like_sweeps(x):
    # generated sweeps are named <function>_fwd / _bwd: a helper of that name must still work
    return scale_fwd(x) * scale_bwd(x) + scale_adj(x)


def test_user_functions_named_like_generated_sweeps():
    check_grad(calls_helpers_named_like_sweeps, (0.7,))
    assert srcgrad.grad(scale_fwd)(1.0) == 10.0


def locals_named_like_generated(x):
    _retval = x * 2
    _ret = False
    _brk1 = x + 1
    cond = x > 0
    i = 0
    for _e1 in range(3):
        if _retval > 100:
            break
        _retval = _retval * _brk1
        i += 1
    if cond and not _ret:
        return _retval + i
    return x


def test_user_locals_named_like_exit_flags():
    check_grad(locals_named_like_generated, (0.3,))


def _make(x):
    return x * 3


def calls_function_named_make(x):
    return _make(x) * x


def test_user_function_named_like_the_factory():
    assert srcgrad.grad(calls_function_named_make)(2.0) == 12.0
    assert srcgrad.grad(_make)(2.0) == 3.0


class _Holder:
    def __init__(self, w, b):
        self.w = w
        self.b = b


def _holder_loss(p):
    return np.sum(p.w * 2.0) + p.b


def test_integer_field_of_object_in_wrt_raises():
    with pytest.raises(srcgrad.SrcgradError, match="integer"):
        srcgrad.grad(_holder_loss)(_Holder(np.arange(3), 0.5))


# -- what would silently differ from Python's semantics is refused, with the line -----------
def _pair(a, b):
    return a * b * b


def alias_then_element_store(x):
    y = x * 1.0
    z = y
    z[0] = 0.0
    return np.sum(y * y)


def starred_call_arguments(x, y):
    args = (x, y)
    return _pair(*args)


def double_starred_call_arguments(x, y):
    kw = {"a": x, "b": y}
    return _pair(**kw)


def _apply_twice(f, v):
    return f(v) + f(2 * v)


def lambda_value_capturing_active(x, w):
    return _apply_twice(lambda v: v * w, x)


class _Box:
    pass


def attribute_store(x):
    box = _Box()
    box.scale = x * 2
    return box.scale * x


@pytest.mark.parametrize("fn, args, marker, construct", [
    (alias_then_element_store, (np.array([1.0, 2.0]),), "z[0] = 0.0", "share its data"),
    (starred_call_arguments, (0.5, 1.5), "return _pair(*args)", "unpacking"),
    (double_starred_call_arguments, (0.5, 1.5), "return _pair(**kw)", "unpacking"),
    (lambda_value_capturing_active, (0.5, 1.5), "lambda v: v * w", "lambda"),
    (attribute_store, (0.5,), "box.scale = x * 2", "attribute"),
], ids=["alias", "starred", "double-starred", "lambda-capture", "attribute-store"])
def test_semantics_srcgrad_cannot_keep_are_refused(fn, args, marker, construct):
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as info:
        srcgrad.grad(fn, wrt=tuple(range(len(args))))(*args)
    message = str(info.value)
    assert f"{THIS_FILE}:{line_of(fn, marker)}" in message
    assert construct in message
