test_that("the demo returns an intervals result that prints and converts", {
  skip_if_no_llmsurrogate()
  res <- llmsurrogate_demo()
  expect_s3_class(res, c("llmsurrogate_intervals", "llmsurrogate_result"), exact = TRUE)
  expect_identical(res$kind, "IntervalTable")
  expect_match(res$title, "^Transfer forecast intervals")

  out <- capture.output(print(res))  # short: the title and the first rows of the table
  expect_match(out[1], "^Transfer forecast intervals, 44 subject pools")
  expect_lte(length(out), 10L)
  full <- capture.output(summary(res))  # the full report
  expect_match(full[1], "^Transfer forecast intervals, 44 subject pools")
  expect_true(any(grepl("Random forest", full)))
  expect_gt(length(full), length(out))
  expect_s3_class(summary(res), "summary.llmsurrogate_result")

  df <- as.data.frame(res)
  expect_identical(dim(df), c(21L, 5L))
  expect_identical(names(df), c("model", "metric", "n_errors", "lower", "upper"))
  expect_identical(unique(df$metric),
                   c("raw transfer error", "transfer shortfall", "transfer deterioration"))
  expect_true(all(df$n_errors == 1892L))
  expect_true(all(df$lower <= df$upper))

  rf <- df[df$model == "Random forest" & df$metric == "raw transfer error", ]
  expect_identical(round(c(rf$lower, rf$upper), 2), c(2.71, 31.39))

  # The same interval from the matrix and quantile_interval() in R.
  m <- load_transfer_errors("RF")
  expect_identical(quantile_interval(m[row(m) != col(m)], 0.95),
                   c(lower = rf$lower, upper = rf$upper))
  expect_match(res$json, '^\\{"kind": "IntervalTable"')
})

test_that("the demo plots with base graphics", {
  skip_if_no_llmsurrogate()
  res <- llmsurrogate_demo(tau = 0.9)
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_identical(plot(res), res)
  expect_identical(plot(res, log_raw = FALSE, col = "black"), res)
})

test_that("the demo validates tau", {
  skip_if_no_llmsurrogate()
  expect_error(llmsurrogate_demo(tau = c(0.9, 0.95)), "`tau` must be a single number")
  expect_error(llmsurrogate_demo(tau = 0.4), "`tau`")
})
