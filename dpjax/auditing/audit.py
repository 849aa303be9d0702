"""The empirical privacy auditor: an ε lower bound for any release on two neighbouring inputs.

:func:`audit_release` draws ``n_pilot`` releases per side to *choose* a distinguishing event
(:mod:`dpjax.auditing.events`), then ``n`` fresh releases per side to *measure* it, and reports
the Clopper–Pearson lower bound on ε (:mod:`dpjax.auditing.stats`) next to the claim. Every
draw has its own key, and the draws of a side are one vmapped, jitted call per chunk.

A lower bound above the claim proves a bug (up to the 5% error of the confidence interval: the
chosen event is measured on fresh draws). A bound below the claim proves nothing by itself:
auditing finds leaks, it does not certify their absence.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from dpjax._progress import bar as progress_bar
from dpjax.auditing.events import Event, choose_event, columns
from dpjax.auditing.stats import epsilon_estimate, epsilon_lower_bound

Release = Callable[[jax.Array, Any], Any]


@dataclasses.dataclass(frozen=True)
class AuditReport:
    """The outcome of one audit.

    Attributes:
      name: what was audited.
      epsilon, delta: the claim (the ledger's ε and δ).
      epsilon_lb: the lower confidence bound on ε from the chosen event's fresh draws.
      epsilon_hat: the point estimate ``log(p1/p2)`` of the same event (``inf`` if never seen on
        the second side).
      event: the event, in words.
      n: fresh draws per side; counts: ``(k1, k2)``, the event's hits on the side where it is
        more likely and on the other.
      pilot_epsilon_lb: the bound the pilot draws gave (optimistic: the event was chosen on them).
      confidence: of the interval (two one-sided Clopper–Pearson bounds).
      seconds: wall time.
    """

    name: str
    epsilon: float
    delta: float
    epsilon_lb: float
    epsilon_hat: float
    event: str
    n: int
    counts: tuple[int, int]
    pilot_epsilon_lb: float
    confidence: float
    seconds: float

    @property
    def passed(self) -> bool:
        """No violation found: the lower bound does not exceed the claimed ε."""
        return self.epsilon_lb <= self.epsilon

    def summary(self) -> str:
        verdict = "ok" if self.passed else "VIOLATION"
        return (f"{self.name}: claimed ε = {self.epsilon:.4g}, δ = {self.delta:.3g}; "
                f"ε lower bound = {self.epsilon_lb:.4g} ({self.confidence:.0%} CI; point "
                f"estimate {self.epsilon_hat:.3g}) from {self.n} + {self.n} draws -> "
                f"{verdict}; event: {self.event}")

    def __str__(self) -> str:
        return self.summary()


def _draws(fn: Callable[..., Any], data: Any, key: jax.Array, n: int, chunk: int,
           progress: Any):
    """Yield the releases of ``n`` keys (``fold_in(key, c)`` split per chunk ``c``) as numpy
    pytrees of up to ``chunk`` draws."""
    for c in range(math.ceil(n / chunk)):
        size = min(chunk, n - c * chunk)
        keys = jax.random.split(jax.random.fold_in(key, c), chunk)
        out = jax.tree.map(lambda a, size=size: np.asarray(a)[:size], fn(keys, data))
        progress.update(size)
        yield out


def audit_release(
    release: Release,
    data: Any,
    data_prime: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    n: int = 10_000,
    n_pilot: int | None = None,
    chunk: int = 2_000,
    key: int | jax.Array = 0,
    confidence: float = 0.95,
    progress: bool | None = None,
    name: str = "release",
) -> AuditReport:
    """Audit ``release(key, data) -> pytree`` on the neighbouring inputs ``data`` and
    ``data_prime`` against the claim ``(epsilon, delta)``.

    Args:
      release: a pure function of a PRNG key and an input pytree (jittable, vmappable over the
        key). Its output pytree is everything an observer sees.
      data, data_prime: the two neighbouring inputs (pytrees; shapes may differ).
      epsilon, delta: the claimed guarantee.
      n: fresh draws per side for the measurement (in chunks; up to 10^6 and more).
      n_pilot: draws per side to choose the event (default ``n``).
      chunk: draws per compiled call.
      key: the audit's own key (an int seed is fine here: nothing is released).
      confidence: of the Clopper–Pearson interval.
      progress: show a progress bar (default: when the audit is long and
        :func:`dpjax._progress.wanted`: stderr is a terminal, or ``$DPJAX_PROGRESS=1``).

    Returns:
      :class:`AuditReport`.
    """
    start = time.perf_counter()
    if not (epsilon >= 0 and 0 <= delta < 1):
        raise ValueError(f"the claim must have epsilon >= 0 and delta in [0, 1); got "
                         f"({epsilon}, {delta})")
    if n < 1 or (n_pilot is not None and n_pilot < 1) or chunk < 1:
        raise ValueError("n, n_pilot and chunk must be positive")
    n_pilot = n if n_pilot is None else n_pilot
    base = jax.random.key(key) if isinstance(key, int) else key
    fn = jax.jit(jax.vmap(release, in_axes=(0, None)))
    if progress is None and 2 * (n + n_pilot) < 200_000:
        progress = False      # short audits never show a bar
    bar = progress_bar(2 * (n + n_pilot), name, unit="draw", enabled=progress)
    try:
        pilots = []
        for side, side_data in enumerate((data, data_prime)):
            draws = list(_draws(fn, side_data, jax.random.fold_in(base, side), n_pilot, chunk,
                                bar))
            values, floats, names, float_index = columns(
                jax.tree.map(lambda *a: np.concatenate(a), *draws))
            pilots.append((values, floats))
        chosen = choose_event(pilots[0], pilots[1], names, float_index, delta, confidence)
        counts = [0, 0]
        if chosen is not None:
            pilot_lb, event = chosen
            for side, side_data in enumerate((data, data_prime)):
                for out in _draws(fn, side_data, jax.random.fold_in(base, 2 + side), n, chunk,
                                  bar):
                    values, floats, _, _ = columns(out)
                    counts[side] += int(event.occurs(values, floats, float_index).sum())
    finally:
        bar.close()
    if chosen is None:
        return AuditReport(name, epsilon, delta, 0.0, 0.0, "none: the release is constant", n,
                           (0, 0), 0.0, confidence, time.perf_counter() - start)
    k1, k2 = (counts[0], counts[1]) if event.first == 0 else (counts[1], counts[0])
    bound = float(epsilon_lower_bound(k1, n, k2, n, delta, confidence))
    return AuditReport(name, epsilon, delta, bound, epsilon_estimate(k1, n, k2, n),
                       event.describe(), n, (k1, k2), float(pilot_lb), confidence,
                       time.perf_counter() - start)


__all__ = ["AuditReport", "Event", "audit_release"]
