"""The prepared device check: dpjax's speed and memory on the machine it runs on, in one short
command, for a lent accelerator (issue 30).

    python -m benchmarks.device_check            # on a GPU: about 7 minutes
    python -m benchmarks.device_check --dry-run  # small sizes on CPU, under 2 minutes (CI)

Sections, in this order (a section that fails, or that the time budget ``--budget-s`` no longer
allows, is a line of the report; the report is rewritten after every section, so that a run cut
short still leaves what it measured):

1. ``histogram`` (``suite_histogram.py``): one tree level's histogram on 1e7 x 20 uint8 codes
   (``--dry-run``: 1e5) at 1 / 8 / 32 nodes, against the device reading the codes once
   (``jnp.sum``, the floor on an accelerator) and numpy reading them once on the host; then one
   level of 16 models by each formulation (one model after another, every model's rows in one
   scatter, the models' cells side by side: ``suite_histogram.formulations``).
2. ``sweep`` (``bench_sweep_plans.measure``): 16 ε x 16 seeds = 256 ``boosted`` models on 1e5
   synthetic rows (``--dry-run``: 2 x 2 on 1e3), with the defaults and with the random shape:
   each ``dpjax.sweep`` layout (``auto``, ``map``, ``vmap``) against a loop of 256
   ``dpjax.fit`` calls, compile and warm time apart.
3. ``rows`` (``bench_device_rows.measure``): ``boosted`` on 1e7 x 20 numeric rows
   (``--dry-run``: 1e4) given as a numpy array (binned on the host) and as a ``jax.Array``
   (binned on the device): warm-fit wall against the compiled calls, and the binning alone.
4. ``learners``: every learner of ``dpjax.LEARNERS`` with its defaults at ε = 1 on synthetic
   data (``suite_common.synthetic``, 20 features with values 0..9, declared bounds) at 1e5, 1e6
   and 1e7 rows (``--dry-run``: 1e3 and 1e4). One fresh interpreter per learner
   (``suite_child.py``, task ``size_series``) with an empty compilation cache, so that every
   first call compiles: compile s, the first call's wall, the warm fit (median; ``run_s`` is the
   compiled call) and the device's peak allocation after each size (the interpreter's
   high-water mark: sizes run smallest first). A size beyond a learner's public row limit runs
   at the limit instead, and the row says so. A learner's interpreter has 100 s (a size it has
   not finished by then is a row saying so).

Writes ``<out>/device_<device>[_dry-run].{md,csv,json}`` (``--out``, default
``benchmarks/results``; the device from ``harness.device_slug()``). The environment table gives
the device, its memory and the versions. Progress goes to stderr.

JAX's GPU client would otherwise take 75% of the device's memory at start in every process:
``XLA_PYTHON_CLIENT_PREALLOCATE=false`` is set before JAX is imported, so that the learners'
interpreters can run beside this one and the peaks are what the programs allocate.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FEATURES = 20
RESULT_STEM = "device"


@dataclasses.dataclass(frozen=True)
class Plan:
    """Sizes of one run: the GPU check or its CPU dry run."""

    dry_run: bool
    learner_rows: tuple[int, ...]
    hist_rows: int
    sweep_rows: int
    sweep_epsilons: int
    sweep_seeds: int
    child_timeout_s: float
    rows: int

    @classmethod
    def make(cls, dry_run: bool) -> Plan:
        if dry_run:
            return cls(True, (10**3, 10**4), 10**5, 10**3, 2, 2, 120.0, 10**4)
        return cls(False, (10**5, 10**6, 10**7), 10**7, 10**5, 16, 16, 100.0, 10**7)

    def warm_repeats(self, rows: int) -> int:
        return 1 if self.dry_run or rows >= 10**7 else 3


class Budget:
    """The run's time budget: what is left of it, and whether a step still fits."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.start = seconds, time.perf_counter()

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.start)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.device_check",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="small sizes (CPU, under 2 minutes): checks the script runs")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results",
                        help="directory of the report files (default benchmarks/results)")
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="stop starting new steps after this many seconds (default 420)")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections (default: {','.join(SECTIONS)})")
    return parser.parse_args(argv)


# --------------------------------------------------------------------------------------------
# learners at 1e5 / 1e6 / 1e7 rows
# --------------------------------------------------------------------------------------------


def runnable_rows(method: str, m: int) -> tuple[int | None, str]:
    """``(rows to fit, note)``: ``m``, or the learner's public row limit when ``m`` is past it
    (``None`` when dpjax refuses even that, e.g. for memory)."""
    from benchmarks.suite_common import memory_estimate
    from dpjax.learners import get_learner

    _, refusal = memory_estimate(method, {}, m, FEATURES)
    if refusal is None:
        return m, ""
    limit = get_learner(method, {}).row_limit(True, FEATURES)
    if limit is not None and limit < m and memory_estimate(method, {}, limit, FEATURES)[1] is None:
        return limit, f"{m:,} refused (row limit); ran at the limit {limit:,}"
    return None, f"refused: {refusal}"


