# S3 methods for results returned by the Python side (class "llmsurrogate_result", plus a
# specific class such as "llmsurrogate_intervals").

#' Methods for llmsurrogate results
#'
#' `print()` is short: the title and the main numbers (for an ESS, the lower bound with its
#' one-sided interval, the plug-in ESS and the LLM's error). `summary()` is fuller: the whole
#' report (every setting, the per-grid-point table, the notes), with R's spellings (`TRUE`,
#' `FALSE`, `Inf`, `NA`). `as.data.frame()` gives the result's table, one row per estimate, with
#' plain columns: the tuned hyperparameters (`params`) become one column each, `param_<name>`
#' (`NA` where a grid point has none).
#'
#' With the 'broom' package (or 'generics') installed, `tidy()`, `glance()` are available:
#' `tidy()` is the table in broom's names (`estimate`, `std.error`, `statistic`, `p.value`,
#' `conf.low`, `conf.high` where they apply; for an ESS or an error curve a first column `term` names
#' each row's training size, `N = 5`), `glance()` one row of the result's scalar fields.
#' `confint()` gives the confidence intervals (an ESS: its one-sided interval \[lower bound, Inf),
#' at level 1 - `alpha` chosen when it was computed; an error curve: one interval per training
#' size, at its `level`) and `coef()` the point estimates (an ESS: the lower bound and the plug-in ESS; an error
#' curve: the error per training size).
#'
#' @param x,object A result, e.g. from [ess()], [error_curve()] or [llmsurrogate_demo()].
#' @param row.names,optional Passed on as in [as.data.frame()]: `row.names` replaces the row
#'   names; `optional` is ignored.
#' @param parm,level For `confint()`: which estimates (names or positions; all by default) and
#'   the level, which must be the one the result was computed at (an ESS: 1 - `alpha`; an error
#'   curve: its `level`).
#' @param ... Unused.
#' @return `print()` returns `x` invisibly; `summary()` a `"summary.llmsurrogate_result"`;
#'   `as.data.frame()`, `tidy()` and `glance()` data frames; `confint()` a matrix with one row
#'   per estimate; `coef()` a named numeric vector.
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' d <- data.frame(y = rnorm(80), x = rnorm(80))
#' d$llm <- d$x / 2
#' res <- ess(d, "y", "llm", algorithm = "lasso", grid = c(2, 5, 10), n_jobs = 1)
#' res
#' summary(res)
#' confint(res)
#' coef(res)
#' head(as.data.frame(res))
#' @name llmsurrogate_result
NULL

# Pointers of Python's printed text to the repository's docs/methods pages, which an installed R
# package lacks, as the R help page that says the same.
# (names: regular expressions; a section number after the page goes with it).
.r_help_of_docs <- c("docs/methods/lookahead\\.md \u00a75\\.3\\.1" = "?ssc and ?feols",
                     "docs/methods/ppi\\.md( \u00a7[0-9]+(\\.[0-9]+)*)?" = "?ppi_mean")

# Python's spellings in printed text as R's: True/False/None/inf/nan -> TRUE/FALSE/NA/Inf/NaN, and
# docs/methods pointers as R help pages (.r_help_of_docs).
.r_spellings <- function(text) {
  for (doc in names(.r_help_of_docs)) text <- gsub(doc, .r_help_of_docs[[doc]], text, perl = TRUE)
  text <- gsub("\\bTrue\\b", "TRUE", text, perl = TRUE)
  text <- gsub("\\bFalse\\b", "FALSE", text, perl = TRUE)
  text <- gsub("\\bNone\\b", "NA", text, perl = TRUE)
  text <- gsub("(?<![A-Za-z0-9_.])inf\\b", "Inf", text, perl = TRUE)
  gsub("(?<![A-Za-z0-9_.])nan\\b", "NaN", text, perl = TRUE)
}

.fmt <- function(x, digits = 4) {
  if (is.null(x) || length(x) == 0L) return("NA")
  if (is.numeric(x)) return(format(x, digits = digits))
  as.character(x)
}

