#' Inference on transfer errors (forecast intervals, dominance, confidence intervals)
#'
#' The functions of the authors' R package 'transferUQ' (Andrews, Fudenberg, Lei, Liang and Wu,
#' 2025, "The Transfer Performance of Economic Models") with its names, arguments and input forms,
#' computed by the Rust core of the Python package 'llmsurrogate'. transferUQ's README, vignette and
#' help-page examples run with only the `library()` line changed (its data object is
#' [CertaintyEquivalents]), **but their numbers change where a default corrects transferUQ**:
#' `qte_interval()` and `ete_interval()` use the U-statistic order r + 1 of the paper's bound
#' (transferUQ's r makes the intervals too narrow; `order = "transferUQ"` gives its numbers),
#' `check_everywhere_dominance()` scans every rank (transferUQ's pruning is invalid and can claim
#' dominance that does not hold; `mode = "transferUQ"`), `check_worstcase_dominance()` checks every
#' Gamma up to `Gamma` at Corollary R.1's index (`mode = "transferUQ"`) and `forecast_interval()`
#' takes the exact rank of Definition 2 (`mode = "transferUQ"`). The first call of each of these
#' with its default in a session says so in a message (class `"llmsurrogate_transferUQ_notice"`);
#' `options(llmsurrogate.transferUQ_notice = FALSE)` silences it. Why each default differs is
#' below ("Where the defaults differ from transferUQ on purpose"; docs/methods/transfer.md §4.4,
#' §5.5).
#'
#' @details
#' `err` takes transferUQ's forms:
#' * a square matrix, `err[i, j]` the error of the model trained on domain `i` and tested on
#'   domain `j` (r = 1; the diagonal is ignored);
#' * a data.frame (or tibble) with r + 2 columns, read by position: the first r columns hold the
#'   training domains, the next the test domain, the last the errors. Domains may be numbers,
#'   strings or factors (so [transfer_error_table()] output goes straight in). Each training set
#'   may appear once per test domain (unordered) or once per order of its domains (transferUQ's
#'   r = 2 example with ordered pairs);
#' * a data.frame with two columns, test domain and error (transferUQ's "not recommended" form);
#'   `qte_interval()` and `ete_interval()` then need `r`, and `correction = TRUE` is not possible.
#'
#' A missing error (`NA` in a cell or in the last column) is left out and the others are used, as
#' transferUQ does, with a warning of class `"llmsurrogate_warning"`: Proposition 1's guarantee
#' needs one error per (training set, test domain). Weighted and worst-case intervals and the
#' dominance checks work per test domain and need every cell. `Inf` is an error, named as
#' `err[i, j]`.
#'
#' `coverage` is the nominal level c: two-sided intervals use \eqn{\tau = (1 + c)/2}, one-sided
#' ones \eqn{\tau = c}; `tau` may be given instead. Several levels give a data.frame with one row
#' per level (`coverage` or `tau`, `lower`, `upper`). `side` is `"two"`, `"left"`
#' (\eqn{[a, \infty)}, also `"lower"`) or `"right"` (\eqn{(-\infty, a]}, also `"upper"`).
#'
#' @section Where the defaults differ from transferUQ on purpose:
#' Each default is the method of the paper as it should be computed; an argument gives
#' transferUQ's answer (docs/methods/transfer.md, "Departures").
#' * **Rank of the quantile** (`forecast_interval(mode = )`): the default takes the exact
#'   Definition-2 rank \eqn{k = \lceil \tau N \rceil}, comparing levels to \eqn{10^{-12}}.
#'   transferUQ calls `quantile(type = 1)`, whose fuzz of 4 machine epsilons picks the next order
#'   statistic when \eqn{\tau N} lands a rounding error above a whole number, which happens in
#'   corrected intervals (e.g. coverage 0.5, n = 44: \eqn{\tau N = 990} exactly, transferUQ takes
#'   rank 991). `mode = "transferUQ"` reproduces it, floating point included.
#' * **Root-finding tolerance** (`qte_interval()`, `ete_interval()`): transferUQ inverts the
#'   U-statistic bound with `uniroot()` at its default tolerance (about \eqn{1.2 \times 10^{-4}}
#'   on the level) and then rounds up; the package uses the exact discrete rank rule (quantiles,
#'   docs/methods/transfer.md §5.3) and bisection to \eqn{10^{-13}} (the mean, §5.4). The bounds
#'   can therefore differ from transferUQ's by one or two order statistics (quantiles) or about
#'   \eqn{10^{-4}} (means), also with `order = "transferUQ"`.
#' * **U-statistic order** (`order = `): the default is r + 1 (the kernel involves r + 1 domains,
#'   Lemma Q.1); transferUQ uses r, which doubles the effective sample size for r = 1 and makes
#'   the intervals too narrow. `order = "transferUQ"` uses r.
#' * **Everywhere dominance** (`check_everywhere_dominance(mode = )`): the default scans every rank;
#'   the paper's and transferUQ's pruning to \eqn{j \ge \tau N} (Appendix R.3) is invalid (on the
#'   published matrices it claims that CPT everywhere-dominates RF for \eqn{\tau \ge 0.96}, and
#'   explicit weights show that it does not). `mode = "paper"` adds the pruning, `mode =
#'   "transferUQ"` reproduces transferUQ 0.1.0 (pruning, its LP in count units).
#' * **Worst-case dominance** (`check_worstcase_dominance(mode = )`): the default checks every
#'   \eqn{\Gamma} in \[1, `Gamma`\] exactly; `mode = "transferUQ"` checks only `Gamma`, at
#'   transferUQ's index (one before Corollary R.1's) with a strict `<`.
#'
#' @section The one difference left with mode = "transferUQ":
#' For r >= 2, `check_worstcase_dominance(mode = "transferUQ")` can differ from transferUQ 0.1.0:
#' on its help page's r = 2 example (n = 20 domains, 6,840 errors, `err1` against `err2`) at 7 of
#' the 51 levels (tau = 0.88, 0.93--0.97, 0.99). The cause is in transferUQ: its internal
#' `Gamma_curve()` computes the worst-case probability \eqn{Q_j(\Gamma)} only for the first
#' \eqn{m = n(n - 1) = 380} sorted errors (the count for r = 1) and divides by n - 1 instead of
#' K = (n - 1)(n - 2); `data.frame(prob = Qvec, val = err$val)` then recycles those 380
#' probabilities 18 times over the 6,840 errors, silently, because 6,840 is a multiple of 380. The
#' bound it reads off is therefore not Corollary R.1's. With the curve computed for all 6,840
#' errors and divided by K, transferUQ's own comparison agrees with `mode = "transferUQ"` at all 51
#' levels (checked with transferUQ's code, commit e709f1b). For r = 1 (matrices) nothing is
#' recycled and the two agree.
#'
#' Long data frames cross to the compiled core as columns (domain codes and errors), not rows,
#' and the table built from one is kept for the next calls on the same data frame.
#'
#' @param err,err1,err2 Error matrix or data.frame (see Details). For `forecast_interval()` and
#'   `qte_interval()` also the path of a file too large for memory: a `.npy` file holding the
#'   square matrix or a Parquet file holding the long table (`train`, `test`, `error`), read in chunks
#'   by Python without passing through R. An R matrix or data frame is copied once on its way to
#'   Python (reticulate cannot share R's memory: it is sent as one raw vector of doubles).
#' @param coverage Nominal coverage in (0, 1); a vector gives one interval per level.
#' @param side `"two"`, `"left"`/`"lower"` or `"right"`/`"upper"`.
#' @param correction Inflate the coverage by (n + 1)/(n - r) so that Proposition 1 guarantees it.
#' @param tau Quantile level(s) instead of `coverage`.
#' @param weights Likelihood ratio of each domain (in domain order).
#' @param Gamma Bound on the likelihood ratio (\eqn{\ge 1}, `Inf` allowed).
#' @param betas Quantile levels of the transfer-error distribution.
#' @param r Number of training domains (checked against `err`; needed for the two-column form).
#' @param bd Known upper bound of the errors.
#' @param order U-statistic order: `NULL` (r + 1), `"transferUQ"` (r) or a whole number >= 1.
#' @param taulist Levels at which to compare two methods.
#' @param mode `forecast_interval()`: `"exact"` or `"transferUQ"`; `check_everywhere_dominance()`:
#'   `"exact"`, `"paper"` or `"transferUQ"`; `check_worstcase_dominance()`: `"exact"` or
#'   `"transferUQ"`. See the section on defaults.
#' @param kind `critical_gamma()`: `"everywhere"` (Gamma-bounded everywhere dominance, docs/methods/transfer.md §4.3) or
#'   `"worstcase"`.
#' @param Gamma_max Largest Gamma searched by `critical_gamma()`.
#' @return `forecast_interval()`, `weighted_forecast_interval()`, `worst_case_interval()` and
#'   `ete_interval()`: a numeric vector `c(lower, upper)` (a data.frame for several levels).
#'   `qte_interval()`: a data.frame `beta, lb, ub`. The `check_*` functions: a data.frame `tau,
#'   res`. `critical_gamma()`: a numeric vector (the largest Gamma with dominance; `Inf` if it
#'   always holds, `NA` if not even at Gamma = 1).
#' @examplesIf llmsurrogate_available()
#' E <- matrix(c(NA, 3, 5, 1, NA, 6, 2, 4, NA), 3)
#' forecast_interval(E, tau = 0.8)           # c(2, 5)
#' # transferUQ's README
#' err_CPT <- CertaintyEquivalents$unnormalized[["abdg"]]
#' err_RF <- CertaintyEquivalents$unnormalized[["RF"]]
#' forecast_interval(err_CPT, 0.8)
#' forecast_interval(err_CPT, c(0.8, 0.9))   # one row per level
#' qte_interval(err_CPT, 0.8, betas = 0.5)
#' qte_interval(err_CPT, 0.8, betas = 0.5, order = "transferUQ")
#' check_everywhere_dominance(err_CPT, err_RF, c(0.9, 0.96))
#' check_everywhere_dominance(err_CPT, err_RF, c(0.9, 0.96), mode = "transferUQ")
#' # test domains weighted (here every second one twice), or reweighted by up to Gamma
#' weighted_forecast_interval(err_CPT, rep(c(1, 2), length.out = nrow(err_CPT)), 0.8)
#' worst_case_interval(err_CPT, 0.8, Gamma = 2)
#' check_worstcase_dominance(err_CPT, err_RF, c(0.9, 0.96), Gamma = 2)
#' critical_gamma(err_CPT, err_RF, c(0.9, 0.96))   # the largest Gamma with dominance
#' everywhere_dominance_box(err_CPT, err_RF, c(0.9, 0.96))
#' # the mean transfer error, with the errors' known bound
#' ete_interval(err_CPT, 0.8, bd = max(err_CPT, na.rm = TRUE))
#' @name transfer_inference
NULL

