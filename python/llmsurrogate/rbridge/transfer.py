"""R adapters of :mod:`llmsurrogate.transfer`: R's interval, dominance and build functions. The
interval functions are transferUQ's, with transferUQ's argument names: their adapters take R's
``coverage`` (Python's ``level``) and name it so in errors. An R error matrix arrives as an
:class:`~llmsurrogate.transfer.ErrorTable` (:func:`~llmsurrogate.rbridge.from_r`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .. import transfer
from ..exceptions import InvalidArgumentError

__all__ = ["R_FUNCTIONS", "r_ete_interval", "r_forecast_interval", "r_qte_interval", "r_weighted_forecast_interval",
           "r_worst_case_interval"]

_LEVEL = re.compile(r"`level`")


def _in_coverage_words(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with transferUQ's word for its level: ``coverage=`` passed on as ``level=``, and an
    error about `level` about `coverage`."""

    def adapter(*args: Any, **kwargs: Any) -> Any:
        if "coverage" in kwargs:
            kwargs["level"] = kwargs.pop("coverage")
        try:
            return fn(*args, **kwargs)
        except InvalidArgumentError as err:
            if err.args and isinstance(err.args[0], str):
                err.args = (_LEVEL.sub("`coverage`", err.args[0]), *err.args[1:])
            raise

    adapter.__name__ = adapter.__qualname__ = f"r_{fn.__name__}"
    adapter.__doc__ = f""":func:`llmsurrogate.transfer.{fn.__name__}` with transferUQ's ``coverage`` for ``level``."""
    return adapter


r_forecast_interval = _in_coverage_words(transfer.forecast_interval)
r_weighted_forecast_interval = _in_coverage_words(transfer.weighted_forecast_interval)
r_worst_case_interval = _in_coverage_words(transfer.worst_case_interval)
r_qte_interval = _in_coverage_words(transfer.qte_interval)
r_ete_interval = _in_coverage_words(transfer.ete_interval)

#: What R may call here (``.call("transfer.<name>")``): the adapters above, and the public functions
#: themselves where R's words and values cross unchanged.
R_FUNCTIONS = {
    "forecast_interval": r_forecast_interval, "weighted_forecast_interval": r_weighted_forecast_interval,
    "worst_case_interval": r_worst_case_interval, "qte_interval": r_qte_interval, "ete_interval": r_ete_interval,
    **{name: getattr(transfer, name) for name in (
        "check_worstcase_dominance", "check_everywhere_dominance", "critical_gamma", "coverage_bound",
        "everywhere_dominance_box", "error_table", "within_domain_cv")},
}
