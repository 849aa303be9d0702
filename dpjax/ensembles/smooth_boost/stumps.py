"""DP-1R: differentially private 1-rules (decision stumps) for smooth boosting — Asadi et al.,
"Private Boosted Decision Trees via Smooth Re-Weighting", Algorithm 3 (spec
``docs/specs/private-boosted-stumps-smooth-reweighting.md`` §3).

The features are the one-hot indicators of the binned codes (the papers' preprocessing: equal-
width bins of public ranges, one-hot): literal ``(f, b)`` is ``x_{f,b} = 1[code_f = b]``. The
hypothesis class ``1R`` is the ``2·Σ_f n_codes_f`` signed literals ``h = 2x_{f,b} − 1`` and
``h = 1 − 2x_{f,b}`` plus the constants ``±1`` (§3.1). One round picks ``h`` by permute-and-flip
on the utility ``−err(S, μ̂, h)``, ``err = Σ_i μ̂(i)·1[h(x_i) ≠ y_i]`` (§3.2, §3.4).

Sensitivity (§3.5, the corrected bound): under a replace-one change with ``Δ(μ̂, μ̂') <= 1/(κn)``
and both measures κ-smooth, ``|err − err'| <= Δ(μ̂, μ̂') + min(μ̂(i*), μ̂'(i*)) <= 2/(κn)``
(the paper's Obs 8.1 misses the replaced record's own term; its constant ``2ζ`` holds at
``ζ = 1/(κn)``, LazyBregBoost's). The errors are computed as ``Σ_c μ̂_c·K_c`` from int32
counts ``K_c`` per level of the
:class:`~dpjax.ensembles.smooth_boost.reweighting.LevelMeasure` (exact), and the float
rounding of ``μ̂_c`` and of the ``levels``-term sums is added to the sensitivity
(:func:`stump_sensitivity`). Permute-and-flip with budget ``ε_b`` is then ``ε_b``-DP
per round (McKenna & Sheldon; the exponential mechanism's guarantee, Thm 4.1 with
``ε_b = 4ηζ``).
"""

from __future__ import annotations

import collections
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.data.binning import FeatureSpec
from dpjax.data.describe import code_label
from dpjax.ensembles.smooth_boost.reweighting import LevelMeasure, WeakLearner
from dpjax.mechanisms.exponential import permute_and_flip
from dpjax.privacy import Cost
from dpjax.trees.histogram import node_histogram, valid_thresholds


class Stump(NamedTuple):
    """A 1-rule: ``polarity·(2·1[code_feature = code] − 1)``, or the constant ``polarity`` when
    ``constant``. Leaves are int32 / bool scalars (stacked over rounds by the booster)."""

    feature: jax.Array
    code: jax.Array
    polarity: jax.Array
    constant: jax.Array
    cost: Cost


def level_rounding(levels: int) -> float:
    """Bound on the float32 rounding of one weighted error ``Σ_c μ̂_c·K_c`` (a value in
    ``[0, 1]``): each ``μ̂_c`` within a relative ``(levels + 8)·2**−24`` of the exact projection,
    plus ``2**−24`` of absolute mass and under ``2**−100`` of flushed weights
    (:func:`~dpjax.ensembles.smooth_boost.reweighting.level_weights`), and the ``levels``-term
    sum of non-negative products (elementwise: no backend-dependent matrix product) adds a relative
    ``(levels + 1)·2**−24``."""
    return (2 * levels + 10) * 2.0**-24 + 2.0**-100


def stump_sensitivity(n: int, kappa: ArrayLike, levels: int) -> jax.Array:
    """``Δ = 2/(κn)`` (§3.5, replace-one) plus twice :func:`level_rounding` (both
    neighbours)."""
    return 2.0 / (jnp.asarray(kappa, jnp.float32) * n) + 2.0 * level_rounding(levels)


def stump_errors(codes: jax.Array, y: jax.Array, measure: LevelMeasure,
                 n_codes: int) -> jax.Array:
    """Weighted errors of every 1-rule, ``[2·n_features·n_codes + 2]``: the literals
    ``+x_{f,b}`` (row-major ``f, b``), then ``−x_{f,b}``, then the constants ``+1, −1`` (§3.3).

    With ``P_c, N_c`` the positives / negatives at level ``c`` and ``H^±_{c,f,b}`` those with
    ``code_f = b``: ``err(+x_{f,b}) = Σ_c μ̂_c (P_c − H⁺_{c,f,b} + H⁻_{c,f,b})``,
    ``err(−x_{f,b}) = Σ_c μ̂_c (N_c − H⁻ + H⁺)``, ``err(+1) = Σ_c μ̂_c N_c``,
    ``err(−1) = Σ_c μ̂_c P_c``; every count is an int32 segment sum over the codes.

    Args:
      codes: uint8 ``[n, n_features]``; y: ``[n]`` in ``{−1, +1}``.
      measure: the round's :class:`LevelMeasure`; n_codes: static codes per feature.
    """
    levels = measure.weight.shape[0]
    label = jnp.stack([y < 0, y > 0], axis=-1).astype(jnp.int32)          # [n, 2] (neg, pos)
    label = label * measure.multiplicity[:, None]
    hist = node_histogram(codes, measure.level, label, levels, n_codes)   # [L, d, K, 2]
    per_level = hist[:, 0].sum(axis=1)                                    # [L, 2]
    neg, pos = per_level[:, 0], per_level[:, 1]
    wrong_plus = pos[:, None, None] - hist[..., 1] + hist[..., 0]         # [L, d, K]
    wrong_minus = neg[:, None, None] - hist[..., 0] + hist[..., 1]
    wrong = jnp.concatenate([wrong_plus.reshape(levels, -1), wrong_minus.reshape(levels, -1),
                             neg[:, None], pos[:, None]], axis=1)         # [L, 2dK + 2]
    return jnp.sum(measure.weight[:, None] * wrong.astype(jnp.float32), axis=0)


