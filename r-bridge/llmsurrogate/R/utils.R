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

# ---- results ----------------------------------------------------------------------------------
# Every Python result (a subclass of llmsurrogate.results.Result) is converted the same way, from
# its JSON (Result.to_json()): the S3 class from its kind, data frames from its tables, scalars
# and vectors from its other fields. The object is a list with `kind`, `title`, `table` (the tidy
# table, one row per estimate), `summary` (the printed text) and `json`, plus every field of the
# result under its Python name (a field never replaces those five).

# S3 classes whose names predate the generic rule; any other kind K gets "llmsurrogate_<k>", the
# snake_case of K (e.g. "ForecastIntervals" -> "llmsurrogate_forecast_intervals").
.result_classes <- c(IntervalTable = "llmsurrogate_intervals", EssResult = "llmsurrogate_ess",
                     ErrorCurve = "llmsurrogate_error_curve")

.result_class <- function(kind) {
  if (kind %in% names(.result_classes)) {
    return(.result_classes[[kind]])
  }
  snake <- tolower(gsub("([a-z0-9])([A-Z])", "\\1_\\2", gsub("([A-Z]+)([A-Z][a-z])", "\\1_\\2", kind)))
  paste0("llmsurrogate_", snake)
}

# What R users expect beyond the fields on some results: the ESS's one-sided interval `ci`, and
# the permutation as 1-based row numbers (Python's are 0-based).
.one_based_permutation <- function(res) {
  if (is.numeric(res$permutation)) res$permutation <- res$permutation + 1L
  res
}

.result_extras <- list(
  EssResult = function(res) {
    res$ci <- c(lower = res$lower_bound, upper = Inf)
    .one_based_permutation(res)
  },
  ErrorCurve = .one_based_permutation
)

.as_result <- function(x) {
  kind <- x[["__result__"]]
  summary <- paste(x[["summary"]], collapse = "\n")
  fields <- lapply(jsonlite::fromJSON(x[["json"]], simplifyVector = FALSE)$fields, .from_json)
  title <- fields[["title"]]
  if (!is.character(title) || length(title) != 1L) {
    title <- strsplit(summary, "\n", fixed = TRUE)[[1]][1]
  }
  res <- list(kind = kind, title = title, table = .from_py(x[["tidy"]]), summary = summary,
              json = x[["json"]])
  res <- c(res, fields[setdiff(names(fields), names(res))])
  extra <- .result_extras[[kind]]
  if (!is.null(extra)) {
    res <- extra(res)
  }
  structure(res, class = unique(c(.result_class(kind), "llmsurrogate_result")))
}

# One value of a result's JSON (llmsurrogate.results._encode) as an R value: {"__float__": "inf"}
# -> Inf, {"__frame__": ...} -> data.frame, {"__array__": ...} -> vector or array, a list of
# scalars -> an atomic vector (null -> NA), other lists element-wise.
.from_json <- function(x) {
  if (!is.list(x)) {
    return(x)
  }
  nms <- names(x)
  if (identical(nms, "__float__")) {
    return(as.numeric(x[["__float__"]]))
  }
  if (identical(nms, "__frame__")) {
    spec <- x[["__frame__"]]
    cols <- lapply(seq_along(spec$columns), function(j) {
      .json_column(spec$data[[spec$columns[[j]]]], spec$dtypes[[j]])
    })
    names(cols) <- unlist(spec$columns)
    n <- if (length(cols)) length(cols[[1]]) else 0L
    df <- list2DF(cols, nrow = n)
    names(df) <- names(cols)
    return(df)
  }
  if (identical(nms, "__array__")) {
    spec <- x[["__array__"]]
    values <- .json_column(spec$data, spec$dtype)
    shape <- as.integer(unlist(spec$shape))
    if (length(shape) <= 1L) {
      return(values)
    }
    # numpy's data are in row-major (C) order; R arrays are column-major
    return(aperm(array(values, dim = rev(shape))))
  }
  out <- lapply(x, .from_json)
  if (is.null(nms) && length(out) &&
      all(vapply(out, function(v) is.null(v) || (is.atomic(v) && length(v) == 1L), logical(1)))) {
    return(.as_column(out))
  }
  out
}

