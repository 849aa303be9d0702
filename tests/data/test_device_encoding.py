"""Rows encoded on their device (:mod:`dpjax.data.device`): the codes, labels, errors and
warnings of the host path (:func:`dpjax.data.encode`, :func:`dpjax.data.encode_labels`), bit
for bit, for a ``jax.Array`` of any float dtype, on every edge and subnormal number; and a fit
from device arrays is the fit from numpy arrays."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.data import OutOfBoundsWarning, encode, encode_labels, make_feature_spec
from dpjax.data.binning import on_device
from dpjax.data.device import (
    bin_values,
    encode_labels_on_device,
    encode_on_device,
    label_values,
    order_key,
)
from tests.conftest import small

BOUNDS = [(0.0, 1.0), (-3.0, 3.0), (1e6, 1e6 + 1.0), (0.1, 0.7), (-1e-3, 5e4), (2.0, 2.0),
          (-1e-40, 1e-40), (1e30, 2e30)]


def hard_values(lo: float, hi: float, n_bins: int, m: int, dtype, seed: int) -> np.ndarray:
    """Values of ``dtype`` around ``[lo, hi]``: uniform ones, every bin edge, the neighbours
    of every edge in ``dtype``, subnormal numbers and signed zeros."""
    rng = np.random.default_rng(seed)
    width = hi - lo if hi > lo else 1.0
    values = lo + rng.uniform(-0.2, 1.2, m) * width
    edges = np.linspace(lo, hi, n_bins + 1).astype(dtype)
    special = np.concatenate([edges, np.nextafter(edges, dtype(-np.inf)),
                              np.nextafter(edges, dtype(np.inf)),
                              np.asarray([0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40], dtype)])
    with np.errstate(over="ignore"):
        values = values.astype(dtype)
    values[:special.size] = special[:m]
    return values


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("n_bins", [1, 2, 3, 10, 32, 255])
def test_device_codes_are_the_host_codes(dtype, n_bins):
    """Every bound, edge, edge neighbour, subnormal number and signed zero gets the host's
    code (the host compares in float64, the device on order keys of the edges rounded up)."""
    for i, (lo, hi) in enumerate(BOUNDS):
        if dtype == np.float16 and max(abs(lo), abs(hi)) > 6e4:
            continue
        X = np.stack([hard_values(lo, hi, n_bins, 3000, dtype, seed) for seed in range(3)], 1)
        spec = make_feature_spec(X, bounds=(lo, hi), n_bins=n_bins)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OutOfBoundsWarning)
            host = encode(spec, X)
            device = np.asarray(encode_on_device(spec, jnp.asarray(X)))
        np.testing.assert_array_equal(device, host, err_msg=f"bounds {i}: ({lo}, {hi})")


def test_order_keys_order_every_float_and_share_signed_zeros():
    values = np.asarray([-np.inf, -3e38, -1.0, -1.2e-38, -1e-45, -0.0, 0.0, 1e-45, 1.2e-38, 1.0,
                         3e38, np.inf], np.float32)
    keys = order_key(values)
    assert (np.diff(keys[:5]) > 0).all() and keys[5] == keys[6] and (np.diff(keys[6:]) > 0).all()
    np.testing.assert_array_equal(np.asarray(order_key(jnp.asarray(values))), keys)


def test_missing_codes_and_the_host_errors_and_warnings():
    X = np.asarray([[0.5, 0.5], [np.nan, 0.2], [0.1, 7.0]], np.float32)
    spec = make_feature_spec(X, bounds=(0.0, 1.0), n_bins=4, missing=["x0"])
    with pytest.warns(OutOfBoundsWarning, match="column 'x1' has values outside"):
        device = np.asarray(encode_on_device(spec, jnp.asarray(X)))
    with pytest.warns(OutOfBoundsWarning):
        np.testing.assert_array_equal(device, encode(spec, X))
    assert device[1, 0] == 4                            # the missing code
    strict = make_feature_spec(X, bounds=(0.0, 1.0), n_bins=4)
    for bad, message in ((X, "has missing"), (np.where(np.isnan(X), np.inf, X), "infinite")):
        with pytest.raises(ValueError, match=message) as host:
            encode(strict, bad.astype(np.float32))
        with pytest.raises(ValueError, match=message) as device_error:
            encode_on_device(strict, jnp.asarray(bad, jnp.float32))
        assert str(device_error.value) == str(host.value)
    with pytest.raises(ValueError, match="outside its declared bounds"):
        encode_on_device(spec, jnp.asarray(np.nan_to_num(X)), on_out_of_bounds="error")


def test_pure_binning_jits_and_vmaps():
    X = np.random.default_rng(0).uniform(-1, 2, (4, 50, 3)).astype(np.float32)
    spec = make_feature_spec(X[0], bounds=(0.0, 1.0), n_bins=5)
    codes, flags = jax.jit(jax.vmap(lambda x: bin_values(spec, x)))(jnp.asarray(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfBoundsWarning)
        for i in range(4):
            np.testing.assert_array_equal(np.asarray(codes[i]), encode(spec, X[i]))
    assert np.asarray(flags)[:, 2].all()                # every column has values outside


@pytest.mark.parametrize("dtype", [jnp.int32, jnp.int8, jnp.float32, jnp.float16])
def test_device_labels_are_the_host_labels(dtype):
    y = np.asarray([1, 0, 3, 3, 1, 0])
    classes = (0, 1, 3)
    index = np.asarray(encode_labels_on_device(jnp.asarray(y, dtype), classes, rows=8))
    np.testing.assert_array_equal(index, np.append(encode_labels(y, classes)[0], [3, 3]))
    with pytest.raises(ValueError, match="outside the declared classes"):
        encode_labels_on_device(jnp.asarray([0, 2], dtype), classes)
    pure, flags = label_values(classes, jnp.asarray([0, 2], dtype))
    np.testing.assert_array_equal(np.asarray(pure), [0, 3])      # counts nowhere
    assert np.asarray(flags).tolist() == [False, True]
    if jnp.issubdtype(dtype, jnp.floating):
        with pytest.raises(ValueError, match="missing"):
            encode_labels_on_device(jnp.asarray([0.0, np.nan], dtype), classes)


def test_which_tables_take_the_device_path():
    assert on_device(jnp.zeros((2, 3))) and on_device(jnp.zeros((2, 3), jnp.bfloat16))
    assert on_device(jnp.zeros((2, 3), jnp.uint8))
    assert not on_device(jnp.zeros((2, 3), jnp.int32))           # wide integers: the host
    assert not on_device(jnp.zeros((2, 3), bool)) and not on_device(np.zeros((2, 3)))


@pytest.mark.parametrize("method", sorted(dpjax.LEARNERS))
def test_a_fit_from_device_arrays_is_the_fit_from_numpy(method):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(np.int32)
    kw = dict(method=method, epsilon=1.0, key=5, bounds=(-3.0, 3.0), **small(method))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        host = dpjax.fit(X, y, **kw)
        device = dpjax.fit(jnp.asarray(X), jnp.asarray(y), **kw)
    for a, b in zip(jax.tree.leaves(host.params), jax.tree.leaves(device.params), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert str(host.privacy) == str(device.privacy)
