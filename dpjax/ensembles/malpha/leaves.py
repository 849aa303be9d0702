"""The leaves of an Mα tree and its leveraging coefficient ``β_t``: the link of the leaves'
class sums and their private release (spec ``docs/specs/boosted-dp-trees-malpha.md``
§2.5, §3, §4.4–§4.5).

Leaf mechanisms, all with exact discrete Laplace noise on a fixed-point grid
(:func:`dpjax.mechanisms.laplace_mechanism`):

* ``"value"`` + ``"fold"``: ``β_t`` is folded into the leaf values before the noise and the
  folded values are clamped to ``[−α_LC, α_LC]`` (``|β_t·h_t| ≤ a·M² = α_LC`` when ``ñ >= m``;
  the spec clamps to ``[−M, M]``, ours is ``M/α_LC`` times tighter), noise of scale
  ``2·α_LC/ε_leaf``.
* ``"value"`` + ``"laplace"``: leaves ``clip(ψ(q̂), ±M)`` + noise ``2M/ε_leaf``, then
  ``β̃_t = β_t`` + noise ``2aM/(ñ·ε_β)``.
* ``"counts"`` + ``"post"`` (dpjax's default): noisy weighted class sums per leaf (sensitivity
  1), leaves ``clip(ψ(q̃), ±M)`` and ``β_t`` both computed from them (post-processing); or
  ``"laplace"``.
* ``"paper_fast"``: ``β_t`` from the data with no noise (the paper's route (ii)); not private
  (the ledger says so).
"""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.ensembles.malpha.tree import WEIGHT_UNIT
from dpjax.losses.proper import canonical_link
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.mechanisms.size import balance_pseudo_counts
from dpjax.privacy import Cost, fixed_point, parallel
from dpjax.privacy.fixed_point import WideSum

LEAF_MECHANISMS = ("value", "counts")
BETA_MODES = ("fold", "post", "laplace", "paper_fast")
LEAF_COMPOSITIONS = ("sequential", "parallel")
VALID_MODES = {("value", "fold"), ("value", "laplace"), ("value", "paper_fast"),
               ("counts", "post"), ("counts", "laplace"), ("counts", "paper_fast")}


def check_modes(leaf_mechanism: str, beta_mode: str, leaf_composition: str) -> None:
    """The leaf-release modes that go together (§4.4–§4.5); ``ValueError`` otherwise."""
    if (leaf_mechanism, beta_mode) not in VALID_MODES:
        raise ValueError(f"leaf_mechanism={leaf_mechanism!r} does not go with "
                         f"beta_mode={beta_mode!r}; valid pairs: {sorted(VALID_MODES)}")
    if leaf_composition == "parallel" and leaf_mechanism != "counts":
        raise ValueError("leaf_composition='parallel' needs leaf_mechanism='counts': folded or "
                         "value leaves share data-dependent factors (spec §4.2)")


def link_alpha(alpha: ArrayLike, oc_link_alpha: ArrayLike) -> jax.Array:
    """``α_LC``, the α of the link, the weights and ``a`` (§5.4): the fixed α itself, or
    ``oc_link_alpha`` (default 1, the root value of the O.C schedule) under O.C."""
    alpha = jnp.asarray(alpha, jnp.float32)
    return jnp.where(alpha < 0, jnp.asarray(oc_link_alpha, jnp.float32), alpha)


def link_bound(alpha_link: ArrayLike, zeta: float) -> jax.Array:
    """``M_ζ(α) = α(1 − 2ζ)/sqrt(ζ(1 − ζ)) + 2(1 − α)``, the bound on ``|ψ^(α)|`` after
    clamping ``q`` to ``[ζ, 1 − ζ]`` (§1.3); the non-private ``M`` (§3, A15)."""
    return alpha_link * (1 - 2 * zeta) / np.sqrt(zeta * (1 - zeta)) + 2 * (1 - alpha_link)


