"""Section ``learners``: every dpjax learner at ε = 1 on a9a, beside its peers.

Per dpjax configuration (each learner's defaults, plus Mα-boost and private Newton boosting with
20 trees / rounds of depth 6), in fresh interpreters (``benchmarks/suite_child.py``):

1. cold: a first ``dpjax.fit`` with an empty, private persistent compilation cache
   (``DPJAX_COMPILATION_CACHE=<new temporary directory>``): ``Model.timings.compile_s`` and the
   wall clock of the call;
2. warm cache: a second interpreter on the same cache directory: the wall clock of its first
   ``dpjax.fit`` and its ``compile_s`` (tracing, lowering and the load from disk), then
   ``repeats`` warm fits with keys 1.. (compile excluded): median wall and ``run_s``, and the
   accuracy of those models on a9a test.

Peers, fitted in this process on the same data: IBM diffprivlib's ``RandomForestClassifier``
(21 trees, depth 5, ε = 1, bounds and classes declared) and ``LogisticRegression`` (ε = 1,
``data_norm = sqrt(123)``), and InterpretML's ``DPExplainableBoostingClassifier`` (ε = 1,
δ = 1e-6, declared privacy bounds [0, 1] per feature): median warm wall over the repeats. A
missing or failing peer is a row saying so.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import dpjax
from benchmarks import harness
from benchmarks.suite_common import (
    A9A_FEATURES,
    A9A_FIT,
    Section,
    Settings,
    cache_env,
    directory_mb,
    fmt_ratio,
    load_a9a,
    median_or_none,
    params_text,
    ratio,
    run_child,
)

EPSILON = 1.0
DEEP = {"n_trees": 20, "depth": 6}
EBM_PEER = "InterpretML DP-EBM"


def configurations(quick: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """``(label, method, params)``: every learner's defaults, then the 20 x depth-6 boosters
    (``boosted`` needs ``shape="random"`` for trees: its default ``"auto"`` boosts one
    feature's cells per round, its rounds fixed by its public schedule), and ``rule_list`` at
    10 bins a feature (the bins a user gets without declaring ``n_bins``: 34 literals per
    binary column, past the exhaustive pair search's cap)."""
    deep = [("malpha 20 trees x depth 6", "malpha", dict(DEEP)),
            ("boosted 20 rounds x depth 6 (shape=random)", "boosted",
             {"shape": "random", **DEEP})]
    if quick:
        return [("random_trees", "random_trees", {}), deep[1]]
    wide = [("rule_list, 10 bins (4,182 literals: greedy pair search)", "rule_list",
             {"n_bins": 10})]
    return [(name, name, {}) for name in sorted(dpjax.LEARNERS)] + deep + wide


def bench_dpjax(label: str, method: str, params: dict[str, Any], settings: Settings
                ) -> dict[str, Any]:
    """The cold and warm-cache children of one configuration (see the module docstring)."""
    cache = Path(tempfile.mkdtemp(prefix="dpjax-suite-cache-"))
    try:
        task = {"task": "a9a_fit", "method": method, "params": params,
                "data_dir": str(settings.data_dir)}
        harness.log(f"learners: {label}: cold compile (empty cache {cache})")
        cold = run_child({**task, "repeats": 0}, settings.child_timeout_s, cache_env(str(cache)))
        cache_mb = directory_mb(cache)
        harness.log(f"learners: {label}: warm cache, {settings.learner_repeats} warm fits")
        warm = run_child({**task, "repeats": settings.learner_repeats},
                         settings.child_timeout_s, cache_env(str(cache)))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    status = "; ".join(f"{what}: {r['error']}" for what, r in (("cold", cold), ("warm", warm))
                       if "error" in r) or "ok"
    record = {"section": "learners", "model": f"dpjax {label}", "method": method,
              "params": params_text(params), "status": status, "cache_mb": cache_mb,
              "cold_compile_s": cold.get("compile_s"), "cold_first_wall_s": cold.get(
                  "first_wall_s"), "import_s": cold.get("import_s"),
              "warm_cache_first_wall_s": warm.get("first_wall_s"),
              "warm_cache_compile_s": warm.get("compile_s"),
              "warm_wall_s": median_or_none(warm.get("warm_wall_s", [])),
              "run_s": median_or_none(warm.get("warm_run_s", [])),
              "accuracy": float(np.mean(warm["accuracy"])) if warm.get("accuracy") else None,
              "accuracy_sd": float(np.std(warm["accuracy"])) if warm.get("accuracy") else None,
              "repeats": len(warm.get("warm_wall_s", [])), "privacy": warm.get("privacy", "-"),
              "recompiled": sum(s > 0 for s in warm.get("warm_compile_s", []))}
    return record


def make_peers(n_jobs: int = -1) -> tuple[list[harness.Peer], list[str]]:
    """diffprivlib's forest (through :func:`harness.forest_peers`) and logistic regression,
    and DP-EBM; a missing library is a ``Peer`` with ``make=None`` and a note."""
    peers, notes = harness.forest_peers(A9A_FEATURES, A9A_FIT["classes"], n_trees=21, depth=5,
                                        epsilon=EPSILON, n_jobs=n_jobs)
    peers = [p for p in peers if p.name.startswith("diffprivlib")]  # the private forest only
    diffprivlib, _ = harness.import_diffprivlib()
    if diffprivlib is not None:
        from diffprivlib.accountant import BudgetAccountant
        from diffprivlib.models import LogisticRegression

        def make_lr(seed: int) -> Any:
            return LogisticRegression(epsilon=EPSILON, data_norm=float(np.sqrt(A9A_FEATURES)),
                                      random_state=seed, accountant=BudgetAccountant())

        def lr_privacy(model: Any) -> str:
            spent_eps, spent_delta = model.accountant.total()
            return f"ε={spent_eps:g}, δ={spent_delta:g}"

        peers.append(harness.Peer(
            f"diffprivlib {harness.version_of('diffprivlib')} LogisticRegression",
            f"{EPSILON:g}", make_lr, lr_privacy))
    else:
        peers.append(harness.Peer("diffprivlib LogisticRegression", f"{EPSILON:g}", None))
    try:
        from interpret.privacy import DPExplainableBoostingClassifier
    except Exception as error:  # missing or broken: a row saying so
        notes.append(f"DP-EBM: interpret cannot be imported ({type(error).__name__}: {error}); "
                     "pip install interpret-core")
        peers.append(harness.Peer(EBM_PEER, f"{EPSILON:g}", None))
    else:
        def make_ebm(seed: int) -> Any:
            return DPExplainableBoostingClassifier(
                epsilon=EPSILON, delta=1e-6, feature_types=["continuous"] * A9A_FEATURES,
                privacy_bounds={j: (0.0, 1.0) for j in range(A9A_FEATURES)},
                random_state=seed, n_jobs=n_jobs)

        peers.append(harness.Peer(
            f"{EBM_PEER} {harness.version_of('interpret-core')}", f"{EPSILON:g}", make_ebm,
            lambda model: f"ε={EPSILON:g}, δ=1e-06 (as configured)"))
    return peers, notes


def bench_peer_rows(settings: Settings, data: tuple[Any, ...]) -> tuple[list[dict], list[str]]:
    X, y, Xt, yt = data
    Xn, Xtn = X.to_numpy(np.float64), Xt.to_numpy(np.float64)
    peers, notes = make_peers()
    records = []
    for peer in peers:
        rows, fit_notes = harness.bench_peers([peer], Xn, y, Xtn, yt, settings.peer_repeats)
        notes += fit_notes
        status = ("ok" if rows and peer.make is not None else
                  "skipped: not installed (see notes)" if peer.make is None else
                  "failed: " + (fit_notes[-1] if fit_notes else "unknown error"))
        row = rows[0] if rows and peer.make is not None else None
        records.append({
            "section": "learners", "model": peer.name, "method": "peer",
            "params": "n_estimators=21, max_depth=5" if "Forest" in peer.name else
            "data_norm=sqrt(123)" if "Logistic" in peer.name else
            "feature_types=continuous, privacy_bounds=[0, 1]" if EBM_PEER in peer.name else "",
            "status": status, "warm_wall_s": row.fit_wall_s if row else None,
            "accuracy": float(np.mean(row.accuracy)) if row and row.accuracy else None,
            "accuracy_sd": float(np.std(row.accuracy)) if row and row.accuracy else None,
            "repeats": len(row.accuracy) if row else 0,
            "privacy": row.privacy if row else "-"})
    return records, notes


def run(settings: Settings) -> Section:
    harness.log("learners: loading a9a (peers run in this process)")
    data = load_a9a(settings.data_dir)
    records = [bench_dpjax(label, method, params, settings)
               for label, method, params in configurations(settings.quick)
               if settings.learners is None or method in settings.learners]
    peer_records, notes = bench_peer_rows(settings, data)
    records += peer_records
    rf = next((r["warm_wall_s"] for r in peer_records if "RandomForest" in r["model"]
               and r["warm_wall_s"] is not None), None)
    ebm = next((r["warm_wall_s"] for r in peer_records if EBM_PEER in r["model"]
                and r["warm_wall_s"] is not None), None)
    for record in records:
        record["speedup_vs_diffprivlib_rf"] = ratio(rf, record.get("warm_wall_s"))
        deep = record["method"] in ("malpha", "boosted") and "depth=6" in record["params"]
        record["speedup_vs_dp_ebm"] = ratio(ebm, record.get("warm_wall_s")) if deep else None

    headers = ("model", "params", "cold compile s", "cold 1st fit s", "warm-cache 1st fit s",
               "of which compile_s", "warm fit s (wall)", "run_s", "test accuracy",
               "speed-up vs diffprivlib RF", "vs DP-EBM", "privacy spent", "status")
    fmt = harness.fmt_s

    def accuracy(record: dict[str, Any]) -> str:
        if record.get("accuracy") is None:
            return "-"
        return f"{record['accuracy']:.4f} ± {record['accuracy_sd']:.4f}"

    rows = [(r["model"], r["params"], fmt(r.get("cold_compile_s"), 2),
             fmt(r.get("cold_first_wall_s"), 2), fmt(r.get("warm_cache_first_wall_s"), 2),
             fmt(r.get("warm_cache_compile_s"), 2), fmt(r.get("warm_wall_s")),
             fmt(r.get("run_s")), accuracy(r), fmt_ratio(r["speedup_vs_diffprivlib_rf"]),
             fmt_ratio(r["speedup_vs_dp_ebm"]), r["privacy"], r["status"]) for r in records]
    X, y, Xt, yt = data
    text = [
        f"## learners: every dpjax learner at ε = {EPSILON:g} on a9a, and peers", "",
        harness.md_table(headers, rows), "",
        f"a9a train {X.shape[0]} x {X.shape[1]}, test {Xt.shape[0]} rows (majority-class "
        f"accuracy {max(np.mean(yt), 1 - np.mean(yt)):.4f}); dpjax: bounds [0, 1] per "
        "feature, classes (0, 1), n_bins=2. cold = a fresh interpreter with an empty "
        "persistent compilation cache (Model.timings.compile_s; 1st fit = its wall clock, "
        "import excluded); warm-cache = a second fresh interpreter on that cache (wall clock "
        "of its first dpjax.fit, and the compile_s it reports: tracing, lowering, loading); "
        f"warm fit = median wall over {settings.learner_repeats} fits with keys 1.. in that "
        "process (compile excluded), run_s = Model.timings.run_s (the compiled call); "
        "accuracy = mean ± sd of those fits on a9a test. Peers: median wall over "
        f"{settings.peer_repeats} fit(s) (seeds 0..), n_jobs=-1. speed-up = peer wall / row "
        "wall (> 1: the row is faster); 'vs DP-EBM' for the 20 x depth-6 boosters only.",
    ]
    cache_sizes = [f"{r['model'].removeprefix('dpjax ')} {r['cache_mb']:.1f} MB"
                   for r in records if r.get("cache_mb") is not None]
    text.append(f"- persistent cache written by the cold fit: {', '.join(cache_sizes)}")
    imports = [r["import_s"] for r in records if r.get("import_s") is not None]
    if imports:
        text.append(f"- a fresh interpreter imports dpjax in {np.median(imports):.2f} s (median; "
                    "not in the 1st-fit columns)")
    recompiled = [r["model"] for r in records if r.get("recompiled")]
    if recompiled:
        text.append(f"- warm fits that recompiled (static shapes differ?): {recompiled}")
    text += [f"- note: {note}" for note in notes]
    return Section("learners", "\n".join(text), records)
