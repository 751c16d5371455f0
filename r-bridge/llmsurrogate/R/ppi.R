# Prediction-powered inference (PPI, PPI++): R's interface to llmsurrogate.ppi, through the adapters
# of llmsurrogate.rbridge.ppi. R checks the arguments in R's words (no NA, numbers, lengths, 1-based
# positions) and builds the regressions' designs with model.matrix(); the numbers are Python's.

#' Prediction-powered mean and quantile
#'
#' Valid confidence intervals that combine a small labelled sample (the human answers `y` with the
#' LLM's answers `yhat` on the same rows) with many LLM answers on unlabelled rows
#' (`yhat_unlabeled`): the estimate `lambda * mean(yhat_unlabeled) + mean(y - lambda * yhat)` is
#' unbiased however wrong the LLM is, and its interval is narrower than the labelled rows' alone when
#' the LLM is good (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic 2023; PPI++: Angelopoulos, Duchi
#' and Zrnic 2023). `ppi_mean()` estimates a mean (or, with K columns, the K answer shares of a
#' K-option question), `ppi_quantile()` a quantile with an exact interval over the data's own
#' values. The numbers are those of the Python package (`llmsurrogate.ppi.mean()`,
#' `llmsurrogate.ppi.quantile()`), whose definitions are ppi_py 0.2.3's (the Python package's
#' docs/methods/ppi.md gives them formula by formula).
#'
#' `method = "classical"` uses the labelled rows alone (lambda = 0): the estimate is `mean(y)` and
#' its standard error `sd(y) * sqrt((n - 1) / n) / sqrt(n)` (variance with divisor n, as ppi_py);
#' `"ppi"` sets lambda = 1; `"ppi++"` (the default of `ppi_mean()`) tunes lambda to minimise the
#' variance, clipped to \[0, 1\], unless `lambda` is given. Intervals are z-intervals. A quantile has
#' no power tuning (`method` is `"ppi"` or `"classical"`) and no standard error.
#'
#' Missing values are an error (the message names the argument and the 1-based position): drop
#' the incomplete rows first, e.g. with `complete.cases()`, and say why they are missing. Factor and
#' character answers are refused: code them as numbers first (`as.numeric(answer == "yes")` for a
#' share), or give one 0/1 column per option for the K shares. Logical answers are 0/1.
#'
#' @param y The labelled rows' outcomes (human answers): a numeric or logical vector; for
#'   `ppi_mean()` also a numeric matrix or data frame with K columns (the K options' 0/1
#'   indicators), one row per labelled row.
#' @param yhat The LLM's answers on the labelled rows, as `y` (the same length, or the same K
#'   columns).
#' @param yhat_unlabeled The LLM's answers on the unlabelled rows, as `yhat` (at least two rows).
#' @param q For `ppi_quantile()`: the quantile, between 0 and 1 (0.5: the median).
#' @param method `"ppi++"`, `"ppi"` or `"classical"` (see Details).
#' @param level The confidence level, between 0 and 1 (0.95: 95% intervals).
#' @param lambda For `method = "ppi++"`: a fixed lambda in \[0, 1\] (one, or one per column of K)
#'   instead of the tuned one; `NULL` tunes it.
#' @param lambda_mode With K columns and lambda tuned: `"overall"` (one lambda minimising the summed
#'   variance) or `"element"` (one per column).
#' @param weights,weights_unlabeled Positive survey weights of the labelled and unlabelled rows
#'   (numeric vectors of their lengths), rescaled to sum to n and N; `NULL` for none.
#' @param cluster,cluster_unlabeled Cluster ids (schools, firms; numbers or labels) of the labelled
#'   and unlabelled rows for a cluster-robust interval; the same id in both samples is one cluster.
#'   `NULL` for independent rows. For `ppi_quantile()` the test of the CDF at each candidate uses
#'   the clustered variance of the same mean of indicators (docs/methods/ppi.md §8.3).
#' @return An object of class `c("llmsurrogate_ppi_result", "llmsurrogate_result")`: a list with
#'   `table` (one row per term: `term`, `estimate`, `std_error`, `statistic`, `p_value`, `ci_low`,
#'   `ci_high`, `lam` (lambda), `effective_n` (the labelled rows the classical estimator would need
#'   for the same variance), the classical estimate and interval on the labelled rows
#'   (`classical_estimate`, `classical_std_error`, `classical_ci_low`, `classical_ci_high`),
#'   `method`, `level`), `summary` (the printed text), `json`, and the settings (`estimand`,
#'   `method`, `level`, `n`, `N`, `lam_tuned`, `weighted`, `q`, ...). Methods: `print()`,
#'   `summary()`, `coef()`, `confint()`, `plot()` (the PPI and the classical intervals side by
#'   side), `as.data.frame()`, and with 'broom' or 'generics' `tidy()` and `glance()`; see
#'   [llmsurrogate_ppi_result].
#' @seealso [ppi_ols()] and [ppi_glm()] for regressions.
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' truth <- rnorm(2300, mean = 2)
#' llm <- truth + rnorm(2300, sd = 0.5)          # the LLM's answer on every row
#' labelled <- 1:300                             # the rows a human answered
#' res <- ppi_mean(truth[labelled], llm[labelled], llm[-labelled])
#' res
#' coef(res)
#' confint(res)
#' # the labelled rows alone: a wider interval
#' confint(ppi_mean(truth[labelled], llm[labelled], llm[-labelled], method = "classical"))
#' # the median, with its exact interval
#' med <- ppi_quantile(truth[labelled], llm[labelled], llm[-labelled], q = 0.5)
#' med
#' confint(med)
#' @export
ppi_mean <- function(y, yhat, yhat_unlabeled, method = "ppi++", level = 0.95, lambda = NULL,
                     lambda_mode = "overall", weights = NULL, weights_unlabeled = NULL, cluster = NULL,
                     cluster_unlabeled = NULL) {
  call <- sys.call()
  y_ <- .ppi_values(y, "y", call, columns = TRUE)
  yhat_ <- .ppi_values(yhat, "yhat", call, columns = TRUE, like = y_)
  yhat_u <- .ppi_values(yhat_unlabeled, "yhat_unlabeled", call, columns = TRUE, like = y_, same_rows = FALSE)
  n <- y_$n
  N <- yhat_u$n
  res <- .call_in(call, "ppi.mean", y_$payload, yhat_$payload, yhat_u$payload,
                  method = .check_string(method, "method", call), level = .ppi_level(level, call),
                  lam = .ppi_lambda(lambda, call), lam_mode = .check_string(lambda_mode, "lambda_mode", call),
                  weights = .ppi_weights(weights, "weights", n, "y", call),
                  weights_unlabeled = .ppi_weights(weights_unlabeled, "weights_unlabeled", N, "yhat_unlabeled", call),
                  cluster = .ppi_ids(cluster, "cluster", n, "y", call),
                  cluster_unlabeled = .ppi_ids(cluster_unlabeled, "cluster_unlabeled", N, "yhat_unlabeled", call))
  res$call <- call
  res
}

