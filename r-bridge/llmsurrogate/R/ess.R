#' Equivalent sample size of a fixed prediction rule
#'
#' How many domain observations is a fixed rule (an LLM, a textbook model) worth? `ess()` runs
#' block-out cross-validation of a comparison algorithm at each training size in `grid` and the
#' sequential one-sided tests of Gao, Han and Liang (2026, Algorithm 3.1), and returns the
#' one-sided confidence bound \[`lower_bound`, Inf) for the equivalent sample size N*.
#' `error_curve()` returns the block-out CV error curve with pointwise confidence intervals.
#' Both call the Python package (`llmsurrogate.ess`), whose accumulation and tests run in Rust;
#' the numbers are the Python package's numbers.
#'
#' @param data A data frame, one row per observation.
#' @param outcome Name of the outcome column.
#' @param prediction Name of the column holding the fixed rule's predictions, or a numeric
#'   vector aligned with the rows of `data`.
#' @param features Character vector of feature columns; `NULL` uses all other columns.
#' @param algorithm `"rf"`, `"lasso"`, `"logit_l1"` (the paper's models with per-N tuning),
#'   `"mean"` or `"majority"` (simple native learners).
#' @param grid Training sizes (whole numbers between 1 and n/2); `NULL` uses 1, 2, 5, 10, ...
#' @param loss `"squared"`, `"absolute"`, `"zero_one"`, `"brier"` or `"log"`.
#' @param alpha One-sided level of the ESS bound (the curve CIs are two-sided at 1 - alpha).
#' @param variance `"difference"` (default, the paper's (4.6)) or the conservative `"sum"` (4.7);
#'   see docs/methods/ess.md §4.7.
#' @param regime `"hybrid"`, `"fixed_N"` or `"fixed_B"`.
#' @param tuning `"per_n_subset"` (paper), `"per_block"` or `"none"`.
#' @param seed Permutation seed (a whole number) or `NULL` to keep the rows' order.
#' @param n_jobs Parallel block fits / threads; `NULL` for the default.
#' @param n_estimators Trees of the random forest.
#' @param bias_correct `TRUE` adds 2 V_test / (B - 1) to the fixed-N variance, removing the
#'   leading finite-B bias of (4.5) (docs/methods/ess.md §4.6; an extension, not in the paper).
#' @return An object of class `c("llmsurrogate_ess", "llmsurrogate_result")`: a list with
#'   `table` (one row per grid point), `summary` (the printed text), `title`, `kind` and `json`,
#'   every field of the Python result under its name (`lower_bound`, `status`, `plugin`,
#'   `llm_error`, `llm_se`, `alpha`, `grid`, `seed`, `n`, `notes`, `permutation` as 1-based row
#'   numbers, ...) and `ci`, the one-sided interval `c(lower = lower_bound, upper = Inf)`.
#'   `error_curve()` returns class `c("llmsurrogate_error_curve", "llmsurrogate_result")`. Both
#'   have `print()`, `summary()`, `plot()` and `as.data.frame()` methods.
#' @examples
#' if (llmsurrogate_available()) {
#'   set.seed(1)
#'   d <- data.frame(y = rnorm(400))
#'   d$llm <- 0.2
#'   res <- ess(d, "y", "llm", algorithm = "mean", grid = c(1, 2, 5, 10, 20))
#'   res$lower_bound
#' }
#' @export
ess <- function(data, outcome, prediction, features = NULL, algorithm = "rf", grid = NULL,
                loss = "squared", alpha = 0.05, variance = "difference", regime = "hybrid",
                tuning = "per_n_subset", seed = 0L, n_jobs = NULL, n_estimators = 300L,
                bias_correct = FALSE) {
  args <- .ess_args(data, outcome, features, algorithm, grid, loss, regime, tuning, seed, n_jobs,
                    n_estimators, sys.call(), bias_correct)
  if (is.character(prediction)) {
    prediction <- .check_string(prediction, "prediction")
  } else {
    prediction <- as.list(.check_numeric(prediction, "prediction"))
  }
  alpha <- .check_scalar(alpha, "alpha")
  res <- do.call(.call, c(list("ess.equivalent_sample_size", args$data, outcome, prediction,
                               alpha = alpha, variance = .check_string(variance, "variance")),
                          args$kw))
  res
}

