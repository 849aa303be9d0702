"""``dpjax.audit``: audit a learner configuration on a pair of neighbouring datasets.

The pair is the user's ``(X, y)`` and either a user-given ``(X_prime, y_prime)`` or ``(X, y)``
with one *outlier* record added (add/remove neighbours) or put in place of the last row
(replace-one). The built-in outlier sits at a corner of the declared domain (every numeric
feature at its upper or lower bound, every categorical one at its last declared category) with
the last class: it lands in one leaf of every random tree, moves the class sums of the leaf it
reaches, pulls splits towards the edge, and changes the row count. Both datasets are encoded
with the same public feature spec and classes, and the release audited is what the user would
get: the fitted model's parameters (for several budgets, the models of one sweep).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from dpjax._preparation import check_budgets, fit_grid, prepare
from dpjax.auditing.audit import AuditReport, audit_release
from dpjax.data import as_frame, encode, encode_labels, encode_targets, target_units
from dpjax.data.binning import FeatureSpec
from dpjax.privacy import check_neighbouring

RECORDS = ("upper", "lower")


def outlier(spec: FeatureSpec, classes: Sequence[Any], corner: str = "upper") -> pd.DataFrame:
    """One record at a corner of the public domain: numeric features at their ``corner``
    bound, categorical ones at their last (``"upper"``) or first declared category; built from
    the public spec alone."""
    if corner not in RECORDS:
        raise ValueError(f"record must be one of {RECORDS} or a (row, label) pair; got "
                         f"{corner!r}")
    row = {}
    for j, name in enumerate(spec.names):
        if spec.categories[j] is not None:
            row[name] = [spec.categories[j][-1 if corner == "upper" else 0]]
        else:
            row[name] = [spec.upper[j] if corner == "upper" else spec.lower[j]]
    return pd.DataFrame(row)


def neighbour(X: Any, y: Any, record: pd.DataFrame, label: Any,
              neighbouring: str) -> tuple[pd.DataFrame, np.ndarray]:
    """``(X, y)`` with ``record`` (label ``label``) added, or in place of the last row."""
    frame = as_frame(X).reset_index(drop=True)
    labels = np.asarray(y)
    record = record.reindex(columns=frame.columns).astype(frame.dtypes.to_dict())
    if neighbouring == "replace_one":
        frame, labels = frame.iloc[:-1], labels[:-1]
    frame = pd.concat([frame, record], ignore_index=True)
    return frame, np.append(labels, np.asarray([label], dtype=labels.dtype))


def audit(
    X: Any,
    y: Any,
    *,
    method: str = "boosted",
    epsilon: float | Sequence[float] = 1.0,
    delta: float = 0.0,
    neighbouring: str = "add_remove",
    record: str | tuple[Any, Any] = "upper",
    X_prime: Any = None,
    y_prime: Any = None,
    bounds: Any = None,
    classes: Sequence[Any] | None = None,
    n_bins: int = 10,
    missing: str | Sequence[str] = "error",
    public_size: int | None = None,
    n: int = 10_000,
    n_pilot: int | None = None,
    chunk: int = 1_000,
    key: int = 0,
    confidence: float = 0.95,
    progress: bool | None = None,
    task: str = "classification",
    y_bounds: Any = None,
    **params: Any,
) -> AuditReport:
    """Audit ``dpjax.fit(X, y, method=method, epsilon=epsilon, ...)`` against its claim.

    Args:
      X, y: the first dataset ``D`` (small datasets make sharper audits).
      method, params, bounds, classes, n_bins, missing, public_size, neighbouring: as
        :func:`dpjax.fit` (``bounds`` must be declared: both datasets share one public spec).
      epsilon: the budget, or a sequence of budgets: then the release is every model of one
        :func:`dpjax.sweep` over them and the claim is their sum.
      delta: the ``δ`` asked for (and claimed): learners that spend it (zCDP) size their noise
        for ``(ε, δ)``.
      task, y_bounds: as :func:`dpjax.fit`; a regression's outlier record has the target
        ``y_bounds[1]`` (``"upper"``) or ``y_bounds[0]`` (``"lower"``).
      record: the neighbour's extra record: ``"upper"`` / ``"lower"`` (the outlier at that
        corner of the domain, with the last class) or a ``(row, label)`` pair, ``row`` a
        one-row DataFrame or a sequence of feature values.
      X_prime, y_prime: a user-given neighbour ``D'`` instead of ``record``.
      n, n_pilot, chunk, key, confidence, progress: as
        :func:`dpjax.auditing.audit_release`.

    Returns:
      :class:`~dpjax.auditing.AuditReport`; ``passed`` when the lower bound stays at or below
      the claim.
    """
    neighbouring = check_neighbouring(neighbouring)
    budgets = check_budgets(epsilon)
    prepared = prepare(X, y, method=method, epsilon=max(budgets), bounds=bounds,
                            classes=classes, n_bins=n_bins, missing=missing,
                            on_out_of_bounds="clip", neighbouring=neighbouring,
                            params=params, public_size=public_size, delta=delta,
                            batch=chunk * len(budgets), task=task, y_bounds=y_bounds)
    regression = prepared.target is not None
    if X_prime is None:
        if isinstance(record, str):
            row = outlier(prepared.spec, prepared.classes, record)
            label = (prepared.target[record == "upper"] if regression
                     else prepared.classes[-1])
        else:
            row, label = record
            if not isinstance(row, pd.DataFrame):
                row = pd.DataFrame([list(row)], columns=prepared.spec.names)
        X_prime, y_prime = neighbour(X, y, row, label, neighbouring)
    elif y_prime is None:
        raise ValueError("X_prime needs y_prime")
    data = (prepared.codes, prepared.y)
    labels_prime = (target_units(encode_targets(y_prime, prepared.target)[0], prepared.target)
                    if regression else encode_labels(y_prime, prepared.classes)[0])
    data_prime = (jnp.asarray(encode(prepared.spec, X_prime, on_out_of_bounds="clip")),
                  jnp.asarray(labels_prime))
    fn, _ = prepared.fit_fn(private=True)
    traced = prepared.traced_values()
    size = prepared.size_value()
    points = {"epsilon": jnp.asarray(budgets, jnp.float32),
              **{name: jnp.full(len(budgets), value) for name, value in traced.items()}}
    traced_names = prepared.config.traced_names()

    def release(key: jax.Array, data: tuple[jax.Array, jax.Array]) -> Any:
        codes, labels = data
        if len(budgets) == 1:
            return fn(key, codes, labels, points["epsilon"][0], traced, size, None)[0]
        return fit_grid(fn, traced_names, key, codes, labels, points, size)[0]

    leaks = prepared.config.not_private()
    claim = float(np.sum(budgets))
    settings = ", ".join(f"{k}={v}" for k, v in params.items())
    spent = "+".join(f"{b:g}" for b in budgets)
    name = (f"{prepared.config.name}({settings}) ε={spent}"
            + (f" δ={delta:g}" if delta else "") + f" {neighbouring}"
            + (" [NOT PRIVATE by its ledger]" if leaks else ""))
    return audit_release(release, data, data_prime, epsilon=claim, delta=delta, n=n,
                         n_pilot=n_pilot, chunk=chunk, key=key, confidence=confidence,
                         progress=progress, name=name)
