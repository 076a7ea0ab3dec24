"""Constructs the fuzzer's random programs stopped at under ``jit=True`` (issue 12), lifted.

Each compiled gradient is compared with the interpreted one (rtol 1e-12) and central finite
differences; where numba would compute otherwise the construct stays refused at its line.
The fuzzer programs that first stopped at each construct are replayed at the end.
"""

import math

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import srcgrad  # noqa: E402
from srcgrad.jit import JitUnsupportedError  # noqa: E402

from fdcheck import check_grad, flatten  # noqa: E402


def _agree(f, *args):
    """The compiled gradient of ``f`` with respect to every argument, checked."""
    wrt = tuple(range(len(args)))
    want = srcgrad.value_and_grad(f, wrt=wrt)(*args)
    g = srcgrad.value_and_grad(f, wrt=wrt, jit=True)
    got = g(*args)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    assert len(flatten(got[1])) == len(flatten(want[1]))
    for a, b in zip(flatten(got[1]), flatten(want[1])):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    check_grad(f, args, wrt=wrt, grads=got[1])
    return srcgrad.source(g)


# -- the adjoint of an element store's value (_rt.last_writes) ------------------------------

def rows_stored_in_a_loop(x):
    v = np.zeros((2, 3))
    for i in range(2):
        v[i] = x * (i + 1.0) + np.sin(x)
    return np.sum(v[1] * v[0])


def items_stored(x):
    v = np.zeros(4)
    v[0] = x[1] * x[2]
    v[1:3] = np.cos(x[:2])
    v[-1] = np.sum(x)
    return np.sum(v ** 2)


def stored_at_repeated_indices(x):
    # (numpy keeps the last write at a repeated index: only it gets the adjoint)
    v = np.zeros(3)
    v[np.array([0, 2, 0, -1])] = x * np.array([1.0, 2.0, 3.0, 4.0])
    return np.sum(v * np.array([1.0, 10.0, 100.0]))


def stored_through_a_mask(x):
    v = np.ones(4)
    v[np.array([True, False, True, False])] = x[:2] ** 2
    return np.sum(v * np.arange(1.0, 5.0))


@pytest.mark.parametrize("f, x", [
    (rows_stored_in_a_loop, np.array([0.3, -1.2, 0.7])),
    (items_stored, np.array([0.3, -1.2, 0.7])),
    (stored_at_repeated_indices, np.array([0.3, -1.2, 0.7, 1.1])),
    (stored_through_a_mask, np.array([0.3, -1.2, 0.7])),
], ids=lambda v: getattr(v, "__name__", ""))
def test_element_stores_compile(f, x):
    # before: "this needs srcgrad.runtime.last_writes, which has no compiled form"
    assert "_rt.last_writes" in _agree(f, x)


def test_compiled_last_writes_agrees_with_the_interpreted_one():
    from srcgrad import runtime as rt
    from srcgrad.jit import runtime as jrt
    g = np.arange(12.0).reshape(4, 3) + 1.0
    fn = numba.njit(lambda g, index: jrt.last_writes(g, index))
    for index in (np.array([0, 2, 0, -4, 3]), np.array([1]), np.array([-1, 3])):
        np.testing.assert_array_equal(fn(g, index), rt.last_writes(g, index))
    np.testing.assert_array_equal(fn(g, 2), rt.last_writes(g, 2))
    with pytest.raises(IndexError):
        fn(g, np.array([0, 4]))


# -- item stores into a list built in the body ----------------------------------------------

def items_updated_in_place(x):
    # (the fuzzer's `lst = [... for _ in range(k)]; lst[i] *= ...; lst[i][0] = ...`)
    lst = [np.zeros(3) + x * (k + 1.0) for k in range(3)]
    for i in range(3):
        lst[i] *= x
        lst[i][0] = np.sum(x) * i
    lst[1] += 2.0 * x
    lst[-1] = np.sin(lst[0])
    return np.sum(lst[0] + lst[1] * lst[2])


