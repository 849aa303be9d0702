"""Distinguishing events for the auditor, chosen on a pilot sample.

A release is any pytree of arrays; each of its scalars is a *column*. The auditor looks for an
event ``E`` with ``P[M(D) ∈ E]`` much larger than ``P[M(D') ∈ E]`` among:

* ``threshold``: a column is ``>= τ`` or ``<= τ`` (tails of noisy values, β, counts);
* ``value``: a column equals one value (a chosen split, a released label, an exact count);
* ``seen``: a column's exact value is one of those the pilot saw on one side only (a
  floating-point output whose set of reachable values depends on the data, Mironov 2012);
* ``granularity``: thresholds on the position of the lowest set bit of a float32 column (the
  same floating-point leak: ``v + noise`` rounds to a grid that depends on ``v``);
* ``residual``: thresholds on ``x_j − (a + c·x_i)`` for two strongly correlated columns (two
  releases that share one noise draw at different scales cancel it exactly).

The pilot only *chooses* the event; its probabilities are then estimated on fresh draws, so
the bound stays valid however many events were tried.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from dpjax.auditing.stats import epsilon_lower_bound

THRESHOLDS = 128
MAX_VALUES = 64
MAX_PAIR_COLUMNS = 48
PAIR_CORRELATION = 0.98
ZERO_GRANULARITY = 1000.0


def columns(outputs) -> tuple[np.ndarray, np.ndarray, list[str], list[int]]:
    """``outputs`` (a pytree of arrays with a leading sample axis ``N``) as a float64 matrix
    ``[N, K]``, a float32 matrix ``[N, K_f]`` of the floating-point columns (their exact
    values), the name of every column, and the indices of the floating-point ones."""
    values, floats, names, float_index = [], [], [], []
    for path, leaf in jax.tree_util.tree_flatten_with_path(outputs)[0]:
        array = np.asarray(leaf)
        flat = array.reshape(array.shape[0], -1)
        label = jax.tree_util.keystr(path)
        if np.issubdtype(array.dtype, np.floating):
            float_index += range(len(names), len(names) + flat.shape[1])
            floats.append(flat.astype(np.float32))
        values.append(flat.astype(np.float64))
        names += [f"{label}[{i}]" for i in range(flat.shape[1])]
    n = values[0].shape[0] if values else 0
    matrix = np.concatenate(values, axis=1) if values else np.zeros((n, 0))
    float_matrix = np.concatenate(floats, axis=1) if floats else np.zeros((n, 0), np.float32)
    return matrix, float_matrix, names, float_index


def granularity(x: np.ndarray) -> np.ndarray:
    """Exponent of the lowest set bit of float32 values (``x = odd·2**g``); ``0`` maps to a
    large sentinel. Exact: read off the float's bits."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.int64)
    mantissa = (bits & 0x7FFFFF).astype(np.int64)
    significand = np.where(exponent > 0, mantissa | 0x800000, mantissa)
    scale = np.where(exponent > 0, exponent - 150, -149)
    lowest = significand & -significand
    trailing = np.where(significand > 0, np.log2(np.maximum(lowest, 1)).astype(np.int64), 0)
    return np.where(significand > 0, scale + trailing, ZERO_GRANULARITY).astype(np.float64)


