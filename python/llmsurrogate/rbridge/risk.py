"""R adapters of :mod:`llmsurrogate.risk`: R's ``risk_scores()`` and ``evaluate_risk_scores()`` (the
table forms of the API, which take names and plain columns)."""

from __future__ import annotations

from .. import risk

__all__ = ["R_FUNCTIONS"]

#: What R may call here (``.call("risk.<name>")``): the public functions themselves, R's words and values
#: crossing unchanged.
R_FUNCTIONS = {name: getattr(risk, name) for name in (
    "score_table", "evaluate_table",
)}
