"""Audit every learner and mode of dpjax, and the canaries, with many draws.

    python audits/run_audits.py --n 20000  # the committed table (30 minutes on 2 cores)
    python audits/run_audits.py            # 50,000 draws per side (about 75 minutes)
    python audits/run_audits.py --n 2000   # a quick look
    python audits/run_audits.py --n 20000 --only "trees" --merge   # rerun matching modes

For every configuration: ε ∈ {0.1, 1} under add/remove and replace-one neighbours, ``n`` pilot
draws per side choose a distinguishing event and ``n`` fresh draws per side measure it
(:func:`dpjax.audit`; 95% Clopper–Pearson). The neighbouring pair is a six-row dataset in
[0, 1]^2 (60 rows for the smooth rule-list selections) and the same with an outlier at the
upper corner (class 1) added, or in place of its last row. Configurations are small (one or
two trees of depth 1–2, one or two rules) so that each release carries a large share of the
budget: the sharpest setting for an audit. The canaries are deliberately broken mechanisms the
auditor must flag. Writes ``audits/results/audits.csv`` and ``.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import time
import warnings
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import pandas as pd

import dpjax
from dpjax.auditing import audit_release
from dpjax.auditing.canaries import canaries
from dpjax.rules import UnprovenClaimWarning

RESULTS = Path(__file__).resolve().parent / "results"
EPSILONS = (0.1, 1.0)
RELATIONS = ("add_remove", "replace_one")


@dataclasses.dataclass(frozen=True)
class Config:
    learner: str
    mode: str
    params: dict
    private: bool = True
    sweep: bool = False
    rows: int = 6
    """Rows of the audited dataset (the smooth rule-list selections need enough rows to pass
    their noisy support check, else they only ever release the default rule)."""
    relations: tuple[str, ...] = RELATIONS
    """The neighbouring relations the mode serves (an individual filter: add/remove only)."""
    n_classes: int = 2
    """Classes of the audited labels (``⌊a·C⌋``, declared ``0..C−1``)."""
    record: Any = "upper"
    """The neighbour's extra record (:func:`dpjax.audit`'s ``record``)."""
    regression: bool = False
    """A real target (``task="regression"``): ``y = a`` with ``y_bounds`` ``(0, 1)``; the
    outlier's target is the upper end."""