#' @rdname ppi_mean
#' @export
ppi_quantile <- function(y, yhat, yhat_unlabeled, q, method = "ppi", level = 0.95, weights = NULL,
                         weights_unlabeled = NULL, cluster = NULL, cluster_unlabeled = NULL) {
  call <- sys.call()
  if (missing(q)) .abort("argument `q` is missing: give the quantile, between 0 and 1 (0.5 for the median)", call)
  y_ <- .ppi_values(y, "y", call)
  yhat_ <- .ppi_values(yhat, "yhat", call, like = y_)
  yhat_u <- .ppi_values(yhat_unlabeled, "yhat_unlabeled", call, like = y_, same_rows = FALSE)
  q <- .check_scalar(q, "q", call)
  if (!(q > 0 && q < 1)) .abort(sprintf("argument `q` must lie strictly between 0 and 1; got %s", format(q)), call)
  res <- .call_in(call, "ppi.quantile", y_$payload, yhat_$payload, yhat_u$payload, q,
                  method = .check_string(method, "method", call), level = .ppi_level(level, call),
                  weights = .ppi_weights(weights, "weights", y_$n, "y", call),
                  weights_unlabeled = .ppi_weights(weights_unlabeled, "weights_unlabeled", yhat_u$n,
                                                   "yhat_unlabeled", call),
                  cluster = .ppi_ids(cluster, "cluster", y_$n, "y", call),
                  cluster_unlabeled = .ppi_ids(cluster_unlabeled, "cluster_unlabeled", yhat_u$n, "yhat_unlabeled",
                                               call))
  res$call <- call
  res
}

#' Prediction-powered linear and generalised linear regression
#'
#' Regressions whose outcome a human gave on a few rows (`labeled`) and an LLM on every row: the
#' prediction-powered estimate (PPI, PPI++; Angelopoulos, Duchi and Zrnic 2023) fits the regression
#' of the LLM's answers on all rows and corrects it with the labelled rows' errors, with a valid
#' sandwich interval however wrong the LLM is. `ppi_ols()` is linear regression (as [stats::lm()]),
#' `ppi_glm()` logistic (`family = binomial()`) or Poisson (`family = poisson()`) regression with the
#' canonical link (as [stats::glm()]). The numbers are those of the Python package
#' (`llmsurrogate.ppi.ols()`, `logistic()`, `poisson()`), equal to ppi_py 0.2.3's.
#'
#' The design comes from the formula as in [stats::lm()]: [stats::model.matrix()] on the right-hand
#' side, evaluated on the labelled and the unlabelled rows together (so a factor has the same
#' levels and dummies in both), with an intercept column `(Intercept)` unless the formula removes it
#' (`y ~ x - 1` or `y ~ 0 + x`); the coefficients have `lm()`'s names. The outcome (the left-hand
#' side) is evaluated in `labeled` only; `unlabeled` needs the right-hand side's columns and the
#' prediction, not the outcome. `y ~ .` takes every column of `labeled` but the outcome and the
#' prediction. Fixed effects (`| firm`) are not taken here.
#'
#' `method = "classical"` fits the labelled rows alone: for `ppi_ols()` the point estimate is
#' `coef(lm())` on `labeled` (weighted least squares with `weights`) and its standard errors are
#' heteroskedasticity-robust (HC0), as ppi_py's classical baseline; `"ppi"` sets lambda = 1;
#' `"ppi++"` tunes lambda (ppi_py's two steps) for the summed variance of all coefficients, or of the
#' coefficient `coord`.
#'
#' Missing values in the outcome, the prediction or a column of the formula are an error naming the
#' column, the data frame and the 1-based row: drop the incomplete rows first (e.g.
#' `labeled[complete.cases(labeled[vars]), ]`). A factor or character outcome is refused: code it as
#' numbers (`as.numeric(answer == "yes")`). Logical outcomes are 0/1.
#'
#' @param formula A two-sided formula, `y ~ x1 + x2` (`lm()`'s syntax: factors, interactions,
#'   `I()`, `poly()`, ...), or that formula as a string.
#' @param labeled A data frame of the labelled rows: the outcome, the prediction and the formula's
#'   columns.
#' @param unlabeled A data frame of the unlabelled rows: the prediction and the right-hand side's
#'   columns (at least two rows).
#' @param prediction The name of the column of both data frames holding the LLM's answer (for
#'   `ppi_glm(family = binomial())` a probability or a 0/1 answer; for Poisson a count or a rate).
#' @param family For `ppi_glm()`: `binomial()` (logit link) or `poisson()` (log link), as a family
#'   object, a family function or its name.
#' @param coord For `method = "ppi++"`: the coefficient whose variance lambda minimises, by name
#'   (`"x1"`) or 1-based position; `NULL` for the summed variance of all.
#' @param weights,weights_unlabeled Positive survey weights of the labelled and unlabelled rows: a
#'   column name of `labeled` (`unlabeled`) or a numeric vector of its rows; rescaled to sum to n
#'   and N.
#' @param cluster,cluster_unlabeled Cluster ids of the labelled and unlabelled rows (a column name or
#'   a vector; the same id in both is one cluster) for cluster-robust intervals; `NULL` for
#'   independent rows.
#' @inheritParams ppi_mean
#' @return An object of class `c("llmsurrogate_ppi_result", "llmsurrogate_result")` with one row of
#'   `table` per coefficient, as [ppi_mean()]'s, plus `formula` and `intercept` (whether the design
#'   has `(Intercept)`); see [llmsurrogate_ppi_result] for its methods.
#' @examplesIf llmsurrogate_available()
#' set.seed(2)
#' rows <- function(m) {
#'   d <- data.frame(x = rnorm(m), group = sample(c("a", "b"), m, replace = TRUE))
#'   d$y <- 1 + 2 * d$x + (d$group == "b") + rnorm(m)
#'   d$llm_y <- d$y + rnorm(m, sd = 0.5)   # the LLM's guess of y
#'   d
#' }
#' lab <- rows(200)
#' unl <- rows(5000)
#' unl$y <- NULL                           # no human answer on these rows
#' fit <- ppi_ols(y ~ x + group, labeled = lab, unlabeled = unl, prediction = "llm_y")
#' fit
#' coef(fit)
#' confint(fit)
#' summary(fit)
#' # the classical estimate is lm()'s on the labelled rows
#' coef(ppi_ols(y ~ x + group, lab, unl, "llm_y", method = "classical"))
#' coef(lm(y ~ x + group, data = lab))
#'
#' # logistic regression of a 0/1 answer, the LLM's probability as the prediction
#' lab$yes <- as.numeric(lab$y > 1.5)
#' lab$p_llm <- plogis(2 * (lab$llm_y - 1.5))
#' unl$p_llm <- plogis(2 * (unl$llm_y - 1.5))
#' logit <- ppi_glm(yes ~ x, lab, unl, "p_llm", family = binomial())
#' logit
#' # Poisson regression of a count
#' lab$visits <- rpois(200, exp(0.5 + 0.3 * lab$x))
#' lab$llm_visits <- exp(0.5 + 0.3 * lab$x)
#' unl$llm_visits <- exp(0.5 + 0.3 * unl$x)
#' coef(ppi_glm(visits ~ x, lab, unl, "llm_visits", family = poisson()))
#' @export
ppi_ols <- function(formula, labeled, unlabeled, prediction, method = "ppi++", level = 0.95, lambda = NULL,
                    coord = NULL, weights = NULL, weights_unlabeled = NULL, cluster = NULL,
                    cluster_unlabeled = NULL) {
  call <- sys.call()
  .ppi_regression("ppi.ols", call, formula, labeled, unlabeled, prediction, method, level, lambda, coord,
                  weights, weights_unlabeled, cluster, cluster_unlabeled)
}