#' @rdname ess
#' @export
error_curve <- function(data, outcome, features = NULL, algorithm = "rf", grid = NULL,
                        loss = "squared", alpha = 0.05, regime = "hybrid", tuning = "per_n_subset",
                        seed = 0L, n_jobs = NULL, n_estimators = 300L, bias_correct = FALSE) {
  args <- .ess_args(data, outcome, features, algorithm, grid, loss, regime, tuning, seed, n_jobs,
                    n_estimators, sys.call(), bias_correct)
  res <- do.call(.call, c(list("ess.error_curve", args$data, outcome,
                               alpha = .check_scalar(alpha, "alpha")), args$kw))
  res
}

#' Equivalent sample size of an LLM's treatment-effect predictions (CATE-ESS)
#'
#' How many observations of a randomised experiment are an LLM's conditional average treatment
#' effect predictions tau(x) worth? The ESS pipeline of [ess()] run on the IPW transformed outcome
#' Y* = Y (D - pi) / (pi (1 - pi)), whose conditional mean is the CATE, with squared loss: the
#' comparison algorithm learns Y* from the covariates (never from the treatment), and the fixed
#' rule is the LLM's CATE prediction (Gao, Han and Liang 2026, Section 6; docs/methods/ess.md §7).
#'
#' @inheritParams ess
#' @param treatment Name of the binary (0/1) treatment column.
#' @param prediction Name of the column holding the LLM's CATE predictions, or a numeric vector
#'   aligned with the rows of `data`.
#' @param propensity The known treatment probability: a number, the name of a column, or `NULL`
#'   for the treated share (a completely randomised experiment).
#' @return An object of class `c("llmsurrogate_ess", "llmsurrogate_result")`, as from [ess()];
#'   the errors are on the scale of the transformed outcome.
#' @examples
#' if (llmsurrogate_available()) {
#'   set.seed(2)
#'   n <- 600
#'   x <- rnorm(n)
#'   d <- rbinom(n, 1, 0.5)
#'   y <- x + d * (1 + x) + rnorm(n)
#'   exp_data <- data.frame(x = x, d = d, y = y, tau_llm = 1 + 0.8 * x)
#'   res <- cate_ess(exp_data, "y", "d", "tau_llm", propensity = 0.5, algorithm = "lasso",
#'                   grid = c(5, 10, 20, 50, 100))
#'   res$lower_bound
#' }
#' @export
cate_ess <- function(data, outcome, treatment, prediction, propensity = NULL, features = NULL,
                     algorithm = "rf", grid = NULL, alpha = 0.05, variance = "difference",
                     regime = "hybrid", tuning = "per_n_subset", seed = 0L, n_jobs = NULL,
                     n_estimators = 300L, bias_correct = FALSE) {
  args <- .ess_args(data, outcome, features, algorithm, grid, "squared", regime, tuning, seed, n_jobs,
                    n_estimators, sys.call(), bias_correct)
  args$kw$loss <- NULL
  treatment <- .check_string(treatment, "treatment")
  if (is.character(prediction)) {
    prediction <- .check_string(prediction, "prediction")
  } else {
    prediction <- as.list(.check_numeric(prediction, "prediction"))
  }
  if (!is.null(propensity)) {
    if (is.character(propensity)) {
      propensity <- .check_string(propensity, "propensity")
    } else if (length(propensity) == 1) {
      propensity <- .check_scalar(propensity, "propensity")
    } else {
      propensity <- as.list(.check_numeric(propensity, "propensity"))
    }
  }
  res <- do.call(.call, c(list("ess.cate_ess", args$data, outcome, treatment, prediction,
                               propensity = propensity, alpha = .check_scalar(alpha, "alpha"),
                               variance = .check_string(variance, "variance")),
                          args$kw))
  res
}

