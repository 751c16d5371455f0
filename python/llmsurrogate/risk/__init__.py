"""LLM risk scores and their evaluation (Cruz, Hardt & Mendler-Dünner 2024; the method as
implemented: ``docs/methods/risk.md``).

* :func:`risk_scores` -- score every row of a data set with an LLM backend (multiple choice with
  both answer orders averaged, or verbalized/numeric with expected-value decoding), through the
  on-disk cache; per-row answer mass; :func:`few_shot_examples` draws class-balanced examples.
* :func:`evaluate` -- the §2 metrics with their exact conventions (accuracy at ``r >= τ``,
  balanced accuracy, ECE with equal-width and quantile bins, Brier and its Murphy decomposition,
  log loss, ROC AUC with ties ½, confidence bias R_bias, signed calibration error, calibration
  curves, group metrics) with row-bootstrap CIs (Rust kernels).
* :func:`recalibrate` / :func:`fit_recalibrator` -- temperature, Platt and isotonic
  recalibration, cross-fitted.
* :func:`calibration_curve`, :func:`plot_calibration`, :func:`plot_score_histogram`, :func:`plot_roc`,
  :func:`roc_table`.
* :func:`prompt_variations` (with :func:`prompt_variants`) -- does the score move with the wording?
  AUC, ECE, Brier and accuracy across rewordings of the prompt, their spread with paired bootstrap
  CIs; :func:`permutation_importance` -- what each feature is worth to the scores.
* :func:`score_table`, :func:`evaluate_table` -- the same from names and plain columns (R).
* Questions with K answer options and survey weights (``docs/methods/survey.md``):
  :func:`evaluate_multiclass` (log loss, Brier, ranked probability score, accuracy, one-vs-rest
  AUC, top-label and class-wise ECE, with CIs; ``weights=`` everywhere), :class:`TemperatureScaling`
  and :class:`VectorScaling`; :func:`compare_answers` -- does the LLM answer like the (weighted)
  population? Total variation and Wasserstein-1 per group, with CIs.

Modules by role: ``_metrics`` (single metrics), ``_evaluation`` (all metrics with CIs),
``_recalibration``, ``_scores`` (LLM scoring), ``_robustness`` (variations, importance), ``_multiclass``
(K options), ``_population`` (answer distributions), ``_results``, ``_plots``, ``_cli`` (``llmsurrogate risk``).

One name for the capability: the package ``risk``, the command ``llmsurrogate risk`` (``score``
before 0.2.x, kept hidden with a deprecation notice), the methods page ``docs/methods/risk.md``.
The words: ``n_boot`` bootstrap replicates, ``seed``, ``level`` a confidence level (0.95),
``n_jobs`` workers/threads (None: see :func:`llmsurrogate.num_threads`).

Examples
--------
>>> import numpy as np
>>> y = np.array([0, 0, 1, 1, 0, 1, 0, 0, 1, 0])
>>> r = np.array([.1, .2, .8, .7, .4, .6, .3, .5, .9, .2])
>>> ev = evaluate(y, r, n_boot=50)
>>> round(ev.metric("roc_auc"), 4), round(ev.metric("accuracy"), 2)
(1.0, 0.9)
>>> round(ev.metric("sce"), 4)  # mean(r) - mean(y)
0.07
"""

from ._evaluation import evaluate, evaluate_table
from ._metrics import (
    BOOT_METRICS,
    EPS,
    best_threshold,
    brier_decomposition,
    calibration_curve,
    confidence_bias,
    delta_sce,
    ece,
    ece_quantile,
    group_metrics,
    log_loss,
    roc_auc,
    signed_calibration_error,
    threshold_metrics,
)
from ._multiclass import (
    MulticlassEvaluation,
    TemperatureScaling,
    VectorScaling,
    classwise_ece,
    evaluate_multiclass,
    multiclass_accuracy,
    multiclass_brier,
    multiclass_log_loss,
    ovr_roc_auc,
    ranked_probability_score,
    recalibrate_multiclass,
    reliability_table,
    top_label_ece,
)
from ._plots import plot_calibration, plot_calibration_table, plot_roc, plot_score_histogram, roc_table
from ._recalibration import Recalibrator, fit_recalibrator, recalibrate
from ._results import RiskEvaluation, RiskScores
from ._robustness import (FeatureImportance, PromptVariations, permutation_importance, prompt_variants,
                          prompt_variations)
from ._population import AnswerComparison, compare_answers, total_variation, wasserstein1
from ._scores import few_shot_examples, risk_scores, score_table

__all__ = [
    "risk_scores", "few_shot_examples", "RiskScores", "evaluate", "RiskEvaluation", "threshold_metrics", "ece", "ece_quantile",
    "brier_decomposition", "log_loss", "roc_auc", "confidence_bias", "signed_calibration_error", "delta_sce",
    "calibration_curve", "group_metrics", "best_threshold", "fit_recalibrator", "recalibrate", "Recalibrator",
    "plot_calibration", "plot_calibration_table", "plot_score_histogram", "plot_roc", "roc_table", "BOOT_METRICS",
    "score_table",
    "evaluate_table", "prompt_variants", "prompt_variations", "PromptVariations", "permutation_importance",
    "FeatureImportance",
    # K answer options and survey weights (docs/methods/survey.md)
    "evaluate_multiclass", "MulticlassEvaluation", "multiclass_log_loss", "multiclass_brier", "ranked_probability_score",
    "multiclass_accuracy", "ovr_roc_auc", "top_label_ece", "classwise_ece", "reliability_table", "TemperatureScaling",
    "VectorScaling", "recalibrate_multiclass", "compare_answers", "AnswerComparison", "total_variation", "wasserstein1",
]