CONFIGS = [
    Config("boosted", "Newton defaults (shape auto)", dict()),
    Config("boosted", "Newton defaults, auto takes an oblivious tree (all affordable: "
           "oblivious_trees=1, d=2, min_signal tiny)",
           dict(oblivious_trees=1, depth=2, min_signal=1e-3)),
    Config("boosted", "Newton, cyclic shape", dict(shape="cyclic")),
    Config("boosted", "random shape, T=2, d=2", dict(shape="random", n_trees=2, depth=2)),
    Config("boosted", "random shape, T=60, d=1, δ=1e-5 (optimal split)",
           dict(shape="random", n_trees=60, depth=1, delta=1e-5, min_signal=1e-3)),
    Config("boosted", "Newton, Gaussian rounds, δ=1e-5 (zCDP)",
           dict(noise="gaussian", delta=1e-5, min_signal=1e-3)),
    Config("boosted", "Newton defaults, δ=1e-5 (Laplace rounds, optimal split)",
           dict(delta=1e-5)),
    Config("boosted", "Newton, auto noise, δ=1e-5 (scout count, route, rounds)",
           dict(noise="auto", delta=1e-5)),
    Config("boosted", "Newton, full resolution, 3 focus passes, Gaussian, δ=1e-5",
           dict(noise="gaussian", delta=1e-5, min_signal=1e-3, cell_signal=1e-3, passes=3,
                focus=1)),
    Config("boosted", "private oblivious trees, T=2, d=2 (permute-and-flip levels)",
           dict(shape="oblivious", oblivious_trees=2, depth=2, split_share=0.5)),
    Config("boosted", "individual filter κ=1.5, cyclic (rounds at 1.5x their share)",
           dict(individual=1.5, shape="cyclic"), relations=("add_remove",)),
    Config("boosted", "individual filter κ=2, oblivious T=2, d=2 (levels in the filter)",
           dict(individual=2.0, shape="oblivious", oblivious_trees=2, depth=2,
                split_share=0.5), relations=("add_remove",)),
    Config("boosted", "softmax, 3 classes, cyclic (2 rounds, min_signal tiny)",
           dict(shape="cyclic", min_signal=1e-3), n_classes=3),
    Config("boosted", "softmax, 3 classes, random shape T=2, d=1",
           dict(shape="random", n_trees=2, depth=1, min_signal=1e-3), n_classes=3),
    Config("boosted", "softmax, 3 classes, defaults at 6 rows (mostly the fallback)", dict(),
           n_classes=3),
    Config("boosted", "softmax, 3 classes, auto: random trees unless all n_trees=64 "
           "affordable (d=1, min_signal 0.05)",
           dict(n_trees=64, depth=1, min_signal=0.05), n_classes=3),
    Config("boosted", "softmax, 3 classes, cyclic, outlier mislabelled (p_y ≈ 0)",
           dict(shape="cyclic", min_signal=1e-3), n_classes=3, record=([1.0, 1.0], 0)),
    Config("boosted", "regression, cyclic (min_signal tiny: every round)",
           dict(shape="cyclic", min_signal=1e-3), regression=True),
    Config("boosted", "regression, random shape T=2, d=1",
           dict(shape="random", n_trees=2, depth=1, min_signal=1e-3), regression=True),
    Config("boosted", "regression, defaults at 6 rows (mostly the mean fallback)", dict(),
           regression=True),
    Config("boosted", "regression, cyclic, outlier at the far end (target 0 at the upper "
           "corner), residual_clip 1", dict(shape="cyclic", min_signal=1e-3, residual_clip=1.0),
           regression=True, record=([1.0, 1.0], 0.0)),
    Config("random_trees", "1 tree, depth 2", dict(n_trees=1, depth=2)),
    Config("random_trees", "sweep of ε and 2ε (3ε claimed)", dict(n_trees=1, depth=2),
           sweep=True),
    Config("random_trees", "1 tree, depth 2, prior, leaves at full depth (depth_signal 0)",
           dict(n_trees=1, depth=2, min_signal=0.0, shrinkage=3.0, depth_signal=0.0)),
    Config("random_trees", "1 tree, depth 3, prior, leaves at a public depth "
           "(depth_signal 2, min_signal 0)",
           dict(n_trees=1, depth=3, depth_signal=2.0, min_signal=0.0)),
    Config("random_trees", "1 tree, depth 2, prior, majority fallback always (min_signal 1e9)",
           dict(n_trees=1, depth=2, min_signal=1e9)),
    Config("rf_laplace", "1 tree, depth 1", dict(n_trees=1, depth=1)),
    Config("rf_laplace", "1 tree, depth 1, prior, leaves always released (min_signal 0)",
           dict(n_trees=1, depth=1, min_signal=0.0)),
    Config("rf_laplace", "1 tree, depth 1, paper budget (per leaf)",
           dict(n_trees=1, depth=1, budget="paper")),
    Config("rf_exponential", "1 tree, depth 1", dict(n_trees=1, depth=1)),
    Config("rf_exponential", "1 tree, depth 1, prior offset, leaves always (min_signal 0)",
           dict(n_trees=1, depth=1, min_signal=0.0, shrinkage=1.0)),
    Config("malpha", "defaults: counts/post, parallel leaves and levels, O.C (private), T=1, "
           "d=2, prior, shrinkage, tree always boosted (min_signal 0)",
           dict(n_trees=1, depth=2, min_signal=0.0)),
    Config("malpha", "defaults, prior, majority fallback always (min_signal 1e9)",
           dict(n_trees=1, depth=2, min_signal=1e9)),
    Config("malpha", "counts/post, no prior (prior_share 0), T=1, d=2",
           dict(n_trees=1, depth=2, prior_share=0.0)),
    Config("malpha", "value/fold, O.C (private), T=1, d=2, parallel levels, prior",
           dict(n_trees=1, depth=2, leaf_mechanism="value", min_signal=0.0)),
    Config("malpha", "value/fold, O.C, T=1, d=2, paper budget",
           dict(n_trees=1, depth=2, leaf_mechanism="value", budget="paper")),
    Config("malpha", "value/fold, α=1, T=2, d=1",
           dict(n_trees=2, depth=1, alpha=1.0, leaf_mechanism="value", min_signal=0.0)),
    Config("malpha", "value/laplace β, α=0.5, T=1, d=1",
           dict(n_trees=1, depth=1, alpha=0.5, leaf_mechanism="value", beta_mode="laplace",
                min_signal=0.0)),
    Config("malpha", "counts/post, α=1, T=1, d=1",
           dict(n_trees=1, depth=1, alpha=1.0, leaf_mechanism="counts", beta_mode="post",
                min_signal=0.0)),
    Config("malpha", "counts/post, parallel leaves, β_tree=0.1",
           dict(n_trees=1, depth=1, alpha=1.0, leaf_mechanism="counts", beta_mode="post",
                leaf_composition="parallel", beta_tree=0.1, min_signal=0.0)),
    Config("malpha", "counts/laplace β, O.C, T=1, d=2",
           dict(n_trees=1, depth=2, leaf_mechanism="counts", beta_mode="laplace",
                min_signal=0.0)),
    Config("malpha", "paper_fast β (not private)",
           dict(n_trees=1, depth=1, alpha=1.0, leaf_mechanism="counts",
                beta_mode="paper_fast"), private=False),
    Config("malpha", "exact O.C (paper; not private)",
           dict(n_trees=1, depth=2, oc_alpha="exact"), private=False),
    Config("smooth_boost", "DP-1R stumps, 2 rounds",
           dict(n_rounds=2, min_signal=1e-3, fallback_signal=0.0)),
    Config("smooth_boost", "DP-1R stumps, majority fallback always (fallback_signal 1e9)",
           dict(n_rounds=2, min_signal=1e-3, fallback_signal=1e9)),
    Config("smooth_boost", "DP-1R stumps, 1 round, κ=0.9",
           dict(n_rounds=1, kappa=0.9, min_signal=1e-3, fallback_signal=0.0)),
    Config("smooth_boost", "DP-1R stumps, 3 rounds, advanced composition, δ=1e-5",
           dict(n_rounds=3, min_signal=1e-3, accounting="advanced", delta=1e-5,
                fallback_signal=0.0)),
    Config("smooth_boost", "DP-1R stumps, 3 rounds, zCDP, δ=1e-5",
           dict(n_rounds=3, min_signal=1e-3, accounting="zcdp", delta=1e-5,
                fallback_signal=0.0)),
    Config("smooth_boost", "DP-TopDown trees (provable 16/(κn)), 1 round, 1 split",
           dict(weak_learner="tree", n_rounds=1, tree_splits=1, min_signal=1e-3)),
    Config("smooth_boost", "DP-TopDown trees (provable), 2 rounds, 2 splits",
           dict(weak_learner="tree", n_rounds=2, tree_splits=2, min_signal=1e-3)),
    Config("smooth_boost", "DP-TopDown trees (provable), 3 rounds, 1 split, zCDP, δ=1e-5",
           dict(weak_learner="tree", n_rounds=3, tree_splits=1, min_signal=1e-3,
                accounting="zcdp", delta=1e-5)),
    Config("smooth_boost", "DP-TopDown trees (provable), 3 rounds, 1 split, advanced, δ=1e-5",
           dict(weak_learner="tree", n_rounds=3, tree_splits=1, min_signal=1e-3,
                accounting="advanced", delta=1e-5)),
    Config("smooth_boost", "DP-TopDown trees, paper's 4/(κn) (not private)",
           dict(weak_learner="tree", n_rounds=1, tree_splits=1, min_signal=1e-3,
                calibration="paper"), private=False),
    Config("smooth_boost", "halfspaces (discrete Gaussian, zCDP), 1 round, δ=1e-5",
           dict(weak_learner="halfspace", n_rounds=1, min_signal=1e-3, delta=1e-5)),
    Config("smooth_boost", "halfspaces (discrete Gaussian, zCDP), 2 rounds, δ=1e-5",
           dict(weak_learner="halfspace", n_rounds=2, min_signal=1e-3, delta=1e-5)),
    Config("rule_list", "count_gini (default schedule at 6 rows: R' 0 or 1), 2 rules",
           dict(max_rules=2)),
    Config("rule_list", "count_gini, schedule R' from ñ (rule_signal 3: 1 or 2), 2 rules",
           dict(max_rules=2, rule_signal=3.0, min_signal=0.0)),
    Config("rule_list", "count_gini, 1 rule of 1 literal (always scheduled)",
           dict(max_rules=1, max_card=1, rule_signal=1e-3, min_signal=0.0)),
    Config("rule_list", "smooth_laplace (paper's claim), 1 rule, δ=0.01, 60 rows",
           dict(max_rules=1, selection="smooth_laplace", delta=0.01), rows=60),
    Config("rule_list", "count_gini, greedy pair search (wide schemas), 2 rules scheduled",
           dict(max_rules=2, pair_search="greedy", rule_signal=1e-3, min_signal=0.0)),
    Config("rule_list", "count_gini, fixed split (prior_share 0), 2 rules, no label prior",
           dict(max_rules=2, prior_share=0.0, prior_records=0.0)),
    Config("rule_list", "smooth_cauchy (paper's claim), 1 rule, δ=0.01, 60 rows",
           dict(max_rules=1, selection="smooth_cauchy", delta=0.01), rows=60),
    Config("rule_list", "global_laplace (report noisy min), 1 rule of 1 literal",
           dict(max_rules=1, max_card=1, selection="global_laplace", rule_signal=1e-3,
                min_signal=0.0)),
    Config("rule_list", "global_gaussian (discrete Gaussian vector), 1 rule, δ=1e-5",
           dict(max_rules=1, max_card=1, selection="global_gaussian", delta=1e-5)),
    Config("rule_list", "exponential (permute-and-flip on the Gini), 2 rules",
           dict(max_rules=2, selection="exponential", rule_signal=1e-3, min_signal=0.0)),
    Config("rule_list", "smooth_laplace, paper calibration (not private), 1 rule, 60 rows",
           dict(max_rules=1, selection="smooth_laplace", calibration="paper", delta=0.01),
           private=False, rows=60),
]


