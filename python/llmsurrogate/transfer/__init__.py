"""Transfer performance: how well a model estimated on some domains predicts a new one.

Andrews, Fudenberg, Lei, Liang & Wu, "The Transfer Performance of Economic Models" (2025);
``shared/specs/transfer.md``.

* :class:`ErrorTable` -- the canonical transfer-error table (matrix, long frame or table in).
* :mod:`.inference` -- forecast intervals (plain, weighted, worst case over Γ), worst-case and
  everywhere dominance, U-statistic confidence intervals, coverage helpers; transferUQ's names.
"""

from .inference import (
    EverywhereDominance,
    ForecastIntervals,
    WorstCaseCurve,
    check_everywhere_dominance,
    check_worstcase_dominance,
    clear_rank_cache,
    coverage_bound,
    coverage_upper_bound,
    critical_gamma,
    ete_interval,
    everywhere_dominance,
    everywhere_dominance_box,
    forecast_interval,
    forecast_intervals,
    lp2_simplex,
    plot_quantile_ci,
    qte_interval,
    robust_level,
    tau_for_coverage,
    ustat_tail_bound,
    weighted_coverage_diagnostic,
    weighted_forecast_interval,
    worst_case_curve,
    worst_case_interval,
    worst_case_tau_curve,
)
from .table import ErrorTable

__all__ = [
    "ErrorTable",
    "EverywhereDominance", "ForecastIntervals", "WorstCaseCurve",
    "check_everywhere_dominance", "check_worstcase_dominance", "clear_rank_cache", "coverage_bound", "coverage_upper_bound",
    "critical_gamma", "ete_interval", "everywhere_dominance", "everywhere_dominance_box", "forecast_interval", "forecast_intervals",
    "lp2_simplex", "plot_quantile_ci", "qte_interval", "robust_level", "tau_for_coverage", "ustat_tail_bound",
    "weighted_coverage_diagnostic", "weighted_forecast_interval", "worst_case_curve", "worst_case_interval",
    "worst_case_tau_curve",
]