.ess_args <- function(data, outcome, features, algorithm, grid, loss, regime, tuning, seed, n_jobs,
                      n_estimators, call, bias_correct = FALSE) {
  cols <- .frame_arg(data, "data", call)
  outcome <- .check_string(outcome, "outcome", call)
  kw <- list(algorithm = .check_string(algorithm, "algorithm", call),
             loss = .check_string(loss, "loss", call),
             regime = .check_string(regime, "regime", call),
             tuning = .check_string(tuning, "tuning", call),
             n_jobs = .check_n_jobs(n_jobs, call),
             bias_correct = .check_flag(bias_correct, "bias_correct", call))
  if (!is.null(features)) {
    kw$features <- as.list(as.character(features))
  }
  if (!is.null(grid)) {
    g <- .check_numeric(grid, "grid", call)
    if (any(g != round(g))) .abort("argument `grid` must hold whole numbers", call)
    kw$grid <- as.list(as.integer(g))
  }
  if (is.null(seed)) {
    kw["seed"] <- list(NULL)
  } else {
    s <- .check_scalar(seed, "seed", call)
    if (s != round(s) || s < 0) .abort("argument `seed` must be a whole number >= 0 or NULL", call)
    kw$seed <- as.integer(s)
  }
  if (identical(kw$algorithm, "rf")) {
    kw$algorithm_options <- list(n_estimators = as.integer(.check_scalar(n_estimators, "n_estimators", call)))
  }
  list(data = cols, kw = kw)
}

#' Plot an ESS result or an error curve
#'
#' The paper's figure in base graphics: the algorithm's error curve with its pointwise CI band
#' (log x axis when the grid spans a factor of 20 or more), for `ess()` results also the fixed
#' rule's error as a horizontal line with its band and the ESS lower bound as a dashed line.
#'
#' @param x A result of [ess()] or [error_curve()].
#' @param y Unused.
#' @param ... Passed to `plot.window()`-level graphics calls (e.g. `main`).
#' @return `x`, invisibly.
#' @export
plot.llmsurrogate_ess <- function(x, y, ...) {
  t <- x$table
  z <- stats::qnorm(1 - x$alpha / 2)
  .curve_plot(t$n_train, t$algo_error, t$algo_se * z,
              extra = c(x$llm_error - z * x$llm_se, x$llm_error + z * x$llm_se), title = x$title, ...)
  graphics::abline(h = x$llm_error, col = "firebrick", lwd = 2)
  graphics::rect(min(t$n_train) / 10, x$llm_error - z * x$llm_se, max(t$n_train) * 10,
                 x$llm_error + z * x$llm_se, col = grDevices::adjustcolor("firebrick", 0.15), border = NA)
  graphics::abline(v = x$lower_bound, lty = 2)
  graphics::legend("topright", c(x$algorithm, "fixed rule", sprintf("ESS bound %d", as.integer(x$lower_bound))),
                   col = c("steelblue", "firebrick", "black"), lty = c(1, 1, 2), lwd = c(2, 2, 1), bty = "n", cex = 0.8)
  invisible(x)
}

#' @rdname plot.llmsurrogate_ess
#' @export
plot.llmsurrogate_error_curve <- function(x, y, ...) {
  t <- x$table
  z <- stats::qnorm(1 - x$alpha / 2)
  .curve_plot(t$n_train, t$error, t$se * z, extra = numeric(0), title = x$title, ...)
  invisible(x)
}

.curve_plot <- function(n, e, half, extra, title, ...) {
  lo <- e - half
  hi <- e + half
  use_log <- max(n) / max(min(n), 1) >= 20
  graphics::plot(n, e, type = "n", log = if (use_log) "x" else "",
                 ylim = range(c(lo, hi, extra), finite = TRUE), xlab = "training size N",
                 ylab = "error", main = title, cex.main = 0.8, ...)
  graphics::polygon(c(n, rev(n)), c(lo, rev(hi)), col = grDevices::adjustcolor("steelblue", 0.25), border = NA)
  graphics::lines(n, e, type = "o", pch = 19, cex = 0.6, col = "steelblue", lwd = 2)
}