# `err` as transferUQ reads it, for the bridge: a matrix crosses as one numeric vector with its
# number of rows (Python reads it as the matrix, domains 1..n, NA for a missing cell); a data.frame is read by position (the last
# column holds the errors, the one before it the test domain, the first ncol - 2 the training
# domains), with its domain labels as they are (numbers, strings or factors). Python's
# `pooled=True` then pools the errors given, as transferUQ does.
.err_arg <- function(err, name, call) {
  if (is.character(err) && length(err) == 1L && !is.na(err)) {
    # a table larger than memory, in a file: forecast_interval() and qte_interval() read it in chunks
    # (a .npy file holding the square matrix, or a Parquet file holding the long table); R never holds it
    if (!file.exists(err)) .abort(sprintf("argument `%s`: no file %s", name, err), call)
    return(normalizePath(err))
  }
  if (is.matrix(err) || (is.data.frame(err) && nrow(err) == ncol(err) && !("test" %in% names(err)) &&
                         ncol(err) > 3)) {
    m <- as.matrix(err)
    if (!(is.numeric(m) || is.logical(m) && all(is.na(m))) || nrow(m) != ncol(m)) {
      .abort(sprintf("argument `%s` must be a square numeric matrix with %s[i, j] the error of training on domain i and testing on domain j",
                     name, name), call)
    }
    n <- nrow(m)
    if (n < 2) .abort(sprintf("argument `%s`: need at least 2 domains; got a %d x %d matrix", name, n, n), call)
    values <- as.vector(m, mode = "double")
    if (!all(is.finite(values) | is.na(values))) {
      nonfinite <- matrix(!is.finite(values) & !is.na(values), n)
      diag(nonfinite) <- FALSE
      bad <- which(nonfinite, arr.ind = TRUE)
      if (length(bad)) {
        .abort(sprintf("argument `%s`: %s[%d, %d] is %s; errors must be finite (NA marks a missing cell)", name,
                       name, bad[1, 1], bad[1, 2], format(m[bad[1, 1], bad[1, 2]])), call)
      }
    }
    # the doubles as one raw vector (column-major, little-endian; reticulate passes it as bytes
    # without a per-element conversion) with the number of rows: Python reads it as the matrix
    # (llmsurrogate.rbridge._r_matrix) without a long frame; NA crosses as NaN
    return(list(`__rmatrix__` = list(bytes = writeBin(values, raw(), size = 8L, endian = "little"), nrow = n)))
  }
  if (is.data.frame(err)) {
    d <- ncol(err)
    if (d < 2) {
      .abort(sprintf("argument `%s` needs at least two columns: the test domain and the error (last)", name), call)
    }
    hit <- .long_cache$find(err)
    if (!is.null(hit)) return(hit)
    original <- names(err)
    cols <- unclass(err)  # the columns as a list: no data.frame method per access
    v <- cols[[d]]
    if (!(is.numeric(v) || is.logical(v) && all(is.na(v)))) {
      .abort(sprintf("argument `%s`: the last column must hold the errors (numeric); it is %s", name,
                     .r_type(v)), call)
    }
    # sum() allocates nothing: finite unless an error is infinite (or the sum overflows)
    bad <- if (is.double(v) && !is.finite(sum(v, na.rm = TRUE))) which(is.infinite(v)) else integer()
    if (length(bad)) {
      .abort(sprintf("argument `%s`: the error in row %d is %s; errors must be finite (NA marks a missing cell)",
                     name, bad[1], format(v[bad[1]])), call)
    }
    if (!is.double(v)) v <- as.numeric(v)
    for (k in seq_len(d - 1L)) {
      bad <- if (anyNA(cols[[k]])) which(is.na(cols[[k]])) else integer()
      if (length(bad)) {
        .abort(sprintf("argument `%s`: column `%s` has a missing domain (NA) in row %d; every error needs its %s",
                       name, original[k], bad[1], "training and test domains"), call)
      }
    }
    numbers <- .long_cache$numbers(cols, d)  # a kept frame's domain columns: their bytes as sent
    coded <- if (is.null(numbers)) .coded_long(cols[seq_len(d - 1L)], v, name, call) else
      list(`__rlong__` = list(nrow = length(v), ncol = d - 1L, numbers = numbers,
                              errors = writeBin(v, raw(), size = 8L, endian = "little")))
    if (!is.null(coded)) return(.long_cache$keep(err, coded))
    err <- as.data.frame(err)
    r <- d - 2L
    names(err) <- c(if (r == 1L) "train" else if (r > 1L) paste0("train_", seq_len(r)), "test", "error")
    err$error <- v
    return(.frame_arg(err, name, call))
  }
  .abort(sprintf("argument `%s` must be a square matrix or a data.frame (train..., test, error); got %s", name,
                 .r_type(err)), call)
}

