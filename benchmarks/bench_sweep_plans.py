"""256 ``boosted`` models (defaults) as one ``dpjax.sweep`` under each ``parallel`` layout against
a loop of 256 ``dpjax.fit`` calls, on the machine it runs on (issues 30 and 50).

    python -m benchmarks.bench_sweep_plans             # a9a, 16 ε x 16 seeds
    python -m benchmarks.bench_sweep_plans --quick     # banknote, 4 x 4
    python -m benchmarks.bench_sweep_plans --shape random   # 20 random trees of depth 6

Each layout: its compile (the first call's ``compile_s``) and the warm call's wall and ``run_s``
(median of ``--repeats``); the loop: one compiling fit, then every model's warm fit. Every
layout gives the same models bit for bit (``tests/runtime/test_sweep_parallel.py``); the report
says which layout ``"auto"`` takes here. Writes ``benchmarks/results/bench_sweep_plans_<device>.md``
(``bench_sweep_plans_random_<device>.md`` with ``--shape random``).

Every model's plan (under ``shape="auto"`` on a9a's 123 features: oblivious, random or cyclic
rounds, read off its released prior) is settled before the program that grows it
(``dpjax/_planning.py``): the models of one plan run as one program holding that plan's rounds
alone, vectorised (``"vmap"``, ``"auto"``: an oblivious level's histograms of every model by
one windowed scatter per group of codes) or one after another (``"map"``). ``--shape random``
(20 trees x depth 6) has one plan.
"""

from __future__ import annotations

import argparse
import time
import warnings

import jax
import numpy as np

import dpjax
from benchmarks import harness
from benchmarks.suite_common import A9A_FIT, load_a9a

RANDOM = {"shape": "random", "n_trees": 20, "depth": 6}


def measure(X, y, data: dict, epsilons: list[float], n_seeds: int, repeats: int,
            plans: tuple[str, ...] = ("auto", "map", "vmap")) -> list[tuple]:
    """Rows ``(how, compile_s, warm wall, run_s)`` of one ``dpjax.sweep`` of ``boosted`` per
    ``parallel`` plan and of the loop of ``dpjax.fit`` over the same models (a plan the memory
    check refuses: ``(how, reason)``)."""
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for plan in plans:
            def once(plan=plan):
                return dpjax.sweep(X, y, method="boosted", epsilon=epsilons, seeds=n_seeds,
                                   parallel=plan, **data)
            try:
                first = once()
            except ValueError as error:     # the memory check, before any work
                rows.append((f"dpjax.sweep(parallel={plan!r})", str(error).split(":")[0]))
                continue
            warm = []
            for _ in range(repeats):
                start = time.perf_counter()
                sweep = once()
                warm.append((time.perf_counter() - start, sweep.timings.run_s))
            wall, run_s = np.median([w for w, _ in warm]), np.median([r for _, r in warm])
            rows.append((f"dpjax.sweep(parallel={plan!r})", first.timings.compile_s, wall,
                         run_s))
        first = dpjax.fit(X, y, method="boosted", epsilon=1.0, key=0, **data)
        start, run_total = time.perf_counter(), 0.0
        for epsilon in epsilons:
            for seed in range(n_seeds):
                model = dpjax.fit(X, y, method="boosted", epsilon=epsilon, key=seed, **data)
                run_total += model.timings.run_s
        rows.append((f"loop of {len(epsilons) * n_seeds} dpjax.fit", first.timings.compile_s,
                     time.perf_counter() - start, run_total))
    return rows


def table(rows: list[tuple], models: int) -> list[str]:
    """The markdown table of :func:`measure`'s rows, against the loop (the last row)."""
    loop_wall = rows[-1][2]
    lines = ["| how | compile s | warm wall s | run_s | models/s | loop / this (warm) |",
             "|---|---|---|---|---|---|"]
    for how, *measured in rows:
        if len(measured) == 1:      # refused by the memory check
            lines.append(f"| {how} | refused: {measured[0]} | | | | |")
            continue
        compile_s, wall, run_s = measured
        lines.append(f"| {how} | {compile_s:.2f} | {wall:.2f} | {run_s:.2f} | "
                     f"{models / wall:.0f} | {loop_wall / wall:.1f}x |")
    return lines


def run(quick: bool, repeats: int, shape: str) -> str:
    load_at_start = harness.load_average()
    if quick:
        X, y = dpjax.load_dataset("banknote")
        data = dict(bounds=dpjax.data.public_bounds("banknote"))
        n_eps, n_seeds, name = 4, 4, "banknote"
    else:
        X, y = load_a9a(harness.data_dir(), test=False)
        data, n_eps, n_seeds, name = A9A_FIT, 16, 16, "a9a"
    if shape == "random":
        data = {**data, **RANDOM}
    epsilons = list(np.geomspace(0.1, 10.0, n_eps))
    rows = measure(X, y, data, epsilons, n_seeds, repeats)
    seeds_by_map, grid_by_map = dpjax._api.sweep_layout("auto")
    flags = (" --quick" if quick else "") + (f" --shape {shape}" if shape != "auto" else "")
    what = ("`boosted` defaults" if shape == "auto"
            else "`boosted` with shape='random', 20 trees x depth 6")
    lines = [f"# {n_eps * n_seeds} boosted models: sweep plans against a loop"
             + (" (quick)" if quick else ""), "",
             f"`python -m benchmarks.bench_sweep_plans{flags}` — "
             f"{name} ({X.shape[0]} rows x {X.shape[1]}), {what}, {n_eps} ε "
             f"(0.1..10) x {n_seeds} seeds; warm: median of {repeats}. On this backend "
             f"(`{jax.default_backend()}`) `parallel='auto'` "
             f"{'maps' if seeds_by_map else 'vectorises'} the seeds and "
             f"{'maps' if grid_by_map else 'vectorises'} the grid points of each plan; every "
             "model's plan is settled before its program (`dpjax/_planning.py`).", "",
             *table(rows, n_eps * n_seeds)]
    lines += ["", "| environment | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in harness.environment_rows(load_at_start)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shape", choices=("auto", "random"), default="auto",
                        help="the defaults (auto) or 20 random trees of depth 6")
    args = parser.parse_args()
    report = run(args.quick, args.repeats, args.shape)
    print(report)
    harness.write_report("bench_sweep_plans" + ("_random" if args.shape == "random" else "")
                         + ("_quick" if args.quick else ""), report)


if __name__ == "__main__":
    main()