#' @rdname ppi_ols
#' @export
ppi_glm <- function(formula, labeled, unlabeled, prediction, family = stats::binomial(), method = "ppi++",
                    level = 0.95, lambda = NULL, coord = NULL, weights = NULL, weights_unlabeled = NULL,
                    cluster = NULL, cluster_unlabeled = NULL) {
  call <- sys.call()
  fn <- .ppi_family(family, call)
  .ppi_regression(fn, call, formula, labeled, unlabeled, prediction, method, level, lambda, coord,
                  weights, weights_unlabeled, cluster, cluster_unlabeled)
}

#' Prediction-powered fixed-effects regression
#'
#' A linear regression with fixed effects in fixest's syntax (`y ~ x1 + x2 | firm + year`), whose
#' outcome a human gave on a few rows (`labeled`) and an LLM on every row: the within regression of
#' `lambda * prediction` on the unlabelled rows plus the within regression of
#' `y - lambda * prediction` on the labelled rows (PPI++, Angelopoulos, Duchi and Zrnic 2023). The
#' numbers are those of the Python package (`llmsurrogate.ppi.feols()`, the method in its
#' docs/methods/ppi.md §9): the same slopes as [ppi_ols()] with one `factor()` dummy per level of
#' each fixed effect, and with `method = "classical"` (or `lambda = 0`) the slopes and standard
#' errors of [feols()] on `labeled`.
#'
#' The formula is read as by [feols()] (fixest's and pyfixest's syntax: `x^2` is the square,
#' `log(x)`, `factor(g)`, `i(g)`, interacted fixed effects `firm^year`). The outcome is a column of
#' `labeled`; `unlabeled` needs the regressors, the fixed effects and the prediction. Every level
#' of a fixed effect must appear in both samples. The fixed effects themselves are not reported.
#'
#' The variance is that of the two within regressions, each in its own sample (docs/methods/ppi.md
#' §9.2; not ppi_py's pooled sandwich, too small with few labelled rows per level), with
#' fixest's small-sample factors, heteroskedasticity-robust (`vcov = "hetero"`, the default) or
#' clustered by one column of both data frames (`vcov = ~firm`, `cluster = ~firm`,
#' `list(CRV1 = "firm")`, or `"cluster"` for the first fixed effect); the same id in both samples is
#' one cluster (docs/methods/ppi.md §8). `vcov = "iid"` (or `se = "standard"`) assumes that the
#' residuals of both regressions have a variance that does not depend on the regressors (each
#' sample's residual variance, divided by the rows less the slopes and the fixed effects' levels as
#' fixest's iid, times the inverse of its own regressors' cross-product; docs/methods/ppi.md
#' §9.4). Lambda is tuned to minimise
#' the variance reported, and with `lambda = 0` the standard errors are [feols()]'s on `labeled`.
#'
#' Missing values (`NA`) in the outcome, the prediction, a regressor, a fixed effect, the weights
#' or the cluster column are an error naming the column, the data frame and the 1-based row: drop
#' the incomplete rows first (e.g. with `complete.cases()`); PPI drops none for you.
#'
#' @param fml A formula such as `y ~ x1 + x2 | firm + year` (fixest's name for the argument), or
#'   the same as a string; it must have fixed effects (without, use [ppi_ols()]).
#' @param labeled A data frame of the labelled rows: the outcome, the regressors, the fixed
#'   effects and the prediction.
#' @param unlabeled A data frame of the unlabelled rows: the regressors, the fixed effects and the
#'   prediction.
#' @param prediction The name of the prediction's column (the LLM's answer), in both data frames.
#' @param vcov `"hetero"` (default), `"iid"`, `"cluster"` (by the first fixed effect), a one-sided
#'   formula `~firm` or `list(CRV1 = "firm")` (one cluster column, in both data frames).
#' @param method `"ppi++"` (lambda minimising the reported variance, summed over the slopes or of
#'   `coord`, in closed form), `"ppi"` (lambda = 1) or `"classical"` (the labelled rows alone).
#' @param level The confidence level, between 0 and 1.
#' @param lambda For `method = "ppi++"`: a fixed lambda in \[0, 1\] instead of the tuned one.
#' @param coord For a tuned lambda: the coefficient (its name, or its 1-based position) whose
#'   variance lambda minimises; `NULL`: all together.
#' @param weights `NULL`, or the name of a column of both data frames (or `~w`) of positive
#'   weights, rescaled to sum to n and N.
#' @param se,cluster fixest's spellings: `se = "hetero"`, `"standard"` (iid) or `"cluster"`;
#'   `cluster = ~firm`.
#' @param ... Nothing: an argument ppi_feols() does not take is an error naming it.
#' @return An object of class `c("llmsurrogate_ppi_result", "llmsurrogate_result")`, as
#'   [ppi_ols()]'s, one row per slope; its methods are those of [llmsurrogate_ppi_result]
#'   (`print()`, `summary()`, `coef()`, `confint()`, `plot()`, `tidy()`, `glance()`).
#' @seealso [ppi_ols()], [feols()]
#' @examplesIf llmsurrogate_available()
#' set.seed(2)
#' rows <- function(m) {
#'   d <- data.frame(firm = sample(letters[1:8], m, TRUE), x = rnorm(m))
#'   d$y <- 1.5 * d$x + match(d$firm, letters) / 4 + rnorm(m)
#'   d$llm_y <- d$y + rnorm(m, sd = 0.7)   # the LLM's answer
#'   d
#' }
#' lab <- rows(250)
#' unl <- rows(4000)
#' unl$y <- NULL                           # no human answer on these rows
#' fit <- ppi_feols(y ~ x | firm, lab, unl, prediction = "llm_y", cluster = ~firm)
#' fit
#' coef(fit)
#' confint(fit)
#' # the classical slope is feols()'s on the labelled rows
#' coef(ppi_feols(y ~ x | firm, lab, unl, "llm_y", method = "classical"))
#' coef(feols(y ~ x | firm, lab))
#' @export
ppi_feols <- function(fml, labeled, unlabeled, prediction, vcov = "hetero", method = "ppi++", level = 0.95,
                      lambda = NULL, coord = NULL, weights = NULL, se = NULL, cluster = NULL, ...) {
  call <- sys.call()
  dots <- names(match.call(expand.dots = FALSE)$...)
  if (length(match.call(expand.dots = FALSE)$...)) {
    bad <- if (is.null(dots) || !nzchar(dots[1])) "given by position" else sprintf("`%s`", dots[1])
    .abort(sprintf(paste("ppi_feols() takes no argument %s; its arguments are fml, labeled, unlabeled, prediction,",
                         "vcov, method, level, lambda, coord, weights, se, cluster"), bad), call)
  }
  if (missing(fml) || !(inherits(fml, "formula") || (is.character(fml) && length(fml) == 1L && !is.na(fml)))) {
    .abort("argument `fml` must be a formula such as y ~ x | firm, or that formula as a string", call)
  }
  text <- .formula_text(fml, call)
  text <- .fixest_powers(text, call)
  fe <- .formula_fixef(text)
  if (!length(fe)) {
    .abort(sprintf("argument `fml` has no fixed effects (%s); write them after `|`, or use ppi_ols()", text), call)
  }
  for (arg in c("labeled", "unlabeled")) {
    d <- get(arg)
    if (!is.data.frame(d)) .abort(sprintf("argument `%s` must be a data frame, not %s", arg, .r_type(d)), call)
    if (nrow(d) < 2L) .abort(sprintf("argument `%s` has %d rows; PPI needs at least two", arg, nrow(d)), call)
  }
  prediction <- .check_string(prediction, "prediction", call)
  vc <- .vcov_arg(.fixest_vcov(vcov, !missing(vcov), se, cluster, call), call, fe)
  clusters <- attr(vc, "clusters")
  attr(vc, "clusters") <- NULL
  if (is.character(vc)) {
    if (!vc %in% c("hetero", "HC1", "iid")) {
      .abort(sprintf(paste('argument `vcov`: "%s" is not offered for prediction-powered inference; use "hetero"',
                           '(the default), "iid" or a cluster column (vcov = ~firm)'), vc), call)
    }
    if (vc == "HC1") vc <- "hetero"
  } else {
    if (length(clusters) != 1L) {
      .abort(sprintf("argument `vcov`: prediction-powered inference clusters by one column; got %s",
                     paste(clusters, collapse = " + ")), call)
    }
    vc <- list(CRV1 = clusters)
  }
  if (inherits(weights, "formula") && length(weights) == 2L && length(all.vars(weights)) == 1L) {
    weights <- all.vars(weights)
  }
  if (!is.null(weights) && !(is.character(weights) && length(weights) == 1L && !is.na(weights))) {
    .abort(sprintf("argument `weights` must be NULL, a column name of both data frames or ~column; got %s",
                   .r_type(weights)), call)
  }
  lhs <- strsplit(text, "~", fixed = TRUE)[[1]][1]
  outcome <- .formula_names(lhs)
  rhs_names <- setdiff(.formula_names(sub("^[^~]*~", "", text)), character())
  rhs_names <- unique(c(rhs_names, unlist(strsplit(fe, "^", fixed = TRUE))))
  needed <- list(labeled = unique(c(outcome, rhs_names, prediction, weights, clusters)),
                 unlabeled = unique(c(rhs_names, prediction, weights, clusters)))
  for (arg in names(needed)) {
    d <- get(arg)
    cols <- needed[[arg]]
    # every name of the formula is a column (Python, which fits it, sees no R variable)
    miss <- setdiff(cols, names(d))
    if (length(miss)) {
      .abort(sprintf("argument `%s` has no column `%s`, which %s", arg, miss[1],
                     if (miss[1] == prediction) "argument `prediction` names" else if (miss[1] %in% weights) "argument `weights` names"
                     else if (miss[1] %in% clusters) "the clustering uses" else "the formula uses"), call)
    }
    for (col in cols) {
      na <- which(is.na(d[[col]]))
      if (length(na)) {
        .abort(sprintf(paste("column `%s` has a missing value (NA) in `%s`, row %d; drop the incomplete rows first",
                             "(e.g. with complete.cases()): PPI does not drop them for you"), col, arg, na[1]), call)
      }
    }
    needed[[arg]] <- cols
  }
  .ppi_numeric(labeled[[prediction]], sprintf("column `%s` of `labeled` (the prediction)", prediction), call)
  .ppi_numeric(unlabeled[[prediction]], sprintf("column `%s` of `unlabeled` (the prediction)", prediction), call)
  if (!is.null(weights)) {
    for (arg in c("labeled", "unlabeled")) {
      w <- .ppi_numeric(get(arg)[[weights]], sprintf("column `%s` of `%s` (the weights)", weights, arg), call)
      bad <- which(w <= 0)
      if (length(bad)) {
        .abort(sprintf("argument `weights`: column `%s` of `%s` must be positive; got %s in row %d", weights, arg,
                       format(w[bad[1]]), bad[1]), call)
      }
    }
  }
  fe_cols <- intersect(unlist(strsplit(fe, "^", fixed = TRUE)), union(names(labeled), names(unlabeled)))
  fe_cols <- setdiff(fe_cols, c(.formula_names(strsplit(text, "|", fixed = TRUE)[[1]][1]), weights))
  kinds <- vapply(labeled[intersect(fe_cols, names(labeled))], .fe_kind, character(1))
  if (!is.null(coord)) {
    if (!(is.character(coord) && length(coord) == 1L && !is.na(coord))) {
      k <- .check_scalar(coord, "coord", call)
      if (k != round(k) || k < 1) {
        .abort(sprintf("argument `coord` must be a coefficient's name or a 1-based position; got %s", format(k)), call)
      }
      coord <- as.integer(k - 1)  # Python's positions count from 0
    }
  }
  res <- .call_in(call, "ppi.feols", text,
                  .frame_arg(.feols_columns(labeled, needed$labeled, kinds), "labeled", call),
                  .frame_arg(.feols_columns(unlabeled, needed$unlabeled, kinds), "unlabeled", call),
                  prediction = prediction, vcov = vc, weights = weights,
                  method = .check_string(method, "method", call), level = .ppi_level(level, call),
                  lam = .ppi_lambda(lambda, call), coord = coord,
                  r_variables = as.list(.formula_variables(text)))
  res$formula <- fml
  res$call <- call
  res
}

