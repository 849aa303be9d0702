"""``bounds="private"``: the numeric features' ranges released with a share of ε before the
fit (:func:`dpjax.mechanisms.quantiles.private_ranges`), for users without public bounds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
import pandas as pd

from dpjax.data.binning import ImplausibleBoundsWarning, as_frame
from dpjax.data.caller import warn
from dpjax.mechanisms.quantiles import QUANTILE, private_ranges
from dpjax.privacy import Cost
from dpjax.privacy.rounding import float32_below, round_down

PRIVATE = "private"
BOUNDS_STREAM = 0x626F
"""The stream (``fold_in`` of the fit's key) the private bounds' key comes from."""
LABEL = f"private bounds ({QUANTILE:g} and {1 - QUANTILE:g} quantiles per numeric feature)"


def wants_private_bounds(bounds: Any) -> bool:
    """``bounds="private"``, or a dict with some columns ``"private"``."""
    if isinstance(bounds, str):
        return bounds == PRIVATE
    return isinstance(bounds, Mapping) and any(
        isinstance(v, str) and v == PRIVATE for v in bounds.values())


def check_private_bounds_request(epsilon: float | None, delta: float,
                                 on_out_of_bounds: str) -> None:
    """Refuse, before any release, what ``bounds="private"`` does not serve: no ``epsilon``;
    ``delta > 0`` (the learners that compose at ``δ`` size their releases to the rest of ``ε``
    under their own route, which need not leave room for the ranges' pure releases); and
    ``on_out_of_bounds`` other than ``"clip"`` (about a tenth of the records lie outside the
    released 5%–95% range, so an error or warning would report the data against a release the
    ledger of a failed fit never records)."""
    if epsilon is None:
        raise ValueError("bounds='private' releases the ranges with a share of epsilon: it "
                         "needs epsilon (without privacy, use bounds='data')")
    if delta > 0.0:
        raise ValueError("bounds='private' is pure epsilon-DP beside a pure fit: use "
                         "delta=0, or declare the bounds")
    if on_out_of_bounds != "clip":
        raise ValueError("bounds='private' goes with on_out_of_bounds='clip' (values outside "
                         "the released 5%-95% range are clipped by design)")


def release_bounds(key: jax.Array, X: Any, bounds: Any, epsilon: float, share: float,
                   sensitivity: float
                   ) -> tuple[dict[str, Any], float, dict[str, Cost], tuple[str, ...]]:
    """The declared bounds with every ``"private"`` numeric column's range released at
    ``share·ε``: ``(bounds dict, the fit's ε = (1 − share)·ε, {ledger label: cost}, the
    released columns)``. A non-numeric column cannot be ``"private"`` (declare its
    categories); ``bounds="private"`` covers every numeric column and needs the others
    declared. Ranges that reach :data:`IMPLAUSIBLE` warn (:func:`warn_if_implausible`)."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"bounds_share must be in (0, 1); got {share!r}")
    frame = as_frame(X)
    declared = dict(bounds) if isinstance(bounds, Mapping) else {}
    names = [str(c) for c in frame.columns]
    wanted = [c for c in names if bounds == PRIVATE or declared.get(c) == PRIVATE]
    unknown = sorted(set(declared) - set(names))
    if unknown:
        raise ValueError(f"bounds names column(s) {unknown[:5]} that X does not have")
    numeric = [c for c in wanted if pd.api.types.is_numeric_dtype(frame[c].dtype)
               and not pd.api.types.is_bool_dtype(frame[c].dtype)]
    others = sorted(set(wanted) - set(numeric))
    if others:
        raise ValueError(f"bounds='private' releases numeric ranges; column(s) {others[:5]} "
                         "are not numeric: declare their categories in a bounds dict")
    budget = float(round_down(np.float32(share * epsilon)))
    columns = frame[numeric].to_numpy(dtype=np.float64)
    lower, upper, cost = private_ranges(key, columns, budget, sensitivity)
    declared.update({c: (float(lo), float(hi))
                     for c, lo, hi in zip(numeric, lower, upper, strict=True)})
    warn_if_implausible(numeric, lower, upper, epsilon, share)
    spent = float(np.sum(np.asarray(cost.epsilon, np.float64)))     # as the ledger adds
    rest = float(round_down(np.float32(float32_below(epsilon - spent))))
    return declared, rest, {LABEL: cost}, tuple(numeric)


IMPLAUSIBLE = 2.0**24
"""A released bound this far from 0 (±16,777,216: past float32's exact integers, the outer
sixth of the candidate grid) says the selection was close to a uniform draw from the grid: on
banknote's 4 columns (ranges within ±14) at ``bounds_share·ε = 0.25``, some column's range
reached it in every one of 40 draws on 960 and 3,000 rows, in a sixth of them at the rule of
thumb (12,000 rows, where a tenth of the ranges still came out 285 times too wide) and in none
on 40,000 rows."""


def rows_needed(columns: int, epsilon: float, share: float) -> float:
    """The rule of thumb: private ranges are reliable from about ``760·n/(share·ε)`` rows for
    ``n`` columns (docs/guide.md; the permute-and-flip selections' error, in rows, at the
    per-selection budget ``share·ε/(2n)``)."""
    return 760.0 * columns / (share * epsilon)


def warn_if_implausible(names: list[str], lower: np.ndarray, upper: np.ndarray,
                        epsilon: float, share: float) -> None:
    """Warn when a released range reaches :data:`IMPLAUSIBLE`: a function of the released
    ranges and the public budget alone (no count of rows is read or printed)."""
    wide = [c for c, lo, hi in zip(names, lower, upper, strict=True)
            if max(abs(lo), abs(hi)) >= IMPLAUSIBLE]
    if wide:
        warn(f"bounds='private': the released range of column(s) {wide[:5]} reaches beyond "
             f"±2^24, a sign that the data are too few for ranges at this epsilon (they are "
             f"reliable from about {rows_needed(len(names), epsilon, share):,.0f} rows for "
             f"{len(names)} column(s) at epsilon = {epsilon:g} and bounds_share = {share:g}); "
             "the model may learn little. Declare the bounds from domain knowledge, or raise "
             "epsilon or bounds_share", ImplausibleBoundsWarning)


__all__ = ["BOUNDS_STREAM", "LABEL", "PRIVATE", "check_private_bounds_request",
           "release_bounds", "wants_private_bounds"]
