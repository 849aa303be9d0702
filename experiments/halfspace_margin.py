"""The private large-margin halfspace learner (issue 10, deliverable 6b): BCS20's HS-StL idea —
LazyBregBoost over the Gaussian "centering" weak learner — on synthetic τ-margin data with
random classification noise (spec ``docs/specs/private-smooth-boosting.md`` §4–§5).

    python experiments/halfspace_margin.py            # full grid (about 10 min on 2 cores)
    python experiments/halfspace_margin.py --quick    # 2 seeds, 3 noise rates, 3 ε

Data (per seed): a unit vector ``u ∈ R^p`` (``p = 10``), examples uniform on the unit sphere
kept when ``|u·x| >= τ`` (``τ = 0.1``), clean label ``sgn(u·x)``, each training label flipped
with probability ``η`` (random classification noise, §5). Training ``n = 20,000`` rows; the test
set (5,000 rows) is scored against the **clean** labels (the RCN learning goal). The columns go
through dpjax's data layer with the public bounds ``[−1, 1]`` and 10 equal-width bins, one-hot:
the halfspace over ``onehot/sqrt(p)`` is an additive model of the binned coordinates.

Methods, each at ``(ε, δ = 1e-6)``:

* ``smooth_boost`` with ``weak_learner="halfspace"`` (defaults otherwise: κ = 0.35, λ = 0.5,
  at most 15 rounds, the public round schedule; the discrete Gaussian, zCDP accounting);
* ``smooth_boost`` with the default 1-rules, for comparison;
* diffprivlib's ``LogisticRegression`` (objective perturbation, ``data_norm = 1``) when
  installed, on the raw coordinates (which lie in the unit ball: the model class of the
  target) and on the one-hot bins scaled to the unit sphere (the halfspace learner's input);
* the non-private halfspace booster (``epsilon=None``).

Two sweeps: accuracy against the noise rate η at ε = 1, and against ε at η = 0.1.

Theory (§4.6–§4.7): HS-StL's parameters for (α, β) = (0.1, 0.05) and τ = 0.1 are
``κ = α/4``, ``T = 16 ln(1/κ)/γ²`` ≈ 3.8·10⁵ rounds (γ = τ/8) and a sample size of about
10⁸: the printed table computes them. What works in practice is a handful of rounds at
a large κ with the round budget from (ε, δ), reported here.

Writes ``experiments/results/halfspace_margin.{csv,md,png,json}``.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

import dpjax  # noqa: E402

STEM = "halfspace_margin"
DIMENSION, MARGIN, TRAIN, TEST, DELTA = 10, 0.1, 20_000, 5_000, 1e-6
NOISE_RATES = (0.0, 0.05, 0.1, 0.2, 0.3)
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
SEEDS = 5


def margin_data(seed: int, noise: float) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame,
                                                  np.ndarray]:
    """``(X_train, noisy y_train, X_test, clean y_test)`` of a τ-margin halfspace (module
    docstring); labels 0/1."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=DIMENSION)
    u /= np.linalg.norm(u)
    rows = []
    while sum(len(r) for r in rows) < TRAIN + TEST:
        x = rng.normal(size=(4 * (TRAIN + TEST), DIMENSION))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        rows.append(x[np.abs(x @ u) >= MARGIN])
    x = np.concatenate(rows)[:TRAIN + TEST]
    clean = (x @ u > 0).astype(np.int64)
    flipped = rng.uniform(size=TRAIN) < noise
    columns = [f"x{j}" for j in range(DIMENSION)]
    frame = pd.DataFrame(x, columns=columns)
    return (frame.iloc[:TRAIN].reset_index(drop=True), np.where(flipped, 1 - clean[:TRAIN],
                                                                 clean[:TRAIN]),
            frame.iloc[TRAIN:].reset_index(drop=True), clean[TRAIN:])


