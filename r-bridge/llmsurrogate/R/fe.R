# Fixed-effects OLS (llmsurrogate.fe): feols() and etable(), with S3 methods for the fits.

# A formula (or a string in pyfixest's syntax) as one line of text.
.formula_text <- function(formula, call) {
  if (inherits(formula, "formula")) {
    return(paste(trimws(deparse(formula, width.cutoff = 500L)), collapse = " "))
  }
  if (is.character(formula) && length(formula) == 1L && !is.na(formula)) {
    return(formula)
  }
  .abort(sprintf(paste("argument `formula` must be a formula such as y ~ x1 + x1:x2 | firm + date, or that",
                       "formula as a string; got %s"), .r_type(formula)), call)
}

# The names in a formula's text (column names and anything else that looks like one).
.formula_names <- function(text) {
  found <- regmatches(text, gregexpr("[A-Za-z_.][A-Za-z0-9_.]*", text))[[1]]
  unique(found)
}

# `column` of `data` named by argument `arg`, or an error with a suggestion.
.check_columns <- function(cols, data, arg, call) {
  missing <- setdiff(cols, names(data))
  if (length(missing)) {
    hint <- agrep(missing[1], names(data), value = TRUE, max.distance = 0.2)
    extra <- if (length(hint)) sprintf("; did you mean `%s`?", hint[1]) else ""
    .abort(sprintf("argument `%s`: column `%s` is not in `data`%s", arg, missing[1], extra), call)
  }
  invisible(cols)
}

# `vcov` as the Python side takes it: "iid", "hetero", or list(CRV1 = "a" / "a+b"); the cluster
# columns in attribute "clusters".
.vcov_arg <- function(vcov, call) {
  help <- paste('argument `vcov` must be "iid", "hetero" (or "HC1"), list(CRV1 = "date"),',
                'list(CRV1 = c("firm", "date")) or a one-sided formula such as ~date or ~firm + date')
  clusters <- NULL
  if (is.null(vcov)) {
    return(structure("iid", clusters = character()))
  }
  if (inherits(vcov, "formula")) {
    if (length(vcov) != 2L) .abort(help, call)
    clusters <- all.vars(vcov)
  } else if (is.character(vcov) && length(vcov) == 1L && !is.na(vcov) && is.null(names(vcov))) {
    if (vcov %in% c("iid", "hetero", "HC1")) {
      return(structure(vcov, clusters = character()))
    }
    .abort(sprintf("%s; got \"%s\"", help, vcov), call)
  } else if (is.list(vcov) && length(vcov) == 1L && identical(names(vcov), "CRV1")) {
    spec <- vcov[[1]]
    if (inherits(spec, "formula")) {
      clusters <- all.vars(spec)
    } else if (is.character(spec) && length(spec) >= 1L && !anyNA(spec)) {
      clusters <- trimws(unlist(strsplit(spec, "+", fixed = TRUE)))
    } else {
      .abort(help, call)
    }
  } else {
    .abort(help, call)
  }
  clusters <- clusters[nzchar(clusters)]
  if (length(clusters) < 1L || length(clusters) > 2L || anyDuplicated(clusters)) {
    .abort(sprintf("argument `vcov`: one or two different cluster columns; got %s",
                   paste(clusters, collapse = ", ")), call)
  }
  structure(list(CRV1 = paste(clusters, collapse = "+")), clusters = clusters)
}

# A FeolsResult from Python as an R fit: the result list (see .as_result()) plus `coefficients`
# and the variance matrix with the terms as names.
.as_feols <- function(res) {
  terms <- as.character(unlist(res$terms))
  res$terms <- terms
  res$coefficients <- stats::setNames(as.numeric(res$beta), terms)
  v <- matrix(as.numeric(res$vcov_matrix), length(terms), length(terms), dimnames = list(terms, terms))
  res$vcov_matrix <- v
  class(res) <- unique(c("llmsurrogate_feols", class(res)))
  res
}

