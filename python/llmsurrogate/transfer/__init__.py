"""Transfer performance: how well a model estimated on some domains predicts a new one.

Andrews, Fudenberg, Lei, Liang & Wu, "The Transfer Performance of Economic Models" (2025); the method
as implemented, with every departure from the paper and from transferUQ: ``docs/methods/transfer.md``.

* :class:`ErrorTable` -- the canonical transfer-error table (matrix, long frame or table in).
* inference -- forecast intervals (plain, weighted, worst case over Γ), worst-case and
  everywhere dominance, U-statistic confidence intervals, coverage helpers; transferUQ's names.
* :func:`error_table`, :func:`error_tables` -- build tables by fitting a model on every training
  set of ``r`` domains (raw error, deterioration, shortfall); :func:`in_sample_errors`.
* :class:`DomainCV` -- tune a black box by domain cross-validation within the training set (r >= 2).
* :func:`within_domain_cv`, :func:`cv_ratio` -- within-domain k-fold CV errors (Table 1).
* :class:`EU`, :class:`CPT` -- the application's economic models of certainty equivalents,
  fitted by nonlinear least squares in the Rust core.
* :mod:`.demo` -- the paper's Table 5 and its application on the bundled data.

Modules by role: ``_table`` (:class:`ErrorTable`), ``_inference``, ``_build`` (fitting tables),
``_models`` (EU, CPT), ``_results``, ``_cli`` (``llmsurrogate transfer``), ``demo``.
"""

from ._inference import (
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
from ._build import DomainCV, cv_ratio, error_table, error_tables, in_sample_errors, make_model, within_domain_cv
from ._models import CPT, EU
from ._results import EverywhereDominance, ForecastIntervals, IntervalTable, TransferApplication, WorstCaseCurve
from ._table import ErrorTable

__all__ = [
    "ErrorTable", "EU", "CPT", "error_table", "error_tables", "in_sample_errors", "within_domain_cv",
    "cv_ratio", "make_model", "DomainCV",
    "EverywhereDominance", "ForecastIntervals", "WorstCaseCurve", "TransferApplication", "IntervalTable",
    "check_everywhere_dominance", "check_worstcase_dominance", "clear_rank_cache", "coverage_bound", "coverage_upper_bound",
    "critical_gamma", "ete_interval", "everywhere_dominance", "everywhere_dominance_box", "forecast_interval", "forecast_intervals",
    "lp2_simplex", "plot_quantile_ci", "qte_interval", "robust_level", "tau_for_coverage", "ustat_tail_bound",
    "weighted_coverage_diagnostic", "weighted_forecast_interval", "worst_case_curve", "worst_case_interval",
    "worst_case_tau_curve",
]
