# The one generic conversion of Python results (llmsurrogate.results.Result) into R objects.

test_that("result classes come from the kind", {
  cls <- llmsurrogate:::.result_class
  expect_identical(cls("EssResult"), "llmsurrogate_ess")
  expect_identical(cls("IntervalTable"), "llmsurrogate_intervals")
  expect_identical(cls("ForecastIntervals"), "llmsurrogate_forecast_intervals")
  expect_identical(cls("TableResult"), "llmsurrogate_table_result")
  expect_identical(cls("ABCResult"), "llmsurrogate_abc_result")
})

test_that("JSON fields become R values: frames, arrays, infinities, missing values", {
  from_json <- function(text) llmsurrogate:::.from_json(jsonlite::fromJSON(text, simplifyVector = FALSE))
  expect_identical(from_json('{"__float__": "inf"}'), Inf)
  expect_identical(from_json('{"__float__": "-inf"}'), -Inf)
  expect_true(is.nan(from_json('{"__float__": "nan"}')))
  expect_identical(from_json("[1, null, 3]"), c(1L, NA, 3L))
  expect_identical(from_json('[1.5, {"__float__": "inf"}]'), c(1.5, Inf))
  expect_identical(from_json('["a", null]'), c("a", NA))
  expect_identical(from_json('{"a": 1, "b": [true, false]}'), list(a = 1L, b = c(TRUE, FALSE)))
  expect_identical(from_json("[[5, 10], [20, 50]]"), list(c(5L, 10L), c(20L, 50L)))
  frame <- from_json(paste0('{"__frame__": {"columns": ["n", "x", "ok", "s"], ',
                            '"dtypes": ["int64", "float64", "bool", "object"], ',
                            '"data": {"n": [1, 2], "x": [0.5, null], "ok": [true, false], "s": ["u", null]}}}'))
  expect_identical(frame, data.frame(n = 1:2, x = c(0.5, NA), ok = c(TRUE, FALSE), s = c("u", NA)))
  # numpy's row-major data, R's column-major array
  m <- from_json('{"__array__": {"dtype": "int64", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]}}')
  expect_identical(m, matrix(1:6, 2, byrow = TRUE))
  expect_identical(from_json('{"__array__": {"dtype": "float64", "shape": [2], "data": [1, 2]}}'), c(1, 2))
})

test_that("any result kind converts without R code of its own", {
  skip_if_no_llmsurrogate()
  results <- reticulate::import("llmsurrogate.results", convert = FALSE)
  pd <- reticulate::import("pandas", convert = FALSE)
  table <- pd$DataFrame(reticulate::dict(x = list(1.5, 2.5), g = list("a", "b")))
  py_res <- results$TableResult(title = "A table", table = table,
                                meta = reticulate::dict(seed = 3L, level = 0.9), notes = list("first", "second"))
  res <- llmsurrogate:::.from_py(llmsurrogate:::.rbridge$to_plain(py_res))
  expect_s3_class(res, c("llmsurrogate_table_result", "llmsurrogate_result"), exact = TRUE)
  expect_identical(res$kind, "TableResult")
  expect_identical(res$title, "A table")
  expect_identical(res$meta, list(seed = 3L, level = 0.9))
  expect_identical(res$notes, c("first", "second"))
  expect_identical(as.data.frame(res), data.frame(x = c(1.5, 2.5), g = c("a", "b")))
  expect_match(capture.output(print(res))[1], "^A table$")
})

test_that("ESS results carry every field, with 1-based permutations", {
  skip_if_no_llmsurrogate()
  set.seed(3)
  d <- data.frame(y = rnorm(60), llm = 0)
  res <- ess(d, "y", "llm", algorithm = "mean", grid = c(1, 2, 5), seed = 4)
  fields <- names(jsonlite::fromJSON(res$json, simplifyVector = FALSE)$fields)
  expect_true(all(setdiff(fields, c("title", "table")) %in% names(res)))
  expect_identical(sort(res$permutation), 1:60)
  expect_identical(res$ci, c(lower = res$lower_bound, upper = Inf))
  expect_type(res$notes, "character")
  curve <- error_curve(d, "y", algorithm = "mean", grid = c(1, 2), seed = 4)
  expect_identical(curve$permutation, res$permutation)
})

# Results as R users expect them (issue 10, defect 4).
ess_example <- function() {
  set.seed(11)
  d <- data.frame(y = rnorm(80), x = rnorm(80))
  d$llm <- d$x / 2
  ess(d, "y", "llm", algorithm = "lasso", grid = c(2, 5, 10), n_jobs = 1)
}

test_that("print() is short and R-like; summary() is the full report in R's spellings", {
  skip_if_no_llmsurrogate()
  res <- ess_example()
  out <- capture.output(print(res))
  expect_lte(length(out), 5L)
  expect_match(out[1], "^ESS of the fixed rule vs lasso")
  expect_match(out[2], "Inf\\)\\)")
  expect_false(any(grepl("\\b(True|False|inf|nan|None)\\b", out)))
  full <- capture.output(print(summary(res)))
  expect_gt(length(full), length(out))
  expect_true(any(grepl("\\b(TRUE|FALSE)\\b", full)))
  expect_true(any(grepl("Inf", full)))
  expect_false(any(grepl("\\b(True|False|inf|nan|None)\\b", full)))
})

test_that("as.data.frame() has plain columns: params become param_<name>", {
  skip_if_no_llmsurrogate()
  res <- ess_example()
  df <- as.data.frame(res)
  expect_false("params" %in% names(df))
  expect_true("param_alpha" %in% names(df))
  expect_type(df$param_alpha, "double")
  expect_false(any(vapply(df, function(col) is.character(col) && any(grepl("[{}']", col)), logical(1))))
  curve <- error_curve(data.frame(y = rnorm(40), x = rnorm(40)), "y", algorithm = "mean", grid = c(1, 2))
  expect_false("params" %in% names(as.data.frame(curve)))  # {} everywhere: no columns
})

test_that("confint(), coef(), tidy() and glance() work on ESS results and error curves", {
  skip_if_no_llmsurrogate()
  res <- ess_example()
  ci <- confint(res)
  expect_identical(dim(ci), c(1L, 2L))
  expect_identical(unname(ci[1, ]), c(as.numeric(res$lower_bound), Inf))
  expect_identical(colnames(ci), c("5 %", "100 %"))
  expect_error(confint(res, level = 0.9), "level 0.95", class = "llmsurrogate_error")
  expect_identical(coef(res), c(ess = as.numeric(res$lower_bound), ess_plugin = as.numeric(res$plugin)))
  skip_if_not_installed("broom")
  td <- broom::tidy(res)
  expect_true(all(c("n_train", "estimate", "std.error", "statistic", "p.value") %in% names(td)))
  expect_identical(td$estimate, res$table$diff)
  gl <- broom::glance(res)
  expect_identical(nrow(gl), 1L)
  expect_identical(gl$lower_bound, res$lower_bound)
  expect_identical(gl$status, res$status)

  set.seed(4)
  curve <- error_curve(data.frame(y = rnorm(60), x = rnorm(60)), "y", algorithm = "mean", grid = c(1, 2, 5))
  cc <- confint(curve)
  expect_identical(rownames(cc), c("N=1", "N=2", "N=5"))
  expect_identical(unname(cc[, 1]), curve$table$ci_low)
  expect_identical(coef(curve), stats::setNames(curve$table$error, c("N=1", "N=2", "N=5")))
  expect_identical(broom::tidy(curve)$conf.high, curve$table$ci_high)
})