def leaf_link(stats: jax.Array, alpha_link: ArrayLike, zeta: float) -> jax.Array:
    """``ψ^(α)(clip(q, ζ, 1 − ζ))`` of leaves with (negative, positive) sums ``[..., 2]``; an
    empty leaf (or one whose sums are both ``<= 0``) has ``q = 1/2``, value 0 (§2.5, A12)."""
    stats = jnp.maximum(stats, 0.0)
    total = stats.sum(-1)
    q = jnp.where(total > 0, stats[..., 1] / jnp.where(total > 0, total, 1.0), 0.5)
    return canonical_link(jnp.clip(q, zeta, 1 - zeta), alpha_link)


def leveraging_coefficient(
    values: jax.Array, stats: jax.Array | WideSum, a: ArrayLike, size: ArrayLike,
    clip: ArrayLike | None = None,
) -> jax.Array:
    """``β_t = (a/m)·Σ_i w_i·y_i·h_t(x_i) = (a/m)·Σ_λ h_t(λ)·(w^1(λ) − w^{−1}(λ))`` (§3 step
    2.2, paper (142)) from leaf values ``[2**d]`` and leaf sums ``[2**d, 2]``. Under DP the
    normaliser ``m`` is the public size ``ñ`` (any public constant keeps the releases' bounds:
    the folded values are clamped, and ``β``'s sensitivity is ``2aM/ñ``). ``clip`` bounds each
    leaf's class difference (1-Lipschitz: one record still moves one difference by its
    weight). Exact fixed-point sums (int32 or :class:`~dpjax.privacy.fixed_point.WideSum`,
    units of ``2**−WEIGHT_BITS``) give their difference exactly, rounded to float32 once, so
    its rounding is relative to the clipped difference (:func:`beta_rounding`), not to the
    sums (past int32, a float32 sum's ulp is many records)."""
    if isinstance(stats, WideSum) or jnp.issubdtype(stats.dtype, jnp.integer):
        first, second = (jax.tree.map(lambda x, k=k: x[:, k], stats) for k in (0, 1))
        difference = fixed_point.as_float(
            fixed_point.add(second, fixed_point.negate(first))) / WEIGHT_UNIT
    else:
        difference = stats[:, 1] - stats[:, 0]
    if clip is not None:
        difference = jnp.clip(difference, -clip, clip)
    return a / size * jnp.sum(values * difference)


