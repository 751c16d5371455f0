#' llmsurrogate: value and trustworthiness of LLMs as stand-ins for human data
#'
#' R interface to the 'llmsurrogate' Python package (numerical core in Rust), called through
#' 'reticulate'. Attaching the package loads neither 'reticulate' nor Python: both start on the
#' first call that needs them (a few seconds, once per session). Choose the interpreter with the environment
#' variable `LLMSURROGATE_PYTHON` (read when the package is loaded), or create the default
#' virtualenv with [install_llmsurrogate()].
#'
#' Only plain values cross between the languages: numeric vectors, character strings,
#' data frames (as named lists of typed columns; `NA` of every column type arrives in Python as
#' a missing value) and result objects (table, summary text, JSON).
#'
#' @section Functions:
#' * Equivalent sample size: [ess()], [error_curve()], [cate_ess()]; for K classes (a survey
#'   answer with K options) the losses `"multiclass_log"` and `"multiclass_brier"` score the K
#'   class probabilities; methods in docs/methods/ess.md.
#' * Transfer performance, inference on error tables: [forecast_interval()],
#'   [weighted_forecast_interval()], [worst_case_interval()], [qte_interval()],
#'   [ete_interval()], [check_worstcase_dominance()], [check_everywhere_dominance()],
#'   [critical_gamma()], [everywhere_dominance_box()]; building error tables:
#'   [transfer_error_table()], [transfer_within_domain_cv()]; methods in
#'   docs/methods/transfer.md.
#' * Risk scores from a local language model: [risk_scores()], [evaluate_risk_scores()],
#'   [compare_answers()] (the LLM's answer distribution against the population's); a tiny
#'   local model to try them: [tiny_model()].
#' * Lookahead bias in LLM forecasts: [lap()], [lookahead_test()], [lookahead_bootstrap()];
#'   fixed-effects OLS: [feols()], [etable()], [fixef()],
#'   [coeftable()], [ssc()]; methods in docs/methods/lookahead.md.
#' * Prediction-powered inference (PPI, PPI++: a few human answers and many LLM answers, with
#'   valid intervals): [ppi_mean()], [ppi_quantile()], [ppi_ols()], [ppi_glm()], [ppi_feols()] (see
#'   [llmsurrogate_ppi_result] for their methods).
#' * Quantiles: [upper_quantile()], [lower_quantile()], [quantile_interval()],
#'   [weighted_upper_quantile()], [weighted_lower_quantile()], [weighted_quantile_interval()].
#' * Data: [load_certainty_equivalents()], [certainty_equivalent_domains()],
#'   [load_transfer_errors()], [transfer_error_models()], [load_acs_income_rows()],
#'   [load_acs_golden_prompt()], [synthetic_census()]; transferUQ's data object
#'   [CertaintyEquivalents].
#' * Demo: [llmsurrogate_demo()].
#' * Results: [print()][llmsurrogate_result], [summary()][llmsurrogate_result],
#'   [as.data.frame()][llmsurrogate_result], [plot()][plot.llmsurrogate_ess] (see
#'   [llmsurrogate_result], [plot.llmsurrogate_ess()], [plot.llmsurrogate_intervals()]).
#' * Setup: [install_llmsurrogate()], [llmsurrogate_available()], [llmsurrogate_version()].
"_PACKAGE"

#' Is the 'llmsurrogate' Python package available?
#'
#' Starts Python if needed (with the interpreter chosen at load time) and tries to import the
#' module the R package calls (`llmsurrogate.rbridge`).
#'
#' @return `TRUE` or `FALSE`.
#' @examples
#' llmsurrogate_available()
#' @export
llmsurrogate_available <- function() {
  # the submodule, not "llmsurrogate" alone: where Python lacks the package, a folder named
  # llmsurrogate in R's working directory (R CMD check's installed copy, the r-bridge folder)
  # imports as an empty namespace package
  .modules()  # the interpreter chosen as every call chooses it
  isTRUE(tryCatch(reticulate::py_module_available("llmsurrogate.rbridge"), error = function(e) FALSE))
}

#' Version of the 'llmsurrogate' Python package in use
#'
#' @return The Python package's version string, e.g. `"0.1.0"`.
#' @examplesIf llmsurrogate_available()
#' llmsurrogate_version()
#' @export
llmsurrogate_version <- function() {
  .py_guard(as.character(.py$`__version__`))
}
