"""R adapters of :mod:`llmsurrogate.datasets`: the bundled data sets."""

from __future__ import annotations

from .. import datasets

__all__ = ["R_FUNCTIONS"]

#: What R may call here (``.call("datasets.<name>")``): the public functions themselves, R's words and values
#: crossing unchanged.
R_FUNCTIONS = {name: getattr(datasets, name) for name in (
    "load_certainty_equivalents", "certainty_equivalent_domains", "load_transfer_errors",
    "transfer_error_models", "load_acs_income_rows", "load_acs_golden_prompt",
)}