#' Fixed-effects OLS
#'
#' OLS with absorbed fixed effects, in the formula syntax of pyfixest (and fixest): numeric
#' regressors, `:` and `*` interactions, and after `|` any number of fixed effects (`a^b` for an
#' interacted one). Standard errors `"iid"`, `"hetero"` (HC1) or clustered (CRV1, one- or
#' two-way), with fixest's small-sample corrections as pyfixest applies them by default
#' (docs/methods/lookahead.md §5.3.1). The demeaning runs in Rust.
#'
#' Rows with a missing value (`NA`) in any column used (outcome, regressors, fixed effects,
#' cluster columns, weights) are dropped, as are rows of weight 0 and, with `fixef_rm =
#' "singleton"`, rows alone in a fixed-effect level; regressors collinear with the others or the
#' fixed effects are dropped. Each drop is counted in the fit (`n_dropped_nan`,
#' `n_dropped_singletons`, `n_dropped_zero_weight`, `dropped_collinear`) and reported by a warning
#' of class `"llmsurrogate_warning"`.
#'
#' Fixed-effect and cluster columns may be factors, characters, numbers, logicals or Dates
#' (their distinct values are the levels); the outcome and regressors must be numeric or logical
#' (make dummies first: a factor regressor is an error). Tibbles work as data frames.
#'
#' How the standard errors compare with R's: `lm()` with factor dummies and
#' `sandwich::vcovCL(type = "HC1")` or `estimatr::lm_robust()` give the same numbers where the
#' definitions coincide; they differ where a fixed effect is nested in the cluster variable
#' (fixest counts its levels out of the degrees of freedom, `lm()` and estimatr keep them), see
#' docs/methods/lookahead.md §5.3.1.
#'
#' @param formula A formula such as `y ~ x1 + x1:x2 | firm + date`, or the same as a string.
#'   Transformations (`log(x)`, `factor(g)`) are not supported: create the column first.
#' @param data A data frame (or tibble).
#' @param vcov `"iid"` (default), `"hetero"` (HC1), `list(CRV1 = "date")`,
#'   `list(CRV1 = c("firm", "date"))` (two-way; also `"firm+date"`), or a one-sided formula
#'   `~date` / `~firm + date` for clustered errors.
#' @param weights `NULL`, the name of a column of `data`, or a numeric vector of `nrow(data)`
#'   non-negative analytic weights.
#' @param fixef_rm `"singleton"` (default, as pyfixest and fixest) or `"none"`.
#' @param n_jobs Threads of the demeaning (`NULL`: all cores or `LLMSURROGATE_NUM_THREADS`).
#' @return An `"llmsurrogate_feols"` fit: a list with `coefficients`, `vcov_matrix`, `terms`,
#'   `nobs`, `r2`, `r2_within`, `rmse`, `df_t` (the t tests' degrees of freedom), `df_k`,
#'   `fe_levels`, `n_clusters`, the drop counts, `table` (one row per term: `term`, `estimate`,
#'   `std_error`, `statistic`, `p_value`, `conf_low`, `conf_high`) and `summary` (the report).
#'   Methods: `print()`, `summary()`, `coef()`, `confint()`, `vcov()`, `nobs()`,
#'   `as.data.frame()`, and with 'broom' or 'generics' `tidy()` and `glance()`; [etable()] puts
#'   several side by side.
#' @seealso [etable()], [lookahead_test()]
#' @importFrom stats coef confint nobs quantile vcov
#' @examples
#' if (llmsurrogate_available()) {
#'   set.seed(1)
#'   d <- data.frame(firm = factor(sample(letters[1:10], 300, TRUE)),
#'                   date = as.Date("2020-01-01") + sample(0:14, 300, TRUE), x = rnorm(300))
#'   d$y <- 2 * d$x + as.integer(d$firm) / 10 + rnorm(300)
#'   fit <- feols(y ~ x | firm + date, d, vcov = list(CRV1 = "date"))
#'   fit
#'   coef(fit)
#'   confint(fit)
#' }
#' @export
feols <- function(formula, data, vcov = "iid", weights = NULL, fixef_rm = "singleton", n_jobs = NULL) {
  call <- sys.call()
  text <- .formula_text(formula, call)
  if (!is.data.frame(data)) {
    .abort(sprintf("argument `data` must be a data frame, not %s", class(data)[1]), call)
  }
  vc <- .vcov_arg(vcov, call)
  clusters <- attr(vc, "clusters")
  attr(vc, "clusters") <- NULL
  .check_columns(clusters, data, "vcov", call)
  fixef_rm <- .check_string(fixef_rm, "fixef_rm", call)
  n_jobs <- .check_n_jobs(n_jobs, call)
  used <- intersect(.formula_names(text), names(data))
  # names in a plain formula that are not columns: said here, with a suggestion (a formula with
  # other syntax, e.g. log(x), goes to Python, whose parser names the unsupported term)
  if (!grepl("[^A-Za-z0-9_. ~+:*^|-]", text)) {
    missing <- setdiff(.formula_names(text), names(data))
    if (length(missing)) .check_columns(missing, data, "formula", call)
  }
  w <- NULL
  if (!is.null(weights)) {
    if (is.character(weights) && length(weights) == 1L && !is.na(weights)) {
      .check_columns(weights, data, "weights", call)
      used <- c(used, weights)
      w <- weights
    } else if (is.numeric(weights) || is.logical(weights)) {
      if (length(weights) != nrow(data)) {
        .abort(sprintf("argument `weights` has %d values for %d rows of `data`", length(weights), nrow(data)), call)
      }
      w <- .vector_arg(as.numeric(weights), "weights", call)
    } else {
      .abort(sprintf("argument `weights` must be NULL, a column name or a numeric vector; got %s",
                     .r_type(weights)), call)
    }
  }
  cols <- .frame_arg(data[unique(c(used, clusters))], call = call)
  out <- .call_in(call, "fe.feols", text, cols, vc, w, fixef_rm = fixef_rm, n_jobs = n_jobs)
  .as_feols(out)
}