def theory(alpha: float = 0.1, beta: float = 0.05, tau: float = MARGIN,
           epsilon: float = 1.0, delta: float = DELTA) -> dict[str, float]:
    """HS-StL's constants (§4.4, §4.7: λ = τ/32, ξ = β/(3T), the concrete Gaussian tail) and
    the sample size at which its noise meets the utility condition ``σ <= τ/(8·sqrt(2 ln(2/ξ)))``
    with the generic sensitivity ``4/(κn)`` and the zCDP budget of (ε, δ)."""
    kappa, gamma = alpha / 4, tau / 8
    rounds = math.ceil(16 * math.log(1 / kappa) / gamma**2)
    xi = beta / (3 * rounds)
    sigma = tau / (8 * math.sqrt(2 * math.log(2 / xi)))
    log_term = math.log(1 / delta)
    rho = (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2
    # σ = (4/(κn))·sqrt(T/(2ρ))  =>  n = 4·sqrt(T/(2ρ))/(κσ)
    n = 4 * math.sqrt(rounds / (2 * rho)) / (kappa * sigma)
    return {"alpha": alpha, "beta": beta, "tau": tau, "kappa": kappa, "rounds T": rounds,
            "sigma": sigma, "rho": rho, "n needed": n}


def fit_dpjax(X: pd.DataFrame, y: np.ndarray, X_test: pd.DataFrame, y_test: np.ndarray,
              epsilon: float | None, seed: int, weak_learner: str) -> float:
    bounds = {c: (-1.0, 1.0) for c in X.columns}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dpjax.fit(X, y, method="smooth_boost", weak_learner=weak_learner,
                          epsilon=epsilon, delta=DELTA if epsilon is not None else 0.0,
                          bounds=bounds, n_bins=10, key=seed, classes=[0, 1])
    assert epsilon is None or model.privacy.epsilon <= epsilon
    return float(np.mean(model.predict(X_test) == y_test))


def one_hot_bins(X: pd.DataFrame) -> np.ndarray:
    """The representation the halfspace learner sees: 10 equal-width bins of [−1, 1] per
    column, one-hot, scaled by ``1/sqrt(p)`` (unit norm)."""
    codes = np.clip(((X.to_numpy() + 1.0) / 0.2).astype(int), 0, 9)
    matrix = np.zeros((len(X), DIMENSION * 10))
    matrix[np.arange(len(X))[:, None], 10 * np.arange(DIMENSION)[None, :] + codes] = 1.0
    return matrix / math.sqrt(DIMENSION)


def fit_dp_lr(X: np.ndarray, y: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
              epsilon: float, seed: int) -> float:
    """diffprivlib's DP logistic regression on rows of norm at most 1."""
    import diffprivlib.models as dp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dp.LogisticRegression(epsilon=epsilon, data_norm=1.0, random_state=seed)
        model.fit(X, y)
    return float(np.mean(model.predict(X_test) == y_test))


def run(noise_rates: tuple[float, ...], epsilons: tuple[float, ...], seeds: int,
        peers: bool) -> pd.DataFrame:
    cells = [(noise, 1.0) for noise in noise_rates]
    cells += [(0.1, e) for e in epsilons if (0.1, e) not in cells]
    rows = []
    for noise, epsilon in cells:
        start = time.perf_counter()
        for seed in range(seeds):
            X, y, X_test, y_test = margin_data(seed, noise)
            found = {"dpjax smooth_boost (halfspace)": fit_dpjax(X, y, X_test, y_test, epsilon,
                                                                 seed, "halfspace"),
                     "dpjax smooth_boost (stumps)": fit_dpjax(X, y, X_test, y_test, epsilon,
                                                              seed, "stump")}
            if peers:
                found["diffprivlib DP-LR (raw coordinates)"] = fit_dp_lr(
                    X.to_numpy(), y, X_test.to_numpy(), y_test, epsilon, seed)
                found["diffprivlib DP-LR (one-hot bins)"] = fit_dp_lr(
                    one_hot_bins(X), y, one_hot_bins(X_test), y_test, epsilon, seed)
            if epsilon == 1.0:
                found["dpjax halfspace booster (non-private)"] = fit_dpjax(
                    X, y, X_test, y_test, None, seed, "halfspace")
            for method, accuracy in found.items():
                rows.append({"noise": noise, "epsilon": epsilon, "seed": seed,
                             "method": method, "accuracy": accuracy})
        print(f"noise {noise:g}, epsilon {epsilon:g}: {time.perf_counter() - start:.0f}s",
              flush=True)
    return pd.DataFrame(rows)


def report(df: pd.DataFrame, meta: dict[str, Any]) -> str:
    by_noise = df[df["epsilon"] == 1.0].groupby(["noise", "method"])["accuracy"].mean()
    by_epsilon = df[df["noise"] == 0.1].groupby(["epsilon", "method"])["accuracy"].mean()
    constants = pd.DataFrame([theory(epsilon=e) for e in (1.0, 10.0)])
    constants.insert(0, "epsilon", [1.0, 10.0])
    return "\n".join([
        "# Private large-margin halfspaces by smooth boosting (synthetic, random label noise)",
        "", f"`python experiments/halfspace_margin.py` — dpjax {meta['source_digest']}, "
        f"{meta['wall_s'] / 60:.0f} min on {meta['machine']}. p = {DIMENSION}, τ = {MARGIN}, "
        f"{TRAIN} training rows (labels flipped at rate η), {TEST} test rows scored against the "
        f"clean labels; δ = {DELTA:g}; {meta['seeds']} seeds; 10 equal-width bins of [−1, 1], "
        "one-hot.", "",
        "## Accuracy against the noise rate η (ε = 1)", "",
        harness.markdown_table(by_noise.unstack("method").reset_index(), floatfmt=".3f"), "",
        "## Accuracy against ε (η = 0.1)", "",
        harness.markdown_table(by_epsilon.unstack("method").reset_index(), floatfmt=".3f"), "",
        "## What the theory asks for (HS-StL, α = 0.1, β = 0.05)", "",
        harness.markdown_table(constants, floatfmt=".4g"), "",
        "The proven regime needs hundreds of thousands of rounds and about 10⁸ examples or "
        "more; it is not a setting anyone can run. The measured tables use the library's "
        "defaults (at most 15 rounds, κ = 0.35).", "",
        "Reading: the halfspace booster beats the boosted 1-rules at every ε ≥ 0.3 and "
        "degrades gracefully with the label noise (the smooth measure caps the weight of the "
        "flipped rows). On the same one-hot bins (first column) DP-LR is below it at "
        "ε ≤ 1 and above it from ε = 3 (the booster's 15 rounds plateau near its non-private "
        "accuracy); a DP logistic regression on the raw coordinates — the target's own model "
        "class, which binning cannot express exactly — is better than both.", ""])


def figure(df: pd.DataFrame) -> Any:
    plt = harness.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for ax, (column, fixed, value) in zip(axes, (("noise", "epsilon", 1.0),
                                                 ("epsilon", "noise", 0.1)), strict=True):
        part = df[df[fixed] == value].groupby([column, "method"])["accuracy"].mean()
        for method, series in part.unstack("method").items():
            ax.plot(series.index, series.values, marker="o", label=method)
        ax.set_xlabel("label noise rate η" if column == "noise" else "ε")
        if column == "epsilon":
            ax.set_xscale("log")
        ax.set_ylabel("clean test accuracy")
        ax.set_title(f"{fixed} = {value:g}")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args(argv)
    peers = harness.diffprivlib_wanted(not args.no_peers)
    if args.quick:
        noise_rates, epsilons, seeds = (0.0, 0.1, 0.3), (0.3, 1.0, 10.0), 2
    else:
        noise_rates, epsilons, seeds = NOISE_RATES, EPSILONS, SEEDS
    start = time.perf_counter()
    df = run(noise_rates, epsilons, seeds, peers)
    meta = {"seeds": seeds, "wall_s": time.perf_counter() - start,
            "machine": f"{platform.machine()} cpu", "source_digest": harness.source_digest(),
            "quick": args.quick}
    paths = harness.save_results(STEM, tidy=df, markdown=report(df, meta), figure=figure(df),
                                 meta=meta)
    print(report(df, meta))
    print("wrote", *paths)


if __name__ == "__main__":
    main()