def release_leaves(
    key: jax.Array,
    stats: jax.Array,
    alpha_link: jax.Array,
    *,
    clamp: float,
    zeta: float,
    epsilon_leaf: jax.Array,
    epsilon_beta: jax.Array,
    sensitivity: float,
    size: jax.Array,
    leaf_mechanism: str,
    beta_mode: str,
    leaf_composition: str,
    shrinkage: ArrayLike = 0.0,
) -> tuple[jax.Array, jax.Array, collections.OrderedDict[str, Cost]]:
    """Private leaf values ``h̃_t [2**d]`` and leveraging coefficient ``β_t`` (§4.4, §4.5),
    with the cost of every release.

    ``stats`` are the leaves' exact fixed-point class sums (units of ``2**−WEIGHT_BITS``; int32,
    or a :class:`~dpjax.privacy.fixed_point.WideSum` past int32, each read as float32 with one
    rounding, :func:`~dpjax.privacy.fixed_point.as_float`),
    ``epsilon_leaf`` each leaf's budget (one release per leaf; with ``leaf_composition=
    "parallel"`` the disjoint leaves compose in parallel), ``epsilon_beta`` the budget of
    ``β̃_t`` (``beta_mode="laplace"`` only), ``sensitivity`` 1 (add/remove) or 2 (replace-one)
    for the weighted class sums (bounded value ranges need no multiplier), ``size`` the public
    sample size ``ñ`` (bounds the sums; normalises ``β``). Every release goes through
    :func:`dpjax.mechanisms.laplace_mechanism` (exact noise on a fixed-point grid).
    """
    k_leaf, k_beta = jax.random.split(key)
    a = alpha_link / clamp**2
    exact = stats
    costs = collections.OrderedDict()
    if leaf_mechanism == "counts":
        noisy, cost = laplace_mechanism(k_leaf, stats, sensitivity * WEIGHT_UNIT, epsilon_leaf,
                                        bound=size * WEIGHT_UNIT, integer=True, event_ndim=1,
                                        label=f"L1 sens. {sensitivity:g}")
        noisy = shrunk_sums(noisy / WEIGHT_UNIT, shrinkage * sensitivity / epsilon_leaf)
        values = jnp.clip(leaf_link(noisy, alpha_link, zeta), -clamp, clamp)
        if beta_mode == "post":
            beta = leveraging_coefficient(values, noisy, a, size)
    elif beta_mode == "fold":
        stats = fixed_point.as_float(stats) / WEIGHT_UNIT
        values = jnp.clip(leaf_link(stats, alpha_link, zeta), -clamp, clamp)
        folded = leveraging_coefficient(values, stats, a, size) * values
        noisy, cost = laplace_mechanism(k_leaf, folded, 2 * alpha_link, epsilon_leaf,
                                        bound=alpha_link, event_ndim=0, label="range 2α_LC")
        values, beta = jnp.clip(noisy, -alpha_link, alpha_link), jnp.float32(1.0)
    else:
        stats = fixed_point.as_float(stats) / WEIGHT_UNIT
        values = jnp.clip(leaf_link(stats, alpha_link, zeta), -clamp, clamp)
        noisy, cost = laplace_mechanism(k_leaf, values, 2 * clamp, epsilon_leaf, bound=clamp,
                                        event_ndim=0, label="range 2M")
        values = jnp.clip(noisy, -clamp, clamp)
    costs["leaves"] = parallel(cost) if leaf_composition == "parallel" else cost
    if beta_mode in ("laplace", "paper_fast"):
        # the exact differences, rounded once and clipped to the public size: their float32
        # rounding is bounded by beta_rounding's
        beta = leveraging_coefficient(values, exact, a, size, clip=size)
    if beta_mode == "laplace":
        beta, costs["leveraging coefficient β_t"] = laplace_mechanism(
            k_beta, beta, 2 * a * clamp / size + 2 * beta_rounding(a, clamp, values.shape[0]),
            epsilon_beta, bound=2 * a * clamp, label="sens. 2aM/ñ + rounding")
    return values, beta, costs


def shrunk_sums(noisy: jax.Array, pseudo: ArrayLike) -> jax.Array:
    """Noisy leaf class sums ``[L, 2]`` plus ``pseudo`` records per leaf spread as the tree's
    own released class balance (the leaves' sums added up, floored at 1/2): a leaf whose sums
    are under the noise follows the weighted majority of its round instead of the noise's sign
    (post-processing of the release; ``pseudo = 0`` leaves the sums as released)."""
    return noisy + balance_pseudo_counts(noisy.sum(0), pseudo)


def beta_rounding(a: ArrayLike, clamp: float, n_leaves: int) -> jax.Array:
    """Bound on the float32 rounding of ``β_t = (a/ñ)·Σ_λ h(λ)·d(λ)`` with ``|h| <= M`` and the
    leaf differences ``|d(λ)| <= ñ``: the conversions, products and the ``L = 2**d``-term sum in
    any order give ``|fl(β) − β| <= (L + 8)·2**−24·(a/ñ)·Σ|h·d| <= (L + 8)·2**−24·a·M·L``. Twice
    this (both neighbours) is added to ``β``'s sensitivity ``2aM/ñ``: with ``beta_mode=
    "laplace"`` the noise grows by ``1 + (L + 8)·L·ñ·2**−24`` (under 1% for ``L = 16``,
    ``ñ = 2000``); the counts and fold modes need no such margin."""
    return (n_leaves + 8) * 2.0**-24 * jnp.asarray(a) * clamp * n_leaves


