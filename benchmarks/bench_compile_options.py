"""Each learner's XLA options on CPU (issue 30, item 6): the measurements that
``Learner.cpu_compile`` is chosen from.

    python -m benchmarks.bench_compile_options                 # every learner, every option set
    python -m benchmarks.bench_compile_options --learners boosted,malpha --sets default,lean

For each learner and each option set of :data:`dpjax._preparation.CPU_COMPILE` (XLA's defaults,
``lean``, ``quick``), two fresh interpreters, each with a new empty compilation cache:

1. cold: the first ``dpjax.fit`` on banknote with the learner's defaults, ε = 1, a private
   add/remove fit (the path its choice governs): wall clock and XLA compile
   (:func:`benchmarks.bench_cold_start.child`);
2. large: synthetic data (uniform features in ``[0, 1]``, a noisy linear label) of the
   learner's size (1e6 x 20 rows; rule_list 3e5 x 10, malpha 1e5 x 20), declared bounds: the
   first fit's compile, then the best of ``--warm`` warm fits (keys 1, 2, ...).

The child forces the option set by setting the learner class's ``cpu_compile`` (a private
add/remove fit takes it). The chosen set of each learner is marked. Writes
``benchmarks/results/bench_compile_options_<device>.{md,csv}``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

SIZES = {"rule_list": (300_000, 10), "malpha": (100_000, 20)}
"""Rows x features of the large fit where it is not 1e6 x 20 (the slower learners)."""
DEFAULT_SIZE = (1_000_000, 20)


def force(method: str, choice: str) -> None:
    """Make ``method``'s fits in this interpreter take the option set ``choice``."""
    from dpjax.learners import get_learner
    type(get_learner(method)).cpu_compile = choice


def cold(method: str, choice: str) -> dict[str, Any]:
    from benchmarks import bench_cold_start
    force(method, choice)
    out = bench_cold_start.child(method, "banknote", None)
    return {"cold_first_fit_s": out["first_fit_s"], "cold_xla_s": out["backend_s"]}


def large(method: str, choice: str, warm: int) -> dict[str, Any]:
    import dpjax
    force(method, choice)
    rows, features = SIZES.get(method, DEFAULT_SIZE)
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (rows, features)).astype(np.float32)
    y = (X[:, 0] + 0.3 * X[:, 1] + 0.2 * rng.uniform(size=rows) > 0.75).astype(np.int32)
    fit = dict(method=method, epsilon=1.0, bounds=(0.0, 1.0), classes=(0, 1))
    first = dpjax.fit(X, y, key=0, **fit)
    runs = []
    for key in range(1, warm + 1):
        start = time.perf_counter()
        model = dpjax.fit(X, y, key=key, **fit)
        runs.append(time.perf_counter() - start)
    held = slice(0, 100_000)
    return {"size": f"{rows:,} x {features}", "large_compile_s": first.timings.compile_s,
            "large_warm_s": min(runs),
            "accuracy": float(np.mean(np.asarray(model.predict(X[held])) == y[held]))}


def markdown(records: list[dict[str, Any]], warm: int) -> str:
    from benchmarks import harness
    headers = ["learner", "option set", "banknote first fit s", "banknote XLA compile s",
               "large rows x features", "large compile s", f"large warm fit s (best of {warm})",
               "accuracy (large, train)"]
    rows = []
    for r in records:
        chosen = "**" if r["chosen"] else ""
        if "error" in r:
            rows.append([r["method"], r["set"], r["error"], "", "", "", "", ""])
            continue
        rows.append([r["method"], f"{chosen}{r['set']}{chosen}", f"{r['cold_first_fit_s']:.2f}",
                     f"{r['cold_xla_s']:.2f}", r["size"], f"{r['large_compile_s']:.2f}",
                     f"{r['large_warm_s']:.3f}", f"{r['accuracy']:.3f}"])
    return ("# Each learner's XLA options on CPU: cold start on banknote and a warm fit on "
            "large data\n\n" + harness.md_table(headers, rows)
            + "\n\nOne fresh interpreter per cell, each with a new empty compilation cache; a "
            "private add/remove fit with the learner's defaults at ε = 1 (the fits whose "
            "options `Learner.cpu_compile` sets); bold: the learner's choice. Option sets "
            "(`dpjax._preparation.CPU_COMPILE`): default = XLA's, lean = "
            "`xla_cpu_use_fusion_emitters=False`, quick = lean and "
            "`xla_backend_optimization_level=1`. `python -m benchmarks.bench_compile_options`\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", default=None, help="comma-separated; default: all")
    parser.add_argument("--sets", default="default,lean,quick")
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, method, choice = args.child[:3]
        out = cold(method, choice) if kind == "cold" else large(method, choice, args.warm)
        print(json.dumps(out), flush=True)
        return
    import pandas as pd

    import dpjax
    from benchmarks import harness
    from benchmarks.bench_cold_start import fresh_child
    from dpjax.learners import get_learner
    from experiments.harness import save_results
    learners = args.learners.split(",") if args.learners else sorted(dpjax.LEARNERS)
    records = []
    for method in learners:
        chosen = get_learner(method).cpu_compile
        for choice in args.sets.split(","):
            record = {"method": method, "set": choice, "chosen": choice == chosen}
            for kind in ("cold", "large"):
                out = fresh_child("benchmarks.bench_compile_options",
                                  [kind, method, choice, "--warm", str(args.warm)], args.timeout,
                                  {"DPJAX_QUICK_COMPILE": "auto"})
                record.update(out)
                if "error" in out:
                    break
            harness.log(f"{method} {choice}: " + (record.get("error") or (
                f"banknote {record['cold_first_fit_s']:.2f} s, large warm "
                f"{record['large_warm_s']:.3f} s")))
            records.append(record)
    text = markdown(records, args.warm)
    print(text)
    save_results(f"bench_compile_options_{harness.device_slug()}",
                 tidy=pd.DataFrame(records), markdown=text, directory=harness.RESULTS)


if __name__ == "__main__":
    main()
