test_that("upper_quantile() equals quantile(type = 1)", {
  skip_if_no_llmsurrogate()
  set.seed(1)
  for (n in c(1, 2, 7, 50, 1001)) {
    x <- rnorm(n)
    tau <- c(runif(50), 1)
    expect_identical(upper_quantile(x, tau), unname(quantile(x, tau, type = 1)))
  }
  expect_identical(upper_quantile(c(10, 30, 20), 0), -Inf)
})

test_that("upper_quantile() at tau = k/n is the k-th order statistic", {
  # quantile(type = 1) can be one rank too high here: n * (k / n) may exceed k by more than its
  # absolute fuzz of 4 * .Machine$double.eps (e.g. n = 50, k = 14), while llmsurrogate compares
  # levels with a tolerance of 1e-12 on the probability scale.
  skip_if_no_llmsurrogate()
  set.seed(11)
  for (n in c(1, 7, 50, 1001)) {
    x <- rnorm(n)
    expect_identical(upper_quantile(x, (1:n) / n), sort(x))
  }
})

test_that("a scalar tau gives one number, a vector one per level", {
  skip_if_no_llmsurrogate()
  x <- c(3, 1, 2, 4, 6, 5)
  expect_identical(upper_quantile(x, 0.5), 3)
  expect_identical(lower_quantile(x, 0.5), 4)
  expect_identical(upper_quantile(x, c(0.5, 0.51, 1, 0)), c(3, 4, 6, -Inf))
  expect_identical(lower_quantile(x, c(0, 0.49, 1)), c(1, 3, Inf))
  expect_identical(upper_quantile(5L, 0.3), 5)
  expect_identical(upper_quantile(x, 0.5, n_jobs = 2), 3)
})

test_that("lower_quantile() matches the definition sup{b : mean(x >= b) >= 1 - tau}", {
  skip_if_no_llmsurrogate()
  set.seed(2)
  for (n in c(1, 3, 10, 97)) {
    x <- round(rexp(n), 1)  # ties included
    tau <- c(0, runif(15), (0:n) / n, 1)
    expect_identical(lower_quantile(x, tau), brute_lower(x, tau))
  }
})

test_that("quantile_interval() is [lower at 1 - tau, upper at tau]", {
  skip_if_no_llmsurrogate()
  expect_identical(quantile_interval(1:100, 0.95), c(lower = 6, upper = 95))
  expect_identical(quantile_interval(c(3, 1, 2, 4, 6, 5), 5 / 6), c(lower = 2, upper = 5))
  set.seed(3)
  x <- rnorm(200)
  for (tau in c(0.51, 0.8, 0.95, 1)) {
    expect_identical(quantile_interval(x, tau),
                     c(lower = lower_quantile(x, 1 - tau), upper = upper_quantile(x, tau)))
  }
})

test_that("weighted quantiles match brute force from the definitions", {
  skip_if_no_llmsurrogate()
  set.seed(4)
  for (n in c(1, 2, 5, 40)) {
    for (inf_weight in c(0, 0.5, 3)) {
      x <- round(rnorm(n), 1)
      w <- rexp(n)
      w[sample.int(n, n %/% 4)] <- 0
      if (all(w == 0)) w[1] <- 1
      tau <- c(0, runif(12), 1)
      expect_identical(weighted_upper_quantile(x, w, tau, inf_weight = inf_weight),
                       brute_weighted_upper(x, w, tau, inf_weight))
      expect_identical(weighted_lower_quantile(x, w, tau, inf_weight = inf_weight),
                       brute_weighted_lower(x, w, tau, inf_weight))
    }
  }
})

test_that("weighted quantiles: known answers, equal weights and the interval", {
  skip_if_no_llmsurrogate()
  expect_identical(weighted_upper_quantile(c(1, 2, 3), c(0.2, 0, 0.8), c(0.2, 0.21, 1)), c(1, 3, 3))
  expect_identical(weighted_lower_quantile(c(1, 2, 3), c(0.2, 0, 0.8), c(0, 0.2, 0.5)), c(1, 3, 3))
  expect_identical(weighted_upper_quantile(c(1, 2), c(1, 1), 0.9, inf_weight = 1), Inf)
  expect_identical(weighted_lower_quantile(c(1, 2), c(1, 1), c(0, 0.4, 1), inf_weight = 1),
                   c(-Inf, 1, Inf))
  set.seed(5)
  x <- rnorm(60)
  tau <- c(runif(10), (1:60) / 60)
  expect_identical(weighted_upper_quantile(x, rep(2.5, 60), tau), upper_quantile(x, tau))
  expect_identical(weighted_lower_quantile(x, rep(1, 60), tau), lower_quantile(x, tau))
  expect_identical(weighted_quantile_interval(1:4, rep(1, 4), 0.75), c(lower = 2, upper = 3))
  w <- rexp(60)
  expect_identical(
    weighted_quantile_interval(x, w, 0.9, inf_weight = 0.2),
    c(lower = weighted_lower_quantile(x, w, 0.1, inf_weight = 0.2),
      upper = weighted_upper_quantile(x, w, 0.9, inf_weight = 0.2)))
})