@dataclasses.dataclass(frozen=True)
class Event:
    """One candidate event: ``kind`` in ``("ge", "le", "value", "seen")`` on a derived
    column (``family`` ``"value"``, ``"granularity"`` or ``"residual"``), with ``first`` the
    side (0 = ``D``, 1 = ``D'``) where it is expected to be more likely."""

    family: str
    column: int
    kind: str
    threshold: float = 0.0
    members: tuple[float, ...] = ()
    pair: tuple[int, int, float, float] | None = None   # (i, j, intercept, slope)
    first: int = 0
    name: str = ""

    def derived(self, values: np.ndarray, floats: np.ndarray,
                float_index: list[int]) -> np.ndarray:
        """The event's column ``[N]`` from a sample's value and float matrices."""
        if self.family == "value":
            return values[:, self.column]
        if self.family == "granularity":
            return granularity(floats[:, float_index.index(self.column)])
        i, j, intercept, slope = self.pair
        return values[:, j] - (intercept + slope * values[:, i])

    def occurs(self, values: np.ndarray, floats: np.ndarray,
               float_index: list[int]) -> np.ndarray:
        """bool ``[N]``: whether each sample lies in the event."""
        x = self.derived(values, floats, float_index)
        if self.kind == "ge":
            return x >= self.threshold
        if self.kind == "le":
            return x <= self.threshold
        return np.isin(x, np.asarray(self.members))

    def describe(self) -> str:
        target = {"value": self.name, "granularity": f"lowest set bit of {self.name}",
                  "residual": f"residual {self.name}"}[self.family]
        side = "D" if self.first == 0 else "D'"
        if self.kind in ("ge", "le"):
            op = ">=" if self.kind == "ge" else "<="
            return f"{target} {op} {self.threshold:.6g} (more likely on {side})"
        if self.kind == "value":
            return f"{target} == {self.members[0]:.6g} (more likely on {side})"
        return f"{target} in {len(self.members)} values seen only on {side} in the pilot"


def _threshold_counts(a: np.ndarray, b: np.ndarray, thresholds: np.ndarray
                      ) -> tuple[np.ndarray, ...]:
    """Counts of ``a >= τ``, ``b >= τ``, ``a <= τ``, ``b <= τ`` for each threshold."""
    a, b = np.sort(a), np.sort(b)
    ge_a = len(a) - np.searchsorted(a, thresholds, side="left")
    ge_b = len(b) - np.searchsorted(b, thresholds, side="left")
    le_a = np.searchsorted(a, thresholds, side="right")
    le_b = np.searchsorted(b, thresholds, side="right")
    return ge_a, ge_b, le_a, le_b


def _column_events(family: str, column: int, a: np.ndarray, b: np.ndarray, name: str,
                   delta: float, confidence: float, pair=None) -> list[Event]:
    """Candidate events on one derived column from draws ``a`` on ``D`` and ``b`` on ``D'``:
    for each tail direction and side the best threshold, the best single value for each side,
    and for each side the set of values seen only there."""
    n1, n2 = len(a), len(b)
    pooled = np.concatenate([a, b])
    finite = pooled[np.isfinite(pooled)]
    if finite.size == 0 or finite.min() == finite.max():
        return []
    found = []
    thresholds = np.unique(np.quantile(finite, np.linspace(0, 1, THRESHOLDS)))
    ge_a, ge_b, le_a, le_b = _threshold_counts(a, b, thresholds)
    for kind, ca, cb in (("ge", ge_a, ge_b), ("le", le_a, le_b)):
        for first, (k1, m1, k2, m2) in enumerate(((ca, n1, cb, n2), (cb, n2, ca, n1))):
            scores = epsilon_lower_bound(k1, m1, k2, m2, delta, confidence)
            best = int(np.argmax(scores))
            found.append(Event(family, column, kind, float(thresholds[best]), pair=pair,
                               first=first, name=name))
    unique_a, count_a = np.unique(a, return_counts=True)
    unique_b, count_b = np.unique(b, return_counts=True)
    values = np.union1d(unique_a, unique_b)
    if len(values) <= 2 * MAX_VALUES:
        k_a = np.array([count_a[unique_a == v].sum() for v in values])
        k_b = np.array([count_b[unique_b == v].sum() for v in values])
        for first, (k1, m1, k2, m2) in enumerate(((k_a, n1, k_b, n2), (k_b, n2, k_a, n1))):
            best = int(np.argmax(epsilon_lower_bound(k1, m1, k2, m2, delta, confidence)))
            found.append(Event(family, column, "value", members=(float(values[best]),),
                               pair=pair, first=first, name=name))
    for first, (ua, ub) in enumerate(((unique_a, unique_b), (unique_b, unique_a))):
        only = ua[~np.isin(ua, ub)]
        if only.size:
            found.append(Event(family, column, "seen", members=tuple(float(v) for v in only),
                               pair=pair, first=first, name=name))
    return found