#' @rdname llmsurrogate_result
#' @export
print.llmsurrogate_result <- function(x, ...) {
  cat(x$title, "\n", sep = "")
  if (inherits(x, "llmsurrogate_ess")) {
    level <- if (is.numeric(x$alpha)) sprintf("%g%%", 100 * (1 - x$alpha)) else ""
    cat(sprintf("ESS lower bound %s (one-sided %s CI [%s, Inf)); plug-in ESS %s\n", .fmt(x$lower_bound), level,
                .fmt(x$lower_bound), .fmt(x$plugin)))
    cat(sprintf("LLM error %s (SE %s); status: %s\n", .fmt(x$llm_error), .fmt(x$llm_se), .fmt(x$status)))
  } else if (inherits(x, "llmsurrogate_error_curve")) {
    tab <- x$table
    cat(sprintf("error by training size N: %s\n",
                paste(sprintf("%s: %s", tab$n_train, .fmt(tab$error)), collapse = ", ")))
  } else if (is.data.frame(x$table) && nrow(x$table)) {
    print(utils::head(as.data.frame(x), 6L), row.names = FALSE)
    if (nrow(x$table) > 6L) cat(sprintf("... %d more rows\n", nrow(x$table) - 6L))
  }
  cat("Use summary() for the full report, as.data.frame() for the table.\n")
  invisible(x)
}

#' @rdname llmsurrogate_result
#' @export
summary.llmsurrogate_result <- function(object, ...) {
  structure(list(kind = object$kind, title = object$title, table = as.data.frame(object),
                 text = .r_spellings(object$summary)),
            class = "summary.llmsurrogate_result")
}

#' @rdname llmsurrogate_result
#' @export
print.summary.llmsurrogate_result <- function(x, ...) {
  cat(x$text, "\n", sep = "")
  invisible(x)
}

# The `params` column (JSON per row, llmsurrogate.ess) as one column per hyperparameter.
.expand_params <- function(df) {
  if (!"params" %in% names(df) || !is.character(df$params)) {
    return(df)
  }
  parsed <- lapply(df$params, function(p) {
    if (is.na(p) || !nzchar(p)) return(list())
    tryCatch(jsonlite::fromJSON(p, simplifyVector = FALSE), error = function(e) list())
  })
  keys <- unique(unlist(lapply(parsed, names)))
  out <- df[setdiff(names(df), "params")]
  for (k in keys) {
    vals <- lapply(parsed, function(p) if (is.null(p[[k]])) NA else p[[k]])
    col <- if (all(lengths(vals) == 1L)) unlist(vals) else vapply(vals, function(v) paste(v, collapse = ","), "")
    out[[paste0("param_", k)]] <- col
  }
  out
}

#' @rdname llmsurrogate_result
#' @export
as.data.frame.llmsurrogate_result <- function(x, row.names = NULL, optional = FALSE, ...) {
  out <- .expand_params(x$table)
  if (!is.null(row.names)) {
    row.names(out) <- row.names
  }
  out
}

# broom's names for a result's table.
.tidy_names <- c(diff = "estimate", diff_se = "std.error", z = "statistic", p_value = "p.value",
                 error = "estimate", se = "std.error", ci_low = "conf.low", ci_high = "conf.high",
                 lower = "conf.low", upper = "conf.high")

#' @rdname llmsurrogate_result
#' @exportS3Method generics::tidy
tidy.llmsurrogate_result <- function(x, ...) {
  out <- as.data.frame(x)
  if (inherits(x, c("llmsurrogate_ess", "llmsurrogate_error_curve"))) {
    hit <- names(out) %in% names(.tidy_names) & !(.tidy_names[names(out)] %in% names(out))
    names(out)[hit] <- .tidy_names[names(out)[hit]]
    # broom's first column names the estimate of each row: here the training size N of the row
    if (!"term" %in% names(out) && "n_train" %in% names(out)) {
      out <- cbind(term = sprintf("N = %s", format(out$n_train, scientific = FALSE, trim = TRUE)), out,
                   stringsAsFactors = FALSE)
    }
  }
  out
}

#' @rdname llmsurrogate_result
#' @exportS3Method generics::glance
glance.llmsurrogate_result <- function(x, ...) {
  skip <- c("kind", "title", "table", "summary", "json", "permutation", "permutation_hash", "notes", "ci")
  keep <- Filter(function(v) is.atomic(v) && length(v) == 1L, x[setdiff(names(x), skip)])
  as.data.frame(keep, stringsAsFactors = FALSE, optional = TRUE)
}

# The confidence level of a result's intervals: an error curve's `level` (an error curve saved
# before the rename has `alpha`), an ESS result's 1 - `alpha`; NULL when it has neither.
.ci_level <- function(x) {
  if (is.numeric(x$level) && length(x$level) == 1L) return(x$level)
  if (is.numeric(x$alpha) && length(x$alpha) == 1L) return(1 - x$alpha)
  NULL
}

