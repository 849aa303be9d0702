"""The released sample size: a noisy row count, for learners whose analysis needs a size; and
the released class counts (a size and a class prior at once), pooled across releases.

Under add/remove neighbours the row count ``m`` is private. A learner that needs a size (to set
a sensitivity, to normalise a weight) takes a public one: declared by the user, the row count
under replace-one (where neighbours have the same size), or this release, ``ñ = m + Z`` with
exact discrete Laplace noise (sensitivity 1), clipped to ``[1, MAX_SIZE]`` (post-processing:
float32 and int32 then hold it exactly).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.mechanisms.laplace import LaplacePlan, laplace_releases, plan_laplace
from dpjax.privacy.costs import Cost

MAX_SIZE = float(2**24 - 1)
"""The released size is clipped to ``[1, 2**24 − 1]``."""
LABEL = "row count"
"""What the release is called in the ledger."""
CLASS_COUNTS_STREAM = 0x7072
"""The stream (``fold_in``) a learner draws its class-count releases' keys from, apart from its
other keys."""
AGAIN_LABEL = "class counts again (majority fallback)"
"""The ledger name of a majority fallback's second class-count release."""


def release_size(key: jax.Array, n_rows: int | jax.Array, epsilon: jax.Array
                 ) -> tuple[jax.Array, Cost]:
    """``(ñ, cost)``: the row count ``n_rows`` with exact discrete Laplace noise at ``epsilon``
    (add/remove sensitivity 1), clipped to ``[1, MAX_SIZE]``, as float32."""
    size, cost = laplace_releases([key], [size_plan(n_rows, epsilon)])[0]
    return clip_size(size), cost


def size_plan(n_rows: int | jax.Array, epsilon: jax.Array) -> LaplacePlan:
    """:func:`release_size` before its noise (:func:`~dpjax.mechanisms.laplace.plan_laplace`),
    to be drawn with other releases at the same point; :func:`clip_size` the release."""
    return plan_laplace(jnp.int32(n_rows), 1, epsilon, integer=True, label="sens. 1")


def clip_size(size: jax.Array) -> jax.Array:
    """A released row count clipped to ``[1, MAX_SIZE]``, float32 (post-processing)."""
    return jnp.clip(jnp.asarray(size, jnp.float32), 1.0, MAX_SIZE)


def class_totals(y: jax.Array, n_classes: int) -> jax.Array:
    """The exact count of each class index in ``y``, int32 ``[n_classes]`` (the input of
    :func:`release_class_counts`)."""
    return jnp.sum(jax.nn.one_hot(y, n_classes, dtype=jnp.int32), axis=0)


def release_class_counts(key: jax.Array, totals: jax.Array, epsilon: jax.Array,
                         sensitivity: float, unit: int = 1,
                         bound: float | None = None) -> tuple[jax.Array, Cost]:
    """The class counts ``totals [C]`` (int32, in units of ``1/unit`` of a record) with exact
    discrete Laplace noise at ``epsilon`` (L1 sensitivity ``sensitivity``: a record is in one
    class), as float32 records, and the cost; ``bound``: the public bound of the totals (in
    units) beyond ``2**28`` that sets a coarser grid
    (:func:`dpjax.mechanisms.laplace.integer_grid`)."""
    return release_class_counts_at([key], totals, [epsilon], sensitivity, unit, bound)[0]


def release_class_counts_at(keys: Sequence[jax.Array], totals: jax.Array,
                            epsilons: Sequence[jax.Array], sensitivity: float, unit: int = 1,
                            bound: float | None = None) -> list[tuple[jax.Array, Cost]]:
    """:func:`release_class_counts` at each of several budgets, release ``k`` with ``keys[k]``
    at ``epsilons[k]``: each exactly what it gives alone, all drawn by one sampler
    (:func:`~dpjax.mechanisms.laplace.laplace_releases`), for releases that a learner makes at
    the same point of its fit."""
    plans = [class_counts_plan(totals, epsilon, sensitivity, unit, bound) for epsilon in epsilons]
    return [(noisy / unit, cost) for noisy, cost in laplace_releases(keys, plans)]


def class_counts_plan(totals: jax.Array, epsilon: jax.Array, sensitivity: float,
                      unit: int = 1, bound: float | None = None) -> LaplacePlan:
    """:func:`release_class_counts` before its noise, to be drawn with other releases at the
    same point (its release is in units: divide by ``unit``)."""
    return plan_laplace(totals, sensitivity * unit, epsilon, integer=True, bound=bound,
                        label=f"L1 sens. {sensitivity:g}")


def pooled_counts(releases: list[tuple[jax.Array, ArrayLike]]) -> jax.Array:
    """Noisy class counts released at budgets ``ε_k``, pooled by inverse variance (weights
    ``ε_k²``; post-processing). Every product is rounded on its own before it is added (an
    optimisation barrier): XLA's CPU backend may fuse a product and a sum into one fused
    multiply-add, rounded once, and whether it does depends on the program around them, so a
    vectorised sweep and a mapped one could otherwise differ in the last bit."""
    weights = jax.lax.optimization_barrier(
        jnp.stack([jnp.asarray(e, jnp.float32) ** 2 for _, e in releases]))
    counts = jnp.stack([c for c, _ in releases])
    weighted = jax.lax.optimization_barrier(weights[:, None] * counts)
    return jnp.sum(weighted, 0) / jnp.maximum(weights.sum(), 1e-30)


def balance_pseudo_counts(totals: jax.Array, records: ArrayLike) -> jax.Array:
    """``records`` pseudo-records ``[C]`` spread as the class balance of the released
    ``totals [C]`` (each floored at 1/2; post-processing): added to a noisy cell's counts, they
    make a cell whose evidence is weaker follow the released majority."""
    totals = jnp.maximum(totals, 0.5)
    return jnp.asarray(records, jnp.float32) * totals / totals.sum()