#' @rdname feols
#' @param x,object An `"llmsurrogate_feols"` fit.
#' @param digits Significant digits printed.
#' @param ... Unused.
#' @export
print.llmsurrogate_feols <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat(sprintf("OLS estimation, dependent variable: %s\n", x$outcome))
  cat(sprintf("Observations: %s", format(x$nobs, big.mark = ",")))
  dropped <- c(`with NA` = x$n_dropped_nan, singletons = x$n_dropped_singletons, `zero weight` = x$n_dropped_zero_weight)
  dropped <- dropped[dropped > 0]
  if (length(dropped)) {
    cat(sprintf(" (dropped: %s)", paste(sprintf("%d %s", dropped, names(dropped)), collapse = ", ")))
  }
  cat("\n")
  if (length(x$fe_levels)) {
    cat(sprintf("Fixed effects: %s\n",
                paste(sprintf("%s (%s levels)", names(x$fe_levels), unlist(x$fe_levels)), collapse = ", ")))
  }
  se <- x$vcov_type
  if (length(x$n_clusters)) {
    se <- sprintf("%s (%s clusters)", se, paste(unlist(x$n_clusters), collapse = ", "))
  }
  cat(sprintf("Standard errors: %s; t tests with %d degrees of freedom\n", se, as.integer(x$df_t)))
  stats::printCoefmat(.coef_matrix(x), digits = digits, has.Pvalue = TRUE, P.values = TRUE)
  fit <- sprintf("RMSE: %s   R2: %s", format(x$rmse, digits = digits), format(x$r2, digits = digits))
  if (length(x$fe_levels)) fit <- paste0(fit, sprintf("   Within R2: %s", format(x$r2_within, digits = digits)))
  cat(fit, "\n", sep = "")
  if (length(x$dropped_collinear)) {
    cat(sprintf("Dropped as collinear: %s\n", paste(unlist(x$dropped_collinear), collapse = ", ")))
  }
  invisible(x)
}

.coef_matrix <- function(x) {
  tab <- x$table
  out <- cbind(tab$estimate, tab$std_error, tab$statistic, tab$p_value)
  dimnames(out) <- list(tab$term, c("Estimate", "Std. Error", "t value", "Pr(>|t|)"))
  out
}

#' @rdname feols
#' @export
summary.llmsurrogate_feols <- function(object, ...) {
  structure(list(coefficients = .coef_matrix(object), conf.int = confint(object), nobs = object$nobs,
                 r2 = object$r2, r2_within = object$r2_within, vcov_type = object$vcov_type, df = object$df_t,
                 text = .r_spellings(object$summary)),
            class = "summary.llmsurrogate_feols")
}

#' @rdname feols
#' @export
print.summary.llmsurrogate_feols <- function(x, ...) {
  cat(x$text, "\n", sep = "")
  invisible(x)
}

#' @rdname feols
#' @export
coef.llmsurrogate_feols <- function(object, ...) object$coefficients

#' @rdname feols
#' @export
vcov.llmsurrogate_feols <- function(object, ...) object$vcov_matrix

#' @rdname feols
#' @export
nobs.llmsurrogate_feols <- function(object, ...) as.integer(object$nobs)