def _pairs(values: np.ndarray, values_p: np.ndarray,
           float_index: list[int]) -> list[tuple[int, int, float, float]]:
    """Strongly correlated pairs of floating-point columns, each with the line ``x_j ≈ a +
    c·x_i`` fitted on the within-side deviations (so a shift between the sides stays in the
    residual)."""
    if len(float_index) < 2:
        return []
    centred = np.concatenate([values - values.mean(0), values_p - values_p.mean(0)])
    spread = centred[:, float_index].std(axis=0)
    chosen = [float_index[i] for i in np.argsort(-spread)[:MAX_PAIR_COLUMNS] if spread[i] > 0]
    if len(chosen) < 2:
        return []
    sub = centred[:, chosen]
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.corrcoef(sub, rowvar=False)
    pooled = np.concatenate([values, values_p])
    out = []
    for p in range(len(chosen)):
        for q in range(p + 1, len(chosen)):
            if abs(corr[p, q]) >= PAIR_CORRELATION:
                i, j = chosen[p], chosen[q]
                slope = float((sub[:, p] * sub[:, q]).sum() / (sub[:, p] ** 2).sum())
                intercept = float(pooled[:, j].mean() - slope * pooled[:, i].mean())
                out.append((i, j, intercept, slope))
    return out


def _candidates(values: np.ndarray, floats: np.ndarray, values_p: np.ndarray,
                floats_p: np.ndarray, names: list[str], float_index: list[int], delta: float,
                confidence: float) -> list[Event]:
    """Candidate events of every column and family from one set of draws per side."""
    found = []
    for column in range(values.shape[1]):
        found += _column_events("value", column, values[:, column], values_p[:, column],
                                names[column], delta, confidence)
    for k, column in enumerate(float_index):
        found += _column_events("granularity", column, granularity(floats[:, k]),
                                granularity(floats_p[:, k]), names[column], delta, confidence)
    for pair in _pairs(values, values_p, float_index):
        i, j, intercept, slope = pair
        name = f"{names[j]} - ({intercept:.4g} + {slope:.4g}·{names[i]})"
        found += _column_events(
            "residual", j, values[:, j] - intercept - slope * values[:, i],
            values_p[:, j] - intercept - slope * values_p[:, i], name, delta, confidence,
            pair=pair)
    return found


def choose_event(pilot: tuple, pilot_prime: tuple, names: list[str], float_index: list[int],
                 delta: float, confidence: float) -> tuple[float, Event] | None:
    """The most distinguishing event, with its bound on held-out pilot draws.

    ``pilot`` is ``(values, floats)`` of ``D``'s pilot draws and ``pilot_prime`` of ``D'``'s.
    Candidates come from the first half of each (:func:`_column_events`) and are scored on the
    second half, so an event that merely fits the noise of the first half (a set of values
    seen once, a lucky threshold) does not win. ``None`` when every column is constant.
    """
    half, half_p = len(pilot[0]) // 2, len(pilot_prime[0]) // 2
    first = [part[:half] for part in pilot], [part[:half_p] for part in pilot_prime]
    second = [part[half:] for part in pilot], [part[half_p:] for part in pilot_prime]
    events = _candidates(*first[0], *first[1], names, float_index, delta, confidence)
    if not events:
        return None
    n1, n2 = len(second[0][0]), len(second[1][0])
    scored = []
    for event in events:
        hits = [int(event.occurs(*side, float_index).sum()) for side in second]
        k1, m1, k2, m2 = ((hits[0], n1, hits[1], n2) if event.first == 0
                          else (hits[1], n2, hits[0], n1))
        scored.append((float(epsilon_lower_bound(k1, m1, k2, m2, delta, confidence)),
                       (k1 / m1) - (k2 / m2), event))
    score, _, event = max(scored, key=lambda item: item[:2])
    return score, event