def learner_records(method: str, plan: Plan, budget: Budget) -> list[dict[str, Any]]:
    from benchmarks import harness
    from benchmarks.suite_common import cache_env, run_child

    sizes, notes = [], {}
    for m in plan.learner_rows:
        rows, note = runnable_rows(method, m)
        if rows is not None and all(rows > s["rows"] for s in sizes):
            sizes.append({"rows": rows, "repeats": plan.warm_repeats(rows)})
        notes[rows if rows is not None else m] = note
    base = {"section": "learners", "method": method, "features": FEATURES}
    if budget.left() < 20:
        return [{**base, "status": "skipped: time budget"}]
    harness.log(f"learners: {method} at {[s['rows'] for s in sizes]} rows")
    with tempfile.TemporaryDirectory(prefix="dpjax-device-cache-") as cache:
        result = run_child({"task": "size_series", "method": method, "params": {},
                            "features": FEATURES, "sizes": sizes},
                           min(plan.child_timeout_s, budget.left()), env=cache_env(cache))
    records = []
    for size in result.get("sizes", []):
        warm = size["warm_wall_s"]
        records.append({
            **base, "rows": size["rows"], "status": "ok", "note": notes.get(size["rows"], ""),
            "compile_s": size["compile_s"], "first_wall_s": size["first_wall_s"],
            "warm_wall_s": harness.median(warm) if warm else None,
            "run_s": harness.median(size["warm_run_s"]) if warm else size["first_run_s"],
            "repeats": len(warm), "device_peak_mb": size["device_peak_mb"],
            "device_limit_mb": size["device_limit_mb"], "privacy": size["privacy"],
            "import_s": result.get("import_s")})
    done = {r["rows"] for r in records}
    for size in sizes:
        if size["rows"] not in done:
            records.append({**base, "rows": size["rows"],
                            "status": result.get("error", "not reached")})
    records += [{**base, "rows": m, "status": note} for m, note in notes.items()
                if note.startswith("refused")]
    return records


def learners_section(plan: Plan, budget: Budget) -> tuple[str, list[dict[str, Any]]]:
    import dpjax
    from benchmarks import harness
    from benchmarks.suite_common import fmt_mb

    records: list[dict[str, Any]] = []
    for method in sorted(dpjax.LEARNERS):
        records += learner_records(method, plan, budget)
    fmt = harness.fmt_s
    rows = [(r["method"], f"{r.get('rows', 0):,}", fmt(r.get("compile_s"), 2),
             fmt(r.get("first_wall_s"), 2), fmt(r.get("warm_wall_s")), fmt(r.get("run_s")),
             fmt_mb(r.get("device_peak_mb")), r.get("privacy", "-"),
             r.get("note") or r["status"]) for r in records]
    headers = ("learner", "rows", "compile s", "1st call s", "warm fit s (wall)",
               "of which run_s", "device peak MB", "privacy", "status")
    text = [f"## learners: defaults at ε = 1, synthetic rows x {FEATURES} features (values "
            "0..9, declared bounds)", "", harness.md_table(headers, rows), "",
            "One fresh interpreter per learner with an empty compilation cache: compile s and "
            "the first call's wall are a cold start at each size (every size is a new shape). "
            "Warm fit: median wall of the later fits (1 at 1e7 rows); run_s: the compiled "
            "call alone. Device peak: the allocator's high-water mark of the learner's "
            "interpreter after that size (sizes run smallest first); '-' where the backend "
            "keeps no allocator statistics (CPU)."]
    return "\n".join(text), records


# --------------------------------------------------------------------------------------------
# the sections
# --------------------------------------------------------------------------------------------


def histogram_section(plan: Plan, budget: Budget) -> tuple[str, list[dict[str, Any]]]:
    from benchmarks import harness, suite_histogram
    from benchmarks.suite_common import Settings

    settings = Settings.make(plan.dry_run, plan.hist_rows, REPO)
    settings.hist_rows, settings.hist_nodes = plan.hist_rows, (1, 8, 32)
    settings.hist_rounds = 3 if plan.dry_run else 10
    harness.log("histogram")
    section = suite_histogram.run(settings)
    harness.log("histogram formulations")
    models = suite_histogram.formulations(settings)
    return section.markdown + "\n\n" + models.markdown, section.records + models.records