.check_level <- function(level, object, call) {
  own <- .ci_level(object)
  if (is.null(own)) return(invisible())
  if (!is.numeric(level) || length(level) != 1L || abs(level - own) > 1e-9) {
    how <- if (inherits(object, "llmsurrogate_ess")) " (1 - alpha); compute the result again with alpha = 1 - level" else
      "; compute the result again with that level"
    .abort(sprintf("argument `level`: this result's intervals are at level %g%s for another level", own, how), call)
  }
}

#' @rdname llmsurrogate_result
#' @export
confint.llmsurrogate_result <- function(object, parm, level = NULL, ...) {
  call <- sys.call()
  if (is.null(level)) level <- if (is.null(.ci_level(object))) 0.95 else .ci_level(object)
  .check_level(level, object, call)
  pct <- function(p) paste(format(100 * p, trim = TRUE, scientific = FALSE, digits = 3), "%")
  if (inherits(object, "llmsurrogate_ess")) {
    out <- matrix(c(object$lower_bound, Inf), 1L, dimnames = list("ess", c(pct(1 - level), "100 %")))
  } else if (is.data.frame(object$table) && all(c("ci_low", "ci_high") %in% names(object$table))) {
    tab <- object$table
    rn <- if ("n_train" %in% names(tab)) paste0("N=", tab$n_train) else as.character(seq_len(nrow(tab)))
    out <- cbind(tab$ci_low, tab$ci_high)
    dimnames(out) <- list(rn, c(pct((1 - level) / 2), pct(1 - (1 - level) / 2)))
  } else {
    .abort(sprintf("confint() has no intervals for a result of kind %s", object$kind), call)
  }
  if (!missing(parm)) out <- out[parm, , drop = FALSE]
  out
}

#' @rdname llmsurrogate_result
#' @export
coef.llmsurrogate_result <- function(object, ...) {
  if (inherits(object, "llmsurrogate_ess")) {
    return(c(ess = as.numeric(object$lower_bound), ess_plugin = as.numeric(object$plugin)))
  }
  tab <- object$table
  if (inherits(object, "llmsurrogate_error_curve")) {
    return(stats::setNames(tab$error, paste0("N=", tab$n_train)))
  }
  .abort(sprintf("coef() has no point estimates for a result of kind %s; see as.data.frame()", object$kind),
         sys.call())
}

#' Plot forecast intervals
#'
#' Base-graphics plot of an `"llmsurrogate_intervals"` result: one panel per metric, a
#' horizontal segment from `lower` to `upper` per model, with a logarithmic x axis for the raw
#' transfer error. Each x axis is labelled with its metric, the logarithmic one with
#' "(log scale)".
#'
#' @param x An `"llmsurrogate_intervals"` object, from [llmsurrogate_demo()].
#' @param y Unused.
#' @param log_raw Use a log scale for the raw-transfer-error panel (when its ends are positive).
#' @param col,lwd Colour and width of the interval segments.
#' @param ... Further graphical parameters for [graphics::segments()].
#' @return `x`, invisibly.
#' @examplesIf llmsurrogate_available()
#' plot(llmsurrogate_demo())
#' @export
plot.llmsurrogate_intervals <- function(x, y, log_raw = TRUE, col = "steelblue", lwd = 3, ...) {
  tab <- x$table
  metrics <- unique(tab$metric)
  models <- unique(tab$model)
  n <- length(models)
  labels <- .plotmath_labels(models)
  label_width <- max(graphics::strwidth(labels, units = "inches", cex = 0.8))

  op <- graphics::par(mfrow = c(1L, length(metrics)), oma = c(0, 0, 2, 0))
  on.exit(graphics::par(op), add = TRUE)
  for (i in seq_along(metrics)) {
    sub <- tab[tab$metric == metrics[i], , drop = FALSE]
    yy <- n + 1L - match(sub$model, models)
    ends <- c(sub$lower, sub$upper)
    ends <- ends[is.finite(ends)]
    use_log <- log_raw && metrics[i] == "raw transfer error" && length(ends) && all(ends > 0)

    graphics::par(mai = c(0.7, if (i == 1L) label_width + 0.25 else 0.15, 0.45, 0.15))
    graphics::plot.new()
    graphics::plot.window(xlim = range(ends), ylim = c(0.5, n + 0.5), log = if (use_log) "x" else "")
    graphics::abline(v = graphics::axTicks(1), col = "grey90")
    graphics::segments(sub$lower, yy, sub$upper, yy, col = col, lwd = lwd, lend = "butt", ...)
    graphics::points(c(sub$lower, sub$upper), c(yy, yy), pch = "|")
    graphics::axis(1, cex.axis = 0.8)
    graphics::axis(2, at = n:1, labels = if (i == 1L) labels else FALSE, las = 1, cex.axis = 0.8)
    graphics::box()
    graphics::title(main = metrics[i], cex.main = 0.9, font.main = 1)
    graphics::title(xlab = if (use_log) paste(metrics[i], "(log scale)") else metrics[i], line = 2.2, cex.lab = 0.8)
  }
  graphics::mtext(x$title, outer = TRUE, line = 0.5, cex = 0.8)
  invisible(x)
}

