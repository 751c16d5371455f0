#' Inference on transfer errors (forecast intervals, dominance, confidence intervals)
#'
#' Drop-in versions of the functions of the authors' R package 'transferUQ' (Andrews, Fudenberg,
#' Lei, Liang and Wu, 2025, "The Transfer Performance of Economic Models"), computed by the Rust
#' core of the Python package 'llmsurrogate'. `err` is either a square matrix with `err[i, j]` the
#' error of the model trained on domain `i` and tested on domain `j` (diagonal ignored; r = 1), or
#' a data.frame whose last column holds the errors, the second-last the test domain and the first
#' r columns the training domains (every training set with every test domain outside it, once).
#'
#' `coverage` is the nominal level c: two-sided intervals use \eqn{\tau = (1 + c)/2}, one-sided
#' ones \eqn{\tau = c}; `tau` may be given instead. `side` is `"two"`, `"left"` (\eqn{[a, \infty)},
#' also `"lower"`) or `"right"` (\eqn{(-\infty, a]}, also `"upper"`).
#'
#' Where the paper or 'transferUQ' is wrong the default is the correct method:
#' `qte_interval()`/`ete_interval()` use the U-statistic order r + 1 (`order = "transferUQ"`: r);
#' `check_everywhere_dominance()` scans every rank (`mode = "paper"` adds the paper's invalid
#' pruning, `mode = "transferUQ"` reproduces the package); `check_worstcase_dominance()` checks all
#' \eqn{\Gamma} in \[1, Gamma\] exactly (`mode = "transferUQ"`: only Gamma, with the package's
#' off-by-one index).
#'
#' @param err,err1,err2 Error matrix or data.frame (see Details).
#' @param coverage Nominal coverage in (0, 1).
#' @param side `"two"`, `"left"`/`"lower"` or `"right"`/`"upper"`.
#' @param correction Inflate the coverage by (n + 1)/(n - r) so that Proposition 1 guarantees it.
#' @param tau Quantile level instead of `coverage`.
#' @param weights Likelihood ratio of each domain (in domain order).
#' @param Gamma Bound on the likelihood ratio (\eqn{\ge 1}, `Inf` allowed).
#' @param betas Quantile levels of the transfer-error distribution.
#' @param r Number of training domains (checked against `err`).
#' @param bd Known upper bound of the errors.
#' @param order U-statistic order: `NULL` (r + 1) or `"transferUQ"` (r).
#' @param taulist Levels at which to compare two methods.
#' @param mode See Details.
#' @param kind `critical_gamma()`: `"everywhere"` (Gamma-bounded everywhere dominance, docs/methods/transfer.md §4.3) or
#'   `"worstcase"`.
#' @param Gamma_max Largest Gamma searched by `critical_gamma()`.
#' @return `forecast_interval()`, `weighted_forecast_interval()`, `worst_case_interval()` and
#'   `ete_interval()`: a numeric vector `c(lower, upper)`. `qte_interval()`: a data.frame `beta, lb,
#'   ub`. The `check_*` functions: a data.frame `tau, res`. `critical_gamma()`: a numeric vector (the largest Gamma with dominance;
#'   `Inf` if it always holds, `NA` if not even at Gamma = 1).
#' @examples
#' if (llmsurrogate_available()) {
#'   E <- matrix(c(NA, 3, 5, 1, NA, 6, 2, 4, NA), 3)
#'   forecast_interval(E, tau = 0.8)           # c(2, 5)
#'   cpt <- as.matrix(load_transfer_errors("abdg"))
#'   rf <- as.matrix(load_transfer_errors("RF"))
#'   forecast_interval(cpt, 0.9)                # Table 5: [2.46, 15.99]
#'   check_everywhere_dominance(cpt, rf, c(0.9, 0.96))
#' }
#' @name transfer_inference
NULL

.err_arg <- function(err, name, call) {
  if (is.matrix(err) || (is.data.frame(err) && nrow(err) == ncol(err) && !any(c("test") %in% names(err)) &&
                         ncol(err) > 3)) {
    m <- as.matrix(err)
    if (!is.numeric(m) || nrow(m) != ncol(m)) {
      .abort(sprintf("argument `%s` must be a square numeric matrix [train, test]", name), call)
    }
    n <- nrow(m)
    if (n < 2) .abort(sprintf("argument `%s`: need at least 2 domains", name), call)
    idx <- which(row(m) != col(m))
    v <- as.numeric(m[idx])
    v[is.na(v)] <- NaN
    return(list(train = as.integer(row(m)[idx]), test = as.integer(col(m)[idx]), error = v))
  }
  if (is.data.frame(err)) {
    d <- ncol(err)
    if (d < 3) {
      .abort(sprintf("argument `%s` needs r training-domain columns, a test column and an error column", name), call)
    }
    r <- d - 2
    for (k in seq_len(d - 1L)) {
      bad <- which(is.na(err[[k]]))
      if (length(bad)) {
        .abort(sprintf("argument `%s`: column `%s` has a missing domain (NA) in row %d; every error needs its %s",
                       name, names(err)[k], bad[1], "training and test domains"), call)
      }
    }
    out <- lapply(seq_len(r), function(k) as.integer(err[[k]]))
    names(out) <- if (r == 1) "train" else paste0("train_", seq_len(r))
    out$test <- as.integer(err[[d - 1]])
    v <- as.numeric(err[[d]])
    v[is.na(v)] <- NaN
    out$error <- v
    return(out)
  }
  .abort(sprintf("argument `%s` must be a square matrix or a data.frame (train..., test, error)", name), call)
}