def dp_stump(key: jax.Array, measure: LevelMeasure, codes: jax.Array, y: jax.Array, *,
             n_codes_per_feature: np.ndarray, epsilon: ArrayLike | None, kappa: ArrayLike,
             size: ArrayLike) -> Stump:
    """DP-1R (Algorithm 3): permute-and-flip over the 1-rules on the utility ``−err``
    (:func:`stump_errors`) with sensitivity :func:`stump_sensitivity` at the public sample size
    ``size`` (``n = Σ multiplicity``) and budget ``epsilon`` (one round's ``ε_b``); codes a
    feature does not have are never picked. ``epsilon=None``: the best 1-rule (not private;
    the first of the ties), at zero cost."""
    n_codes_per_feature = np.asarray(n_codes_per_feature)
    n_features, n_codes = len(n_codes_per_feature), int(n_codes_per_feature.max())
    levels = measure.weight.shape[0]
    errors = stump_errors(codes, y, measure, n_codes)
    valid = valid_thresholds(n_codes_per_feature + 1, n_codes).reshape(-1)   # b < n_codes_f
    valid = jnp.concatenate([valid, valid, jnp.ones(2, bool)])
    utility = jnp.where(valid, -errors, -jnp.inf)
    if epsilon is None:
        index = jnp.argmax(utility).astype(jnp.int32)
        cost = Cost(jnp.float32(0.0), jnp.float32(0.0), "none (not private)")
    else:
        sensitivity = stump_sensitivity(size, kappa, levels)
        index, cost = permute_and_flip(key, utility, sensitivity, epsilon,
                                       label="2/(κn), 1-rules")
    literals = n_features * n_codes
    constant = index >= 2 * literals
    literal = index % literals
    polarity = jnp.where(constant, 1 - 2 * (index - 2 * literals),
                         1 - 2 * (index // literals))
    return Stump(jnp.where(constant, 0, literal // n_codes).astype(jnp.int32),
                 jnp.where(constant, 0, literal % n_codes).astype(jnp.int32),
                 polarity.astype(jnp.int32), constant, cost)


def stump_predict(stump: Stump, codes: jax.Array) -> jax.Array:
    """Votes ``int32 {−1, +1} [m]`` of one 1-rule on ``codes [m, n_features]``."""
    hit = jnp.take(codes, stump.feature, axis=1).astype(jnp.int32) == stump.code
    literal = jnp.where(hit, 1, -1)
    return stump.polarity * jnp.where(stump.constant, 1, literal)


def dp_stump_learner(n_codes_per_feature: np.ndarray, epsilon: ArrayLike | None,
                     kappa: ArrayLike, size: ArrayLike) -> WeakLearner:
    """DP-1R as a ``±1`` (``resolution=1``) :class:`~dpjax.ensembles.smooth_boost.WeakLearner`
    with per-round budget ``epsilon`` (``ε_b``; ``None``: not private), the booster's density
    ``kappa`` and the public sample size ``size``."""
    def fit(key: jax.Array, measure: LevelMeasure, codes: jax.Array, y: jax.Array) -> Stump:
        return dp_stump(key, measure, codes, y, n_codes_per_feature=n_codes_per_feature,
                        epsilon=epsilon, kappa=kappa, size=size)

    return WeakLearner(fit, stump_predict, resolution=1)


def describe_stumps(stumps: Stump, spec: FeatureSpec, classes: tuple) -> str:
    """The boosted 1-rules as a readable vote: one line per distinct rule with its number of
    votes (``"age in [17, 24.3) -> 1 (×3)"``, ``"otherwise"`` for the negated literal's other
    side), the abstaining rounds left out, and the number of distinct features used
    (Asadi et al.'s sparsity, Table 4)."""
    votes: collections.Counter[str] = collections.Counter()
    features = set()
    for f, b, polarity, constant in zip(*(np.asarray(a).tolist() for a in stumps[:4]),
                                        strict=True):
        if polarity == 0:
            continue
        yes, no = (classes[1], classes[0]) if polarity > 0 else (classes[0], classes[1])
        if constant:
            votes[f"always -> {yes}"] += 1
        else:
            features.add(f)
            votes[f"{code_label(spec, f, b)} -> {yes}, else -> {no}"] += 1
    lines = [f"  {rule}  (x{count})" for rule, count in votes.most_common()]
    head = [f"majority vote of {sum(votes.values())} rules, {len(features)} distinct features:"]
    polarity, constant = np.asarray(stumps.polarity), np.asarray(stumps.constant)
    if np.count_nonzero(polarity) == 1 and polarity[0] != 0 and constant[0]:
        head.insert(0, "Majority fallback: a single constant vote, so the model predicts one "
                       "class whatever the features. With DP this is usually the public schedule's "
                       "choice (at this budget and released size even one round's weak learner "
                       "is under its noise, so the rounds' budget released the class counts).")
    return "\n".join([*head, *lines])
