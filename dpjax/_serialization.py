"""Trees of dataclasses as JSON, without pickle: :func:`to_json` and :func:`from_json` over an
allowlist of types (the model files of :meth:`dpjax.Model.to_json` and :func:`dpjax.load`).

A fitted :class:`~dpjax.Model` is a tree of dataclasses, named tuples, tuples and arrays: its
learner configuration, its parameters (dense trees, tables, stumps, rule lists), its public
feature spec, its classes and its privacy ledger. :func:`to_json` writes such a tree as plain
JSON: an array becomes ``{"array": [...], "dtype": ..., "shape": [...]}`` (float32 values are
written as the doubles they are, so they come back bit for bit) and a dataclass or named tuple
``{"type": "module.Class", "fields": {...}}``. :func:`from_json` rebuilds it from the given
allowlist of types only (for a model: the model, its spec, ledger and timings, the registered
learner configurations and their params types, :func:`dpjax._model.model_types`), so a JSON
file cannot make it import or call anything else, and a dataclass's own checks (a learner
configuration's) run again on the way in.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

FORMAT = "dpjax-model"
VERSION = 2
"""The file format's version: 2 since the layout by algorithm family (the types' module paths
changed); a version-1 file gets a clear error."""
Types = Mapping[str, type]


def _encode(value: Any, types: Types) -> Any:
    """``value`` as JSON-ready data (module docstring); dataclasses and named tuples must be
    in ``types``."""
    if isinstance(value, (jax.Array, np.ndarray)):
        array = np.asarray(value)
        if array.dtype == object:
            return {"objects": [_encode(v, types) for v in array.tolist()]}
        data = array.astype(np.float64) if array.dtype.kind == "f" else array
        return {"array": _finite(data.tolist()), "dtype": str(array.dtype),
                "shape": list(array.shape)}
    if isinstance(value, np.generic):
        return _encode(value.item(), types)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"type": _type_name(type(value), types),
                "fields": {f.name: _encode(getattr(value, f.name), types)
                           for f in dataclasses.fields(value) if f.init}}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {"type": _type_name(type(value), types),
                "fields": {name: _encode(getattr(value, name), types) for name in value._fields}}
    if isinstance(value, (tuple, list)):
        return {"tuple" if isinstance(value, tuple) else "list": [_encode(v, types)
                                                                 for v in value]}
    if isinstance(value, dict):
        return {"dict": [[_encode(k, types), _encode(v, types)] for k, v in value.items()]}
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


def type_name(cls: type) -> str:
    """``module.Class``: how a model file names a type."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _type_name(cls: type, types: Types) -> str:
    name = type_name(cls)
    if types.get(name) is not cls:
        raise TypeError(f"cannot write a {cls.__qualname__} to a model file: not a model type")
    return name


def _decode(data: Any, types: Types) -> Any:
    if isinstance(data, dict):
        if "array" in data:
            return np.asarray(_unfinite(data["array"]), dtype=data["dtype"]).reshape(
                data["shape"])
        if "objects" in data:
            return np.asarray([_decode(v, types) for v in data["objects"]], dtype=object)
        if "type" in data:
            cls = types.get(data["type"])
            if cls is None:
                raise ValueError(f"the model file names a type that is not a dpjax model type: "
                                 f"{data['type']!r}")
            return cls(**{k: _decode(v, types) for k, v in data["fields"].items()})
        if "tuple" in data:
            return tuple(_decode(v, types) for v in data["tuple"])
        if "list" in data:
            return [_decode(v, types) for v in data["list"]]
        if "dict" in data:
            return {_decode(k, types): _decode(v, types) for k, v in data["dict"]}
        if "float" in data:
            return float(data["float"])
        raise ValueError(f"unreadable entry in the model file: keys {sorted(data)}")
    return data


def to_json(value: Any, types: Types, path: str | os.PathLike | None = None) -> str:
    """``value`` as a JSON model file (every dataclass in it must be in ``types``); written
    to ``path`` too when one is given."""
    text = json.dumps({"format": FORMAT, "version": VERSION, "model": _encode(value, types)})
    if path is not None:
        Path(path).write_text(text)
    return text


def from_json(source: str | os.PathLike, types: Types) -> Any:
    """What :func:`to_json` wrote, from a path or from the JSON string itself, rebuilt from
    ``types`` only."""
    text = str(source)
    if not text.lstrip().startswith("{"):
        text = Path(source).read_text()
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("not a dpjax model file")
    if data.get("version") != VERSION:
        raise ValueError(f"model file version {data.get('version')!r}; this dpjax reads "
                         f"version {VERSION}")
    return _decode(data["model"], types)