.side_arg <- function(side) side[1]

.pair <- function(x) {
  x <- vapply(x, function(v) if (is.null(v)) NA_real_ else as.numeric(v), numeric(1))
  x
}

#' @rdname transfer_inference
#' @export
forecast_interval <- function(err, coverage = NULL, side = c("two", "left", "right"), correction = FALSE,
                              tau = NULL) {
  call <- sys.call()
  e <- .err_arg(err, "err", call)
  .pair(.call("transfer.forecast_interval", e, coverage, .side_arg(side), .check_flag(correction, "correction"),
              tau = tau))
}

#' @rdname transfer_inference
#' @export
weighted_forecast_interval <- function(err, weights, coverage = NULL, side = c("two", "left", "right"),
                                       tau = NULL) {
  call <- sys.call()
  e <- .err_arg(err, "err", call)
  w <- .check_numeric(weights, "weights")
  .pair(.call("transfer.weighted_forecast_interval", e, as.list(w), coverage, .side_arg(side), tau = tau))
}

#' @rdname transfer_inference
#' @export
worst_case_interval <- function(err, coverage = NULL, Gamma = Inf, side = c("two", "left", "right"),
                                tau = NULL) {
  call <- sys.call()
  e <- .err_arg(err, "err", call)
  .pair(.call("transfer.worst_case_interval", e, coverage, .check_scalar(Gamma, "Gamma"), .side_arg(side),
              tau = tau))
}

#' @rdname transfer_inference
#' @export
qte_interval <- function(err, coverage, side = c("two", "left", "right"), betas = seq(0.2, 0.8, 0.01),
                         r = NULL, order = NULL) {
  call <- sys.call()
  e <- .err_arg(err, "err", call)
  .call("transfer.qte_interval", e, .check_scalar(coverage, "coverage"), .side_arg(side),
        as.list(.check_numeric(betas, "betas")), r = r, order = order)
}

#' @rdname transfer_inference
#' @export
ete_interval <- function(err, coverage, side = c("two", "left", "right"), bd = 1, r = NULL, order = NULL) {
  call <- sys.call()
  e <- .err_arg(err, "err", call)
  .pair(.call("transfer.ete_interval", e, .check_scalar(coverage, "coverage"), .side_arg(side),
              .check_scalar(bd, "bd"), r = r, order = order))
}

#' @rdname transfer_inference
#' @export
check_worstcase_dominance <- function(err1, err2, taulist = seq(0.5, 1, 0.01), Gamma = Inf, mode = "exact") {
  call <- sys.call()
  .call("transfer.check_worstcase_dominance", .err_arg(err1, "err1", call), .err_arg(err2, "err2", call),
        as.list(.check_numeric(taulist, "taulist")), .check_scalar(Gamma, "Gamma"), .check_string(mode, "mode"))
}

#' @rdname transfer_inference
#' @export
check_everywhere_dominance <- function(err1, err2, taulist = seq(0.5, 1, 0.01), mode = "exact") {
  call <- sys.call()
  .call("transfer.check_everywhere_dominance", .err_arg(err1, "err1", call), .err_arg(err2, "err2", call),
        as.list(.check_numeric(taulist, "taulist")), .check_string(mode, "mode"))
}

#' @rdname transfer_inference
#' @export
critical_gamma <- function(err1, err2, tau, kind = "everywhere", Gamma_max = 1e6) {
  call <- sys.call()
  out <- .call("transfer.critical_gamma", .err_arg(err1, "err1", call), .err_arg(err2, "err2", call),
               as.list(.check_numeric(tau, "tau")), .check_string(kind, "kind"), .check_scalar(Gamma_max, "Gamma_max"))
  .pair(out)
}

#' @rdname transfer_inference
#' @export
everywhere_dominance_box <- function(err1, err2, taulist = seq(0.5, 1, 0.01), Gamma = 2) {
  call <- sys.call()
  .call("transfer.everywhere_dominance_box", .err_arg(err1, "err1", call), .err_arg(err2, "err2", call),
        as.list(.check_numeric(taulist, "taulist")), .check_scalar(Gamma, "Gamma"))
}