def dataset(rows: int = 6, n_classes: int = 2) -> tuple[pd.DataFrame, np.ndarray, dict]:
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(0, 1, rows), "b": rng.uniform(0, 1, rows)})
    y = (X.a > 0.5) if n_classes == 2 else np.minimum(X.a * n_classes, n_classes - 1)
    return X, np.asarray(y).astype(int), {"a": (0.0, 1.0), "b": (0.0, 1.0)}


def run(n: int, only: str | None = None) -> pd.DataFrame:
    """Every configuration (those whose mode contains ``only`` or whose learner is ``only``,
    without the canaries)."""
    rows = []
    for index, config in enumerate(CONFIGS):
        if only is not None and only not in config.mode and only != config.learner:
            continue
        X, y, bounds = dataset(config.rows, config.n_classes)
        classes = {} if config.n_classes == 2 else {"classes": tuple(range(config.n_classes))}
        if config.regression:
            y, classes = X.a.to_numpy(), {"task": "regression", "y_bounds": (0.0, 1.0)}
        for epsilon in EPSILONS:
            for relation in config.relations:
                budget = [epsilon, 2 * epsilon] if config.sweep else epsilon
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", dpjax.data.DataDependentWarning)
                    warnings.simplefilter("ignore", UnprovenClaimWarning)
                    report = dpjax.audit(X, y, method=config.learner, epsilon=budget,
                                         bounds=bounds, neighbouring=relation, n=n,
                                         key=index, progress=False, record=config.record,
                                         **classes, **config.params)
                rows.append(_row(config.learner, config.mode, relation, report,
                                 private=config.private))
                print(report.summary(), f"[{report.seconds:.0f}s]", flush=True)
    if only is None or only in PRIVATE_BOUNDS_MODE:
        rows += audit_private_bounds(n)
    if only is None or any(only in mode for mode in TUNE_MODES.values()):
        rows += audit_tune(n)
    if only is not None:
        return pd.DataFrame(rows)
    for canary in canaries(1.0):
        report = audit_release(canary.release, canary.data, canary.data_prime,
                               epsilon=canary.epsilon, n=min(n, 20_000), key=1,
                               name=canary.name, progress=False)
        rows.append(_row("canary", f"{canary.name}: {canary.what}", "add_remove", report,
                         private=False))
        print(report.summary(), flush=True)
    return pd.DataFrame(rows)


