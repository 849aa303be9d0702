"""Shared helper of the data-layer tests."""

from __future__ import annotations

from dpjax.data import encode, make_feature_spec


def spec_and_codes(X, bounds=None, **kwargs):
    spec = make_feature_spec(X, bounds, **{k: v for k, v in kwargs.items()
                                           if k in ("n_bins", "missing", "private")})
    codes = encode(spec, X, **{k: v for k, v in kwargs.items() if k == "on_out_of_bounds"})
    return spec, codes