# The last few long data frames sent and what was sent for them: a call on an identical() data
# frame (R copies on modify, so a changed one is not identical) sends the same payload without
# checking and coding it again (Python keeps the table it built from those bytes). The errors
# (last column) are compared first: a new data frame usually differs there at once, and then the
# domain columns, which data frames of one design share, are not compared (identical() on the
# whole frame took about 45 us a call against four kept frames of 1,892 rows). A new frame whose
# domain columns are a kept frame's sends the bytes sent for those (`numbers`) again.
.long_cache <- local({
  frames <- list()
  payloads <- list()
  heads <- numeric()  # the first value of each kept frame's first domain column (NA: not sent as numbers)
  tails <- numeric()  # the first error of each kept frame (NA: none, or not doubles)
  list(
    # (only kept frames whose first error is this one's: one vectorised comparison of `tails`)
    find = function(err) {
      d <- length(err)
      errors <- .subset2(err, d)
      candidates <- if (is.double(errors) && length(errors)) {
        e <- errors[1L]
        which(tails == e | is.na(tails) & is.na(e))
      } else seq_along(frames)
      for (i in candidates) {
        kept <- frames[[i]]
        if (length(kept) == d && identical(.subset2(kept, d), errors) && identical(kept, err)) return(payloads[[i]])
      }
      NULL
    },
    # the `numbers` sent for a kept frame whose d - 1 domain columns are identical() to those of
    # `cols` (frames of one design with other errors; the first differing value ends a comparison)
    # Only frames whose first domain value is this one's are compared (`heads`: one vectorised
    # comparison; a new design usually differs there, and the loop below took ~6 us on four frames).
    numbers = function(cols, d) {
      x <- .subset2(cols, 1L)
      if (!length(x)) return(NULL)
      for (i in which(heads == x[1L])) {
        sent <- payloads[[i]]$`__rlong__`$numbers
        kept <- frames[[i]]
        if (is.null(sent) || length(kept) != d) next
        same <- TRUE
        for (k in seq_len(d - 1L)) if (!identical(.subset2(kept, k), .subset2(cols, k))) { same <- FALSE; break }
        if (same) return(sent)
      }
      NULL
    },
    keep = function(err, payload) {
      x <- if (is.null(payload$`__rlong__`$numbers) || !length(err)) NULL else .subset2(err, 1L)
      frames <<- c(list(err), frames)[seq_len(min(length(frames) + 1L, 4L))]
      payloads <<- c(list(payload), payloads)[seq_len(length(frames))]
      heads <<- c(if (length(x)) as.double(x[1L]) else NA_real_, heads)[seq_len(length(frames))]
      e <- .subset2(err, length(err))
      tails <<- c(if (is.double(e) && length(e)) e[1L] else NA_real_, tails)[seq_len(length(frames))]
      payload
    })
})