# ---- helpers -----------------------------------------------------------------------------------

# A family (object, function or name) as the Python function: binomial(logit) -> logistic,
# poisson(log) -> poisson; anything else is an error naming `family`.
.ppi_family <- function(family, call) {
  if (is.function(family)) family <- tryCatch(family(), error = function(e) NULL)
  if (is.character(family) && length(family) == 1L && !is.na(family)) {
    family <- tryCatch(get(family, mode = "function", envir = asNamespace("stats"))(), error = function(e) NULL)
  }
  if (!inherits(family, "family")) {
    .abort("argument `family` must be binomial() or poisson() (a family object, the function, or its name)", call)
  }
  known <- c("binomial/logit" = "ppi.logistic", "poisson/log" = "ppi.poisson")
  key <- paste(family$family, family$link, sep = "/")
  if (!key %in% names(known)) {
    .abort(sprintf(paste("argument `family`: ppi_glm() fits binomial(link = \"logit\") and poisson(link = \"log\");",
                         "got %s(link = \"%s\"). For a linear model use ppi_ols()"), family$family, family$link), call)
  }
  known[[key]]
}

.ppi_level <- function(level, call) {
  level <- .check_scalar(level, "level", call)
  if (!(level > 0 && level < 1)) {
    .abort(sprintf("argument `level` must lie strictly between 0 and 1 (0.95 for 95%% intervals); got %s",
                   format(level)), call)
  }
  level
}

