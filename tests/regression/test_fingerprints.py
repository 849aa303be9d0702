"""Zero behaviour change: every learner's fingerprint (ledger entries, a hash of its parameters
and of its predictions, over three configurations, a non-private fit and a sweep) equals the
committed record (``tests/regression/fingerprint.py``)."""

from __future__ import annotations

import json

import pytest

from tests.regression.fingerprint import (
    CONFIGS,
    METHODS,
    RECORD,
    fit_record,
    platform,
    sweep_record,
)

COMMITTED = json.loads(RECORD.read_text())
# in the standard tier (the README's command): a newcomer's check that every learner fits as
# recorded (two minutes on one worker from an empty cache)
pytestmark = [pytest.mark.skipif(
    COMMITTED["platform"] != platform(),
    reason=f"fingerprints were recorded on {COMMITTED['platform']}, not {platform()}: float "
           "results are comparable bit for bit on one JAX version and backend only")]


@pytest.mark.parametrize("name, method, dataset, arguments", CONFIGS,
                         ids=[c[0] for c in CONFIGS])
def test_fit_fingerprint(name, method, dataset, arguments):
    assert fit_record(method, dataset, arguments) == COMMITTED["fingerprints"][name]


@pytest.mark.parametrize("method", METHODS)
def test_non_private_fingerprint(method):
    assert (fit_record(method, "banknote", {"epsilon": None})
            == COMMITTED["fingerprints"][f"{method}/non-private"])


@pytest.mark.parametrize("method", METHODS)
def test_sweep_fingerprint(method):
    assert sweep_record(method) == COMMITTED["fingerprints"][f"{method}/sweep"]
