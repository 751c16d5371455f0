# Conversion of the Python side's plain values (see llmsurrogate.rbridge.to_plain) into R objects,
# and the single entry point for calls into Python.

# One column: a vector as is; a list (None arrives as NULL) as an atomic vector with NA.
.as_column <- function(x) {
  if (is.null(x)) {
    return(logical(0))
  }
  if (!is.list(x)) {
    return(x)
  }
  if (length(x) == 0L) {
    return(logical(0))
  }
  missing <- vapply(x, is.null, logical(1))
  x[missing] <- list(NA)
  if (all(lengths(x) == 1L)) unlist(x, use.names = FALSE) else x
}

# A named list of columns (list or vector each, NULL for missing) as a data.frame. Column names
# are kept as they are (no make.names()).
.as_df <- function(cols) {
  cols <- lapply(cols, .as_column)
  n <- if (length(cols)) unique(lengths(cols)) else 0L
  if (length(n) != 1L) {
    stop("internal error: columns from Python have different lengths", call. = FALSE)
  }
  df <- list2DF(cols, nrow = n)
  names(df) <- names(cols)
  df
}

# S3 classes for result kinds (Python class names); every result is also "llmsurrogate_result".
.result_classes <- c(IntervalTable = "llmsurrogate_intervals")

.as_result <- function(x) {
  kind <- x[["__result__"]]
  summary <- paste(x[["summary"]], collapse = "\n")
  specific <- if (kind %in% names(.result_classes)) .result_classes[[kind]] else character(0)
  structure(
    list(kind = kind,
         title = strsplit(summary, "\n", fixed = TRUE)[[1]][1],
         table = .from_py(x[["tidy"]]),
         summary = summary,
         json = x[["json"]]),
    class = c(specific, "llmsurrogate_result")
  )
}

# Recursively turn the bridge's conventions into R objects: {"__frame__": cols} -> data.frame,
# {"__result__": ...} -> an "llmsurrogate_result", other lists element-wise.
.from_py <- function(x) {
  if (!is.list(x)) {
    return(x)
  }
  nms <- names(x)
  if (identical(nms, "__frame__")) {
    return(.as_df(x[["__frame__"]]))
  }
  if ("__result__" %in% nms) {
    return(.as_result(x))
  }
  lapply(x, .from_py)
}

# Signal an error of class "llmsurrogate_error" (R-side checks and Python exceptions alike).
.abort <- function(message, call = NULL, python_class = NA_character_) {
  stop(structure(class = c("llmsurrogate_error", "error", "condition"),
                 list(message = message, call = call, python_class = python_class)))
}

# A Python exception as an "llmsurrogate_error" with the Python message (the Python class name
# goes to `python_class`); other errors pass through unchanged.
.rethrow <- function(e, call) {
  msg <- conditionMessage(e)
  msg <- sub("\\s*Run `reticulate::py_last_error\\(\\)` for details\\.?\\s*$", "", msg)
  msg <- sub("\\s+$", "", msg)
  pattern <- "^([A-Za-z_][A-Za-z0-9_.]*(Error|Exception)): "
  if (!grepl(pattern, msg)) {
    stop(e)
  }
  python_class <- sub("^.*\\.", "", sub(paste0(pattern, ".*$"), "\\1", msg))
  .abort(sub(pattern, "", msg), call = call, python_class = python_class)
}

# Evaluate `expr` (which touches Python) so that a Python error surfaces as an R error raised by
# `call` (by default the exported function that called .py_guard()).
.py_guard <- function(expr, call = sys.call(sys.parent())) {
  force(call)
  tryCatch(expr, error = function(e) .rethrow(e, call))
}

# Call llmsurrogate.<fn> ("module.name") through the bridge and convert the plain result.
.call <- function(fn, ...) {
  caller <- sys.call(sys.parent())
  .py_guard(.from_py(.rbridge$call(fn, ...)), call = caller)
}

# ---- argument checks (R-side, with R's 1-based positions) ----------------------------------
# Each takes `call`, the exported function's call, for the error message.

.check_numeric <- function(x, name, call = sys.call(sys.parent())) {
  if (!is.numeric(x) && !is.logical(x)) {
    .abort(sprintf("argument `%s` must be a numeric vector, not %s", name, class(x)[1]), call)
  }
  x <- as.numeric(x)
  if (length(x) == 0L) {
    .abort(sprintf("argument `%s` is empty; pass at least one value", name), call)
  }
  if (anyNA(x)) {
    .abort(sprintf("argument `%s` has a missing value (NA) at position %d; %s", name,
                   which(is.na(x))[1], "drop or impute missing values first"), call)
  }
  x
}

.check_scalar <- function(x, name, call = sys.call(sys.parent())) {
  x <- .check_numeric(x, name, call)
  if (length(x) != 1L) {
    .abort(sprintf("argument `%s` must be a single number; got length %d", name, length(x)), call)
  }
  x
}

.check_flag <- function(x, name, call = sys.call(sys.parent())) {
  if (!is.logical(x) || length(x) != 1L || is.na(x)) {
    .abort(sprintf("argument `%s` must be TRUE or FALSE", name), call)
  }
  x
}

.check_string <- function(x, name, call = sys.call(sys.parent())) {
  if (!is.character(x) || length(x) != 1L || is.na(x)) {
    .abort(sprintf("argument `%s` must be a single string", name), call)
  }
  x
}

.check_n_jobs <- function(n_jobs, call = sys.call(sys.parent())) {
  if (is.null(n_jobs)) {
    return(NULL)
  }
  n <- .check_scalar(n_jobs, "n_jobs", call)
  if (n != round(n)) {
    .abort(sprintf("argument `n_jobs` must be a whole number; got %s", format(n)), call)
  }
  as.integer(n)
}

# Levels: a length-1 vector goes to Python as a scalar (a float comes back), a longer one as a
# list (a list comes back).
.as_levels <- function(tau, call = sys.call(sys.parent())) {
  tau <- .check_numeric(tau, "tau", call)
  outside <- which(tau < 0 | tau > 1)
  if (length(outside)) {
    .abort(sprintf("argument `tau` must lie in [0, 1]; got %s at position %d",
                   format(tau[outside[1]]), outside[1]), call)
  }
  if (length(tau) == 1L) tau else as.list(tau)
}