def number_items_stored(x):
    lst = [x * k for k in range(3)]
    for i in range(3):
        lst[i] = lst[i] * x + 1.0
    lst[0] += x
    return sum(lst)


@pytest.mark.parametrize("f, x", [
    (items_updated_in_place, np.array([0.3, -1.2, 0.7])),
    (number_items_stored, 0.7),
], ids=lambda v: getattr(v, "__name__", ""))
def test_item_stores_into_a_built_list_compile(f, x):
    # before: "this needs srcgrad.runtime.list_append" (the store read the list)
    source = _agree(f, x)
    assert "_rt.list_append" not in source and "_rt.setitem(lst" not in source


def item_shared_with_a_variable(x):
    lst = [x * 1.0 for k in range(2)]
    a = x * 2.0
    lst.append(a)
    lst[2] += 1.0  # (Python changes `a` too)
    return np.sum(lst[2]) + np.sum(a)


def items_sharing_data(x):
    a = x * 2.0
    lst = [a[:2] * 1.0]
    lst.append(a[1:])
    lst.append(a[1:])
    lst[1] *= 3.0  # (Python changes lst[2] too: the same view)
    return np.sum(lst[2])


@pytest.mark.parametrize("f", [item_shared_with_a_variable, items_sharing_data])
def test_in_place_item_updates_of_shared_data_stay_refused(f):
    x = np.array([0.3, -1.2, 0.7])
    with pytest.raises(srcgrad.SrcgradError, match="changes in place") as interpreted:
        srcgrad.grad(f)(x)
    with pytest.raises(srcgrad.SrcgradError, match="changes in place") as compiled:
        srcgrad.grad(f, jit=True)(x)
    assert str(compiled.value).split(":")[:2] == str(interpreted.value).split(":")[:2]


# -- loops over tuples ----------------------------------------------------------------------

def loop_over_a_tuple_of_arrays(x):
    s = 0.0
    for u in (x, np.sin(x), x * x):
        s = s + np.sum(u * u)
    return s


def loop_over_a_tuple_of_numbers(x):
    s = x
    for u in (x, x * 2.0, np.cos(x)):
        s = s * u + 1.0
    return s


@pytest.mark.parametrize("f, x", [
    (loop_over_a_tuple_of_arrays, np.array([0.3, -1.2, 0.7])),
    (loop_over_a_tuple_of_numbers, 0.7),
], ids=lambda v: getattr(v, "__name__", ""))
def test_loops_over_tuples_compile(f, x):
    # before: "compiled loops over UniTuple(...) are not supported (arrays only)"
    assert "_rt.element(" in _agree(f, x)


def loop_over_a_mixed_tuple(x):
    s = 0.0
    for u in (x, 2):  # (an int among floats: numba's tuple keeps both types; refused)
        s = s + np.sum(u * x)
    return s


def test_loops_over_mixed_tuples_stay_refused():
    with pytest.raises(JitUnsupportedError, match=r"test_jit_fuzz_constructs.py:\d+: compiled loops"):
        srcgrad.grad(loop_over_a_mixed_tuple, jit=True)(np.array([0.3, -1.2, 0.7]))


# -- items of tuples read by index: their adjoints (add_at of a tuple) ---------------------

def tuple_argument_items(pair, x):
    a = pair[0] * x
    b = np.sum(pair[1] ** 2) + pair[-1][0, 1]
    return np.sum(a) + b * np.sum(pair[0])


def tuple_indexed_in_a_loop(x):
    t = (x, x * 2.0, np.sin(x))
    s = 0.0
    for i in range(3):
        s = s + np.sum(t[i] ** 2) * t[-1 - i][0]
    return s


