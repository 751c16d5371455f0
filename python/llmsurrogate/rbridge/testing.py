"""R adapter of :mod:`llmsurrogate.testing`: R's ``synthetic_census()``."""

from __future__ import annotations

from .. import testing

__all__ = ["R_FUNCTIONS"]

#: What R may call here (``.call("testing.<name>")``): the public functions themselves, R's words and values
#: crossing unchanged.
R_FUNCTIONS = {name: getattr(testing, name) for name in (
    "synthetic_census",
)}