.ppi_lambda <- function(lambda, call) {
  if (is.null(lambda)) return(NULL)
  lambda <- .check_numeric(lambda, "lambda", call)
  bad <- which(lambda < 0 | lambda > 1)
  if (length(bad)) {
    .abort(sprintf("argument `lambda` must lie between 0 and 1; got %s at position %d", format(lambda[bad[1]]),
                   bad[1]), call)
  }
  if (length(lambda) == 1L) lambda else as.list(lambda)
}

# A numeric column of answers checked in R's words: not a factor or character, no NA, finite.
.ppi_numeric <- function(x, what, call) {
  if (is.factor(x) || is.character(x)) {
    .abort(sprintf(paste("%s is %s; PPI estimates means and regressions of numbers: code the answers as numbers",
                         "first, e.g. as.numeric(answer == \"yes\") for a share (one 0/1 column per option for",
                         "the K shares of ppi_mean())"), what, .r_type(x)), call)
  }
  if (!is.numeric(x) && !is.logical(x)) {
    .abort(sprintf("%s must be numeric, not %s", what, .r_type(x)), call)
  }
  x <- as.numeric(x)
  na <- which(is.na(x))
  if (length(na)) {
    .abort(sprintf(paste("%s has a missing value (NA) at position %d; drop the incomplete rows first",
                         "(e.g. with complete.cases()): PPI does not drop them for you"), what, na[1]), call)
  }
  inf <- which(!is.finite(x))
  if (length(inf)) .abort(sprintf("%s has a non-finite value (%s) at position %d", what, format(x[inf[1]]), inf[1]), call)
  x
}

