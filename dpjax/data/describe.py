"""The public binning in words: what a code or a split of a feature means (for the readable
descriptions of fitted models; reads the public :class:`~dpjax.data.FeatureSpec` only)."""

from __future__ import annotations

import numpy as np

from dpjax.data.binning import FeatureSpec


def code_label(spec: FeatureSpec, feature: int, code: int) -> str:
    """``"name in [lo, hi)"``, ``"name = category"``, ``"name is other"`` or ``"name is
    missing"`` for code ``code`` of ``feature`` (the public binning of ``spec``)."""
    name = spec.names[feature]
    if code >= spec.n_values[feature]:
        return f"{name} is missing"
    categories = spec.categories[feature]
    if categories is not None:
        return f"{name} = {categories[code]}" if code < len(categories) else f"{name} is other"
    edges = np.concatenate([[spec.lower[feature]], spec.bin_edges(feature),
                            [spec.upper[feature]]])
    close = "]" if code == len(edges) - 2 else ")"
    return f"{name} in [{edges[code]:.4g}, {edges[code + 1]:.4g}{close}"


def split_text(spec: FeatureSpec, feature: int, threshold: int) -> str:
    """The condition under which a row goes left at a split ``code <= threshold`` of
    ``feature``: ``"age < 37.5"``, ``"colour in {red, blue}"`` or ``"age is not missing"``."""
    name = spec.names[feature]
    n_values = int(spec.n_values[feature])
    if threshold >= n_values - 1:
        return f"{name} is not missing" if spec.missing[feature] else "always"
    categories = spec.categories[feature]
    if categories is not None:
        left = [str(c) for c in categories[:threshold + 1]]
        return f"{name} in {{{', '.join(left)}}}"
    edge = spec.bin_edges(feature)[threshold]
    return f"{name} < {edge:.4g}"
