"""Cold start (issue 30, item 6): the first ``dpjax.fit`` of a fresh process with an empty
persistent compilation cache, per learner, with its defaults on a small public dataset.

    python -m benchmarks.bench_cold_start                       # every learner on banknote
    python -m benchmarks.bench_cold_start --learners boosted --repeats 5
    python -m benchmarks.bench_cold_start --quick   # DPJAX_QUICK_COMPILE=on in the children
    python -m benchmarks.bench_cold_start --before old.csv --before-label "sources at abc123"
    python -m benchmarks.bench_cold_start --against /tmp/old-checkout --before-label "abc123"

Each repeat of each learner runs in a fresh interpreter whose ``DPJAX_COMPILATION_CACHE`` is a
new empty directory, so nothing compiled earlier is read from disk. The child:

1. imports dpjax (``import s``) and reads the dataset with its declared bounds;
2. times the first ``dpjax.fit`` (ε = 1, key 0; ``first fit s``: everything the call does,
   the lazy imports of the learner's modules included), and splits the compile work by JAX's
   own monitoring events: tracing to a jaxpr, lowering to StableHLO and XLA's backend compile,
   summed over every program compiled during the call (``programs``);
3. times a second fit (key 1: the warm run, no compile).

Medians over the repeats. Writes ``benchmarks/results/bench_cold_start_<device>.{md,csv}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace_s",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
          "/jax/core/compile/backend_compile_duration": "backend_s"}
TARGET_S = 2.0


def child(method: str, dataset: str, data_dir: str | None) -> dict[str, Any]:
    """One cold start, in this (fresh) interpreter."""
    start = time.perf_counter()
    import jax

    import dpjax
    from dpjax.data import load_dataset, public_bounds
    out: dict[str, Any] = {"method": method, "import_s": time.perf_counter() - start}
    X, y = load_dataset(dataset, data_dir)
    bounds = public_bounds(dataset, data_dir)
    classes = tuple(np.unique(y).tolist())
    sums = dict.fromkeys(EVENTS.values(), 0.0)
    sums["programs"] = 0

    def listen(event: str, seconds: float, **_: Any) -> None:
        if event in EVENTS:
            sums[EVENTS[event]] += seconds
            sums["programs"] += event.endswith("backend_compile_duration")

    jax.monitoring.register_event_duration_secs_listener(listen)
    start = time.perf_counter()
    first = dpjax.fit(X, y, method=method, epsilon=1.0, bounds=bounds, classes=classes, key=0)
    out["first_fit_s"] = time.perf_counter() - start
    out.update(sums, compile_s=first.timings.compile_s)
    start = time.perf_counter()
    warm = dpjax.fit(X, y, method=method, epsilon=1.0, bounds=bounds, classes=classes, key=1)
    out["warm_fit_s"] = time.perf_counter() - start
    out["train_accuracy"] = float(np.mean(np.asarray(warm.predict(X)) == y))
    return out


def fresh_child(module: str, args: list[str], timeout: float, env: dict[str, str],
                sources: str | None = None) -> dict[str, Any]:
    """``python -m module --child *args`` in a fresh interpreter whose compilation cache is a
    new empty directory (:func:`benchmarks.suite_common.cache_env`: a cache configured for JAX
    itself is dropped), with ``env`` added, of this checkout's dpjax or of the one at
    ``sources`` (another checkout's root): the child's last JSON line, or ``{"error": ...}``."""
    from benchmarks.suite_common import cache_env
    with tempfile.TemporaryDirectory(prefix="dpjax-cold-") as cache:
        child_env = {**os.environ, **cache_env(cache), **env}
        if sources is not None:
            child_env["PYTHONPATH"] = os.path.abspath(sources)
        try:
            done = subprocess.run([sys.executable, "-m", module, "--child", *args],
                                  capture_output=True, text=True, timeout=timeout, check=False,
                                  env={k: v for k, v in child_env.items() if v is not None},
                                  cwd=sources)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def run_child(method: str, dataset: str, data_dir: str | None, timeout: float,
              quick: str, sources: str | None = None) -> dict[str, Any]:
    """One cold start of ``method`` (:func:`fresh_child`), with ``DPJAX_QUICK_COMPILE=quick``."""
    args = [method, "--dataset", dataset] + (["--data-dir", data_dir] if data_dir else [])
    return {"method": method, **fresh_child("benchmarks.bench_cold_start", args, timeout,
                                            {"DPJAX_QUICK_COMPILE": quick}, sources)}


def medians(records: list[dict[str, Any]]) -> Any:
    import pandas as pd
    frame = pd.DataFrame([r for r in records if "error" not in r])
    return frame.groupby("method").median(numeric_only=True).reset_index()


def markdown(table: Any, dataset: str, repeats: int, before: Any, before_label: str,
             quick: str) -> str:
    """The report: ``table`` (:func:`medians`) beside ``before`` (an earlier run's)."""
    from benchmarks import harness
    headers = ["learner", "first fit s", "import s", "programs", "trace s", "lower s",
               "XLA compile s", "warm fit s", "train accuracy"]
    if before is not None:
        headers[1:1] = ["before: first fit s"]
        previous = dict(zip(before["method"], before["first_fit_s"], strict=True))
    rows = []
    for r in table.itertuples():
        row = [r.method, f"**{r.first_fit_s:.2f}**" if r.first_fit_s < TARGET_S
               else f"{r.first_fit_s:.2f}", f"{r.import_s:.2f}", f"{r.programs:.0f}",
               f"{r.trace_s:.2f}", f"{r.lower_s:.2f}", f"{r.backend_s:.2f}",
               f"{r.warm_fit_s:.3f}", f"{r.train_accuracy:.3f}"]
        if before is not None:
            row[1:1] = [f"{previous[r.method]:.2f}" if r.method in previous else "-"]
        rows.append(row)
    return (f"# Cold start: the first dpjax.fit of a fresh process, empty compilation cache "
            f"({dataset}, defaults, ε = 1, DPJAX_QUICK_COMPILE={quick})\n\n"
            + harness.md_table(headers, rows)
            + f"\n\nMedians of {repeats} fresh interpreters per learner, each with a new empty "
            "`DPJAX_COMPILATION_CACHE`. first fit = the wall clock of the first `dpjax.fit` "
            "(import excluded; the learner's lazily imported modules included); trace, lower "
            "and XLA compile = JAX's monitoring events summed over the programs compiled "
            f"during that call; bold: under the {TARGET_S:g} s target. "
            + (f"before: {before_label}. " if before is not None else "")
            + "`python -m benchmarks.bench_cold_start`\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", default=None, help="comma-separated; default: all")
    parser.add_argument("--dataset", default="banknote")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--before", default=None, help="an earlier run's CSV to set beside")
    parser.add_argument("--against", default=None,
                        help="another checkout's root: each repeat of each learner runs it "
                             "too, right after this one (the before column, same conditions)")
    parser.add_argument("--before-label", default="an earlier run",
                        help="what the earlier run was (sources, options)")
    parser.add_argument("--stem", default=None, help="output name (default by device)")
    parser.add_argument("--quick", action="store_const", const="on", default="auto",
                        help="compile every fit quickly (DPJAX_QUICK_COMPILE=on; the default "
                             "auto gives a fit whose row count is private its learner's "
                             "own option set, Learner.cpu_compile)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.dataset, args.data_dir)), flush=True)
        return
    import pandas as pd

    import dpjax
    from benchmarks import harness
    from experiments.harness import save_results
    learners = args.learners.split(",") if args.learners else sorted(dpjax.LEARNERS)
    if args.before and args.against:
        parser.error("--before and --against both set the before column: give one")
    runs = {"this": None} | ({"against": args.against} if args.against else {})
    records: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
    for repeat in range(args.repeats):
        for method in learners:
            for name, sources in runs.items():
                record = run_child(method, args.dataset, args.data_dir, args.timeout,
                                   args.quick, sources)
                harness.log(f"{method} #{repeat} ({name}): " + (
                    record.get("error") or f"first fit {record['first_fit_s']:.2f} s"))
                records[name].append({**record, "repeat": repeat})
    table = medians(records["this"])
    before = (medians(records["against"]) if args.against
              else pd.read_csv(args.before) if args.before else None)
    text = markdown(table, args.dataset, args.repeats, before, args.before_label, args.quick)
    print(text)
    quick = "_quick" if args.quick == "on" else ""
    save_results(args.stem or f"bench_cold_start_{harness.device_slug()}{quick}", tidy=table,
                 markdown=text, directory=harness.RESULTS)


if __name__ == "__main__":
    main()
