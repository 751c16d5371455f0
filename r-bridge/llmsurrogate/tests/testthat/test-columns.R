# Every R column type crosses the bridge with its missing values as missing (issue 10, defect 1):
# a property test over generated columns of every type, with and without NA, of several lengths.

# pandas' view of a frame that crossed the bridge: per column the missing mask, the dtype and
# each non-missing value as text (numbers in their shortest round-trip form).
py_describe <- function() {
  reticulate::py_run_string(paste(
    "import datetime, pandas as pd",
    "def _text(v):",
    "    if isinstance(v, bool): return 'TRUE' if v else 'FALSE'",
    "    if isinstance(v, float): return repr(v)",
    "    if isinstance(v, datetime.datetime): return v.strftime('%Y-%m-%d %H:%M:%S')",
    "    return str(v)",
    "def llmsurrogate_describe(frame):",
    "    df = pd.DataFrame(frame)",
    "    out = {}",
    "    for c in df.columns:",
    "        na = df[c].isna().tolist()",
    "        out[c] = {'na': na, 'dtype': str(df[c].dtype), 'n': len(na),",
    "                  'text': ['' if m else _text(v) for v, m in zip(df[c].tolist(), na)]}",
    "    return out",
    sep = "\n"), convert = FALSE)$llmsurrogate_describe
}

# Cross a frame: R -> .frame_arg() -> Python (the decoding every bridge call does) -> description.
cross <- function(df) {
  rb <- reticulate::import("llmsurrogate.rbridge", convert = FALSE)
  reticulate::py_to_r(py_describe()(rb$from_r(llmsurrogate:::.frame_arg(df))))
}

# Generators: n values of each type (no NA).
gen <- list(
  integer = function(n) sample(c(-5L, 0L, 7L, .Machine$integer.max, -.Machine$integer.max), n, TRUE),
  double = function(n) sample(c(-1.5, 0, 1 / 3, 1e300, -Inf, Inf, 2^60), n, TRUE),
  logical = function(n) sample(c(TRUE, FALSE), n, TRUE),
  character = function(n) sample(c("a", "NA", "", "caf\u00e9", "x y"), n, TRUE),
  factor = function(n) factor(sample(c("no", "yes", "NA"), n, TRUE), levels = c("yes", "no", "NA", "unused")),
  ordered = function(n) factor(sample(c("lo", "hi"), n, TRUE), levels = c("lo", "hi"), ordered = TRUE),
  Date = function(n) as.Date("2020-02-28") + sample(c(-40000L, -1L, 0L, 1L, 2L, 30000L), n, TRUE),
  POSIXct = function(n) as.POSIXct("2021-03-04 05:06:07", tz = "UTC") + sample(c(-1e9, 0, 1, 3600), n, TRUE),
  difftime = function(n) as.difftime(sample(c(1.5, 2, 90), n, TRUE), units = "mins")
)
if (requireNamespace("bit64", quietly = TRUE)) {
  gen$integer64 <- function(n) bit64::as.integer64(sample(c("-9007199254740993", "0", "42", "4611686018427387904"), n, TRUE))
}

# The text Python should show for the non-missing values of x.
expected_text <- function(x) {
  if (inherits(x, "integer64")) return(as.character(x))
  if (inherits(x, "POSIXct")) return(format(x, "%Y-%m-%d %H:%M:%S", tz = "UTC"))
  if (inherits(x, "Date")) return(format(x, "%Y-%m-%d"))
  if (is.factor(x)) return(as.character(x))
  if (is.logical(x)) return(as.character(ifelse(x, "TRUE", "FALSE")))
  as.character(x)
}