PRIVATE_BOUNDS_MODE = "bounds='private' (5%/95% quantile selections, 1 column, 40 rows)"


def audit_private_bounds(n: int) -> list[dict]:
    """``bounds="private"``'s release (:func:`dpjax.mechanisms.quantiles.select_quantiles`) on
    the utilities of one column of 40 rows in [0, 1] and of its neighbour (an outlier at 10
    added, or in place of the last row): two selections of ``ε/2`` each, against ``ε``."""
    from dpjax.mechanisms.quantiles import candidate_grid, quantile_utilities, select_quantiles

    X, _, _ = dataset(40)
    grid, k = candidate_grid(), 20

    def utilities(columns: np.ndarray) -> np.ndarray:
        return np.stack([quantile_utilities(columns[:, j], grid, k)
                         for j in range(columns.shape[1])])

    base = X[["a"]].to_numpy()
    neighbours = {"add_remove": np.vstack([base, [[10.0]]]),
                  "replace_one": np.vstack([base[:-1], [[10.0]]])}
    rows = []
    for epsilon in EPSILONS:
        for relation, other in neighbours.items():
            multiplier = 1.0 if relation == "add_remove" else 2.0

            def release(key, u, e=epsilon, mult=multiplier):
                return select_quantiles(key, u, e, mult, k)[0]

            report = audit_release(release, utilities(base), utilities(other),
                                   epsilon=epsilon, n=n, key=7, progress=False,
                                   name=PRIVATE_BOUNDS_MODE)
            rows.append(_row("bounds", PRIVATE_BOUNDS_MODE, relation, report, private=True))
            print(report.summary(), f"[{report.seconds:.0f}s]", flush=True)
    return rows


