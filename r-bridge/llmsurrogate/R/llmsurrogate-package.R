#' llmsurrogate: value and trustworthiness of LLMs as stand-ins for human data
#'
#' R interface to the 'llmsurrogate' Python package (numerical core in Rust), called through
#' 'reticulate'. Python starts on the first call. Choose the interpreter with the environment
#' variable `LLMSURROGATE_PYTHON` (read when the package is loaded), or create the default
#' virtualenv with [install_llmsurrogate()].
#'
#' Only plain values cross between the languages: numeric vectors, character strings,
#' data frames (as named lists of columns) and result objects (table, summary text, JSON).
#'
#' @section Functions:
#' * Quantiles: [upper_quantile()], [lower_quantile()], [quantile_interval()],
#'   [weighted_upper_quantile()], [weighted_lower_quantile()], [weighted_quantile_interval()].
#' * Data: [load_certainty_equivalents()], [certainty_equivalent_domains()],
#'   [load_transfer_errors()], [transfer_error_models()], [load_acs_income_rows()],
#'   [load_acs_golden_prompt()].
#' * Demo: [llmsurrogate_demo()].
#' * Setup: [install_llmsurrogate()], [llmsurrogate_available()], [llmsurrogate_version()].
#' @keywords internal
"_PACKAGE"

#' Is the 'llmsurrogate' Python package available?
#'
#' Starts Python if needed (with the interpreter chosen at load time) and tries to import the
#' module.
#'
#' @return `TRUE` or `FALSE`.
#' @examples
#' llmsurrogate_available()
#' @export
llmsurrogate_available <- function() {
  isTRUE(tryCatch(reticulate::py_module_available("llmsurrogate"), error = function(e) FALSE))
}

#' Version of the 'llmsurrogate' Python package in use
#'
#' @return The Python package's version string, e.g. `"0.1.0"`.
#' @examples
#' if (llmsurrogate_available()) llmsurrogate_version()
#' @export
llmsurrogate_version <- function() {
  .py_guard(as.character(.py$`__version__`))
}