# Model labels such as "CPT \u03b1,\u03b2" as plotmath expressions, so that the Greek letters
# come from the symbol font and show on every device (pdf() and postscript() cannot encode them
# as text). Labels without Greek letters stay strings.
.greek_names <- c("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
                  "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "sigma",
                  "tau", "upsilon", "phi", "chi", "psi", "omega")

.plotmath_labels <- function(x) {
  codes <- lapply(x, utf8ToInt)
  greek <- vapply(codes, function(cp) any(cp >= 0x3b1L & cp <= 0x3c9L), logical(1))
  if (!any(greek)) {
    return(x)
  }
  as.expression(lapply(seq_along(x), function(i) {
    if (!greek[i]) {
      return(x[i])
    }
    cp <- codes[[i]]
    is_greek <- cp >= 0x3b1L & cp <= 0x3c9L
    run <- cumsum(c(TRUE, diff(is_greek) != 0 | is_greek[-1]))
    parts <- vapply(split(cp, run), function(r) {
      if (length(r) == 1L && r >= 0x3b1L && r <= 0x3c9L) .greek_names[r - 0x3b0L]
      else encodeString(intToUtf8(r), quote = "\"")
    }, character(1))
    str2lang(paste(parts, collapse = "*"))
  }))
}

# ---- K-option evaluations and answer comparisons (evaluate_risk_scores(), compare_answers()) -----

# Each row's estimate named: the metric of a K-option evaluation, "distance (group)" of a comparison.
.estimate_terms <- function(x) {
  tab <- x$table
  if (inherits(x, "llmsurrogate_answer_comparison")) sprintf("%s (%s)", tab$distance, tab$group) else tab$metric
}

#' Methods for K-option evaluations and answer comparisons
#'
#' The results of [evaluate_risk_scores()] with K probability columns (class
#' `"llmsurrogate_multiclass_evaluation"`) and of [compare_answers()] (class
#' `"llmsurrogate_answer_comparison"`). `print()` shows every estimate with its interval;
#' `summary()` the full report (see [llmsurrogate_result]). `tidy()` (with 'broom' or 'generics'
#' installed) gives one row per estimate in broom's names: `term` (the metric; for a comparison
#' the distance and its group, `"tv (all rows)"`), `estimate`, `std.error`, `conf.low`,
#' `conf.high`, and for a comparison `scope`, `group`, `distance`, `bias`, `n` and `weight`.
#' `coef()` the estimates by term, `confint()` their bootstrap intervals. `plot()` draws the
#' top-label reliability diagram of an evaluation (the share of correct most-probable answers
#' against the confidence, with bootstrap intervals) or the distances of a comparison with their
#' intervals, one panel per distance (total variation; Wasserstein-1 for ordered options): each
#' group in blue, the mean of the groups in orange, all rows pooled in black.
#'
#' @param x,object The result.
#' @param parm,level For `confint()`: which estimates (names or positions; all by default) and the
#'   level, which must be the one the result was computed at.
#' @param distance For plotting a comparison: `NULL` (default) for every distance it has, or
#'   `"tv"`, `"w1"` or both.
#' @param y,... Unused.
#' @return `print()` and `plot()` return `x` invisibly; `tidy()` a data frame; `coef()` a named
#'   numeric vector; `confint()` a matrix with one row per estimate.
#' @examplesIf llmsurrogate_available()
#' p <- rbind(c(.7, .2, .1), c(.1, .6, .3), c(.2, .2, .6), c(.3, .3, .4))
#' colnames(p) <- c("a", "b", "c")
#' ev <- evaluate_risk_scores(c("a", "b", "c", "c"), p, n_boot = 20)
#' coef(ev)
#' confint(ev, "accuracy")
#' cmp <- compare_answers(c("a", "b", "b", "c"), p, n_boot = 20)
#' coef(cmp)
#' @name llmsurrogate_options
NULL

