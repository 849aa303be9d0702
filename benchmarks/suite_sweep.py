"""Section ``sweep``: many models at once. ``E`` epsilons (logspace 0.01..10) x ``S`` seeds
(10 x 10 = 100 models; ``--quick``: 3 x 2) of ``malpha``, ``boosted`` and ``random_trees``
(defaults) on a9a: one ``dpjax.sweep`` (:func:`harness.bench_sweep`: its compile, then warm
repeats) against a loop of ``E x S`` sequential ``dpjax.fit`` calls
(:func:`harness.bench_loop`, after one compiling ``dpjax.fit`` whose ``compile_s`` is the
loop's compile). Reported: compile s, warm s (median), the compiled calls' ``run_s``,
models/s, and the loop / sweep ratios with compile excluded and included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import dpjax
from benchmarks import harness
from benchmarks.suite_common import A9A_FIT, Section, Settings, fmt_ratio, load_a9a, ratio

METHODS = ("malpha", "boosted", "random_trees")


def bench_method(method: str, X: Any, y: np.ndarray, settings: Settings,
                 data_kwargs: dict[str, Any] = A9A_FIT) -> list[dict]:
    """One sweep of ``method`` against its loop of fits on ``X, y`` (declared as
    ``data_kwargs``: bounds, classes, bins): the section's two records."""
    epsilons = np.logspace(-2, 1, settings.sweep_epsilons)
    seeds = settings.sweep_seeds
    n_models = len(epsilons) * seeds
    fit_kwargs: dict[str, Any] = {"method": method, **data_kwargs}
    base = {"section": "sweep", "method": method, "models": n_models}
    try:
        sweep = harness.bench_sweep(X, y, fit_kwargs, epsilons, seeds, settings.sweep_repeats)
        harness.log(f"sweep: {method}: one compiling dpjax.fit for the loop")
        first, first_wall = harness.timed(lambda: dpjax.fit(X, y, epsilon=1.0, key=0,
                                                            **fit_kwargs))
        loop = harness.bench_loop(X, y, fit_kwargs, epsilons, seeds, settings.loop_repeats)
    except Exception as error:  # a learner the sweep cannot run is a row, not a crash
        harness.log(f"sweep: {method} failed: {type(error).__name__}: {error}")
        return [{**base, "how": "sweep / loop", "status": f"failed: {type(error).__name__}: "
                 f"{error}"}]
    sweep_warm, loop_warm = harness.median(sweep.warm_wall), harness.median(loop.totals)
    loop_run = float(np.sum(loop.per_fit_run)) / len(loop.totals)
    cold_sweep = sweep.compile_s + sweep_warm
    cold_loop = first.timings.compile_s + loop_warm
    return [
        {**base, "how": "dpjax.sweep (1 call)", "status": "ok", "compile_s": sweep.compile_s,
         "first_call_s": sweep.first_call_s, "warm_s": sweep_warm,
         "run_s": harness.median(sweep.warm_run), "models_per_s": n_models / sweep_warm,
         "repeats": len(sweep.warm_wall), "with_compile_s": cold_sweep},
        {**base, "how": f"loop of {n_models} dpjax.fit", "status": "ok",
         "compile_s": first.timings.compile_s, "first_call_s": first_wall, "warm_s": loop_warm,
         "run_s": loop_run, "models_per_s": n_models / loop_warm, "repeats": len(loop.totals),
         "with_compile_s": cold_loop, "recompiled": loop.recompiled,
         "ratio_loop_over_sweep": loop_warm / sweep_warm,
         "ratio_with_compile": ratio(cold_loop, cold_sweep)},
    ]


def run(settings: Settings) -> Section:
    X, y = load_a9a(settings.data_dir, test=False)
    methods = ("random_trees",) if settings.quick else METHODS
    records: list[dict] = []
    for method in methods:
        records += bench_method(method, X, y, settings)
        dpjax.clear_caches()  # the sweep programs are large; later sections compile their own
    fmt = harness.fmt_s
    rows = [(r["method"], r["how"], fmt(r.get("compile_s"), 2), fmt(r.get("first_call_s"), 2),
             fmt(r.get("warm_s")), fmt(r.get("run_s")),
             "-" if r.get("models_per_s") is None else f"{r['models_per_s']:.1f}",
             fmt(r.get("with_compile_s"), 2), fmt_ratio(r.get("ratio_loop_over_sweep")),
             fmt_ratio(r.get("ratio_with_compile")), r["status"]) for r in records]
    headers = ("learner", "how", "compile s", "1st call s", "warm s (median)",
               "of which run_s", "models/s (warm)", "compile + warm s", "loop / sweep (warm)",
               "loop / sweep (with compile)", "status")
    n_eps, seeds = settings.sweep_epsilons, settings.sweep_seeds
    recompiled = [f"{r['method']}: {r['recompiled']}" for r in records if r.get("recompiled")]
    text = [
        f"## sweep: {n_eps} ε (logspace 0.01..10) x {seeds} seeds = {n_eps * seeds} models per "
        "learner (defaults, a9a): one dpjax.sweep vs a loop of dpjax.fit", "",
        harness.md_table(headers, rows), "",
        f"warm = median wall over {settings.sweep_repeats} sweep call(s) / "
        f"{settings.loop_repeats} pass(es) of the loop (compile excluded); run_s = the "
        "compiled calls (Model/Sweep.timings.run_s; for the loop, summed over one pass); the "
        "loop's compile is that of one dpjax.fit, done once before the loop (the sweep "
        "compiles a different, vmapped program); 1st call = wall clock of the first, "
        "compiling call.",
    ]
    if recompiled:
        text.append(f"- loop fits that recompiled: {', '.join(recompiled)}")
    return Section("sweep", "\n".join(text), records)
