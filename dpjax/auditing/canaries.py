"""Deliberately broken mechanisms: the auditor must flag every one of them.

Each canary is a release whose claimed ε is wrong in one of the ways a DP library goes wrong
(several of them are the leaks an outside audit found in earlier dpjax versions). They exist to
show that :func:`dpjax.auditing.audit_release` has the power to catch such bugs at a modest
number of draws; ``tests/test_audit.py`` and ``audits/run_audits.py`` run them. Never use them
for anything else.

Every canary is ``(release, data, data_prime, claimed_epsilon)`` with a count-like statistic of
sensitivity 1 unless said otherwise. All but ``float_laplace`` draw exact noise, so what the
auditor catches is the named defect, not a floating-point artefact (at ``epsilon = 1``, where
the scales are powers of two).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from dpjax.mechanisms.exact import discrete_laplace, laplace_fraction


@dataclasses.dataclass(frozen=True)
class Canary:
    name: str
    what: str
    release: Callable[[jax.Array, Any], Any]
    data: Any
    data_prime: Any
    epsilon: float


def _integer_laplace(key: jax.Array, value: jax.Array, scale: float) -> jax.Array:
    t, s = laplace_fraction(jnp.float32(scale))
    return value + discrete_laplace(key, jnp.shape(value), t, s).astype(jnp.float32)


def canaries(epsilon: float = 1.0) -> list[Canary]:
    """The canaries, each claiming ``epsilon``."""
    zero, one = jnp.float32(0.0), jnp.float32(1.0)

    def halved(key, count):
        return _integer_laplace(key, count, 0.5 / epsilon)

    def sensitivity_ignored(key, values):
        # values in [0, 10]: the sum has sensitivity 10, the noise is calibrated to 1
        return _integer_laplace(key, jnp.sum(values), 1.0 / epsilon)

    def no_noise(key, count):
        del key
        return count

    def float_laplace(key, value):
        return value + jax.random.laplace(key, (), jnp.float32) / epsilon

    def shared_keys(key, count):
        # two releases at epsilon/2 and epsilon/4 (claim: 3/4 epsilon... plus slack: epsilon)
        # with one exact noise draw on the 2**-8 grid; the residual o2 - 2 o1 is -count
        unit = _integer_laplace(key, zero, 2.0**9) * 2.0**-9
        return jnp.stack([count + unit * (2.0 / epsilon), count + unit * (4.0 / epsilon)])

    def private_size(key, data):
        # the leveraging coefficient of the old Mα-boost: a sum divided by the private row
        # count, with exact noise calibrated as if the normaliser were public
        total, rows = data
        return _integer_laplace(key, total, 1.0 / epsilon) / rows

    rows = (jnp.float32(2.0), jnp.float32(2.0)), (jnp.float32(3.0), jnp.float32(3.0))
    return [
        Canary("halved_scale", "noise scale halved (true ε = 2x the claim)", halved, zero, one,
               epsilon),
        Canary("sensitivity_ignored", "sum of values in [0, 10] noised for sensitivity 1",
               sensitivity_ignored, jnp.zeros(3), jnp.array([0.0, 0.0, 10.0]), epsilon),
        Canary("no_noise", "a count released without noise", no_noise, zero, one, epsilon),
        Canary("float_laplace", "floating-point Laplace on a real value (Mironov 2012)",
               float_laplace, jnp.float32(0.3), jnp.float32(1.3), epsilon),
        Canary("shared_keys", "two releases sharing one noise draw at two scales",
               shared_keys, zero, one, epsilon),
        Canary("private_size", "a sum normalised by the private row count (old β_t)",
               private_size, rows[0], rows[1], epsilon),
    ]
