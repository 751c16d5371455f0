"""Transfer performance: how well a model estimated on some domains predicts a new one.

Andrews, Fudenberg, Lei, Liang & Wu, "The Transfer Performance of Economic Models" (2025);
``shared/specs/transfer.md``.

* :class:`ErrorTable` -- the canonical transfer-error table (matrix, long frame or table in).
* :mod:`.inference` -- forecast intervals (plain, weighted, worst case over Γ), worst-case and
  everywhere dominance, U-statistic confidence intervals, coverage helpers; transferUQ's names.
* :func:`error_table`, :func:`error_tables` -- build tables by fitting a model on every training
  set of ``r`` domains (raw error, deterioration, shortfall); :func:`in_sample_errors`.
* :class:`DomainCV` -- tune a black box by domain cross-validation within the training set (r >= 2).
* :func:`within_domain_cv`, :func:`cv_ratio` -- within-domain k-fold CV errors (Table 1).
* :class:`EU`, :class:`CPT` -- the application's economic models of certainty equivalents,
  fitted by nonlinear least squares in the Rust core.
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
from .build import DomainCV, cv_ratio, error_table, error_tables, in_sample_errors, make_model, within_domain_cv
from .models import CPT, EU
from .table import ErrorTable

__all__ = [
    "ErrorTable", "EU", "CPT", "error_table", "error_tables", "in_sample_errors", "within_domain_cv",
    "cv_ratio", "make_model", "DomainCV",
    "EverywhereDominance", "ForecastIntervals", "WorstCaseCurve",
    "check_everywhere_dominance", "check_worstcase_dominance", "clear_rank_cache", "coverage_bound", "coverage_upper_bound",
    "critical_gamma", "ete_interval", "everywhere_dominance", "everywhere_dominance_box", "forecast_interval", "forecast_intervals",
    "lp2_simplex", "plot_quantile_ci", "qte_interval", "robust_level", "tau_for_coverage", "ustat_tail_bound",
    "weighted_coverage_diagnostic", "weighted_forecast_interval", "worst_case_curve", "worst_case_interval",
    "worst_case_tau_curve",
]