# A long data frame for the bridge as columns, not rows (`cols`: its domain columns, a list;
# `errors`: its last column, doubles): the domain columns as 0-based codes into
# their distinct labels (one integer vector, column after column) and its errors, each as raw
# little-endian bytes (reticulate passes them without a per-element conversion), with the labels.
# Python (llmsurrogate.rbridge.transfer) reads them as a table without a data frame. Whole numbers
# cross as integers; whole numbers in a small positive range are coded by a count of each, without
# hashing every row. NULL for domain columns that are not all character/factor or all plain numbers
# (dates, integer64, a character column beside a numeric one): those cross as a data frame.
# Domain columns that are all plain integer vectors (which(arr.ind = TRUE), seq_len(), 1:n) cross
# as those numbers (`numbers`, one raw vector of the columns one after the other: one writeBin()
# and one conversion, ~4 us less than one per column), and Python numbers the domains (one NumPy
# count, ~30 us less here than coding them in R on 1,892 rows).
.coded_long <- function(cols, errors, name, call) {
  integers <- TRUE
  for (x in cols) if (!is.integer(x) || !is.null(attributes(x))) { integers <- FALSE; break }
  if (integers) {
    return(list(`__rlong__` = list(
      nrow = length(errors), ncol = length(cols),
      numbers = writeBin(if (length(cols) == 2L) c(.subset2(cols, 1L), .subset2(cols, 2L)) else
        unlist(cols, use.names = FALSE), raw(), size = 4L, endian = "little"),
      errors = writeBin(errors, raw(), size = 8L, endian = "little"))))
  }
  factors <- vapply(cols, is.factor, logical(1))
  if (any(factors)) cols[factors] <- lapply(cols[factors], as.character)
  plain <- vapply(cols, function(x) is.null(oldClass(x)) && (is.character(x) || is.numeric(x)), logical(1))
  text <- vapply(cols, is.character, logical(1))
  if (!all(plain) || any(text) && !all(text)) return(NULL)
  v <- unlist(cols, use.names = FALSE)
  if (is.double(v) && all(v == trunc(v)) && max(abs(v)) < .Machine$integer.max) v <- as.integer(v)
  if (is.integer(v) && min(v) >= 1L && (hi <- max(v)) <= 4L * length(v) + 1024L) {
    labels <- which(tabulate(v, hi) > 0L)
    if (length(labels) == hi) {
      codes <- v - 1L  # the domains are 1..hi, each present: a domain's code is its number - 1
    } else {
      map <- integer(hi)
      map[labels] <- seq_along(labels)
      codes <- map[v] - 1L
    }
  } else {
    labels <- unique(v)
    codes <- match(v, labels) - 1L
  }
  list(`__rlong__` = list(
    nrow = length(errors), ncol = length(cols),
    codes = writeBin(codes, raw(), size = 4L, endian = "little"),
    errors = writeBin(errors, raw(), size = 8L, endian = "little"),
    labels = .column_payload(labels, sprintf("the domains of `%s`", name), call)))
}