def test_tuple_items_read_by_index_compile():
    # before: "compiled gradients of indexing Tuple(...) with int64 are not supported"
    pair = (np.array([0.3, -1.2, 0.7]), np.array([[0.5, 1.0, 2.0], [0.1, 0.2, 0.3]]))
    x = np.array([0.3, -1.2, 0.7])
    _agree(tuple_argument_items, pair, x)
    _agree(tuple_indexed_in_a_loop, x)


def mixed_tuple_indexed_in_a_loop(x):
    t = (x, np.ones((2, 3)))
    s = 0.0
    for i in range(2):  # (numba indexes a tuple of two types only by a constant)
        s = s + np.sum(t[i])
    return s


def test_a_mixed_tuple_indexed_at_run_time_stays_refused():
    with pytest.raises(JitUnsupportedError, match=r"test_jit_fuzz_constructs.py:\d+: "):
        srcgrad.grad(mixed_tuple_indexed_in_a_loop, jit=True)(np.array([0.3, -1.2, 0.7]))


# -- list arguments read by index -------------------------------------------------------------

def list_argument_items(ws, x):
    return np.sum(ws[0] * x) + np.sum(ws[-1] ** 2) * ws[1][2]


def list_of_pairs_argument(ps, x):
    return np.sum(ps[1][0] * x) + ps[0][1] * np.sum(ps[1][0]) + ps[-1][1] ** 2


def list_argument_unread(ws, x):
    return np.sum(x ** 2)


@pytest.mark.parametrize("f, ws", [
    (list_argument_items, [np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.1, 0.2]),
                           np.array([0.3, 0.3, 0.1])]),
    (list_of_pairs_argument, [(np.array([1.0, 2.0, 3.0]), 0.5),
                              (np.array([0.5, 0.1, 0.2]), 2.0)]),
    (list_argument_unread, [np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.1, 0.2])]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_list_arguments_read_by_index_compile(f, ws):
    # before: "compiled gradients of indexing reflected list(...) with int64 are not
    # supported" (and "no compiled zero adjoint" for the unread one)
    x = np.array([0.3, -1.2, 0.7])
    _agree(f, ws, x)
    got = srcgrad.grad(f, wrt=(0, 1), jit=True)(ws, x)[0]
    assert type(got) is list and len(got) == len(ws)  # (a list, as interpreted)


# -- loops over list displays -----------------------------------------------------------------

def loop_over_a_list_display(x, y):
    s = 0.0
    for v in [x, y * 2.0, np.sin(x)]:
        s = s + np.sum(v * v)
    return s + np.sum(sum(map(lambda u: y, [x, y])))  # (the fuzzer's map over a display)


def loop_over_a_display_of_numbers(x):
    s = x
    for v in [x, 2.0, x * x]:
        s = s * v
    return s


def test_loops_over_list_displays_compile():
    # before: "compiled loops over list(...) are not supported (arrays only)"
    source = _agree(loop_over_a_list_display, np.array([0.3, -1.2, 0.7]),
                    np.array([1.0, 2.0, 0.5]))
    assert "_rt.display_element(" in source
    _agree(loop_over_a_display_of_numbers, 0.7)


def loop_over_ints_and_floats(x):
    s = x
    for v in [x, 2]:  # (numba's list would hold 2.0)
        s = s * v
    return s


def test_loops_over_displays_of_ints_stay_refused():
    with pytest.raises(JitUnsupportedError, match=r"test_jit_fuzz_constructs.py:\d+: "
                                                  r"compiled lists of int64 items"):
        srcgrad.grad(loop_over_ints_and_floats, jit=True)(0.7)


# -- indices the sweeps keep on a stack (optional until first bound) -----------------------

def tuple_indices_in_a_loop(x):
    v = np.zeros((2, 3))
    for i in range(2):
        v[i, 1:] = x[:2] * (i + 1.0)
        v[i, :2] += x[1:] * v[i, 1:]
    return np.sum(v * v)


