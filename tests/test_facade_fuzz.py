"""A small seeded budget of the facade fuzzer (tests/facade_fuzzer.py): srcgrad's Tensor
facade against PyTorch on random define-by-run programs. Skipped without PyTorch.

The long runs and their counts are in docs/fuzzing.md ("The Tensor facade").
"""
import collections

import numpy as np
import pytest

pytest.importorskip("torch")

import facade_fuzzer as ff  # noqa: E402  (tests/ is on sys.path: conftest.py)

PROGRAMS = 200
SEED = 0


def test_random_programs_agree_with_pytorch_or_are_refused():
    outcomes = dict(ff.outcomes(SEED, range(PROGRAMS)))
    wrong = {i: o for i, o in outcomes.items() if o.kind == "wrong"}
    assert not wrong, "\n".join(f"--seed {SEED} --show {i}: {o.what}: {o.detail}"
                                for i, o in wrong.items())
    kinds = collections.Counter(o.kind for o in outcomes.values())
    assert kinds["agree"] >= 0.9 * PROGRAMS, kinds


def test_programs_depend_on_seed_and_index_only():
    first, again = ff.write_program(7, 3), ff.write_program(7, 3)
    assert first.text == again.text
    assert all(np.array_equal(a, b) for a, b in zip(first.inputs, again.inputs))
    assert ff.write_program(7, 3).text != ff.write_program(7, 4).text


def _compare(text, *inputs):
    import torch

    import srcgrad
    return ff.compare(ff.Program(text, [np.asarray(x, dtype=np.float64) for x in inputs]),
                      torch, srcgrad)


def test_compare_flags_a_different_gradient_a_missing_error_and_a_crash():
    wrong_grad = ("a0 = lib.tensor(IN[0], dtype=lib.float64, requires_grad=True)\n"
                  "k = 2.0 if lib.__name__ == 'torch' else 2.0 + 1e-9\n"
                  "(a0 * a0 * k).sum().backward()\n"
                  "obs(a0.grad)")
    assert _compare(wrong_grad, [0.5, 1.0])[:2] == ("wrong", "value")
    missing = ("a0 = lib.tensor(IN[0], dtype=lib.float64, requires_grad=True)\n"
               "if lib.__name__ == 'torch':\n"
               "    a0.add_(1)")
    assert _compare(missing, [0.5])[:2] == ("wrong", "missing-error")
    crash = ("a0 = lib.tensor(IN[0], dtype=lib.float64, requires_grad=True)\n"
             "if lib.__name__ != 'torch':\n"
             "    raise KeyError('x')")
    assert _compare(crash, [0.5])[:2] == ("wrong", "crash")
    same = ("a0 = lib.tensor(IN[0], dtype=lib.float64, requires_grad=True)\n"
            "y = a0 * 1.0\n"
            "y[0] = 2.0\n"
            "(y * a0).sum().backward()\n"
            "obs(y)\n"
            "obs(a0.grad)")
    assert _compare(same, [0.5, 1.0])[:2] == ("agree", "")


def test_a_refusal_is_told_apart_from_a_wrong_number():
    refused = ("a0 = lib.tensor(IN[0], dtype=lib.float64, requires_grad=True)\n"
               "if lib.__name__ != 'torch':\n"
               "    raise lib.SrcgradError('not supported here')")
    assert _compare(refused, [0.5])[0] == "refused"
