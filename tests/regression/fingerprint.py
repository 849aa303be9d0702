"""Behaviour fingerprints: every learner x 3 configurations (plus a non-private fit and a sweep
each), recorded as their ledger entries and a hash of their parameters and predictions.

A refactoring that changes no behaviour leaves every fingerprint as it was:
``tests/regression/fingerprints.json`` is the committed record and
``tests/regression/test_fingerprints.py`` recomputes it. Regenerate (only for a deliberate
change of behaviour, said so in the commit) with::

    python tests/regression/fingerprint.py --write

The fingerprints use the public API alone (``dpjax.fit``, ``dpjax.sweep``, ``Model.params``,
``Model.privacy``, ``Model.predict_proba``), so they survive any move of the code behind it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np

import dpjax

RECORD = Path(__file__).with_name("fingerprints.json")

# (name, method, dataset, fit arguments); three private configurations per learner
CONFIGS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("random_trees/default", "random_trees", "banknote", {"epsilon": 1.0}),
    ("random_trees/modes", "random_trees", "breastwisc",
     {"epsilon": 0.5, "neighbouring": "replace_one", "n_trees": 5, "depth": 4,
      "voting": "threshold", "leaf_estimate": "paper", "threshold_range": "cell"}),
    ("random_trees/weighted", "random_trees", "transfusion",
     {"epsilon": 2.0, "budget": "paper", "voting": "majority", "depth": 3,
      "sample_weight": "half"}),
    ("rf_laplace/default", "rf_laplace", "banknote", {"epsilon": 1.0}),
    ("rf_laplace/paper", "rf_laplace", "breastwisc",
     {"epsilon": 3.0, "neighbouring": "replace_one", "budget": "paper"}),
    ("rf_laplace/size", "rf_laplace", "transfusion",
     {"epsilon": 0.3, "public_size": 748, "n_trees": 7, "depth": 3}),
    ("rf_exponential/default", "rf_exponential", "banknote", {"epsilon": 1.0}),
    ("rf_exponential/paper", "rf_exponential", "breastwisc",
     {"epsilon": 3.0, "neighbouring": "replace_one", "budget": "paper"}),
    ("rf_exponential/size", "rf_exponential", "transfusion",
     {"epsilon": 0.3, "n_trees": 5, "depth": 5, "voting": "threshold"}),
    ("boosted/default", "boosted", "banknote", {"epsilon": 1.0}),
    ("boosted/random", "boosted", "breastwisc",
     {"epsilon": 0.5, "delta": 1e-6, "shape": "random", "n_trees": 8, "depth": 3,
      "learning_rate": 0.5}),
    ("boosted/gaussian", "boosted", "transfusion",
     {"epsilon": 2.0, "delta": 1e-5, "noise": "gaussian", "neighbouring": "replace_one"}),
    ("malpha/default", "malpha", "banknote", {"epsilon": 1.0}),
    ("malpha/paper", "malpha", "breastwisc",
     {"epsilon": 2.0, "public_size": 699, "alpha": 0.5, "budget": "paper",
      "leaf_mechanism": "value", "n_trees": 4, "depth": 3}),
    ("malpha/laplace_beta", "malpha", "transfusion",
     {"epsilon": 4.0, "neighbouring": "replace_one", "leaf_mechanism": "counts",
      "beta_mode": "laplace", "n_trees": 5, "depth": 2, "beta_tree": 0.3}),
    ("smooth_boost/default", "smooth_boost", "banknote", {"epsilon": 1.0}),
    ("smooth_boost/tree", "smooth_boost", "breastwisc",
     {"epsilon": 2.0, "weak_learner": "tree", "n_rounds": 6, "accounting": "advanced",
      "delta": 1e-6}),
    ("smooth_boost/halfspace", "smooth_boost", "transfusion",
     {"epsilon": 3.0, "weak_learner": "halfspace", "delta": 1e-6, "n_rounds": 5}),
    ("rule_list/default", "rule_list", "banknote", {"epsilon": 1.0}),
    ("rule_list/smooth", "rule_list", "breastwisc",
     {"epsilon": 2.0, "delta": 1e-6, "selection": "smooth_laplace", "max_rules": 3}),
    ("rule_list/gaussian", "rule_list", "transfusion",
     {"epsilon": 3.0, "delta": 1e-5, "selection": "global_gaussian", "max_card": 1,
      "neighbouring": "replace_one"}),
]
METHODS = sorted({method for _, method, _, _ in CONFIGS})


def digest(tree: Any) -> str:
    """sha256 of every leaf's dtype, shape and bytes, in pytree order."""
    sha = hashlib.sha256()
    for leaf in jax.tree.leaves(tree):
        array = np.asarray(leaf)
        sha.update(f"{array.dtype}{array.shape}".encode())
        sha.update(np.ascontiguousarray(array).tobytes())
    return sha.hexdigest()


def ledger_record(ledger: Any) -> dict[str, Any]:
    return {"epsilon": repr(ledger.epsilon), "delta": repr(ledger.delta),
            "entries": [[e.what, e.mechanism, repr(e.epsilon), repr(e.delta), e.count,
                         repr(e.rho), e.private] for e in ledger.entries]}


def _data(name: str) -> tuple[Any, np.ndarray, Any, list[str]]:
    X, y = dpjax.load_dataset(name)
    return X, y, dpjax.data.public_bounds(name), dpjax.data.missing_columns(name)


def fit_record(method: str, dataset: str, arguments: dict[str, Any]) -> dict[str, Any]:
    X, y, bounds, missing = _data(dataset)
    arguments = dict(arguments)
    if arguments.get("sample_weight") == "half":
        arguments["sample_weight"] = np.where(np.arange(len(y)) % 3 == 0, 0.5, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dpjax.fit(X, y, method=method, key=7, bounds=bounds, missing=missing,
                          **arguments)
        proba = model.predict_proba(X)
    return {"params": digest(model.params), "proba": digest(proba),
            "ledger": ledger_record(model.privacy)}


def sweep_record(method: str) -> dict[str, Any]:
    X, y, bounds, _ = _data("banknote")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        swept = dpjax.sweep(X, y, method=method, epsilon=[0.5, 2.0], seeds=2, bounds=bounds)
    return {"params": digest(swept.params),
            "ledgers": [ledger_record(ledger) for ledger in swept.ledgers]}


def fingerprints() -> dict[str, Any]:
    """Every fingerprint, by name."""
    record: dict[str, Any] = {}
    for name, method, dataset, arguments in CONFIGS:
        record[name] = fit_record(method, dataset, arguments)
    for method in METHODS:
        record[f"{method}/non-private"] = fit_record(method, "banknote", {"epsilon": None})
        record[f"{method}/sweep"] = sweep_record(method)
        dpjax.clear_caches()
    return record


def platform() -> dict[str, str]:
    """Where float results are comparable bit for bit: the JAX version and backend."""
    return {"jax": jax.__version__, "backend": jax.default_backend()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite the committed record")
    args = parser.parse_args(argv)
    record = {"platform": platform(), "fingerprints": fingerprints()}
    if args.write:
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(record['fingerprints'])} fingerprints to {RECORD}")
        return 0
    committed = json.loads(RECORD.read_text())["fingerprints"]
    changed = sorted(k for k in committed.keys() | record["fingerprints"].keys()
                     if committed.get(k) != record["fingerprints"].get(k))
    print("changed: " + (", ".join(changed) if changed else "none"))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
