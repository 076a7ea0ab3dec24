"""Golden files of whole generated adjoints, byte for byte, plus determinism and labelling.

The functions live in ``tests/golden/_inputs.py``; their adjoints in ``tests/golden/<name>.py``.
Regenerate after an intended change of the generated code with::

    SRCGRAD_REGEN_GOLDEN=1 python -m pytest tests/test_golden.py
"""
import importlib.util
import linecache
import os
import re

import pytest

import srcgrad
import srcgrad.api

GOLDEN_DIR = os.path.join(os.path.dirname(__file__), "golden")
INPUTS_PATH = os.path.join(GOLDEN_DIR, "_inputs.py")
REGENERATE = os.environ.get("SRCGRAD_REGEN_GOLDEN") == "1"


def _load_inputs():
    spec = importlib.util.spec_from_file_location("srcgrad_golden_inputs", INPUTS_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


inputs = _load_inputs()
_IDS = [name for name, _, _ in inputs.GOLDEN]


def _generated(fn, wrt):
    return srcgrad.source(srcgrad.grad(fn, wrt=wrt))


def _fresh_source(fn, wrt):
    """Generate from scratch: forget every cached adjoint first."""
    srcgrad.api._CACHE.clear()
    return _generated(fn, wrt)


@pytest.mark.parametrize("name, fn, wrt", inputs.GOLDEN, ids=_IDS)
def test_generated_source_matches_golden_file(name, fn, wrt):
    path = os.path.join(GOLDEN_DIR, f"{name}.py")
    text = _fresh_source(fn, wrt)
    if REGENERATE:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    if not os.path.exists(path):
        pytest.fail(f"no golden file {path}; run with SRCGRAD_REGEN_GOLDEN=1 to create it")
    with open(path, encoding="utf-8", newline="") as f:
        expected = f.read()
    assert text == expected, (f"generated source of {name} differs from {path}; if the change "
                              f"is intended, regenerate with SRCGRAD_REGEN_GOLDEN=1")


@pytest.mark.parametrize("name, fn, wrt", inputs.GOLDEN, ids=_IDS)
def test_generation_is_deterministic(name, fn, wrt):
    first = _fresh_source(fn, wrt)
    second = _fresh_source(fn, wrt)
    assert first == second
    # and a build while other adjoints are cached gives the same text too
    for other_name, other_fn, other_wrt in inputs.GOLDEN:
        _generated(other_fn, other_wrt)
    srcgrad.api._CACHE.pop(fn.__code__, None)
    assert _generated(fn, wrt) == first


@pytest.mark.parametrize("name, fn, wrt", inputs.GOLDEN, ids=_IDS)
def test_golden_adjoints_still_compute_correct_gradients(name, fn, wrt):
    from fdcheck import check_grad
    args = {"straight_line": (0.7, 1.3), "if_else": (-0.4,), "for_accumulate": (0.5, 4),
            "while_loop": (0.9,), "user_call": (0.6,)}[name]
    check_grad(fn, args, wrt=wrt if isinstance(wrt, tuple) else (wrt,))


@pytest.mark.parametrize("name, fn, wrt", inputs.GOLDEN, ids=_IDS)
def test_golden_text_is_the_code_that_runs(name, fn, wrt):
    """What is shown (and kept in the golden file) is the two sweeps themselves, no factory
    around them: valid Python, and the very text the running sweeps were compiled from."""
    text = _generated(fn, wrt)
    compile(text, f"{name}.py", "exec")
    assert "_make" not in text and re.match(r"# srcgrad: forward and backward sweeps of ", text)
    adj = srcgrad.grad(fn, wrt=wrt).__srcgrad_adjoint__()
    assert "".join(linecache.getlines(adj.filename)) == text
    for sweep in adj.sweeps_for(fn):
        assert sweep.__code__.co_filename == adj.filename
        line = text.splitlines()[sweep.__code__.co_firstlineno - 1]
        assert line.startswith(f"def {sweep.__name__}(")


def _split_sweeps(text):
    lines = text.splitlines()
    fwd = next(i for i, ln in enumerate(lines) if re.match(r"\s*def \w+_fwd\(", ln))
    bwd = next(i for i, ln in enumerate(lines) if re.match(r"\s*def \w+_bwd\(", ln))
    return lines[fwd:bwd], lines[bwd:]


_LOCATION_COMMENT = re.compile(r"^\s*# (?P<file>[\w.]+):(?P<line>\d+)  (?P<source>.+)$")


@pytest.mark.parametrize("name, fn, wrt", inputs.GOLDEN, ids=_IDS)
def test_sweeps_are_labelled_and_blocks_point_at_user_lines(name, fn, wrt):
    text = _generated(fn, wrt)
    forward, backward = _split_sweeps(text)
    assert forward[1].strip() == "# forward sweep"
    assert backward[1].strip() == "# backward sweep"
    with open(INPUTS_PATH, encoding="utf-8") as f:
        user_lines = f.read().splitlines()
    comments = [ln for ln in backward if ln.strip().startswith("#")][1:]
    assert comments, "every adjoint block needs a comment pointing at the user's line"
    for comment in comments:
        m = _LOCATION_COMMENT.match(comment)
        assert m, f"comment not of the form '# <file>:<line>  <source>': {comment!r}"
        assert m["file"] == os.path.basename(INPUTS_PATH)
        assert user_lines[int(m["line"]) - 1].strip() == m["source"]


@pytest.mark.parametrize("name, fn, wrt", inputs.GOLDEN, ids=_IDS)
def test_each_adjoint_block_is_preceded_by_its_comment(name, fn, wrt):
    """Every statement that accumulates an adjoint (``b... =``) sits in a block whose first
    line at that indentation, after control statements, is a location comment."""
    _, backward = _split_sweeps(_generated(fn, wrt))
    current = None
    for line in backward[2:]:
        stripped = line.strip()
        if _LOCATION_COMMENT.match(line):
            current = stripped
        elif re.match(r"(for|if|else|while)\b", stripped) or stripped.startswith("return"):
            current = None if not stripped.startswith("return") else current
        elif re.match(r"b\w+ = ", stripped) and not stripped.endswith("= 0.0"):
            assert current is not None, f"adjoint statement without a location: {line!r}"


def test_every_golden_file_has_an_input():
    names = {name for name, _, _ in inputs.GOLDEN}
    files = {f[:-3] for f in os.listdir(GOLDEN_DIR) if f.endswith(".py") and
             not f.startswith("_")}
    assert files == names
