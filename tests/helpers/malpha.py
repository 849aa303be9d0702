"""Shared helpers of the Mα-boost tests (``shared/specs/boosted-dp-trees-malpha.md`` §3–§5,
§9): the planted problem, the cached jitted fits, numpy references of the spec's formulas and
the ledger the spec prescribes.

Every fit runs on one tiny planted problem (``m = 200`` rows, three features with eight codes
each, label = ``code_0 > 3`` with 5% label noise) through a handful of jitted configurations
cached here, so a test session compiles each configuration once.
"""

from __future__ import annotations

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np

import dpjax
from dpjax.ensembles.malpha import MalphaModel
from dpjax.learners import MalphaBoosted
from dpjax.trees import leaf_index
from tests.helpers.fits import fit_malpha

M_ROWS, N_BINS = 200, 8
N_CODES = np.full(3, N_BINS, np.int32)
ZETA, FLOOR = 1e-4, 1e-6  # ζ (q clamp, §2.5) and ζ' (weight clamp, §3 / A21)
F32_ULP = 2.0**-23


def _planted(seed: int = 2024) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, N_BINS, (M_ROWS, len(N_CODES))).astype(np.uint8)
    y = (codes[:, 0] > 3) ^ (rng.uniform(size=M_ROWS) < 0.05)
    return codes, y.astype(np.int32)


CODES, Y = _planted()
SIGN = 2.0 * Y - 1.0
# Raw features whose public-grid codes are exactly CODES (bin centres of [0, 1]).
X = (CODES + 0.5) / N_BINS
BOUNDS = (np.zeros(len(N_CODES)), np.ones(len(N_CODES)))
# the paper's mode: split budgets of eq. (18), value leaves with β_t folded in (spec §4.4)
FIT = dict(method="malpha", bounds=BOUNDS, n_bins=N_BINS, budget="paper", leaf_mechanism="value")
BOOSTED = MalphaBoosted()


SIZE_SHARE = 0.05  # the default share of ε for the noisy row count
# Every budget inside a fit is rounded down (float32) and a Laplace release reports the ε its
# exact noise buys: a release spends within [share (1 − SLACK), share] of its spec share.
SLACK = 2e-3


@functools.cache
def private_fit(n_trees: int, depth: int = 3):
    """Jitted private ``fit_malpha`` (value leaves, folded β) with traced key, ε, α, β_tree and
    the public size ``ñ = M_ROWS`` declared: ``(model, costs)``."""
    def fit(key, epsilon, alpha, beta_tree):
        return fit_malpha(key, jnp.asarray(CODES), jnp.asarray(Y), epsilon, alpha=alpha,
                           beta_tree=beta_tree, size=M_ROWS, n_trees=n_trees, depth=depth,
                           n_codes_per_feature=N_CODES)
    return jax.jit(fit)


@functools.cache
def exact_fit(n_trees: int = 3, depth: int = 2):
    """Jitted non-private ``fit_malpha`` with a traced α: the model (its costs are empty)."""
    def fit(alpha):
        model, costs = fit_malpha(jax.random.key(0), jnp.asarray(CODES), jnp.asarray(Y), None,
                                   alpha=alpha, n_trees=n_trees, depth=depth,
                                   n_codes_per_feature=N_CODES)
        assert costs == {}
        return model
    return jax.jit(fit)


def assert_budget(budget: float, share: float) -> None:
    """A float32 budget handed to a mechanism: at most its exact share, rounded down by a few
    float32 ulps per step of the split (never more)."""
    assert share * (1 - 1e-5) <= budget <= share, (budget, share)


def assert_spent(spent, share: float) -> None:
    """Every value of ``spent`` lies in ``[share (1 − SLACK), share]``."""
    spent = np.asarray(spent, np.float64)
    assert np.all(spent <= share), (spent.max(), share)
    assert np.all(spent >= share * (1 - SLACK)), (spent.min(), share)


# --- numpy references (spec §1.3, §1.4) -------------------------------------------------------


def np_link(u: np.ndarray, alpha: float) -> np.ndarray:
    """``ψ^(α)(u)`` with ``ψ(1/2) := 0``."""
    return alpha * (2 * u - 1) / np.sqrt(u * (1 - u)) + 2 * (1 - alpha) * np.sign(2 * u - 1)


def np_inverse_link(z: np.ndarray, alpha: float) -> np.ndarray:
    excess = np.abs(z) / 2 - (1 - alpha)
    outside = 0.5 * (1 + np.sign(z) * excess / np.sqrt(alpha**2 + excess**2))
    return np.where(excess > 0, outside, 0.5)


def np_link_bound(alpha: float, zeta: float = ZETA) -> float:
    return alpha * (1 - 2 * zeta) / math.sqrt(zeta * (1 - zeta)) + 2 * (1 - alpha)


def np_leaf_sums(leaf: np.ndarray, w: np.ndarray, n_leaves: int) -> np.ndarray:
    """(negative, positive) weighted class sums ``[n_leaves, 2]``."""
    return np.stack([np.bincount(leaf, w * (Y == 0), minlength=n_leaves),
                     np.bincount(leaf, w * (Y == 1), minlength=n_leaves)], axis=-1)