def sweep_section(plan: Plan, budget: Budget) -> tuple[str, list[dict[str, Any]]]:
    from benchmarks import bench_sweep_plans, harness
    from benchmarks.suite_child import synthetic_kwargs
    from benchmarks.suite_common import synthetic

    X, y = synthetic(plan.sweep_rows, FEATURES)
    data = synthetic_kwargs("boosted", {}, FEATURES)
    del data["method"], data["epsilon"]
    epsilons = list(np.geomspace(0.01, 10.0, plan.sweep_epsilons))
    n_models = plan.sweep_epsilons * plan.sweep_seeds
    text, records = [], []
    for shape, params in (("defaults", {}), ("random shape", bench_sweep_plans.RANDOM)):
        harness.log(f"sweep: {shape}")
        rows = bench_sweep_plans.measure(X, y, {**data, **params}, epsilons, plan.sweep_seeds,
                                         repeats=1)
        loop_wall = rows[-1][2]
        records += [{"section": "sweep", "shape": shape, "how": how, "models": n_models,
                     "status": "ok" if len(measured) == 3 else f"refused: {measured[0]}",
                     **(dict(zip(("compile_s", "warm_s", "run_s"), measured, strict=True),
                             ratio_loop_over_this=loop_wall / measured[1])
                        if len(measured) == 3 else {})}
                    for how, *measured in rows]
        text += [f"### {shape}", "", *bench_sweep_plans.table(rows, n_models), ""]
    head = (f"## sweep: {plan.sweep_epsilons} ε (logspace 0.01..10) x {plan.sweep_seeds} "
            f"seeds = {n_models} boosted models, {plan.sweep_rows:,} x {FEATURES} synthetic "
            "rows: each dpjax.sweep layout vs a loop of dpjax.fit (warm: one call, compile "
            "apart)")
    return "\n".join([head, "", *text]), records


def rows_section(plan: Plan, budget: Budget) -> tuple[str, list[dict[str, Any]]]:
    from benchmarks import bench_device_rows, harness

    harness.log(f"rows: {plan.rows:,} x {FEATURES}")
    markdown, records = bench_device_rows.measure(plan.rows, 1 if plan.dry_run else 3)
    return markdown, [{"section": "rows", **r} for r in records]


SECTIONS: dict[str, Callable[[Plan, Budget], tuple[str, list[dict[str, Any]]]]] = {
    "histogram": histogram_section, "sweep": sweep_section, "rows": rows_section,
    "learners": learners_section}


def report(plan: Plan, sections: list[tuple[str, str]], load_at_start: str, seconds: float
           ) -> str:
    import jax

    from benchmarks import harness
    from benchmarks.suite_common import device_memory_mb
    from experiments.harness import source_digest

    _, limit = device_memory_mb()
    environment = harness.md_table(("environment", "value"), [
        *harness.environment_rows(load_at_start),
        ("device memory (allocator limit)", "-" if limit is None else f"{limit:,.0f} MB"),
        ("local devices", str(jax.local_device_count())),
        ("dpjax sources (sha256)", source_digest()),
        ("run", f"{'--dry-run (small sizes, not for citing)' if plan.dry_run else 'full'}; "
                f"{seconds / 60:.1f} min in all"),
    ])
    title = "# dpjax device check" + (" (--dry-run)" if plan.dry_run else "")
    return "\n\n".join([title, environment, *[text for _, text in sections]]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    cache = Path(tempfile.mkdtemp(prefix="dpjax-device-cache-"))
    os.environ["DPJAX_COMPILATION_CACHE"] = str(cache)
    os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)
    import pandas as pd

    from benchmarks import harness

    plan, budget = Plan.make(args.dry_run), Budget(args.budget_s)
    names = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(names) - set(SECTIONS))
    if unknown:
        raise SystemExit(f"--only: unknown section(s) {unknown}; choose from {list(SECTIONS)}")
    load_at_start = harness.load_average()
    stem = f"{RESULT_STEM}_{harness.device_slug()}" + ("_dry-run" if plan.dry_run else "")
    sections: list[tuple[str, str]] = []
    records: list[dict[str, Any]] = []
    try:
        for name in names:
            start = time.perf_counter()
            if budget.left() < 20:
                text, new = f"## {name}\n\nskipped: the time budget is spent", []
            else:
                harness.log(f"=== section {name} ({budget.left():.0f} s of budget left)")
                try:
                    text, new = SECTIONS[name](plan, budget)
                except Exception as error:  # a broken section is a line, the others still run
                    traceback.print_exc(file=sys.stderr)
                    text = f"## {name}\n\nfailed: {type(error).__name__}: {error}"
                    new = [{"section": name, "status": f"failed: {error}"}]
            sections.append((name, f"{text}\n\n(section {name}: "
                                   f"{time.perf_counter() - start:.0f} s)"))
            records += new
            markdown = report(plan, sections, load_at_start, budget.seconds - budget.left())
            harness.save_results(stem, tidy=pd.DataFrame(records) if records else None,
                                 markdown=markdown, directory=args.out,
                                 meta={"argv": list(sys.argv[1:] if argv is None else argv),
                                       "sections": [n for n, _ in sections],
                                       "seconds": budget.seconds - budget.left(),
                                       "dry_run": plan.dry_run})
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(markdown)
    harness.log(f"wrote {args.out / stem}.{{md,csv,json}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
