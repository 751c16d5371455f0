#' Build a transfer-error table by fitting a model on subsets of domains
#'
#' Fits `model` once on the pooled observations of every set of `r` training domains and
#' evaluates it on each other domain: the raw transfer error \eqn{e(f_T, S_d)} (mean squared
#' error, or its square root with `metric = "rmse"`, the scale of the paper's tables), or that error
#' divided by the in-sample error on the test domain (`normalize = "deterioration"`: the same
#' model's; `"shortfall"`: the smallest over `model` and `shortfall_models`). EU and CPT are fitted
#' by nonlinear least squares in the Rust core; `"rf"` and `"kr"` are scikit-learn's random forest
#' and kernel ridge (Andrews, Fudenberg, Lei, Liang and Wu 2025, Section 5.2).
#'
#' @param samples A data.frame with a domain column, the feature columns and the outcome column
#'   (the defaults fit [load_certainty_equivalents()]).
#' @param model A model name: `"eu"` (CRRA expected utility), `"eu-authors"` (CRRA with the
#'   authors' code's convention for zero prizes, which reproduces their published matrices),
#'   `"eu-cara"`, `"cpt"` (all of alpha, beta, delta, gamma free), `"cpt:<letters>"` such as
#'   `"cpt:g"` or `"cpt:ab"` (the free parameters; the others are 1), `"rf"` or `"kr"`.
#' @param r Number of training domains per fit (fewer than the number of domains).
#' @param metric `"mse"` or `"rmse"`.
#' @param normalize `NULL` (raw error), `"deterioration"` or `"shortfall"`.
#' @param subsets `"all"` training sets, or how many to draw at random (seeded by `seed`).
#' @param shortfall_models Character vector of model names for the shortfall's model set.
#' @param domain,target Names of the domain column and the outcome column.
#' @param features Character vector of feature column names.
#' @param seed Seed for sampled training sets and for `"rf"`.
#' @param n_jobs Threads (`NULL`: `LLMSURROGATE_NUM_THREADS` or all cores).
#' @param cache Optional folder for finished fits: an interrupted build resumes from it.
#' @return A data.frame with columns `train` (or `train_1`, ..., `train_r`), `test`, `error`.
#' @seealso [transfer_within_domain_cv()], [load_certainty_equivalents()].
#' @examplesIf llmsurrogate_available()
#' ce <- load_certainty_equivalents(domains = c(7, 8, 9))
#' transfer_error_table(ce, "cpt:g", metric = "rmse")
#' @export
transfer_error_table <- function(samples, model = "cpt", r = 1, metric = c("mse", "rmse"), normalize = NULL,
                                 subsets = "all", shortfall_models = NULL, domain = "domain",
                                 features = c("z1", "z2", "p1"), target = "ce", seed = 0, n_jobs = NULL,
                                 cache = NULL) {
  cols <- .frame_arg(samples, "samples")
  metric <- match.arg(metric)
  model <- .check_string(model, "model")
  r <- .check_scalar(r, "r")
  if (r < 1 || r != round(r)) .abort("argument `r` must be a whole number >= 1", sys.call())
  if (!is.null(normalize)) normalize <- .check_string(normalize, "normalize")
  if (!identical(subsets, "all")) {
    subsets <- .check_scalar(subsets, "subsets")
    subsets <- as.integer(subsets)
  }
  if (!is.null(shortfall_models) && !is.character(shortfall_models)) {
    .abort("argument `shortfall_models` must be a character vector of model names", sys.call())
  }
  if (!is.character(features) || length(features) == 0L) {
    .abort("argument `features` must be a character vector of column names", sys.call())
  }
  n_jobs <- .check_n_jobs(n_jobs)
  out <- .call("transfer.error_table", cols, model, r = as.integer(r),
               metric = metric, normalize = normalize, subsets = subsets,
               shortfall_models = if (is.null(shortfall_models)) NULL else as.list(shortfall_models),
               n_jobs = n_jobs, domain = .check_string(domain, "domain"), features = as.list(features),
               target = .check_string(target, "target"), cache = cache, seed = as.integer(seed))
  if (inherits(out, "llmsurrogate_result")) out$table else out
}

#' Within-domain k-fold cross-validated errors (the paper's Table 1)
#'
#' Splits each domain's observations at random into `k` folds, fits each model on `k - 1` folds
#' and scores the mean squared error on the last; the CV error is the mean over folds. Table 1 of
#' the paper averages each economic model's CV error divided by the random forest's.
#'
#' @inheritParams transfer_error_table
#' @param models Character vector of model names (see [transfer_error_table()]).
#' @param k Number of folds.
#' @return A data.frame: `domain` and one column of CV errors per model.
#' @examplesIf llmsurrogate_available()
#' ce <- load_certainty_equivalents(domains = c(7, 8, 9))
#' cv <- transfer_within_domain_cv(ce, c("eu", "cpt:g"), k = 3)
#' @export
transfer_within_domain_cv <- function(samples, models = c("eu", "cpt", "rf"), k = 10, metric = c("mse", "rmse"),
                                      domain = "domain", features = c("z1", "z2", "p1"), target = "ce",
                                      seed = 0, n_jobs = NULL) {
  cols <- .frame_arg(samples, "samples")
  metric <- match.arg(metric)
  if (!is.character(models) || length(models) == 0L) {
    .abort("argument `models` must be a character vector of model names", sys.call())
  }
  k <- .check_scalar(k, "k")
  n_jobs <- .check_n_jobs(n_jobs)
  .call("transfer.within_domain_cv", cols, as.list(models), k = as.integer(k),
        metric = metric, n_jobs = n_jobs, seed = as.integer(seed), domain = domain,
        features = as.list(features), target = target)
}