same_values <- function(x, text, dtype) {
  keep <- !is.na(x)
  got <- text[keep]
  if (inherits(x, "integer64") && dtype == "float64") {
    # as pandas stores any integer column with missing values: float64 (exact up to 2^53)
    return(identical(as.numeric(got), suppressWarnings(bit64::as.double.integer64(x[keep]))))
  }
  if (is.numeric(unclass(x)) && !inherits(x, c("integer64", "Date", "POSIXct", "factor"))) {
    return(identical(as.numeric(got), as.numeric(unclass(x))[keep]))
  }
  identical(got, expected_text(x)[keep])
}

test_that("every column type crosses with its missing values as missing (property test)", {
  skip_if_no_llmsurrogate()
  testthat::skip_if_not_installed("bit64")
  set.seed(20)
  for (type in names(gen)) {
    for (n in c(1L, 2L, 9L, 40L)) {
      for (na_share in c(0, 0.3, 1)) {
        x <- gen[[type]](n)
        na <- if (na_share == 0) integer(0) else if (na_share == 1) seq_len(n) else
          sample.int(n, max(1L, round(na_share * n)))
        x[na] <- NA
        info <- sprintf("%s, n = %d, NA at %s", type, n, paste(na, collapse = " "))
        out <- cross(data.frame(x = x, id = seq_len(n)))
        expect_identical(out$x$n, n, info = info)
        expect_identical(unlist(out$x$na), is.na(x), info = info)
        expect_true(same_values(x, unlist(out$x$text), out$x$dtype), info = info)
        expect_identical(unlist(out$id$na), rep(FALSE, n), info = info)
      }
    }
  }
})

test_that("integer NA is missing, not -2147483648, and whole numbers stay integers", {
  skip_if_no_llmsurrogate()
  out <- cross(data.frame(a = c(1L, NA, 3L), b = c(1L, 2L, 3L), s = c("u", NA, "NA")))
  expect_identical(unlist(out$a$na), c(FALSE, TRUE, FALSE))
  expect_identical(unlist(out$a$text)[c(1, 3)], c("1.0", "3.0"))  # pandas: int with missing -> float
  expect_identical(out$b$dtype, "int64")
  expect_identical(unlist(out$s$na), c(FALSE, TRUE, FALSE))
  expect_identical(unlist(out$s$text), c("u", "", "NA"))  # the string "NA" is a value
})

test_that("tibbles cross like data frames; zero-row and one-row frames keep their shape", {
  skip_if_no_llmsurrogate()
  testthat::skip_if_not_installed("tibble")
  df <- data.frame(i = c(1L, NA), f = factor(c(NA, "b")), l = c(NA, TRUE), d = as.Date(c("2020-01-01", NA)))
  expect_identical(cross(tibble::as_tibble(df)), cross(df))
  one <- cross(df[1, ])
  expect_identical(vapply(one, function(col) col$n, integer(1)), c(i = 1L, f = 1L, l = 1L, d = 1L))
  zero <- cross(df[0, ])
  expect_identical(vapply(zero, function(col) col$n, integer(1)), c(i = 0L, f = 0L, l = 0L, d = 0L))
})

test_that("columns the bridge cannot carry are named in the error", {
  df <- data.frame(a = 1:2)
  df$m <- matrix(1:4, 2)
  expect_error(llmsurrogate:::.frame_arg(df), "column `m`.*matrix", class = "llmsurrogate_error")
  df <- data.frame(a = 1:2)
  df$l <- list(1, "a")
  expect_error(llmsurrogate:::.frame_arg(df), "column `l`.*list", class = "llmsurrogate_error")
  df <- data.frame(z = complex(real = 1:2, imaginary = 1))
  expect_error(llmsurrogate:::.frame_arg(df), "column `z`.*complex", class = "llmsurrogate_error")
  df <- data.frame(a = 1:2, b = 3:4)
  names(df) <- c("a", "a")
  expect_error(llmsurrogate:::.frame_arg(df), "duplicated column name", class = "llmsurrogate_error")
  expect_error(llmsurrogate:::.frame_arg(list(a = 1)), "must be a data frame", class = "llmsurrogate_error")
})