# The first call with a default that departs from transferUQ, per function and session, says so
# (a message of class "llmsurrogate_transferUQ_notice"); options(llmsurrogate.transferUQ_notice =
# FALSE) silences it. The texts name the argument that gives transferUQ's numbers.
.transferuq_notices <- c(
  forecast_interval = paste(
    "forecast_interval() takes the exact rank ceiling(tau N) of Definition 2; transferUQ's",
    "quantile(type = 1) takes the next order statistic when tau N lands a rounding error above a whole",
    "number (as in some corrected intervals). mode = \"transferUQ\" gives transferUQ's numbers."),
  qte_interval = paste(
    "qte_interval() uses the U-statistic order r + 1 of the paper's bound (the kernel involves r + 1",
    "domains); transferUQ uses r, which makes the intervals too narrow (\"U-statistic order\" in ?transfer_inference).",
    "order = \"transferUQ\" gives transferUQ's numbers."),
  ete_interval = paste(
    "ete_interval() uses the U-statistic order r + 1 of the paper's bound (the kernel involves r + 1",
    "domains); transferUQ uses r, which makes the intervals too narrow (\"U-statistic order\" in ?transfer_inference).",
    "order = \"transferUQ\" gives transferUQ's numbers."),
  check_everywhere_dominance = paste(
    "check_everywhere_dominance() scans every rank; transferUQ prunes to ranks j >= tau N (Appendix R.3),",
    "which is invalid and can claim dominance that does not hold (\"Everywhere dominance\" in ?transfer_inference).",
    "mode = \"transferUQ\" gives transferUQ's answers."),
  check_worstcase_dominance = paste(
    "check_worstcase_dominance() checks every Gamma in [1, Gamma] at Corollary R.1's index; transferUQ",
    "checks Gamma alone, one index earlier, with a strict <. mode = \"transferUQ\" gives transferUQ's",
    "answers."))