def test_tuple_indices_from_a_stack_compile():
    # before: "numba has no compiled 'setitem_zeroed' for arguments (..., OptionalType(...))"
    _agree(tuple_indices_in_a_loop, np.array([0.3, -1.2, 0.7]))


# -- an in-place update of an array that may be shared: refused where it runs ---------------

def shared_update_in_a_branch(x, flag):
    y = x * 2.0
    if flag > 0.0:
        z = y[:2]
        z += 1.0  # (the interpreted gradient refuses it where it runs)
    return np.sum(y ** 2)


def test_in_place_updates_of_shared_arrays_are_refused_where_they_run():
    # before: refused at compile time, also when the branch is not taken
    x = np.array([0.3, -1.2, 0.7])
    np.testing.assert_allclose(srcgrad.grad(shared_update_in_a_branch, jit=True)(x, -1.0),
                               srcgrad.grad(shared_update_in_a_branch)(x, -1.0), rtol=1e-12)
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as interpreted:
        srcgrad.grad(shared_update_in_a_branch)(x, 1.0)
    with pytest.raises(srcgrad.UnsupportedSyntaxError) as compiled:
        srcgrad.grad(shared_update_in_a_branch, jit=True)(x, 1.0)
    assert str(compiled.value) == str(interpreted.value)
    assert "test_jit_fuzz_constructs.py" in str(compiled.value)


# -- the adjoint of a reshape (np.reshape(g, shape, order='C')) ------------------------------

def reshaped(x):
    y = x.reshape(1, 6)[0]
    z = np.cos(x).reshape(6)
    return np.sum(np.sin(y) * z)


def test_reshape_adjoints_compile():
    # before: "numba has no compiled 'reshape' for arguments reshape(..., order=...)"
    assert "_rt.reshape_c(" in _agree(reshaped, np.arange(6.0).reshape(2, 3) * 0.1)


# -- the fuzzer programs that stopped at these constructs, replayed --------------------------

@pytest.mark.slow
@pytest.mark.parametrize("seed, index", [
    (137, 6),   # a tuple argument's items, their adjoints added
    (100, 5),   # a list argument's items read by index
])
def test_fuzzer_programs_compile_and_agree(seed, index, tmp_path):
    # (the check itself, without the fuzzer's time limit: numba compiling on a loaded
    # machine can take longer; a wrong number raises fuzzer.Mismatch, a refusal its error)
    import fuzzer
    case, _ = fuzzer.make_case(seed, index, str(tmp_path))
    with np.errstate(all="ignore"):
        fuzzer.Checks(case).jit(srcgrad)


# Two more programs of the fuzzer (seed 60, programs 2 and 7, as its generator wrote them
# before the nested-try idiom joined it and changed what each seed draws), kept as written.

def fuzz_60_2(x):  # (its dead values as the fuzzer wrote them)
    v1 = np.exp(-(np.log1p((np.array([-0.86, 0.33])) ** 2)) ** 2)
    if x / (1.5 + np.cos(x)) >= 0.69:
        if x * x ** 2 >= 1.3:
            v2 = np.where((np.sum((v1[:, None] * np.ones(3)), axis=0)) > -0.26,  # noqa: F841
                          np.multiply((x * np.ones(3)), (np.full(3, x))),
                          np.add((np.full(3, x)), (np.array([1.42, -1.4, -0.43]))))
        else:
            v3 = math.sqrt(1.0 + (math.sin(x)) ** 2)
            v4 = (x * (v1.reshape(-1, 1))) * v3 ** 2  # noqa: F841
    elif x < 0.17:
        # items of a list built in the body updated in place
        lst5 = [np.zeros(3) + ((x * np.ones((2, 3))).T @ (np.array([0.07, -0.11])))
                for _ in range(2)]
        for i6 in range(2):
            lst5[i6][0] += np.minimum((np.sum(v1)) / (1.5 + np.cos(x)),
                                      (x if np.add(x, x) > 1.23 else v1[i6]))
            lst5[i6][0] += np.log(1.0 + (max(x, x)) ** 2)
    else:
        x += np.cos((np.arctan(x)))
    return v1[-1] * x


