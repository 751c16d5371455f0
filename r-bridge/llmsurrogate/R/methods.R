# S3 methods for results returned by the Python side (class "llmsurrogate_result", plus a
# specific class such as "llmsurrogate_intervals").

#' Methods for llmsurrogate results
#'
#' `print()` shows the result's summary text (as the Python package prints it); `summary()`
#' returns an object of class `"summary.llmsurrogate_result"` holding the title, the table and
#' that text; `as.data.frame()` gives the tidy table, one row per estimate.
#'
#' @param x,object A result, e.g. from [llmsurrogate_demo()].
#' @param row.names,optional Passed on as in [as.data.frame()]: `row.names` replaces the row
#'   names; `optional` is ignored.
#' @param ... Unused.
#' @return `print()` returns `x` invisibly; `summary()` a `"summary.llmsurrogate_result"`;
#'   `as.data.frame()` a data frame.
#' @name llmsurrogate_result
NULL

#' @rdname llmsurrogate_result
#' @export
print.llmsurrogate_result <- function(x, ...) {
  cat(x$summary, "\n", sep = "")
  invisible(x)
}

#' @rdname llmsurrogate_result
#' @export
summary.llmsurrogate_result <- function(object, ...) {
  structure(list(kind = object$kind, title = object$title, table = object$table,
                 text = object$summary),
            class = "summary.llmsurrogate_result")
}

#' @rdname llmsurrogate_result
#' @export
print.summary.llmsurrogate_result <- function(x, ...) {
  cat(x$text, "\n", sep = "")
  invisible(x)
}

#' @rdname llmsurrogate_result
#' @export
as.data.frame.llmsurrogate_result <- function(x, row.names = NULL, optional = FALSE, ...) {
  out <- x$table
  if (!is.null(row.names)) {
    row.names(out) <- row.names
  }
  out
}

#' Plot forecast intervals
#'
#' Base-graphics plot of an `"llmsurrogate_intervals"` result: one panel per metric, a
#' horizontal segment from `lower` to `upper` per model, with a logarithmic x axis for the raw
#' transfer error.
#'
#' @param x An `"llmsurrogate_intervals"` object, from [llmsurrogate_demo()].
#' @param y Unused.
#' @param log_raw Use a log scale for the raw-transfer-error panel (when its ends are positive).
#' @param col,lwd Colour and width of the interval segments.
#' @param ... Further graphical parameters for [graphics::segments()].
#' @return `x`, invisibly.
#' @examples
#' if (llmsurrogate_available()) plot(llmsurrogate_demo())
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

    graphics::par(mai = c(0.6, if (i == 1L) label_width + 0.25 else 0.15, 0.45, 0.15))
    graphics::plot.new()
    graphics::plot.window(xlim = range(ends), ylim = c(0.5, n + 0.5), log = if (use_log) "x" else "")
    graphics::abline(v = graphics::axTicks(1), col = "grey90")
    graphics::segments(sub$lower, yy, sub$upper, yy, col = col, lwd = lwd, lend = "butt", ...)
    graphics::points(c(sub$lower, sub$upper), c(yy, yy), pch = "|")
    graphics::axis(1, cex.axis = 0.8)
    graphics::axis(2, at = n:1, labels = if (i == 1L) labels else FALSE, las = 1, cex.axis = 0.8)
    graphics::box()
    graphics::title(main = metrics[i], cex.main = 0.9, font.main = 1)
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