# A column of a result's JSON frame or array with its numpy dtype: integers stay integer when they
# fit, booleans become logical.
.json_column <- function(values, dtype) {
  v <- .as_column(lapply(values, .from_json))
  if (is.list(v)) {
    return(v)
  }
  dtype <- if (is.null(dtype)) "" else dtype
  if (grepl("^u?int", dtype) && is.numeric(v) && all(is.na(v) | abs(v) < .Machine$integer.max)) {
    v <- as.integer(v)
  } else if (grepl("^float", dtype) && (is.numeric(v) || all(is.na(v)))) {
    v <- as.numeric(v)
  } else if (dtype == "bool" && (is.logical(v) || all(is.na(v)))) {
    v <- as.logical(v)
  }
  v
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

# Call llmsurrogate.<fn> ("module.name") through the bridge and convert the plain result. Python's
# warnings come back collected (llmsurrogate.rbridge.r_call) and are raised as R warnings of class
# "llmsurrogate_warning" from the exported function's call; messages are in R's terms (1-based
# rows, TRUE/FALSE, R type names).
.call <- function(fn, ...) {
  .call_in(sys.call(sys.parent()), fn, ...)
}

# .call() with the exported function's call given (for calls from inside helper closures).
.call_in <- function(call, fn, ...) {
  .python_check(call)
  out <- .py_guard(.r_call_fn()(fn, ...), call = call)
  for (w in out$warnings) {
    .warn(w$message, call = call, python_class = w$class)
  }
  .py_guard(.from_py(out$value), call = call)
}

# llmsurrogate.rbridge.r_call as a Python callable, looked up once per session: reticulate's `$` on
# a module costs about 0.25 ms a call (attribute lookup and conversion), as much as the rest of a
# small call.
.r_call_fn <- function() {
  f <- .state$r_call
  if (is.null(f)) {
    f <- .rbridge$r_call
    .state$r_call <- f
  }
  f
}

# Signal a warning of class "llmsurrogate_warning" (suppressWarnings() and tryCatch(warning = )
# see it like any R warning).
.warn <- function(message, call = NULL, python_class = NA_character_) {
  warning(structure(class = c("llmsurrogate_warning", "warning", "condition"),
                    list(message = message, call = call, python_class = python_class)))
}

# An argument given under its old name (`old`, renamed `new`): still honoured for one release, with
# a warning of class "llmsurrogate_deprecation" (also "deprecatedWarning", as base R's
# .Deprecated(), and "llmsurrogate_warning"). Returns the value to use: `value` unless `old_value`
# was given; giving both is an error. `how` says how the old value maps to the new one, where it
# is not the same value (e.g. "level = 1 - alpha"; the caller converts).
.renamed_arg <- function(old_value, value, old, new, call, value_given = TRUE, how = NULL) {
  if (is.null(old_value)) return(value)
  if (value_given) {
    .abort(sprintf("argument `%s` was renamed `%s`; give only `%s`", old, new, new), call)
  }
  msg <- sprintf("argument `%s` is deprecated and will be removed in llmsurrogate 0.3; use `%s`%s", old, new,
                 if (is.null(how)) "" else sprintf(" (%s)", how))
  .deprecation_warning(msg, call)
  old_value
}

# The package's deprecation warning: class "llmsurrogate_deprecation" (also "deprecatedWarning", as
# base R's .Deprecated(), and "llmsurrogate_warning").
.deprecation_warning <- function(msg, call = NULL) {
  warning(structure(class = c("llmsurrogate_deprecation", "deprecatedWarning", "llmsurrogate_warning", "warning",
                              "condition"),
                    list(message = msg, call = call, python_class = NA_character_)))
}

# R's word for the type of `x`, for messages: numeric, integer, character, logical, factor, NULL, ...
.r_type <- function(x) {
  if (is.null(x)) return("NULL")
  if (is.factor(x)) return("a factor")
  if (is.data.frame(x)) return("a data.frame")
  if (is.matrix(x)) return(sprintf("a %s matrix", if (is.double(x)) "numeric" else typeof(x)))
  if (is.list(x)) return("a list")
  switch(typeof(x), double = "numeric", closure = , builtin = "a function", typeof(x))
}

# ---- data frames and vectors to Python ---------------------------------------------------------
# reticulate would send R's missing values as values (an integer NA as -2147483648, a logical NA
# as True, a character NA as "NA"), so columns cross typed, with the 0-based positions of their
# missing values; llmsurrogate.rbridge.from_r() puts None there. Factors cross as their labels,
# Dates as datetime.date, POSIXct as UTC datetime.datetime, integer64 (bit64) as exact Python ints;
# other classed numbers (difftime, ...) as their numbers.

.column_kinds <- paste("numeric, integer, logical, character, factor, Date, POSIXct and integer64",
                       "columns")

# One vector as list(kind, values, na) for the bridge; `what` names it in errors.
.column_payload <- function(x, what, call) {
  if (inherits(x, "AsIs")) {
    class(x) <- setdiff(class(x), "AsIs")
  }
  if (is.data.frame(x) || is.matrix(x) || is.array(x) && length(dim(x)) > 1L) {
    .abort(sprintf("%s is a matrix or data frame column; the bridge takes %s (flatten it first)",
                   what, .column_kinds), call)
  }
  if (is.list(x)) {
    .abort(sprintf("%s is a list column; the bridge takes %s", what, .column_kinds), call)
  }
  na <- is.na(x)
  if (inherits(x, "integer64")) {
    if (!requireNamespace("bit64", quietly = TRUE)) {
      .abort(sprintf("%s is integer64; install the 'bit64' package to pass it", what), call)
    }
    kind <- "int64"
    values <- as.character(x)
  } else if (is.factor(x)) {
    kind <- "character"
    values <- as.character(x)
  } else if (inherits(x, "Date")) {
    kind <- "date"
    values <- as.numeric(unclass(x))
  } else if (inherits(x, c("POSIXct", "POSIXlt"))) {
    kind <- "datetime"
    values <- as.numeric(as.POSIXct(x))
    na <- is.na(values)
  } else if (is.logical(x)) {
    kind <- "logical"
    values <- as.vector(x)
  } else if (is.integer(x)) {
    kind <- "integer"
    values <- as.vector(unclass(x))
  } else if (is.double(x)) {
    kind <- "double"
    values <- as.vector(unclass(x))
  } else if (is.character(x)) {
    kind <- "character"
    values <- as.vector(x)
  } else {
    .abort(sprintf("%s is %s; the bridge takes %s", what, typeof(x), .column_kinds), call)
  }
  list(kind = kind, values = unname(values), na = which(na) - 1L)
}

# A data frame (or tibble) for the bridge: Python gets {column: list} with None for missing values.
.frame_arg <- function(data, name = "data", call = sys.call(sys.parent())) {
  if (!is.data.frame(data)) {
    .abort(sprintf("argument `%s` must be a data frame, not %s", name, .r_type(data)), call)
  }
  nms <- names(data)
  dup <- unique(nms[duplicated(nms)])
  if (length(dup)) {
    .abort(sprintf("argument `%s` has a duplicated column name (`%s`); column names must be unique",
                   name, dup[1]), call)
  }
  cols <- lapply(seq_along(nms), function(j) {
    .column_payload(data[[j]], sprintf("column `%s` of `%s`", nms[j], name), call)
  })
  list(`__rframe__` = list(names = as.list(nms), columns = cols))
}

# A vector for the bridge: Python gets a list with None for missing values.
.vector_arg <- function(x, name, call = sys.call(sys.parent())) {
  list(`__rvector__` = .column_payload(x, sprintf("argument `%s`", name), call))
}

# ---- argument checks (R-side, with R's 1-based positions) ----------------------------------
# Each takes `call`, the exported function's call, for the error message.

.check_numeric <- function(x, name, call = sys.call(sys.parent())) {
  if (!is.numeric(x) && !is.logical(x)) {
    .abort(sprintf("argument `%s` must be a numeric vector, not %s", name, .r_type(x)), call)
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
    .abort(sprintf("argument `tau` must lie between 0 and 1; got %s at position %d",
                   format(tau[outside[1]]), outside[1]), call)
  }
  if (length(tau) == 1L) tau else as.list(tau)
}

# A matrix or data frame of probabilities, one column per option or class (`labels`, used in the
# messages), checked in R's words: numeric, between 0 and 1, each row summing to 1 (within 1e-6).
# `arg` is the argument's name, `unit` what a column is ("options", "classes"), `of` what the
# columns must cover ("answer", "outcome"); `na_hint` follows the message about an NA, and
# `keep_na = TRUE` lets NAs through (rows dropped later). Returns a numeric matrix.
.probability_matrix <- function(x, labels, arg, unit, of, call, keep_na = FALSE, na_hint = "") {
  if (is.data.frame(x)) {
    bad <- which(!vapply(x, function(v) is.numeric(v) || is.logical(v), logical(1)))
    if (length(bad)) {
      .abort(sprintf("column `%s` of `%s` is %s; every column must hold numeric probabilities",
                     labels[bad[1]], arg, .r_type(x[[bad[1]]])), call)
    }
    x <- as.matrix(x)
  }
  if (!is.numeric(x) && !is.logical(x)) {
    .abort(sprintf("argument `%s` must be a numeric matrix of probabilities, not %s", arg, .r_type(x)), call)
  }
  p <- matrix(as.numeric(x), nrow(x))
  where <- function(cell) sprintf("row %d, column `%s`", cell[1], labels[cell[2]])
  cell <- which(is.na(p), arr.ind = TRUE)
  if (nrow(cell) && !keep_na) {
    .abort(sprintf("argument `%s` has a missing value (NA) at %s%s", arg, where(cell[1, ]), na_hint), call)
  }
  cell <- which(!is.na(p) & (p < 0 | p > 1), arr.ind = TRUE)
  if (nrow(cell)) {
    .abort(sprintf("argument `%s` must hold probabilities between 0 and 1; got %s at %s", arg,
                   format(p[cell[1, , drop = FALSE]]), where(cell[1, ])), call)
  }
  sums <- rowSums(p)
  off <- which(!is.na(sums) & abs(sums - 1) > 1e-6)
  if (length(off)) {
    .abort(sprintf(paste("argument `%s`: each row must sum to 1 over the K = %d %s (within 1e-6); row %d sums",
                         "to %s. Normalise the rows (%s / rowSums(%s)) if the %s cover every %s"),
                   arg, ncol(p), unit, off[1], format(sums[off[1]], digits = 10), arg, arg, unit, of), call)
  }
  p
}