# y, yhat or yhat_unlabeled: a vector (or, with `columns`, K columns), checked and ready for the
# bridge; `like` is y's, for the lengths and column counts.
.ppi_values <- function(x, name, call, columns = FALSE, like = NULL, same_rows = TRUE) {
  what <- sprintf("argument `%s`", name)
  if (is.null(x)) .abort(sprintf("%s is NULL; give a numeric vector", what), call)
  if (is.matrix(x) || is.data.frame(x)) {
    if (!columns) .abort(sprintf("%s must be a numeric vector, not %s", what, .r_type(x)), call)
    nms <- colnames(x)
    if (is.null(nms)) nms <- paste0("V", seq_len(ncol(x)))
    cols <- lapply(seq_len(ncol(x)), function(j) {
      .ppi_numeric(if (is.data.frame(x)) x[[j]] else x[, j], sprintf("column `%s` of `%s`", nms[j], name), call)
    })
    names(cols) <- nms
    n <- nrow(x)
    k <- ncol(x)
    payload <- .frame_arg(as.data.frame(cols, optional = TRUE, col.names = nms), name, call)
  } else {
    x <- .ppi_numeric(x, what, call)
    n <- length(x)
    k <- NA_integer_
    payload <- .vector_arg(x, name, call)
  }
  if (n < 2L) {
    .abort(sprintf("%s %s; PPI needs at least two rows", what, if (n == 0L) "is empty" else "has 1 row"), call)
  }
  if (!is.null(like)) {
    if (!identical(k, like$k)) {
      .abort(sprintf("%s has %s but `y` has %s; give both the same shape", what, .ppi_shape(k), .ppi_shape(like$k)), call)
    }
    if (same_rows && n != like$n) {
      .abort(sprintf("%s has %d rows but `y` has %d; `yhat` is the prediction on the labelled rows of `y`",
                     what, n, like$n), call)
    }
  }
  list(payload = payload, n = n, k = k)
}

.ppi_shape <- function(k) if (is.na(k)) "one column (a vector)" else sprintf("%d columns", k)

# Weights: NULL, or positive finite numbers, one per row (`rows`, the length of `of`).
.ppi_weights <- function(w, name, rows, of, call, data = NULL) {
  if (is.null(w)) return(NULL)
  if (!is.null(data) && is.character(w) && length(w) == 1L) w <- .ppi_column(data, w, name, call, of)
  w <- .ppi_numeric(w, sprintf("argument `%s`", name), call)
  if (length(w) != rows) {
    .abort(sprintf("argument `%s` has %d values for %d rows of `%s`; give one weight per row", name,
                   length(w), rows, of), call)
  }
  bad <- which(w <= 0)
  if (length(bad)) {
    .abort(sprintf("argument `%s` must be positive; got %s at position %d", name, format(w[bad[1]]), bad[1]), call)
  }
  .vector_arg(w, name, call)
}

# Cluster ids: NULL, or one id per row (numbers or labels), no NA.
.ppi_ids <- function(ids, name, rows, of, call, data = NULL) {
  if (is.null(ids)) return(NULL)
  if (!is.null(data) && is.character(ids) && length(ids) == 1L && rows != 1L) ids <- .ppi_column(data, ids, name, call, of)
  if (!is.atomic(ids) || is.matrix(ids)) .abort(sprintf("argument `%s` must be a vector of cluster ids", name), call)
  if (is.factor(ids)) ids <- as.character(ids)
  if (length(ids) != rows) {
    .abort(sprintf("argument `%s` has %d values for %d rows of `%s`; give one cluster id per row", name,
                   length(ids), rows, of), call)
  }
  na <- which(is.na(ids))
  if (length(na)) .abort(sprintf("argument `%s` has a missing value (NA) at position %d", name, na[1]), call)
  .vector_arg(if (is.numeric(ids)) as.numeric(ids) else as.character(ids), name, call)
}

# A column of a data frame named by an argument, with an error naming both when it is absent.
.ppi_column <- function(data, column, arg, call, frame = NULL) {
  if (!column %in% names(data)) {
    .abort(sprintf("argument `%s`: column `%s` is not in %s", arg, column,
                   if (is.null(frame)) "the data" else sprintf("`%s`", frame)), call)
  }
  data[[column]]
}

