"""The fuzzer's programs through ``srcgrad.hvp(jit=True)`` against the interpreted hvp.

``python benchmarks/fuzz_hvp_jit.py --seed 103 --programs 60`` generates the programs of
tests/fuzzer.py (the same cases, inputs and directions as ``--checks hvp``), runs the
interpreted hvp and the compiled one, and counts: compiled and equal to the interpreted
product (rtol 1e-12), compiled and within 1e-9 of it and of central differences of the
gradient, refused (a located JitUnsupportedError or other SrcgradError), wrong (anything
else compiled), internal (not a SrcgradError), and programs whose interpreted hvp itself
fails (not counted against the compiled one). ``--show`` prints each refusal's reason.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import fuzzer  # noqa: E402

import srcgrad  # noqa: E402


def _products(value, n):
    return fuzzer.as_tuple(value, n, bare=True)


def _equal(got, want, rtol):
    try:
        for g, w in zip(got, want):
            if not np.allclose(np.asarray(g, float), np.asarray(w, float), rtol=rtol,
                               atol=1e-300 if rtol < 1e-10 else 1e-12, equal_nan=True):
                return False
        return True
    except (TypeError, ValueError):
        return False


def outcome(case) -> tuple[str, str]:
    n = len(case.args)
    try:
        want = _products(srcgrad.hvp(case.loss, tuple(fuzzer.copies(case.args)),
                                     tuple(case.direction)), n)
    except Exception as e:  # noqa: BLE001 (the interpreted hvp's own refusal)
        return "interpreted fails", f"{type(e).__name__}: {str(e)[:120]}"
    try:
        with fuzzer.time_limit(120):
            got = _products(srcgrad.hvp(case.loss, tuple(fuzzer.copies(case.args)),
                                        tuple(case.direction), jit=True), n)
    except srcgrad.InternalError as e:
        return "internal", str(e)[:300]
    except srcgrad.SrcgradError as e:
        return "refused", fuzzer.refusal_reason(str(e))
    except (Exception, fuzzer.Timeout) as e:  # noqa: BLE001
        return "internal", f"{type(e).__name__}: {str(e)[:300]}"
    if _equal(got, want, 1e-12):
        return "compiled, equal", ""
    if _equal(got, want, 1e-9):
        try:
            fuzzer.Checks(case).hvp(srcgrad)  # (the interpreted product against differences)
            return "compiled, within 1e-9", ""
        except fuzzer.Mismatch as e:
            return "wrong", str(e)[:300]
    return "wrong", f"compiled {got} interpreted {want}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, action="append", required=True)
    parser.add_argument("--programs", type=int, default=60)
    parser.add_argument("--show", action="store_true", help="print every refusal")
    options = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    directory = tempfile.mkdtemp(prefix="fuzz_hvp_jit_")
    for seed in options.seed:
        counts: collections.Counter = collections.Counter()
        reasons: collections.Counter = collections.Counter()
        for index in range(options.programs):
            case, _ = fuzzer.make_case(seed, index, directory)
            if case is None:
                counts["no usable case"] += 1
                continue
            kind, detail = outcome(case)
            counts[kind] += 1
            if kind in ("refused", "interpreted fails", "internal"):
                reasons[f"{kind}: {detail}"] += 1
            if kind in ("wrong", "internal") or (options.show and kind == "refused"):
                print(f"seed {seed} program {index}: {kind}: {detail}", flush=True)
        print(f"seed {seed}, {options.programs} programs: " + ", ".join(
            f"{kind} {n}" for kind, n in sorted(counts.items())), flush=True)
        for reason, n in reasons.most_common(12):
            print(f"  {n:3d}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