#' @rdname llmsurrogate_options
#' @export
print.llmsurrogate_multiclass_evaluation <- function(x, ...) {
  m <- x$meta
  cat(sprintf("%s: %d rows, K = %d options (%s)%s%s\n", x$title, m$n, m$K, paste(m$options, collapse = ", "),
              if (isTRUE(m$ordered)) ", ordered" else "", if (isTRUE(m$weighted)) ", survey weights" else ""))
  .print_estimates(x)
}

#' @rdname llmsurrogate_options
#' @export
print.llmsurrogate_answer_comparison <- function(x, ...) {
  m <- x$meta
  cat(sprintf("%s: %d rows, options %s%s; LLM distribution: %s%s\n", x$title, m$n,
              paste(m$options, collapse = ", "), if (isTRUE(m$ordered)) " (ordered)" else "", m$llm_answer,
              if (isTRUE(m$weighted)) "; survey weights" else ""))
  .print_estimates(x)
}

.print_estimates <- function(x) {
  t <- .tidy_estimates(x)
  level <- x$meta$level
  ci <- if (isTRUE(x$meta$n_boot > 0)) sprintf("%g%% bootstrap intervals", 100 * level) else "no intervals (n_boot = 0)"
  cat(sprintf("Estimates (%s):\n", ci))
  shown <- data.frame(term = t$term, estimate = signif(t$estimate, 4), std.error = signif(t$std.error, 3),
                      conf.low = signif(t$conf.low, 4), conf.high = signif(t$conf.high, 4))
  print(shown, row.names = FALSE)
  cat("Use summary() for the full report, tidy() for the table.\n")
  invisible(x)
}

# broom's table of a K-option evaluation or an answer comparison (tidy() and the methods below).
.tidy_estimates <- function(x) {
  tab <- x$table
  out <- data.frame(term = .estimate_terms(x), estimate = tab$value, std.error = tab$se, conf.low = tab$ci_low,
                    conf.high = tab$ci_high, stringsAsFactors = FALSE)
  if (inherits(x, "llmsurrogate_answer_comparison")) {
    out <- cbind(out, tab[c("scope", "group", "distance", "bias", "n", "weight")])
  }
  out
}

#' @rdname llmsurrogate_options
#' @exportS3Method generics::tidy
tidy.llmsurrogate_multiclass_evaluation <- function(x, ...) .tidy_estimates(x)

#' @rdname llmsurrogate_options
#' @exportS3Method generics::tidy
tidy.llmsurrogate_answer_comparison <- function(x, ...) .tidy_estimates(x)

.estimates_coef <- function(object) stats::setNames(object$table$value, .estimate_terms(object))

.estimates_confint <- function(object, parm, level, call) {
  own <- object$meta$level
  if (is.null(level)) level <- own
  if (!is.numeric(level) || length(level) != 1L || abs(level - own) > 1e-9) {
    .abort(sprintf(paste("argument `level`: this result's intervals are at level %g; compute the result again",
                         "with level = %s for another level"), own, format(level)), call)
  }
  pct <- function(p) paste(format(100 * p, trim = TRUE, scientific = FALSE, digits = 3), "%")
  out <- cbind(object$table$ci_low, object$table$ci_high)
  dimnames(out) <- list(.estimate_terms(object), c(pct((1 - level) / 2), pct(1 - (1 - level) / 2)))
  if (!missing(parm)) out <- out[parm, , drop = FALSE]
  out
}

#' @rdname llmsurrogate_options
#' @export
coef.llmsurrogate_multiclass_evaluation <- function(object, ...) .estimates_coef(object)

#' @rdname llmsurrogate_options
#' @export
coef.llmsurrogate_answer_comparison <- function(object, ...) .estimates_coef(object)

#' @rdname llmsurrogate_options
#' @export
confint.llmsurrogate_multiclass_evaluation <- function(object, parm, level = NULL, ...) {
  .estimates_confint(object, parm, level, sys.call())
}

#' @rdname llmsurrogate_options
#' @export
confint.llmsurrogate_answer_comparison <- function(object, parm, level = NULL, ...) {
  .estimates_confint(object, parm, level, sys.call())
}