TUNE_PARAMS = dict(shape="cyclic", passes=1, n_trees=1, depth=1)
TUNE_MODES = {part: f"dpjax.tune: boosted (cyclic, 1 pass) runs at ε/3, γ = 0.5, learning_rate "
                    f"in {{0.5, 2}}, fixed split 5/3 rows, the record in the {part} part"
              for part in ("training", "validation")}


def audit_tune(n: int) -> list[dict]:
    """``dpjax.tune``'s selection (:func:`dpjax._tuning.selection_release`: the same runs,
    coins and keys, ``K`` uncapped in a ``while_loop``) for a *fixed* split of eight rows in
    ``[0, 1]^2`` (five training, three validation: the theorem's argument conditions on the
    split), the neighbour's outlier (the upper corner, class 1) added to, or put in place of
    the last row of, one part. Released: the chosen model, its noisy validation count and its
    learning rate; claimed: the total ``ε`` (each run ``ε/3``)."""
    from dpjax import _tuning
    from dpjax._preparation import prepare
    from dpjax.data import encode

    X, y, bounds = dataset(8)
    train, val = np.arange(5), np.arange(5, 8)
    rows = []
    for epsilon in EPSILONS:
        for relation in RELATIONS:
            prepared = prepare(X, y, method="boosted", epsilon=epsilon, bounds=bounds,
                               classes=None, n_bins=None, missing="error",
                               on_out_of_bounds="clip", neighbouring=relation,
                               params=TUNE_PARAMS)
            record = jnp.asarray(encode(prepared.spec, pd.DataFrame({"a": [1.0], "b": [1.0]})))
            part = _tuning.training_part(prepared, train, _tuning.run_epsilon(epsilon))
            space = _tuning.search_space(prepared.config, {"learning_rate": [0.5, 2.0]})
            release = _tuning.selection_release(part, space, epsilon, 0.5)
            codes, labels = prepared.codes, prepared.y
            data = (codes[train], labels[train], codes[val], labels[val])
            for index, (name, mode) in enumerate(TUNE_MODES.items()):
                rows_of = train if name == "training" else val
                keep = rows_of[:-1] if relation == "replace_one" else rows_of
                moved = (jnp.concatenate([codes[keep], record]),
                         jnp.concatenate([labels[keep], jnp.ones(1, labels.dtype)]))
                data_prime = ((*moved, *data[2:]) if name == "training"
                              else (*data[:2], *moved))
                report = audit_release(release, data, data_prime, epsilon=epsilon, n=n,
                                       key=11 + index, progress=False, name=mode)
                rows.append(_row("tune", mode, relation, report, private=True))
                print(report.summary(), f"[{report.seconds:.0f}s]", flush=True)
    return rows


