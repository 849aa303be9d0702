"""What a release spent: the :class:`Cost` every mechanism returns beside its release.

A mechanism that adds noise also states what it spent (OpenDP's "measurement with a privacy
map"): it returns a :class:`Cost` computed from the noise scale it actually used. A learner's
fit returns its costs keyed by what was released, and the model's
:class:`~dpjax.privacy.PrivacyLedger` is assembled from those costs alone, so there is no second
derivation of the budget split.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Cost:
    """What a batch of releases of one kind spent: ``epsilon`` and ``delta`` per release.

    A pytree (``mechanism`` is static metadata), so costs come out of ``jit``, ``vmap`` and
    ``lax.scan`` like any result: leading axes are releases composed sequentially (trees,
    leaves, seeds of a sweep). Combine disjoint releases with :func:`parallel` first.

    Attributes:
      epsilon: float32 array, the ``ε`` each release spent (0 for a release that was skipped).
      delta: float32 array of the same shape.
      mechanism: what drew the noise, e.g. ``"discrete Laplace (L1 sens. 1)"``.
      rho: ``None``, or a float32 array like ``epsilon``: the zCDP ``ρ`` of each release when
        the mechanism has one sharper than its ``(ε, δ)`` (Gaussian noise); its ``(ε, δ)`` are
        then that ``ρ`` converted for the release alone.
    """

    epsilon: Any
    delta: Any
    mechanism: str = ""
    rho: Any = None

    def gated(self, live: jax.Array) -> Cost:
        """The cost where ``live`` (broadcast against ``epsilon``), zero elsewhere (a round
        that released nothing)."""
        rho = None if self.rho is None else jnp.where(live, self.rho, 0.0)
        return Cost(jnp.where(live, self.epsilon, 0.0), jnp.where(live, self.delta, 0.0),
                    self.mechanism, rho)


jax.tree_util.register_dataclass(Cost, data_fields=["epsilon", "delta", "rho"],
                                 meta_fields=["mechanism"])


def parallel(cost: Cost, axis: int | tuple[int, ...] = -1, *, touched: int = 1) -> Cost:
    """Parallel composition: releases along ``axis`` read disjoint parts of the data (the nodes
    of one level, the leaves of one tree), so together they cost their maximum — times
    ``touched``, the number of parts one change of a record can reach (2 under replace-one when
    each part's release is calibrated to a single record's change)."""
    if cost.rho is not None:
        raise ValueError("parallel composition of zCDP releases is not implemented")
    return Cost(touched * jnp.max(cost.epsilon, axis=axis),
                touched * jnp.max(cost.delta, axis=axis), cost.mechanism)
