"""R adapters of :mod:`llmsurrogate.ess`: R's ``equivalent_sample_size()``, ``error_curve()``,
``cate_ess()``."""

from __future__ import annotations

from .. import ess

__all__ = ["R_FUNCTIONS"]

#: What R may call here (``.call("ess.<name>")``): the public functions themselves, R's words and values
#: crossing unchanged.
R_FUNCTIONS = {name: getattr(ess, name) for name in (
    "equivalent_sample_size", "error_curve", "cate_ess", "permutation",
)}
