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

Modules by role, the inference ones mirroring ``rust/transfer/``: ``_table`` (:class:`ErrorTable`),
``_common`` (what the inference modules share), ``_intervals`` (forecast intervals and coverage;
``table.rs``), ``_dominance`` (worst-case and everywhere dominance, critical Γ; ``dominance.rs``),
``_ustat`` (U-statistic confidence intervals; ``ustat.rs``), ``_build`` (fitting tables: orchestration),
``_fit_cache`` (its cache of finished fits), ``_write`` (tables written to files as the fits finish),
``_models`` (EU, CPT; ``nls.rs``), ``_dispatch`` (models by name, DomainCV, how any model is cloned and
fitted), ``_results``, ``_cli`` (``llmsurrogate transfer``), ``demo``.
"""

from ._dominance import (
    check_everywhere_dominance,
    check_worstcase_dominance,
    critical_gamma,
    everywhere_dominance,
    everywhere_dominance_box,
    lp2_simplex,
)
from ._intervals import (
    coverage_bound,
    coverage_upper_bound,
    forecast_interval,
    forecast_intervals,
    robust_level,
    tau_for_coverage,
    weighted_coverage_diagnostic,
    weighted_forecast_interval,
    worst_case_curve,
    worst_case_interval,
    worst_case_tau_curve,
)
from ._ustat import clear_rank_cache, ete_interval, plot_quantile_ci, qte_interval, ustat_tail_bound
from ._build import cv_ratio, error_table, error_tables, in_sample_errors, within_domain_cv
from ._dispatch import DomainCV, make_model
from ._models import CPT, EU
from ._results import EverywhereDominance, ForecastIntervals, IntervalTable, TransferApplication, WorstCaseCurve
from ._table import (  # CodedLong and the rest: for the R bridge, not in __all__
    CodedLong, ErrorTable, code_domains, in_square_layout, row_numbers, square_layout, square_order)

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
