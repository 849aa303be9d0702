"""Empirical privacy auditing: lower bounds on ε from many releases on neighbouring inputs.

* :func:`audit` (also ``dpjax.audit``) audits a learner configuration on a pair of neighbouring
  datasets;
* :func:`audit_release` audits any ``release(key, data)`` function;
* :mod:`dpjax.auditing.canaries` are deliberately broken mechanisms the auditor must flag.
"""

from dpjax.auditing.audit import AuditReport, audit_release
from dpjax.auditing.learner import audit, neighbour, outlier

__all__ = ["AuditReport", "audit", "audit_release", "neighbour", "outlier"]
