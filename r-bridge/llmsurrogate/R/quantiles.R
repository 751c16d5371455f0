#' Empirical upper and lower quantiles
#'
#' For a sample \eqn{f_{(1)} \le \dots \le f_{(N)}}{f(1) <= ... <= f(N)}, the upper
#' \eqn{\tau}-quantile is \eqn{\inf\{b : P((-\infty, b]) \ge \tau\}}{inf{b : P((-Inf, b]) >= tau}}
#' \eqn{= f_{(\lceil \tau N \rceil)}}{= f(ceiling(tau N))}, which is
#' `quantile(values, tau, type = 1)` for \eqn{\tau > 0}; the lower \eqn{\tau}-quantile is
#' \eqn{\sup\{b : P([b, \infty)) \ge 1 - \tau\}}{sup{b : P([b, Inf)) >= 1 - tau}}
#' \eqn{= f_{(\lfloor \tau N \rfloor + 1)}}{= f(floor(tau N) + 1)}. They differ only where
#' \eqn{\tau N} is a whole number. The ends are `upper_quantile(x, 0) = -Inf` and
#' `lower_quantile(x, 1) = Inf`. Levels are compared with a tolerance of 1e-12 on the
#' probability scale.
#'
#' The computation runs in the Rust core of the Python package 'llmsurrogate'.
#'
#' @param values Numeric vector, the sample. `NA`/`NaN` is an error; `Inf` and `-Inf` are allowed.
#' @param tau Numeric vector of levels in \[0, 1\].
#' @param n_jobs Threads for sorting large inputs: `NULL` (the environment variable
#'   `LLMSURROGATE_NUM_THREADS`, else all cores), a positive count, or `-k` for all but `k - 1`
#'   cores.
#' @return A numeric vector with one quantile per element of `tau`.
#' @seealso [quantile_interval()], [weighted_upper_quantile()].
#' @references Andrews, Fudenberg, Lei, Liang and Wu (2025), "The Transfer Performance of Economic
#'   Models", Definition 2.
#' @examplesIf llmsurrogate_available()
#' x <- c(3, 1, 2, 4, 6, 5)
#' upper_quantile(x, 0.5)  # 3
#' lower_quantile(x, 0.5)  # 4
#' upper_quantile(x, c(0, 1/3, 1))
#' @export
upper_quantile <- function(values, tau, n_jobs = NULL) {
  values <- .check_numeric(values, "values")
  tau <- .as_levels(tau)
  n_jobs <- .check_n_jobs(n_jobs)
  .as_numeric_result(.call("quantiles.upper_quantile", values, tau, n_jobs = n_jobs))
}

#' @rdname upper_quantile
#' @export
lower_quantile <- function(values, tau, n_jobs = NULL) {
  values <- .check_numeric(values, "values")
  tau <- .as_levels(tau)
  n_jobs <- .check_n_jobs(n_jobs)
  .as_numeric_result(.call("quantiles.lower_quantile", values, tau, n_jobs = n_jobs))
}

#' Two-sided empirical quantile interval
#'
#' The interval \eqn{[\underline{Q}_{1-\tau}, \bar{Q}_\tau] = [f_{(N+1-k)}, f_{(k)}]}{[lower
#' quantile at 1 - tau, upper quantile at tau] = [f(N + 1 - k), f(k)]} with
#' \eqn{k = \lceil \tau N \rceil}{k = ceiling(tau N)}: the pooled forecast interval of the transfer
#' paper (Definition 3) applied to any sample. `weighted_quantile_interval()` is the same for a
#' weighted sample (Definition 5), with `inf_weight` at `-Inf` for the lower end and at `Inf` for
#' the upper end.
#'
#' @inheritParams upper_quantile
#' @param tau A single level in (1/2, 1\]; at lower levels the ends would cross.
#' @return A named numeric vector `c(lower = , upper = )`.
#' @examplesIf llmsurrogate_available()
#' quantile_interval(1:100, 0.95)  # c(lower = 6, upper = 95)
#' @export
quantile_interval <- function(values, tau, n_jobs = NULL) {
  values <- .check_numeric(values, "values")
  tau <- .check_scalar(tau, "tau")
  n_jobs <- .check_n_jobs(n_jobs)
  .as_interval(.call("quantiles.quantile_interval", values, tau, n_jobs = n_jobs))
}