def np_leaf_values(sums: np.ndarray, alpha: float) -> np.ndarray:
    """``ψ(clip(q, ζ, 1 − ζ))`` with ``q = 1/2`` for an empty leaf (§2.5, A12)."""
    total = sums.sum(-1)
    q = np.where(total > 0, sums[:, 1] / np.where(total > 0, total, 1.0), 0.5)
    return np_link(np.clip(q, ZETA, 1 - ZETA), alpha)


def released_margins(model: MalphaModel, n_rounds: int) -> np.ndarray:
    """``H_{n_rounds}(x_i) = Σ_{t < n_rounds} β_t·h̃_t(x_i)`` of the released model, float64."""
    h = np.zeros(M_ROWS)
    for t in range(n_rounds):
        leaf = np.asarray(leaf_index(model.trees.feature[t], model.trees.threshold[t], CODES))
        h += float(model.beta[t]) * np.asarray(model.trees.leaf[t], np.float64)[leaf]
    return h


def weights_of(margins: np.ndarray, alpha_link: float) -> np.ndarray:
    """Boosting weights ``clip(ψ^{-1}(−y·H), ζ', 1 − ζ')`` (§3 implementation form)."""
    return np.clip(np_inverse_link(-SIGN * margins, alpha_link), FLOOR, 1 - FLOOR)


def tree_arrays(model: MalphaModel, t: int) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(model.trees.feature[t]), np.asarray(model.trees.threshold[t])


def _assert_boosted_shapes(model: MalphaModel, n_trees: int, depth: int) -> None:
    assert isinstance(model, MalphaModel)
    chex.assert_shape([model.trees.feature, model.trees.threshold, model.alpha],
                      (n_trees, 2**depth - 1))
    chex.assert_shape(model.trees.leaf, (n_trees, 2**depth))
    chex.assert_shape(model.beta, (n_trees,))
    chex.assert_type([model.trees.feature, model.trees.threshold], jnp.int32)
    chex.assert_type([model.trees.leaf, model.beta, model.alpha], jnp.float32)
    chex.assert_tree_all_finite(model)


# ------------------------------------------------------------------------------------------
# The ledger the spec prescribes (§4.2 eq. (18), §4.6, §5.3, §9)
# ------------------------------------------------------------------------------------------


def expected_ledger(eps: float, n_trees: int, depth: int, beta_tree: float, alpha,
                    beta_oc: float = 0.1, beta_share: float = 0.1, beta_mode: str = "fold",
                    composition: str = "sequential",
                    size_share: float | None = SIZE_SHARE,
                    budget: str = "paper") -> list[tuple[str, float, int]]:
    """``(what, ε each, count)`` of every entry, in ledger order, straight from the spec (exact
    shares): the noisy row count first when the size is private (``size_share``; ``None``
    when the size is public), then per tree of ``ε (1 − size_share) / T`` the splits of each
    depth (per node, paper (18), or per level with ``budget="parallel"``), the O.C level
    errors, the leaves and ``β_t``."""
    entries = []
    if size_share is not None:
        entries.append(("row count", eps * size_share, 1))
    per_tree = eps * (1 - (size_share or 0.0)) / n_trees
    oc_private = alpha == "oc" and depth > 1
    share_oc = beta_oc if oc_private else 0.0
    nodes = (lambda k: 2**k) if budget == "paper" else (lambda k: 1)
    entries += [(f"splits at depth {k}", (1 - share_oc) * beta_tree * per_tree / (depth * nodes(k)),
                 n_trees * nodes(k)) for k in range(depth)]
    if oc_private:
        entries.append(("O.C level errors", beta_oc * beta_tree * per_tree / depth,
                        n_trees * depth))
    share_beta = beta_share if beta_mode == "laplace" else 0.0
    leaves = 2**depth if composition == "sequential" else 1
    entries.append(("leaves", (1 - beta_tree) * (1 - share_beta) * per_tree / leaves,
                    n_trees * leaves))
    if share_beta:
        entries.append(("leveraging coefficient β_t", (1 - beta_tree) * share_beta * per_tree,
                        n_trees))
    return entries


def assert_ledger(ledger: dpjax.PrivacyLedger, eps: float, expected) -> None:
    """The ledger has the expected entries, each release spending at most its spec share (and
    within ``SLACK`` of it), and a total within ``[ε (1 − SLACK), ε]``."""
    assert ledger.private
    assert ledger.requested_epsilon == eps
    assert ledger.epsilon <= eps
    assert ledger.epsilon >= eps * (1 - SLACK)
    assert [(e.what, e.count) for e in ledger.entries] == [(w, c) for w, _, c in expected]
    for entry, (_, each, _) in zip(ledger.entries, expected, strict=True):
        assert_spent(entry.epsilon, each)
    assert all(e.private and e.delta == 0.0 for e in ledger.entries)