test_that("bad input gives errors that name the argument", {
  skip_if_no_llmsurrogate()
  expect_error(upper_quantile(c(1, NA, 3), 0.5), "`values`.*position 2")
  expect_error(lower_quantile(c(1, NaN), 0.5), "`values`")
  expect_error(quantile_interval(c(NA, 1), 0.9), "`values`")
  expect_error(weighted_upper_quantile(c(1, NA), c(1, 1), 0.5), "`values`")
  expect_error(weighted_upper_quantile(c(1, 2), c(1, NA), 0.5), "`weights`")
  expect_error(upper_quantile("a", 0.5), "`values` must be a numeric vector")
  expect_error(upper_quantile(numeric(0), 0.5), "`values` is empty")
  expect_error(upper_quantile(1:3, NA), "`tau`")
  expect_error(upper_quantile(1:3, c(0.5, 1.5)), "`tau` must lie between 0 and 1; got 1.5 at position 2")
  expect_error(weighted_upper_quantile(c(1, 2, 3), c(1, -1, 1), 0.5),
               "`weights` has a negative value \\(-1\\) at position 2")
  expect_error(upper_quantile(1:3, 0.5, n_jobs = 1.5), "`n_jobs`")
})

test_that("errors raised in Python arrive as llmsurrogate_error with Python's message", {
  skip_if_no_llmsurrogate()
  err <- expect_error(weighted_upper_quantile(c(1, 2, 3), c(1, 1), 0.5),
                      "arguments `values` \\(length 3\\) and `weights` \\(length 2\\) must have the same length",
                      class = "llmsurrogate_error")
  expect_identical(err$python_class, "ShapeError")
  expect_match(deparse(conditionCall(err)), "^weighted_upper_quantile")
  expect_error(upper_quantile(1:3, 0.5, n_jobs = 0), "`n_jobs` must not be 0", class = "llmsurrogate_error")
  expect_error(quantile_interval(1:3, 0.3), "`tau` must be a finite number greater than 0.5 and at most 1; got 0.3")
  expect_error(weighted_upper_quantile(1:2, c(0, 0), 0.5), "all weights are zero")
  expect_error(weighted_upper_quantile(1:2, 1:2, 0.5, inf_weight = -1), "`inf_weight`")
})

test_that("the R functions return what the Python functions return", {
  skip_if_no_llmsurrogate()
  # Python called directly through reticulate (arrays turned into plain lists on the Python side)
  q <- reticulate::import("llmsurrogate.quantiles", convert = FALSE)
  py_numbers <- function(x) unlist(reticulate::py_to_r(x$tolist()))
  set.seed(11)
  x <- c(rnorm(200), rep(0.5, 20))
  w <- rexp(length(x))
  taus <- c(0, 0.05, 0.5, 0.91, 0.95, 1)
  expect_identical(upper_quantile(x, taus), py_numbers(q$upper_quantile(x, as.list(taus))))
  expect_identical(lower_quantile(x, taus), py_numbers(q$lower_quantile(x, as.list(taus))))
  expect_identical(weighted_upper_quantile(x, w, taus, inf_weight = 0.7),
                   py_numbers(q$weighted_upper_quantile(x, w, as.list(taus), inf_weight = 0.7)))
  expect_identical(weighted_lower_quantile(x, w, taus, inf_weight = 0.7),
                   py_numbers(q$weighted_lower_quantile(x, w, as.list(taus), inf_weight = 0.7)))
  interval <- reticulate::py_to_r(q$quantile_interval(x, 0.95))
  expect_identical(unname(quantile_interval(x, 0.95)), unlist(interval))
})