def fuzz_60_7(pair, x, y):
    # tuple items read by index
    if (w5 := np.dot((np.max(x, axis=0)), x[0, :])) > 0.18:
        d6 = dict(a=pair[1])  # noqa: F841
        t7 = (pair[1], pair[0])  # noqa: F841
    v8 = np.multiply((np.multiply((np.sum(x, axis=1)), y[:, -1])), (w5 * w5 ** 2))  # noqa: F841
    return np.sum(np.sin(y + pair[1]))


@pytest.mark.parametrize("x", [0.1, 1.467832753835854, 0.9])
def test_fuzzer_program_60_2_compiles_and_agrees(x):
    _agree(fuzz_60_2, x)


def test_fuzzer_program_60_7_compiles_and_agrees():
    pair = (np.array([1.4095870259721306, -0.08395366481735386, 1.6048974677462082]),
            np.array([[0.06904525774391165, -0.6238029107574321, 0.6781963439345097],
                      [0.1192908120238608, -2.373505167873961, -1.5523724426198182]]))
    x = np.array([[0.3869387342689229, -1.745554310452493, 0.28850304127381426],
                  [-2.105114965209702, 0.917868318799622, -0.01345672933326475]])
    y = np.array([[0.1123838342437009, -0.22100131603669307, -1.0481880588989336],
                  [-0.8527418112298394, -0.831024823094217, 0.2960608234092501]])
    _agree(fuzz_60_7, pair, x, y)


def reshaped_transpose(x):
    return np.sum(np.sin(x.T.reshape(-1)) * np.arange(6.0))


def reshaped_by_dimensions(x):
    return np.sum(x.T.reshape(3, 2) @ np.ones(2) * x[0, 0])


def reshaped_by_numpy(x):
    return np.sum(np.reshape(x[:, ::-1], (6,)) ** 2 * np.arange(6.0))


def reshaped_contiguous(x):
    return np.sum(x.reshape((3, 2), order="C")[1] * x.reshape(-1)[:2])


@pytest.mark.parametrize("f", [reshaped_transpose, reshaped_by_dimensions, reshaped_by_numpy,
                               reshaped_contiguous])
def test_reshapes_of_non_contiguous_arrays_compile(f):
    # numba reshapes only contiguous arrays (NotImplementedError at run time on x.T); numpy
    # copies: the compiled code reshapes a contiguous copy where numpy would
    _agree(f, np.arange(6.0).reshape(2, 3) * 0.1 + 0.05)


def tuple_of_mixed_arrays_indexed_in_a_branch(pair, x, y):
    if (w := np.dot(np.max(x, axis=0), x[0, :])) > -10.0:
        t = (pair[1], pair[0])
        y = y * t[1][0]          # numba 0.68's lowering raised AttributeError here
    return np.sum(np.sin(y + pair[1])) + w


def test_a_crash_inside_numba_names_the_users_line():
    # numba's lowering let a plain AttributeError escape ('NoneType' object has no attribute
    # 'args'), with no location in its text: the refusal named no line. The line is taken from
    # the statements numba was typing when it failed (errors._lowered_at).
    pair = (np.array([1.4, -0.08, 1.6]), np.ones((2, 3)) * 0.5)
    x = np.array([[0.38, -1.7, 0.28], [-2.1, 0.91, -0.01]])
    y = np.ones((2, 3)) * 0.3
    try:
        _agree(tuple_of_mixed_arrays_indexed_in_a_branch, pair, x, y)
    except JitUnsupportedError as e:  # (a numba that compiles it passes through _agree)
        line = tuple_of_mixed_arrays_indexed_in_a_branch.__code__.co_firstlineno + 3
        assert str(e).startswith(f"{__file__}:{line}: "), str(e)