.notices_given <- new.env(parent = emptyenv())

.transferuq_notice <- function(fn) {
  if (isFALSE(getOption("llmsurrogate.transferUQ_notice", TRUE)) || isTRUE(.notices_given[[fn]])) {
    return(invisible(FALSE))
  }
  assign(fn, TRUE, envir = .notices_given)
  text <- paste(.transferuq_notices[[fn]],
                "(Shown once per session; options(llmsurrogate.transferUQ_notice = FALSE) silences it.)")
  message(structure(class = c("llmsurrogate_transferUQ_notice", "message", "condition"),
                    list(message = paste0(text, "\n"), call = NULL)))
  invisible(TRUE)
}

.side_arg <- function(side) side[1]

.pair <- function(x) {
  x <- vapply(x, function(v) if (is.null(v)) NA_real_ else as.numeric(v), numeric(1))
  x
}

# One interval per coverage level: `c(lower, upper)` for one level; a data.frame `coverage, lower,
# upper` for several (transferUQ's functions take one level).
.per_level <- function(coverage, tau, f) {
  levels <- if (!is.null(tau)) tau else coverage
  if (length(levels) <= 1L) {
    return(.pair(f(coverage, tau)))
  }
  rows <- lapply(levels, function(x) {
    if (is.null(tau)) .pair(f(x, NULL)) else .pair(f(NULL, x))
  })
  out <- data.frame(level = levels, lower = vapply(rows, `[`, numeric(1), 1L),
                    upper = vapply(rows, `[`, numeric(1), 2L))
  names(out)[1] <- if (is.null(tau)) "coverage" else "tau"
  out
}

