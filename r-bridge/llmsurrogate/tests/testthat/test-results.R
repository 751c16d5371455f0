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