# Points with error bars: x and its interval [lo, hi] at heights y (base graphics).
.error_bars <- function(x, y, lo, hi, horizontal, col) {
  ok <- is.finite(lo) & is.finite(hi) & hi > lo  # a zero-length bar draws nothing (and warns)
  if (horizontal) {
    graphics::arrows(lo[ok], y[ok], hi[ok], y[ok], angle = 90, code = 3, length = 0.03, col = col[ok])
  } else {
    graphics::arrows(y[ok], lo[ok], y[ok], hi[ok], angle = 90, code = 3, length = 0.03, col = col[ok])
  }
}

#' @rdname llmsurrogate_options
#' @export
plot.llmsurrogate_multiclass_evaluation <- function(x, y, ...) {
  t <- x$reliability
  graphics::plot(c(0, 1), c(0, 1), type = "n", xlab = "confidence (largest probability)", ylab = "share correct",
                 main = paste0("Top-label calibration", if (isTRUE(x$meta$weighted)) " (weighted)" else ""), ...)
  graphics::abline(0, 1, lty = 3, col = "grey")
  if (is.data.frame(t) && nrow(t)) {
    graphics::lines(t$mean_probability, t$frequency, type = "b", pch = 19)
    .error_bars(t$frequency, t$mean_probability, t$ci_low, t$ci_high, FALSE, rep("black", nrow(t)))
  }
  invisible(x)
}

#' @rdname llmsurrogate_options
#' @export
plot.llmsurrogate_answer_comparison <- function(x, y, distance = NULL, ...) {
  call <- sys.call()
  have <- unique(x$table$distance)
  if (is.null(distance)) {
    distance <- intersect(c("tv", "w1"), have)
  } else if (!is.character(distance) || !length(distance) || anyNA(distance)) {
    .abort(sprintf("argument `distance` must be NULL (every distance) or a character vector of \"tv\" and \"w1\"; got %s",
                   .r_type(distance)), call)
  }
  for (d in distance) {
    if (!d %in% have) {
      .abort(sprintf("argument `distance`: no \"%s\" distance in this comparison%s", d,
                     if (identical(d, "w1")) " (w1 needs ordered = TRUE)" else ""), call)
    }
  }
  labels <- c(tv = "total variation distance", w1 = "Wasserstein-1 distance (scale steps)")
  # rows from the top: each group, the mean of the groups, all rows pooled
  scope_order <- c(group = 1L, group_mean = 2L, pooled = 3L)
  tabs <- lapply(distance, function(d) {
    t <- x$table[x$table$distance == d, , drop = FALSE]
    t[order(scope_order[t$scope], seq_len(nrow(t))), , drop = FALSE]
  })
  groups <- tabs[[1]]$group
  n <- length(groups)
  pos <- rev(seq_len(n))
  col <- c(group = "steelblue", group_mean = "darkorange3", pooled = "black")[tabs[[1]]$scope]
  op <- graphics::par(mfrow = c(1L, length(distance)), oma = c(0, 0, 2, 0))
  on.exit(graphics::par(op), add = TRUE)
  for (i in seq_along(distance)) {
    t <- tabs[[i]]
    hi <- max(c(t$value, t$ci_high), na.rm = TRUE)
    left <- if (i == 1L) max(4, 0.5 + 0.55 * max(nchar(groups))) else 1
    graphics::par(mar = c(4.5, left, 2, 1))
    graphics::plot(t$value, pos, xlim = c(0, if (is.finite(hi) && hi > 0) hi * 1.05 else 1), ylim = c(0.5, n + 0.5),
                   pch = ifelse(t$scope == "group", 19, 15), col = col, yaxt = "n", ylab = "",
                   xlab = labels[[distance[i]]], ...)
    graphics::axis(2, at = pos, labels = if (i == 1L) groups else FALSE, las = 1)
    n_groups <- sum(t$scope == "group")
    if (n_groups > 0L && n_groups < n) graphics::abline(h = n - n_groups + 0.5, col = "grey80")
    .error_bars(t$value, pos, t$ci_low, t$ci_high, TRUE, col)
    graphics::title(main = toupper(distance[i]), cex.main = 0.9, font.main = 1)
  }
  graphics::mtext(paste0("Does the LLM answer like the population? Distances between their answer distributions",
                         if (isTRUE(x$meta$weighted)) " (weighted)" else ""), outer = TRUE, line = 0.5, font = 2)
  invisible(x)
}
