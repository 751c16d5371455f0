# ess() on ordinary R data (issue 10, defect 1): missing values of every column type are missing,
# `missing = "error"` / `"drop"` as in Python, and factor, character and logical outcomes are
# coded explicitly or rejected, never silently scored as wrong. suppressWarnings() around
# missing = "drop" is for its warning about the dropped rows.

aq_rule <- function() {
  aq <- airquality  # Ozone and Solar.R: integer columns with NA
  aq$rule <- -147 + 2.44 * aq$Temp
  aq
}

test_that("integer NA in the outcome is an error, not errors near 1e18 (airquality)", {
  skip_if_no_llmsurrogate()
  aq <- aq_rule()
  expect_error(ess(aq, "Ozone", "rule", algorithm = "mean", grid = c(2, 5)),
               "column `Ozone` has a missing value \\(NA\\) in row 5", class = "llmsurrogate_error")
  expect_error(ess(aq, "Ozone", "rule", algorithm = "mean", grid = c(2, 5)), 'missing = "drop"')
  # a feature's integer NA too (Solar.R: first NA in row 5 as well, Ozone complete here)
  ok <- aq[!is.na(aq$Ozone), ]
  expect_error(ess(ok, "Ozone", "rule", features = c("Solar.R", "Wind"), algorithm = "mean", grid = 2),
               "column `Solar.R` has a missing value \\(NA\\) in row", class = "llmsurrogate_error")
})

test_that("missing = \"drop\" drops the incomplete rows, as Python does", {
  skip_if_no_llmsurrogate()
  aq <- aq_rule()
  feats <- c("Solar.R", "Wind", "Temp")
  res <- suppressWarnings(ess(aq, "Ozone", "rule", features = feats, algorithm = "lasso", grid = c(2, 5, 10),
                              seed = 1, missing = "drop"))
  cc <- stats::complete.cases(aq[, c("Ozone", "rule", feats)])
  expect_identical(res$n, sum(cc))
  expect_equal(res$llm_error, mean((aq$rule[cc] - aq$Ozone[cc])^2), tolerance = 1e-12)
  expect_true(all(abs(res$table$algo_error) < 1e4))
  same <- ess(aq[cc, ], "Ozone", "rule", features = feats, algorithm = "lasso", grid = c(2, 5, 10), seed = 1)
  expect_identical(res$table, same$table)
  expect_identical(res$lower_bound, same$lower_bound)
  expect_error(ess(aq, "Ozone", "rule", missing = "omit"), "missing", class = "llmsurrogate_error")
  curve <- suppressWarnings(error_curve(aq, "Ozone", features = feats, algorithm = "mean", grid = c(2, 5),
                                        missing = "drop"))
  expect_identical(curve$n, sum(stats::complete.cases(aq[, c("Ozone", feats)])))
})

test_that("NA in factor, logical, character and Date features is seen as missing", {
  skip_if_no_llmsurrogate()
  set.seed(4)
  n <- 80L
  d <- data.frame(y = rnorm(n), llm = 0, g = factor(sample(c("a", "b"), n, TRUE)),
                  flag = sample(c(TRUE, FALSE), n, TRUE), s = sample(c("u", "v"), n, TRUE),
                  day = as.Date("2024-01-01") + sample(0:9, n, TRUE))
  for (col in c("g", "flag", "s", "day")) {
    bad <- d
    bad[[col]][7] <- NA
    expect_error(ess(bad, "y", "llm", algorithm = "mean", grid = 2),
                 sprintf("column `%s` has a missing value \\(NA\\) in row 7", col),
                 class = "llmsurrogate_error", info = col)
    res <- suppressWarnings(ess(bad, "y", "llm", algorithm = "mean", grid = 2, missing = "drop"))
    expect_identical(res$n, n - 1L, info = col)
  }
  # a numeric prediction vector with NA
  expect_error(ess(d, "y", c(NA, rep(0, n - 1)), algorithm = "mean", grid = 2),
               "`prediction` has a missing value \\(NA\\) at position 1", class = "llmsurrogate_error")
  res <- suppressWarnings(ess(d, "y", c(NA, rep(0, n - 1)), algorithm = "mean", grid = 2, missing = "drop"))
  expect_identical(res$n, n - 1L)
})

binary_data <- function(n = 120) {
  set.seed(9)
  x <- rnorm(n)
  yes <- x + rnorm(n, sd = 0.5) > 0
  data.frame(x = x, y = factor(ifelse(yes, "yes", "no")), rule = as.integer(yes), noisy = as.integer(x > 0))
}

