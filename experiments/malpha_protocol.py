"""Nock & Henecka, "Boosted and Differentially Private Ensembles of Decision Trees": the protocol
-- domains, the grid, the folds, the paper's numbers and the one jitted program per grid shape
composed from the library's :func:`dpjax.ensembles.malpha.fit` (spec
``shared/specs/boosted-dp-trees-malpha.md`` §6).

Protocol (§6.2–§6.6): every Table 2 domain found in ``shared/datasets`` (15 of 19), numeric
attributes quantised into ``v_q = 10`` equal-width bins over the full file's range (the public
domain, §2.1), 10-fold stratified cross-validation (the same folds for every method), clamp
``M = 10``, ``ζ = 1e-4``. Grid: ``T ∈ {2, 5, 10, 20}``, ``d ∈ {1..6}``, ``α ∈ {0.1, 1, O.C}``,
``ε ∈ {0.01, 0.1, 1, 10, 25}``, ``β_tree ∈ {0.1, 0.5, 0.9}`` and the non-private runs; RF-L and
RF-E have 21 trees of depth ``{2, 4, 6}`` (§6.5). The paper's mode (:data:`PAPER`, stated
here: the ``malpha`` learner's own defaults are dpjax's) is used for everything else:
``leaf_mechanism="value"`` with
``beta_mode="fold"`` (the spec's sound version of the paper's leaves), private per-level O.C
(``β_oc = 0.1``) under DP and exact O.C without, sequential per-leaf budgets, the paper's split
budget (18).

Efficiency: for each domain, fold and depth ``d``, the 180 private settings ε × α × β_tree × T
of a leaf mechanism are one vmapped, jit-compiled program (the Mα ``fit`` with 20 trees and
``n_active = T``: its first ``T`` trees are exactly the ``T``-tree fit), scored on the test fold
inside the same program; the non-private α × T another; each forest depth one ``dpjax.sweep``.
To compile each program once per domain, every training fold is cut to the smallest
training-fold size (at most a couple of rows are dropped, at random, per fold).
"""

from __future__ import annotations

import functools
import itertools

import harness
import jax
import jax.numpy as jnp
import numpy as np

from dpjax.ensembles import malpha
from dpjax.ensembles.malpha import MalphaBoosted, malpha_predict
from dpjax.learner import FitContext

STEM = "malpha_boosting"
GRID_NAME = "malpha_grid"  # per-domain results: <out>/malpha_grid/<domain>.csv.gz (+ .json)
# Table 2 domains present in shared/datasets, in the paper's order (registry name, paper name)
DOMAINS = [
    ("transfusion", "Transfusion"), ("banknote", "Banknote"), ("breastwisc", "Breast wisc"),
    ("ionosphere", "Ionosphere"), ("sonar", "Sonar"), ("yeast", "Yeast"),
    ("winered", "Wine-red"), ("cardiotocography", "Cardiotocography"),
    ("creditcardsmall", "CreditCardSmall"), ("abalone", "Abalone"), ("qsar", "Qsar"),
    ("winewhite", "Wine-white"), ("mice", "Mice"), ("hill_nonoise", "Hill+nonoise"),
    ("firmteacher", "Firmteacher"),
]
NOT_AVAILABLE = ["Page", "Hill+noise", "Magic", "EEG"]
TREES = (2, 5, 10, 20)
DEPTHS = (1, 2, 3, 4, 5, 6)
ALPHAS = (0.1, 1.0, "oc")
EPSILONS = (0.01, 0.1, 1.0, 10.0, 25.0)
BETA_TREES = (0.1, 0.5, 0.9)
RF_DEPTHS = (2, 4, 6)
RF_TREES = 21
RF_METHODS = ("rf_laplace", "rf_exponential")
# "boosted": the paper's mode (value leaves, β_t folded in); "boosted_counts": the spec's sound
# counts mechanism with β_t by post-processing (§4.4-§4.5), a departure from the paper
PAPER = {"leaf_mechanism": "value", "beta_mode": "fold", "leaf_composition": "sequential",
         "budget": "paper"}
"""The paper's mode: folded value leaves, sequential per-leaf budgets, the split budget (18)."""
VARIANTS = {"boosted": PAPER,
            "boosted_counts": {**PAPER, "leaf_mechanism": "counts", "beta_mode": "post"}}
# the boosted programs of one depth: (private, variant)
PROGRAMS = ((True, "boosted"), (True, "boosted_counts"), (False, "boosted"))
N_FOLDS = 10
V_Q = 10
CLAMP = 10.0
P_SIGNIFICANT = 0.01
# §6.7 Table 1: domains (of 19) where each strategy is best, (O.C, 0.1, 1.0) per epsilon
PAPER_TABLE1 = {0.01: (14, 3, 5), 0.1: (13, 2, 6), 1.0: (9, 3, 9), 10.0: (5, 4, 11),
                25.0: (8, 6, 6)}
# the smoke test (--quick): the first two domains asked for, the first folds, shallow trees
QUICK = {"domains": 2, "folds": 2, "depths": (1, 2)}


def alpha_label(alpha: float | str) -> str:
    return "O.C" if alpha == "oc" else f"{float(alpha):g}"


def folds(y: np.ndarray, n_folds: int = N_FOLDS) -> list[harness.Split]:
    """The first ``n_folds`` of the protocol's 10 folds (seed 0), every training part cut to the
    smallest training size so that all folds share one compiled program."""
    return harness.stratified_kfold(y, N_FOLDS, 0, common_train_size=True)[:n_folds]


def boosted_points(private: bool) -> list[dict]:
    """The grid points of one program: ε × α × β_tree × T (private) or α × T."""
    if private:
        return [dict(epsilon=e, alpha=a, beta_tree=b, n_trees=t)
                for e, a, b, t in itertools.product(EPSILONS, ALPHAS, BETA_TREES, TREES)]
    return [dict(alpha=a, n_trees=t) for a, t in itertools.product(ALPHAS, TREES)]


def traced_points(points: list[dict]) -> list[jax.Array]:
    """The traced arguments of a program for ``points``: ε, α, β_tree, T (float32 vectors;
    the learner's own encoding of ``alpha``; absent values 1.0)."""
    config = MalphaBoosted()
    return [jnp.asarray([config.traced_value(name, p[name]) if name in p else 1.0
                         for p in points], jnp.float32)
            for name in ("epsilon", "alpha", "beta_tree", "n_trees")]


@functools.lru_cache(maxsize=8)
def boosted_grid_program(depth: int, n_codes: tuple[int, ...], private: bool, variant: str):
    """One jitted program: every (ε, α, β_tree, T) point of the grid as a vmapped
    :func:`dpjax.ensembles.malpha.fit` with ``n_trees = 20`` and ``n_active = T`` (the first
    ``T`` trees of it are exactly the ``T``-tree fit), scored on the (padded) test fold."""
    config = MalphaBoosted(n_trees=max(TREES), depth=depth, clamp=CLAMP, **VARIANTS[variant])
    context = FitContext(np.asarray(n_codes), 2)

    def one(key, codes, y, test_codes, test_y, test_mask, eps, alpha, beta_tree, n_active):
        model, _ = malpha.fit(config, key, codes, y, eps if private else None, context,
                              n_active=n_active, alpha=alpha, beta_tree=beta_tree)
        wrong = (malpha_predict(model, test_codes) != test_y) & test_mask
        return wrong.sum()

    grid = jax.vmap(one, in_axes=(None, None, None, None, None, None, 0, 0, 0, 0))
    return jax.jit(grid)
