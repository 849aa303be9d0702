"""Models as JSON: :func:`to_json` and :func:`load` (no pickle).

A fitted :class:`~dpjax.Model` is a tree of dataclasses, named tuples, tuples and arrays: its
learner configuration, its parameters (dense trees, tables, stumps, rule lists), its public
feature spec, its classes and its privacy ledger. :func:`to_json` writes that tree as plain
JSON: an array becomes ``{"array": [...], "dtype": ..., "shape": [...]}`` (float32 values are
written as the doubles they are, so they come back bit for bit) and a dataclass or named tuple
``{"type": "module.Class", "fields": {...}}``. :func:`load` rebuilds it from an allowlist of
types (:func:`model_types`: the model, its spec, ledger and timings, the registered learner
configurations and the parameter types), so a JSON file cannot make it import or call anything
else, and the learner configuration's checks run again on the way in. The file holds only what
the model released and the public spec: the fit's timings are left out (a fit's run time
follows its rejection samplers, which read the data), so sharing the file shares nothing the
ledger does not account for.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

from dpjax.data import FeatureSpec
from dpjax.mechanisms.accounting import Cost, LedgerEntry, PrivacyLedger

FORMAT = "dpjax-model"
VERSION = 1


def _encode(value: Any) -> Any:
    """``value`` as JSON-ready data (module docstring)."""
    if isinstance(value, (jax.Array, np.ndarray)):
        array = np.asarray(value)
        if array.dtype == object:
            return {"objects": [_encode(v) for v in array.tolist()]}
        data = array.astype(np.float64) if array.dtype.kind == "f" else array
        return {"array": _finite(data.tolist()), "dtype": str(array.dtype),
                "shape": list(array.shape)}
    if isinstance(value, np.generic):
        return _encode(value.item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"type": _type_name(type(value)),
                "fields": {f.name: _encode(getattr(value, f.name))
                           for f in dataclasses.fields(value) if f.init}}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {"type": _type_name(type(value)),
                "fields": {name: _encode(getattr(value, name)) for name in value._fields}}
    if isinstance(value, (tuple, list)):
        return {"tuple" if isinstance(value, tuple) else "list": [_encode(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot write a {type(value).__name__} to JSON")


def _finite(data: Any) -> Any:
    """Nested lists with non-finite floats as strings (JSON has no NaN or inf)."""
    if isinstance(data, list):
        return [_finite(v) for v in data]
    if isinstance(data, float) and not math.isfinite(data):
        return repr(data)
    return data


def _unfinite(data: Any) -> Any:
    if isinstance(data, list):
        return [_unfinite(v) for v in data]
    return float(data) if isinstance(data, str) else data


def model_types() -> dict[str, type]:
    """The types a model file may hold, by ``module.Class`` name."""
    from dpjax.ensembles.boosted import BoostedTrees
    from dpjax.ensembles.newton import NewtonBoostedModel
    from dpjax.learners import LEARNERS
    from dpjax.linear.halfspace import Halfspace
    from dpjax.model import Model, Timings
    from dpjax.rules.greedy import RuleList
    from dpjax.trees.dense import DenseTree
    from dpjax.trees.stumps import Stump
    from dpjax.trees.topdown import TopDownTree

    types = [Model, Timings, FeatureSpec, PrivacyLedger, LedgerEntry, Cost, DenseTree,
             NewtonBoostedModel, BoostedTrees, Stump, TopDownTree, Halfspace, RuleList,
             *LEARNERS.values()]
    return {f"{cls.__module__}.{cls.__qualname__}": cls for cls in types}


def _type_name(cls: type) -> str:
    name = f"{cls.__module__}.{cls.__qualname__}"
    if model_types().get(name) is not cls:
        raise TypeError(f"cannot write a {cls.__qualname__} to a model file: not a model type")
    return name


def _import(name: str) -> type:
    cls = model_types().get(name)
    if cls is None:
        raise ValueError(f"the model file names a type that is not a dpjax model type: "
                         f"{name!r}")
    return cls


def _decode(data: Any) -> Any:
    if isinstance(data, dict):
        if "array" in data:
            return np.asarray(_unfinite(data["array"]), dtype=data["dtype"]).reshape(
                data["shape"])
        if "objects" in data:
            return np.asarray([_decode(v) for v in data["objects"]], dtype=object)
        if "type" in data:
            cls = _import(data["type"])
            return cls(**{k: _decode(v) for k, v in data["fields"].items()})
        if "tuple" in data:
            return tuple(_decode(v) for v in data["tuple"])
        if "list" in data:
            return [_decode(v) for v in data["list"]]
        if "dict" in data:
            return {_decode(k): _decode(v) for k, v in data["dict"]}
        if "float" in data:
            return float(data["float"])
        raise ValueError(f"unreadable entry in the model file: keys {sorted(data)}")
    return data


def to_json(model: Any, path: str | os.PathLike | None = None) -> str:
    """The model as a JSON string; written to ``path`` too when one is given."""
    from dpjax.model import Timings

    unreleased = dataclasses.replace(model, timings=Timings(math.nan, math.nan))
    text = json.dumps({"format": FORMAT, "version": VERSION, "model": _encode(unreleased)})
    if path is not None:
        Path(path).write_text(text)
    return text


def load(source: str | os.PathLike) -> Any:
    """The model written by :func:`to_json`: from a path, or from the JSON string itself.

    Arrays come back as JAX arrays (the model predicts as before, bit for bit); its timings are
    NaN (not exported)."""
    text = str(source)
    if not text.lstrip().startswith("{"):
        text = Path(source).read_text()
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("not a dpjax model file")
    if data.get("version") != VERSION:
        raise ValueError(f"model file version {data.get('version')!r}; this dpjax reads "
                         f"version {VERSION}")
    model = _decode(data["model"])
    return dataclasses.replace(model, params=jax.tree.map(jax.numpy.asarray, model.params))