test_that("a two-level factor outcome is coded 0/1 (first level 0): a perfect rule has error 0", {
  skip_if_no_llmsurrogate()
  d <- binary_data()
  for (loss in c("zero_one", "squared", "brier")) {
    res <- ess(d, "y", "rule", features = "x", algorithm = "mean", loss = loss, grid = c(2, 5))
    expect_identical(res$llm_error, 0, info = loss)
  }
  res <- ess(d, "y", "noisy", features = "x", algorithm = "majority", loss = "zero_one", grid = c(2, 5))
  expect_equal(res$llm_error, mean(d$noisy != (d$y == "yes")), tolerance = 1e-15)
  # the level order decides: relevel and the same rule is always wrong
  d2 <- d
  d2$y <- factor(d2$y, levels = c("yes", "no"))
  expect_identical(ess(d2, "y", "rule", features = "x", algorithm = "mean", loss = "zero_one", grid = 2)$llm_error, 1)
  # a logical outcome: TRUE is 1
  d3 <- d
  d3$y <- d3$y == "yes"
  expect_identical(ess(d3, "y", "rule", features = "x", algorithm = "mean", loss = "zero_one", grid = 2)$llm_error, 0)
  # as a numeric prediction vector too
  expect_identical(ess(d, "y", d$rule, features = "x", algorithm = "mean", loss = "zero_one", grid = 2)$llm_error, 0)
})

test_that("outcomes that cannot be coded 0/1 are rejected with a clear error", {
  skip_if_no_llmsurrogate()
  d <- binary_data()
  d$ychr <- as.character(d$y)
  expect_error(ess(d, "ychr", "rule", features = "x", algorithm = "mean", loss = "zero_one", grid = 2),
               "outcome `ychr` is character", class = "llmsurrogate_error")
  d$y3 <- factor(ifelse(d$x > 1, "high", as.character(d$y)))
  expect_error(ess(d, "y3", "rule", features = "x", algorithm = "mean", loss = "zero_one", grid = 2),
               "outcome `y3` is a factor with 3 levels", class = "llmsurrogate_error")
})

test_that("label outcomes with label predictions compare labels; disjoint label sets are an error", {
  skip_if_no_llmsurrogate()
  d <- binary_data()
  d$pred <- factor(ifelse(d$noisy == 1, "yes", "no"))
  res <- ess(d, "y", "pred", features = "x", algorithm = "majority", loss = "zero_one", grid = c(2, 5))
  expect_equal(res$llm_error, mean(as.character(d$pred) != as.character(d$y)), tolerance = 1e-15)
  d$ychr <- as.character(d$y)
  d$pchr <- as.character(d$pred)
  res2 <- ess(d, "ychr", "pchr", features = "x", algorithm = "majority", loss = "zero_one", grid = c(2, 5))
  expect_identical(res2$llm_error, res$llm_error)
  d$p01 <- factor(d$noisy)  # labels "0"/"1" against "no"/"yes"
  expect_error(ess(d, "y", "p01", features = "x", algorithm = "majority", loss = "zero_one", grid = 2),
               "no label in common", class = "llmsurrogate_error")
})

test_that("tibbles, integer64 and Date columns work as features", {
  skip_if_no_llmsurrogate()
  testthat::skip_if_not_installed("tibble")
  testthat::skip_if_not_installed("bit64")
  set.seed(6)
  n <- 60
  d <- data.frame(y = rnorm(n), llm = 0.1, a = rnorm(n), big = bit64::as.integer64(sample(1:5, n, TRUE)))
  res_df <- ess(d, "y", "llm", algorithm = "lasso", grid = c(2, 5), seed = 2)
  res_tb <- ess(tibble::as_tibble(d), "y", "llm", algorithm = "lasso", grid = c(2, 5), seed = 2)
  expect_identical(res_tb$table, res_df$table)
  d2 <- d
  d2$big <- as.integer(d2$big)
  expect_identical(ess(d2, "y", "llm", algorithm = "lasso", grid = c(2, 5), seed = 2)$table, res_df$table)
  d$big[3] <- NA
  expect_error(ess(d, "y", "llm", algorithm = "lasso", grid = 2), "column `big` has a missing value \\(NA\\) in row 3",
               class = "llmsurrogate_error")
})

test_that("cate_ess() takes missing and a logical treatment", {
  skip_if_no_llmsurrogate()
  set.seed(5)
  n <- 200L
  x <- rnorm(n)
  dd <- rbinom(n, 1, 0.5)
  d <- data.frame(x = x, d = dd, y = x + dd + rnorm(n), tau = 1)
  base <- cate_ess(d, "y", "d", "tau", propensity = 0.5, algorithm = "mean", grid = c(2, 5), seed = 1)
  d$d <- d$d == 1
  expect_identical(cate_ess(d, "y", "d", "tau", propensity = 0.5, algorithm = "mean", grid = c(2, 5),
                            seed = 1)$table, base$table)
  d$x[4] <- NA
  expect_error(cate_ess(d, "y", "d", "tau", propensity = 0.5, algorithm = "mean", grid = 2),
               "column `x` has a missing value \\(NA\\) in row 4", class = "llmsurrogate_error")
  res <- suppressWarnings(cate_ess(d, "y", "d", "tau", propensity = 0.5, algorithm = "mean", grid = 2,
                                   missing = "drop"))
  expect_identical(res$n, n - 1L)
})