# The regressions: designs from the formula, outcome and prediction checked, the call to Python.
.ppi_regression <- function(fn, call, formula, labeled, unlabeled, prediction, method, level, lambda, coord,
                            weights, weights_unlabeled, cluster, cluster_unlabeled) {
  if (is.character(formula) && length(formula) == 1L && !is.na(formula)) {
    formula <- tryCatch(stats::as.formula(formula, env = parent.frame(2)),
                        error = function(e) .abort(sprintf("argument `formula` does not parse: %s", conditionMessage(e)), call))
  }
  if (!inherits(formula, "formula") || length(formula) != 3L) {
    .abort(sprintf("argument `formula` must be a two-sided formula such as y ~ x1 + x2; got %s",
                   if (inherits(formula, "formula")) "a one-sided formula" else .r_type(formula)), call)
  }
  if ("|" %in% all.names(formula[[3]])) {
    .abort("argument `formula`: fixed effects (`| firm`) are not taken by ppi_ols() and ppi_glm(); put them in as factor(firm)", call)
  }
  for (arg in c("labeled", "unlabeled")) {
    d <- get(arg)
    if (!is.data.frame(d)) .abort(sprintf("argument `%s` must be a data frame, not %s", arg, .r_type(d)), call)
  }
  for (arg in c("unlabeled", "labeled")) {
    m <- nrow(get(arg))
    if (m < 2L) {
      .abort(sprintf("argument `%s` has %s; PPI needs at least two %s rows", arg, if (m == 0L) "no rows" else "1 row",
                     if (arg == "labeled") "labelled" else "unlabelled"), call)
    }
  }
  prediction <- .check_string(prediction, "prediction", call)
  yhat <- .ppi_numeric(.ppi_column(labeled, prediction, "prediction", call, "labeled"),
                       sprintf("column `%s` of `labeled` (the prediction)", prediction), call)
  yhat_u <- .ppi_numeric(.ppi_column(unlabeled, prediction, "prediction", call, "unlabeled"),
                         sprintf("column `%s` of `unlabeled` (the prediction)", prediction), call)
  env <- environment(formula)
  if (is.null(env)) env <- parent.frame(2)
  outcome_vars <- all.vars(formula[[2]])
  missing_y <- setdiff(outcome_vars, c(names(labeled), ls(env, all.names = TRUE)))
  if (length(missing_y)) .abort(sprintf("argument `formula`: the outcome's column `%s` is not in `labeled`", missing_y[1]), call)
  y <- tryCatch(eval(formula[[2]], labeled, env),
                error = function(e) .abort(sprintf("argument `formula`: the outcome %s could not be evaluated in `labeled`: %s",
                                                   deparse(formula[[2]]), conditionMessage(e)), call))
  if (is.null(y) || length(y) != nrow(labeled)) {
    .abort(sprintf("argument `formula`: the outcome %s has %d values for %d rows of `labeled`",
                   deparse(formula[[2]]), length(y), nrow(labeled)), call)
  }
  y <- .ppi_numeric(y, sprintf("the outcome %s (in `labeled`)", deparse(formula[[2]])), call)
  # the right-hand side on both samples together: the same factor levels and dummies in both
  rhs_data <- labeled[setdiff(names(labeled), c(outcome_vars, prediction))]
  tt <- tryCatch(stats::delete.response(stats::terms(formula, data = rhs_data)),
                 error = function(e) .abort(sprintf("argument `formula`: %s", conditionMessage(e)), call))
  # a name in neither data frame may be a single number of the formula's environment (log(x + k))
  vars <- Filter(function(v) v %in% union(names(labeled), names(unlabeled)) ||
                   !(exists(v, envir = env) && length(get(v, envir = env)) == 1L), all.vars(tt))
  for (v in vars) {
    for (arg in c("labeled", "unlabeled")) {
      if (!v %in% names(get(arg))) .abort(sprintf("argument `%s` has no column `%s`, which the formula uses", arg, v), call)
    }
  }
  n <- nrow(labeled)
  N <- nrow(unlabeled)
  both <- if (length(vars)) rbind(labeled[vars], unlabeled[vars]) else data.frame(row.names = seq_len(n + N))
  for (v in vars) {
    na <- which(is.na(both[[v]]))
    if (length(na)) {
      where <- if (na[1] <= n) sprintf("`labeled`, row %d", na[1]) else sprintf("`unlabeled`, row %d", na[1] - n)
      .abort(sprintf(paste("column `%s` has a missing value (NA) in %s; drop the incomplete rows first",
                           "(e.g. with complete.cases()): PPI does not drop them for you"), v, where), call)
    }
  }
  environment(tt) <- env
  X <- tryCatch(stats::model.matrix(tt, stats::model.frame(tt, both, na.action = stats::na.pass)),
                error = function(e) .abort(sprintf("argument `formula`: %s", conditionMessage(e)), call))
  if (ncol(X) == 0L) .abort("argument `formula` has no regressor and no intercept", call)
  intercept <- attr(tt, "intercept") == 1L
  X_lab <- X[seq_len(n), , drop = FALSE]
  X_unl <- X[n + seq_len(N), , drop = FALSE]
  design <- function(M, name) {
    cols <- lapply(seq_len(ncol(M)), function(j) unname(M[, j]))
    names(cols) <- colnames(M)
    .frame_arg(list2DF(cols, nrow = nrow(M)), name, call)
  }
  terms <- colnames(X)
  if (!is.null(coord)) {
    if (is.character(coord) && length(coord) == 1L && !is.na(coord)) {
      if (!coord %in% terms) {
        .abort(sprintf("argument `coord`: `%s` is not a coefficient; choose from %s", coord,
                       paste(sprintf("`%s`", terms), collapse = ", ")), call)
      }
    } else {
      k <- .check_scalar(coord, "coord", call)
      if (k != round(k) || k < 1 || k > length(terms)) {
        .abort(sprintf("argument `coord` must be a coefficient's name or a position from 1 to %d; got %s",
                       length(terms), format(k)), call)
      }
      coord <- terms[[k]]
    }
  }
  res <- .call_in(call, fn, design(X_lab, "labeled"), .vector_arg(y, "y", call), .vector_arg(yhat, "prediction", call),
                  design(X_unl, "unlabeled"), .vector_arg(yhat_u, "prediction", call),
                  method = .check_string(method, "method", call), level = .ppi_level(level, call),
                  lam = .ppi_lambda(lambda, call), coord = coord,
                  weights = .ppi_weights(weights, "weights", n, "labeled", call, data = labeled),
                  weights_unlabeled = .ppi_weights(weights_unlabeled, "weights_unlabeled", N, "unlabeled", call,
                                                   data = unlabeled),
                  cluster = .ppi_ids(cluster, "cluster", n, "labeled", call, data = labeled),
                  cluster_unlabeled = .ppi_ids(cluster_unlabeled, "cluster_unlabeled", N, "unlabeled", call,
                                               data = unlabeled),
                  # the names Python's messages use for the outcome and the prediction (R has no `y`, `yhat`)
                  r_outcome = paste(deparse(formula[[2]]), collapse = " "), r_prediction = prediction)
  res$formula <- formula
  res$intercept <- intercept
  res$call <- call
  res
}

# ---- methods -----------------------------------------------------------------------------------

