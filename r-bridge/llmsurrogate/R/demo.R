#' Transfer forecast intervals from the published error matrices (the package demo)
#'
#' Reproduces Table 5 of Andrews, Fudenberg, Lei, Liang and Wu (2025): two-sided forecast
#' intervals \[lower quantile at `1 - tau`, upper quantile at `tau`\] for the error of a model
#' trained on one subject pool and used on a new one, pooled over the 44 x 43 off-diagonal cells
#' of each published transfer-error matrix (see [load_transfer_errors()]). With n = 44 pools,
#' r = 1 training pool and `tau = 0.95`, Proposition 1 of the paper guarantees coverage
#' (2 tau - 1)(n - r)/(n + 1) = 86%.
#'
#' Three metrics per model: the raw transfer error, the transfer shortfall (raw error over the
#' best in-sample error across models) and the transfer deterioration (raw error over the
#' model's own in-sample error on the test pool).
#'
#' @param tau Level in (1/2, 1\].
#' @return An object of class `c("llmsurrogate_intervals", "llmsurrogate_result")`: a list with
#'   `table` (data frame with columns `model`, `metric`, `n_errors`, `lower`, `upper`; 21 rows),
#'   `summary` (the printed summary text), `title`, `kind` (the Python class name) and `json`
#'   (the Python result as JSON text). It has `print()`, `summary()`, `as.data.frame()` and
#'   `plot()` methods.
#' @examplesIf llmsurrogate_available()
#' res <- llmsurrogate_demo()
#' res
#' head(as.data.frame(res))
#' plot(res)
#' @export
llmsurrogate_demo <- function(tau = 0.95) {
  tau <- .check_scalar(tau, "tau")
  .call("demo.run_demo", tau = tau)
}
