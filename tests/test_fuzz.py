"""The random-program fuzzer (tests/fuzzer.py) in CI: a fixed, seeded set of programs.

Every program must be correct or refused with a SrcgradError; a wrong number or an internal
error fails the test with the program's source. Programs that still fail because of a bug
already minimized in test_fuzz_found.py are listed in KNOWN, each with that test's name: they
must keep failing (strict, like an xfail), so that a fix shows up here and the entry is dropped.
The long run is ``python tests/fuzzer.py --programs 10000 --seed 0`` (docs/fuzzing.md).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import fuzzer

SEED = 0
PROGRAMS = 200       # about 50 s on one core

# program index -> the test_fuzz_found.py test that reproduces its failure, minimized
KNOWN: dict[int, str] = {}


def failure_text(summary, results) -> str:
    return "\n\n".join(fuzzer.describe(r, summary.seed) for r in results)


@pytest.fixture(scope="module")
def summary():
    return fuzzer.fuzz(PROGRAMS, seed=SEED)


def test_no_wrong_or_internal_program(summary):
    new = [r for r in summary.failures() if r.index not in KNOWN]
    assert not new, (f"{len(new)} of {PROGRAMS} fuzzer programs (seed {SEED}) are wrong or "
                     f"raise internal errors:\n\n" + failure_text(summary, new))


def test_known_failures_still_fail(summary):
    fixed = sorted(i for i in KNOWN if summary.results[i].kind not in ("wrong", "internal"))
    assert not fixed, (f"fuzzer programs {fixed} (seed {SEED}) now pass: drop them from KNOWN "
                       f"in tests/test_fuzz.py (and the xfail of "
                       f"{sorted({KNOWN[i] for i in fixed})} in test_fuzz_found.py)")


def test_most_programs_are_tested(summary):
    """The generator makes programs srcgrad accepts: a refusal rate that climbs means the
    fuzzer tests less (or srcgrad refuses more)."""
    refused = summary.count("refused") / PROGRAMS
    assert refused < 0.3, summary.report()  # 21.5% with the working tree of 2026-11-26
    assert summary.count("skipped") == 0, summary.report()


def test_programs_are_deterministic():
    """Program i of a seed depends on (seed, i) only: failures can be reproduced by index."""
    first = fuzzer.Generator(fuzzer.random.Random("0:7:0")).program().source
    again = fuzzer.Generator(fuzzer.random.Random("0:7:0")).program().source
    assert first == again


def test_steep_derivatives_are_judged_by_extrapolated_differences():
    """A central difference of sin(1e4 t) is off by ~1.7e-5 relative (seed 27 program 5 was
    called wrong that way); the extrapolated one is not, and still catches a wrong number."""
    def differences(eps, t=0.3):
        return (np.sin(1e4 * (t + eps)) - np.sin(1e4 * (t - eps))) / (2 * eps)
    exact = 1e4 * np.cos(1e4 * 0.3)
    with pytest.raises(fuzzer.Mismatch):
        fuzzer.close(exact, differences(fuzzer.EPS), "d/dt")
    fuzzer.close_to_differences(exact, differences, "d/dt")
    with pytest.raises(fuzzer.Mismatch, match="finite differences"):
        fuzzer.close_to_differences(exact * (1 + 1e-4), differences, "d/dt")


def test_programs_pass_containers_around():
    """About half the programs take a list, tuple, dict or [(W, b), ...] parameter (and the
    helpers and statements that read, copy and rebuild it)."""
    sources = [fuzzer.Generator(fuzzer.random.Random(f"0:{i}:0")).program() for i in range(40)]
    with_containers = [p for p in sources
                       if any(isinstance(s, fuzzer.Spec) for _, s in p.params)]
    assert 10 <= len(with_containers) <= 30
    text = "\n".join(p.source for p in with_containers)
    for idiom in ("for W", "params[", "def h"):
        assert idiom in text


def test_gradients_of_containers_are_compared_leaf_by_leaf():
    """A gradient must have its argument's containers: another type, length or key set is a
    mismatch, not a number compared by accident."""
    arg = [(np.ones(2), 0.5), (np.zeros(2), -1.0)]
    grad = [(np.full(2, 2.0), 1.0), (np.ones(2), 3.0)]
    assert fuzzer.vdot(grad, arg) == pytest.approx(4.0 + 0.5 - 3.0)
    for wrong in ([grad[0]], tuple(grad), [list(grad[0]), grad[1]], [(np.ones(2),), grad[1]]):
        with pytest.raises(fuzzer.Mismatch):
            fuzzer.vdot(wrong, arg)
    with pytest.raises(fuzzer.Mismatch):
        fuzzer.flat({"w": 1.0}, {"b": 1.0})
    copied = fuzzer.copies([arg])[0]
    copied[0][0][0] = 7.0
    assert arg[0][0][0] == 1.0


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("SRCGRAD_FUZZ_LONG"),
                    reason="set SRCGRAD_FUZZ_LONG=1 (the suite runs slow tests by default)")
def test_long_run():
    """2,000 programs of another seed (about 8 minutes on one core, 2 processes)."""
    result = fuzzer.fuzz(2000, seed=1, jobs=2)
    assert not result.failures(), result.report()
