"""R adapters of :mod:`llmsurrogate.quantiles`: R's ``upper_quantile()`` and the other quantile functions."""

from __future__ import annotations

from .. import quantiles

__all__ = ["R_FUNCTIONS"]

#: What R may call here (``.call("quantiles.<name>")``): the public functions themselves, R's words and values
#: crossing unchanged.
R_FUNCTIONS = {name: getattr(quantiles, name) for name in (
    "upper_quantile", "lower_quantile", "quantile_interval", "weighted_upper_quantile",
    "weighted_lower_quantile", "weighted_quantile_interval",
)}