#' Methods for prediction-powered estimates
#'
#' The results of [ppi_mean()], [ppi_quantile()], [ppi_ols()], [ppi_glm()] and [ppi_feols()] (class
#' `"llmsurrogate_ppi_result"`). `print()` shows each term's estimate, standard error, interval,
#' lambda and effective n; `summary()` the full report (see [llmsurrogate_result]); `coef()` the
#' estimates by term; `confint()` the intervals (at the level the result was computed at);
#' `tidy()` (with 'broom' or 'generics') one row per term in broom's names (`term`, `estimate`,
#' `std.error`, `statistic`, `p.value` against 0, `conf.low`, `conf.high`, `lambda`, `effective_n`,
#' the `classical_*` columns, `method`, `level`); `glance()` one row of the settings (`method`,
#' `level`, `n`, `N`, ...); `plot()` the PPI interval of each term beside the classical interval on
#' the labelled rows alone.
#'
#' @param x,object The result.
#' @param parm,level For `confint()`: which terms (names or positions; all by default) and the
#'   level, which must be the one the result was computed at.
#' @param terms For `plot()`: which terms (names or positions; all by default).
#' @param col For `plot()`: the colours of the PPI and the classical intervals.
#' @param y,... Unused (`plot()`: further graphical parameters for [graphics::plot()]).
#' @return `print()` and `plot()` return `x` invisibly; `coef()` a named numeric vector;
#'   `confint()` a matrix with one row per term; `tidy()` and `glance()` data frames.
#' @examplesIf llmsurrogate_available()
#' set.seed(3)
#' y <- rbinom(300, 1, 0.4)
#' llm <- plogis(qlogis(0.4) + 2 * (y - 0.4) + rnorm(300))
#' llm_u <- plogis(qlogis(0.4) + 2 * (rbinom(10000, 1, 0.4) - 0.4) + rnorm(10000))
#' res <- ppi_mean(y, llm, llm_u)
#' print(res)
#' coef(res)
#' confint(res)
#' plot(res)
#' @name llmsurrogate_ppi_result
NULL

#' @rdname llmsurrogate_ppi_result
#' @export
print.llmsurrogate_ppi_result <- function(x, ...) {
  cat(x$title, "\n", sep = "")
  cat(sprintf("n = %s labelled, N = %s unlabelled rows; %g%% intervals\n", format(x$n), format(x$N), 100 * x$level))
  tab <- x$table
  out <- data.frame(term = tab$term, estimate = tab$estimate, std.error = tab$std_error, conf.low = tab$ci_low,
                    conf.high = tab$ci_high, lambda = tab$lam, effective_n = tab$effective_n,
                    classical.low = tab$classical_ci_low, classical.high = tab$classical_ci_high)
  if (identical(x$estimand, "quantile")) out$std.error <- NULL
  print(format(out, digits = 4), row.names = FALSE)
  cat("Use summary() for the full report, plot() for the PPI and classical intervals.\n")
  invisible(x)
}

#' @rdname llmsurrogate_ppi_result
#' @export
coef.llmsurrogate_ppi_result <- function(object, ...) {
  stats::setNames(object$table$estimate, object$table$term)
}

#' @rdname llmsurrogate_ppi_result
#' @export
confint.llmsurrogate_ppi_result <- function(object, parm, level = NULL, ...) {
  call <- sys.call()
  if (is.null(level)) level <- object$level
  .check_level(level, object, call)
  pct <- function(p) paste(format(100 * p, trim = TRUE, scientific = FALSE, digits = 3), "%")
  out <- cbind(object$table$ci_low, object$table$ci_high)
  dimnames(out) <- list(object$table$term, c(pct((1 - level) / 2), pct(1 - (1 - level) / 2)))
  if (!missing(parm)) out <- out[parm, , drop = FALSE]
  out
}

#' @rdname llmsurrogate_ppi_result
#' @exportS3Method generics::tidy
tidy.llmsurrogate_ppi_result <- function(x, ...) {
  out <- as.data.frame(x)
  ren <- c(std_error = "std.error", p_value = "p.value", ci_low = "conf.low", ci_high = "conf.high", lam = "lambda")
  hit <- names(out) %in% names(ren)
  names(out)[hit] <- ren[names(out)[hit]]
  out
}

#' @rdname llmsurrogate_ppi_result
#' @export
plot.llmsurrogate_ppi_result <- function(x, y, terms = NULL, col = c("steelblue", "grey45"), ...) {
  tab <- x$table
  if (!is.null(terms)) {
    keep <- if (is.character(terms)) match(terms, tab$term) else as.integer(terms)
    if (anyNA(keep) || any(keep < 1L | keep > nrow(tab))) {
      .abort(sprintf("argument `terms`: choose from %s or positions 1 to %d",
                     paste(sprintf("`%s`", tab$term), collapse = ", "), nrow(tab)), sys.call())
    }
    tab <- tab[keep, , drop = FALSE]
  }
  k <- nrow(tab)
  has_classical <- x$method != "classical" && any(is.finite(tab$classical_ci_low))
  lo <- c(tab$ci_low, if (has_classical) tab$classical_ci_low)
  hi <- c(tab$ci_high, if (has_classical) tab$classical_ci_high)
  rng <- range(c(lo, hi, tab$estimate), finite = TRUE)
  at <- seq_len(k)
  off <- if (has_classical) 0.15 else 0
  graphics::plot(rng, c(0.5, k + 0.5), type = "n", yaxt = "n", xlab = "estimate", ylab = "",
                 main = x$title, ...)
  graphics::axis(2, at = at, labels = rev(tab$term), las = 1)
  ypos <- rev(at)
  graphics::segments(tab$ci_low, ypos + off, tab$ci_high, ypos + off, col = col[1], lwd = 3)
  graphics::points(tab$estimate, ypos + off, pch = 19, col = col[1])
  legend_text <- sprintf("%s (%g%%)", c(classical = "classical", ppi = "PPI", `ppi++` = "PPI++")[[x$method]],
                         100 * x$level)
  if (has_classical) {
    graphics::segments(tab$classical_ci_low, ypos - off, tab$classical_ci_high, ypos - off, col = col[2], lwd = 3)
    graphics::points(tab$classical_estimate, ypos - off, pch = 1, col = col[2])
    legend_text <- c(legend_text, "classical (labelled rows)")
  }
  graphics::legend("topright", legend = legend_text, col = col[seq_along(legend_text)], lwd = 3, bty = "n")
  invisible(x)
}