#' Weighted empirical quantiles with a mass at infinity
#'
#' Quantiles of the distribution that puts weight `weights[i]` on `values[i]` and an extra mass
#' `inf_weight` at `+Inf` (upper quantile) or at `-Inf` (lower quantile), normalised by
#' `sum(weights) + inf_weight`; the conservative place for an unobserved target in weighted
#' conformal prediction. Weights need not sum to one.
#'
#' * `weighted_upper_quantile()`: the smallest value whose cumulative weight reaches
#'   `tau * total`, `-Inf` at `tau = 0`, and `Inf` when the mass at infinity exceeds
#'   `(1 - tau) * total`.
#' * `weighted_lower_quantile()`: the largest `b` whose weight on \[b, Inf) reaches
#'   `(1 - tau) * total`, `Inf` at `tau = 1`, and `-Inf` when none does.
#'
#' @inheritParams upper_quantile
#' @param weights Non-negative numeric vector, as long as `values`, not all zero.
#' @param tau Numeric vector of levels in \[0, 1\]; for `weighted_quantile_interval()` a single
#'   level in (1/2, 1\].
#' @param inf_weight Non-negative number: the mass at infinity.
#' @return A numeric vector with one quantile per element of `tau`; for
#'   `weighted_quantile_interval()` a named vector `c(lower = , upper = )`.
#' @references Andrews, Fudenberg, Lei, Liang and Wu (2025), "The Transfer Performance of Economic
#'   Models", Section 3.1 and Definition 5.
#' @examplesIf llmsurrogate_available()
#' weighted_upper_quantile(c(1, 2, 3), c(0.2, 0, 0.8), c(0.2, 0.21, 1))  # 1 3 3
#' weighted_upper_quantile(c(1, 2), c(1, 1), 0.9, inf_weight = 1)       # Inf
#' weighted_lower_quantile(c(1, 2, 3), c(0.2, 0, 0.8), c(0.1, 0.5))     # 1 3
#' weighted_quantile_interval(1:4, rep(1, 4), 0.75)                      # 2 3
#' @export
weighted_upper_quantile <- function(values, weights, tau, inf_weight = 0, n_jobs = NULL) {
  args <- .weighted_args(values, weights, inf_weight)
  tau <- .as_levels(tau)
  n_jobs <- .check_n_jobs(n_jobs)
  .as_numeric_result(.call("quantiles.weighted_upper_quantile", args$values, args$weights, tau,
                           inf_weight = args$inf_weight, n_jobs = n_jobs))
}

#' @rdname weighted_upper_quantile
#' @export
weighted_lower_quantile <- function(values, weights, tau, inf_weight = 0, n_jobs = NULL) {
  args <- .weighted_args(values, weights, inf_weight)
  tau <- .as_levels(tau)
  n_jobs <- .check_n_jobs(n_jobs)
  .as_numeric_result(.call("quantiles.weighted_lower_quantile", args$values, args$weights, tau,
                           inf_weight = args$inf_weight, n_jobs = n_jobs))
}

#' @rdname weighted_upper_quantile
#' @export
weighted_quantile_interval <- function(values, weights, tau, inf_weight = 0, n_jobs = NULL) {
  args <- .weighted_args(values, weights, inf_weight)
  tau <- .check_scalar(tau, "tau")
  n_jobs <- .check_n_jobs(n_jobs)
  .as_interval(.call("quantiles.weighted_quantile_interval", args$values, args$weights, tau,
                     inf_weight = args$inf_weight, n_jobs = n_jobs))
}

.weighted_args <- function(values, weights, inf_weight, call = sys.call(sys.parent())) {
  values <- .check_numeric(values, "values", call)
  weights <- .check_numeric(weights, "weights", call)
  negative <- which(weights < 0)
  if (length(negative)) {
    .abort(sprintf("argument `weights` has a negative value (%s) at position %d; weights must be >= 0",
                   format(weights[negative[1]]), negative[1]), call)
  }
  list(values = values, weights = weights, inf_weight = .check_scalar(inf_weight, "inf_weight", call))
}

.as_numeric_result <- function(x) as.numeric(unlist(x, use.names = FALSE))

.as_interval <- function(x) {
  x <- .as_numeric_result(x)
  c(lower = x[1], upper = x[2])
}