def _row(learner: str, mode: str, relation: str, report, *, private: bool) -> dict:
    return {"learner": learner, "mode": mode, "neighbouring": relation,
            "claimed_epsilon": report.epsilon, "epsilon_lb": report.epsilon_lb,
            "epsilon_hat": report.epsilon_hat, "n": report.n, "k1": report.counts[0],
            "k2": report.counts[1], "event": report.event, "private": private,
            "flagged": not report.passed, "seconds": round(report.seconds, 1)}


def report(table: pd.DataFrame, seconds: float) -> str:
    real = table[table.learner != "canary"]
    bad = real[real.private & real.flagged]
    lines = [
        "# Privacy audits",
        "",
        f"`python audits/run_audits.py --n {int(table.n.max())}` — {len(real)} learner audits "
        f"and {len(table) - len(real)} canaries in {seconds / 60:.0f} min on {platform.node()} "
        f"({platform.processor() or platform.machine()}). Each row: its `draws` pilot draws per "
        "side choose the event, as many fresh draws per side measure it; ε_lb is the 95% "
        "Clopper–Pearson lower bound (dpjax.audit).",
        "",
        f"**Private configurations whose lower bound exceeds the claim: {len(bad)}.**",
        "",
        "| learner | mode | neighbours | claimed ε | draws | ε_lb | point est. | event |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        mark = " **FLAGGED**" if r.flagged else ""
        lines.append(f"| {r.learner} | {r['mode']} | {r.neighbouring} | {r.claimed_epsilon:g} |"
                     f" {int(r.n)} | {r.epsilon_lb:.3f}{mark} | {r.epsilon_hat:.3g} |"
                     f" {r.event} |")
    lines += [
        "",
        "Reading the table: a lower bound above the claim is a violation (up to the 5% error "
        "of the interval); the canaries must all be flagged. A bound below the claim does not "
        "certify privacy: the small configurations, the outlier neighbour and the event "
        "families (thresholds, single values, values seen on one side only, float "
        "granularity, residuals of correlated outputs) are what this audit tried. Rows marked "
        "not private are the papers' labelled modes, which the ledger already reports as "
        "ε = inf; their bound is shown against the nominal ε.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=50_000, help="draws per side (pilot and "
                        "measurement each)")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--only", help="audit only the modes containing this text (or the "
                        "learner of that name)")
    parser.add_argument("--merge", action="store_true", help="replace those rows of the "
                        "committed table (in --out) instead of writing a new one, and drop "
                        "the rows of modes no longer configured")
    args = parser.parse_args()
    start = time.perf_counter()
    table = run(args.n, args.only)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seconds = time.perf_counter() - start
    if args.merge:
        old = pd.read_csv(out / "audits.csv")
        key = ["learner", "mode", "neighbouring", "claimed_epsilon"]
        kept = old.merge(table[key], on=key, how="left", indicator=True)["_merge"] == "left_only"
        order = {(c.learner, c.mode): i for i, c in enumerate(CONFIGS)}
        table = pd.concat([old[kept.to_numpy()], table], ignore_index=True)
        current = [learner == "canary" or (learner, mode) in order
                   or (learner, mode) == ("bounds", PRIVATE_BOUNDS_MODE)
                   or (learner == "tune" and mode in TUNE_MODES.values())
                   for learner, mode in zip(table["learner"], table["mode"], strict=True)]
        table = table[current].reset_index(drop=True)     # modes renamed or gone: dropped
        rank = np.array([order.get(pair, len(order))
                         for pair in zip(table["learner"], table["mode"], strict=True)])
        table = table.iloc[np.lexsort((table.index, rank))].reset_index(drop=True)
        seconds += float(old["seconds"].sum())
    table.to_csv(out / "audits.csv", index=False)
    (out / "audits.md").write_text(report(table, seconds))
    print(f"wrote {out / 'audits.md'}")


if __name__ == "__main__":
    main()