.level_arg <- function(x, name, call) {
  if (is.null(x)) return(NULL)
  x <- .check_numeric(x, name, call)
  x
}

#' @rdname transfer_inference
#' @export
forecast_interval <- function(err, coverage = NULL, side = c("two", "left", "right"), correction = FALSE,
                              tau = NULL, mode = c("exact", "transferUQ")) {
  call <- sys.call()
  default_mode <- missing(mode)
  e <- .err_arg(err, "err", call)
  correction <- .check_flag(correction, "correction", call)
  mode <- match.arg(mode)
  coverage <- .level_arg(coverage, "coverage", call)
  tau <- .level_arg(tau, "tau", call)
  out <- .per_level(coverage, tau, function(cv, t) {
    .call_in(call, "transfer.forecast_interval", e, cv, side = .side_arg(side), correction = correction, tau = t,
             mode = mode, pooled = TRUE)
  })
  if (default_mode) .transferuq_notice("forecast_interval")
  out
}

#' @rdname transfer_inference
#' @export
weighted_forecast_interval <- function(err, weights, coverage = NULL, side = c("two", "left", "right"),
                                       tau = NULL) {
  call <- sys.call()
  e <- .err_arg(err, "err", call)
  w <- as.list(.check_numeric(weights, "weights", call))
  coverage <- .level_arg(coverage, "coverage", call)
  tau <- .level_arg(tau, "tau", call)
  .per_level(coverage, tau, function(cv, t) {
    .call_in(call, "transfer.weighted_forecast_interval", e, w, cv, side = .side_arg(side), tau = t,
             pooled = TRUE)
  })
}

#' @rdname transfer_inference
#' @export
worst_case_interval <- function(err, coverage = NULL, Gamma = Inf, side = c("two", "left", "right"),
                                tau = NULL) {
  call <- sys.call()
  e <- .err_arg(err, "err", call)
  Gamma <- .check_scalar(Gamma, "Gamma", call)
  coverage <- .level_arg(coverage, "coverage", call)
  tau <- .level_arg(tau, "tau", call)
  .per_level(coverage, tau, function(cv, t) {
    .call_in(call, "transfer.worst_case_interval", e, cv, Gamma = Gamma, side = .side_arg(side), tau = t,
             pooled = TRUE)
  })
}

# `order`: NULL (r + 1), "transferUQ" (r) or a whole number >= 1.
.order_arg <- function(order, call) {
  if (is.null(order) || is.character(order)) {
    return(if (is.null(order)) NULL else .check_string(order, "order", call))
  }
  o <- .check_scalar(order, "order", call)
  if (o < 1 || o != round(o)) {
    .abort(sprintf("argument `order` must be NULL, \"transferUQ\" or a whole number >= 1; got %s", format(o)), call)
  }
  as.integer(o)
}