#' @rdname feols
#' @param parm,level For `confint()`: the terms (names or positions; all by default) and the
#'   confidence level; t quantiles with the fit's degrees of freedom (`df_t`).
#' @export
confint.llmsurrogate_feols <- function(object, parm, level = 0.95, ...) {
  if (!is.numeric(level) || length(level) != 1L || is.na(level) || level <= 0 || level >= 1) {
    .abort("argument `level` must be a single number in (0, 1)", sys.call())
  }
  b <- coef(object)
  se <- sqrt(diag(object$vcov_matrix))
  a <- (1 - level) / 2
  q <- stats::qt(1 - a, object$df_t)
  out <- cbind(b - q * se, b + q * se)
  pct <- paste(format(100 * c(a, 1 - a), trim = TRUE, scientific = FALSE, digits = 3), "%")
  dimnames(out) <- list(names(b), pct)
  if (!missing(parm)) out <- out[parm, , drop = FALSE]
  out
}

#' @rdname feols
#' @param conf.level For `tidy()`: the level of `conf.low` and `conf.high`.
#' @exportS3Method generics::tidy
tidy.llmsurrogate_feols <- function(x, conf.level = 0.95, ...) {
  tab <- x$table
  ci <- confint(x, level = conf.level)
  data.frame(term = tab$term, estimate = tab$estimate, std.error = tab$std_error, statistic = tab$statistic,
             p.value = tab$p_value, conf.low = unname(ci[, 1]), conf.high = unname(ci[, 2]),
             stringsAsFactors = FALSE)
}

#' @rdname feols
#' @exportS3Method generics::glance
glance.llmsurrogate_feols <- function(x, ...) {
  data.frame(nobs = as.integer(x$nobs), r.squared = x$r2, within.r.squared = x$r2_within, rmse = x$rmse,
             vcov_type = x$vcov_type, df = as.integer(x$df_t), n_dropped_nan = as.integer(x$n_dropped_nan),
             n_dropped_singletons = as.integer(x$n_dropped_singletons), stringsAsFactors = FALSE)
}

#' Fixed-effects regressions side by side
#'
#' The table economists put in papers: one column per model, coefficients with significance
#' stars (`*** p<0.001, ** p<0.01, * p<0.05`) and standard errors in parentheses, then the fixed
#' effects, the standard-error type, observations, R2 and within R2.
#'
#' @param ... Fits from [feols()], lists of them, or results of [lookahead_test()] (which give
#'   their two regressions, without and with the LAP terms).
#' @param format `"text"` (default), `"latex"` (a booktabs `tabular`) or `"data.frame"`.
#' @param digits Decimals.
#' @param stars Significance stars.
#' @return For `"text"` and `"latex"` a string of class `"llmsurrogate_etable"` (printed as is;
#'   `cat()` or `writeLines()` it into a file); for `"data.frame"` the table, its row labels in
#'   column `row`.
#' @examples
#' if (llmsurrogate_available()) {
#'   set.seed(1)
#'   d <- data.frame(firm = sample(1:10, 300, TRUE), date = sample(1:15, 300, TRUE), x = rnorm(300),
#'                   z = rnorm(300))
#'   d$y <- 2 * d$x + rnorm(300)
#'   f1 <- feols(y ~ x | firm, d)
#'   f2 <- feols(y ~ x + z | firm + date, d, vcov = ~date)
#'   etable(f1, f2)
#'   etable(f1, f2, format = "latex")
#' }
#' @export
etable <- function(..., format = c("text", "latex", "data.frame"), digits = 3, stars = TRUE) {
  call <- sys.call()
  format <- match.arg(format)
  fits <- list()
  add <- function(m) {
    if (inherits(m, "llmsurrogate_feols")) {
      fits[[length(fits) + 1L]] <<- m
    } else if (inherits(m, "llmsurrogate_lookahead_test")) {
      fits[[length(fits) + 1L]] <<- m$baseline
      fits[[length(fits) + 1L]] <<- m$regression
    } else if (is.list(m) && !is.object(m)) {
      for (mm in m) add(mm)
    } else {
      .abort(sprintf("etable() takes fits from feols() or results of lookahead_test(); got %s", class(m)[1]), call)
    }
  }
  for (m in list(...)) add(m)
  if (!length(fits)) .abort("etable() needs at least one fit from feols()", call)
  digits <- .check_scalar(digits, "digits", call)
  stars <- .check_flag(stars, "stars", call)
  type <- c(text = "text", latex = "tex", data.frame = "df")[[format]]
  out <- .call_in(call, "fe.etable", lapply(fits, function(f) f$json), type = type,
                  digits = as.integer(digits), stars = stars)
  if (format == "data.frame") return(out)
  structure(out, class = "llmsurrogate_etable", format = format)
}

#' @rdname etable
#' @param x An `"llmsurrogate_etable"`.
#' @export
print.llmsurrogate_etable <- function(x, ...) {
  cat(x, "\n", sep = "")
  invisible(x)
}