.r_arg <- function(r, call) {
  if (is.null(r)) return(NULL)
  r <- .check_scalar(r, "r", call)
  if (r < 1 || r != round(r)) .abort("argument `r` must be a whole number >= 1", call)
  as.integer(r)
}

#' @rdname transfer_inference
#' @export
qte_interval <- function(err, coverage, side = c("two", "left", "right"), betas = seq(0.2, 0.8, 0.01),
                         r = NULL, order = NULL) {
  call <- sys.call()
  e <- .err_arg(err, "err", call)
  out <- .call_in(call, "transfer.qte_interval", e, .check_scalar(coverage, "coverage", call),
                  side = .side_arg(side), betas = as.list(.check_numeric(betas, "betas", call)), r = .r_arg(r, call),
                  order = .order_arg(order, call), pooled = TRUE)
  if (missing(order)) .transferuq_notice("qte_interval")
  out
}

#' @rdname transfer_inference
#' @export
ete_interval <- function(err, coverage, side = c("two", "left", "right"), bd = 1, r = NULL, order = NULL) {
  call <- sys.call()
  e <- .err_arg(err, "err", call)
  out <- .pair(.call_in(call, "transfer.ete_interval", e, .check_scalar(coverage, "coverage", call),
                        side = .side_arg(side), bd = .check_scalar(bd, "bd", call), r = .r_arg(r, call),
                        order = .order_arg(order, call), pooled = TRUE))
  if (missing(order)) .transferuq_notice("ete_interval")
  out
}

#' @rdname transfer_inference
#' @export
check_worstcase_dominance <- function(err1, err2, taulist = seq(0.5, 1, 0.01), Gamma = Inf,
                                      mode = c("exact", "transferUQ")) {
  call <- sys.call()
  out <- .call_in(call, "transfer.check_worstcase_dominance", .err_arg(err1, "err1", call),
                  .err_arg(err2, "err2", call), as.list(.check_numeric(taulist, "taulist", call)),
                  Gamma = .check_scalar(Gamma, "Gamma", call), mode = match.arg(mode), pooled = TRUE)
  if (missing(mode)) .transferuq_notice("check_worstcase_dominance")
  out
}

#' @rdname transfer_inference
#' @export
check_everywhere_dominance <- function(err1, err2, taulist = seq(0.5, 1, 0.01),
                                       mode = c("exact", "paper", "transferUQ")) {
  call <- sys.call()
  out <- .call_in(call, "transfer.check_everywhere_dominance", .err_arg(err1, "err1", call),
                  .err_arg(err2, "err2", call), as.list(.check_numeric(taulist, "taulist", call)),
                  mode = match.arg(mode), pooled = TRUE)
  if (missing(mode)) .transferuq_notice("check_everywhere_dominance")
  out
}

#' @rdname transfer_inference
#' @export
critical_gamma <- function(err1, err2, tau, kind = c("everywhere", "worstcase"), Gamma_max = 1e6) {
  call <- sys.call()
  out <- .call_in(call, "transfer.critical_gamma", .err_arg(err1, "err1", call), .err_arg(err2, "err2", call),
                  as.list(.check_numeric(tau, "tau", call)), kind = match.arg(kind),
                  Gamma_max = .check_scalar(Gamma_max, "Gamma_max", call), pooled = TRUE)
  .pair(out)
}

#' @rdname transfer_inference
#' @export
everywhere_dominance_box <- function(err1, err2, taulist = seq(0.5, 1, 0.01), Gamma = 2) {
  call <- sys.call()
  .call_in(call, "transfer.everywhere_dominance_box", .err_arg(err1, "err1", call), .err_arg(err2, "err2", call),
           as.list(.check_numeric(taulist, "taulist", call)), Gamma = .check_scalar(Gamma, "Gamma", call),
           pooled = TRUE)
}
