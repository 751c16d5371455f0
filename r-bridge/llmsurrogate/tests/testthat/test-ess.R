# ESS from R: an R reference implementation of block-out CV and the sequential test
# (docs/methods/ess.md Appendix R, written here from scratch), and parity with the Python package called directly.

ess_data <- function(n = 120) {
  set.seed(42)
  a <- rnorm(n)
  data.frame(a = a, b = rnorm(n), y = a + rnorm(n), llm = 0.7 * a)
}

r_blockout <- function(y, llm_loss, N) {
  B <- length(y) %/% N
  n <- B * N
  y <- y[seq_len(n)]
  llm_loss <- llm_loss[seq_len(n)]
  e_b <- numeric(B); de_b <- numeric(B); L <- numeric(n); D <- numeric(n)
  for (b in seq_len(B)) {
    own <- ((b - 1) * N + 1):(b * N)
    l <- (y - mean(y[own]))^2
    d <- l - llm_loss
    l[own] <- 0; d[own] <- 0
    e_b[b] <- sum(l) / (n - N); de_b[b] <- sum(d) / (n - N)
    L <- L + l; D <- D + d
  }
  list(e_b = e_b, lbar = L / (B - 1), de_b = de_b, dlbar = D / (B - 1), B = B, n = n,
       llm_mean = mean(llm_loss))
}

r_pieces <- function(e_b, lbar, N) {
  B <- length(e_b)
  S <- colMeans(matrix(lbar, nrow = N))
  vtr <- stats::var(e_b); vte <- stats::var(lbar)
  C <- sum((e_b - mean(e_b)) * (S - mean(S))) / (B - 1)
  list(ecv = mean(e_b), v_train = vtr, v_test = vte, cov = C, s2N = N * vtr + vte + 2 * N * C)
}

test_that("ess() equals an R implementation of block-out CV and Algorithm 3.1", {
  skip_if_no_llmsurrogate()
  d <- ess_data()
  grid <- c(2, 3, 5, 8)
  res <- ess(d, "y", "llm", algorithm = "mean", grid = grid, seed = NULL, regime = "fixed_N")
  expect_s3_class(res, c("llmsurrogate_ess", "llmsurrogate_result"))
  tab <- as.data.frame(res)
  llm_loss <- (d$llm - d$y)^2
  z <- stats::qnorm(0.95)
  prev <- 0; bound <- NA
  for (k in seq_along(grid)) {
    N <- grid[k]
    r <- r_blockout(d$y, llm_loss, N)
    p <- r_pieces(r$e_b, r$lbar, N)
    dp <- r_pieces(r$de_b, r$dlbar, N)
    expect_equal(tab$algo_error[k], p$ecv, tolerance = 1e-12)
    expect_equal(tab$v_train[k], dp$v_train, tolerance = 1e-10)
    expect_equal(tab$v_test[k], dp$v_test, tolerance = 1e-10)
    expect_equal(tab$cov_train_test[k], dp$cov, tolerance = 1e-10)
    expect_equal(tab$diff[k], p$ecv - r$llm_mean, tolerance = 1e-10)
    se <- sqrt(dp$s2N / r$n)
    expect_equal(tab$diff_se[k], se, tolerance = 1e-10)
    expect_equal(tab$p_value[k], stats::pnorm(dp$ecv / se, lower.tail = FALSE), tolerance = 1e-10)
    if (is.na(bound) && !(dp$ecv / se > z)) bound <- prev + 1
    prev <- N
  }
  if (is.na(bound)) bound <- max(grid) + 1
  expect_identical(as.integer(res$lower_bound), as.integer(bound))
  expect_equal(res$llm_error, mean(llm_loss), tolerance = 1e-12)
})

test_that("ess() and error_curve() give the Python package's numbers", {
  skip_if_no_llmsurrogate()
  d <- ess_data(200)
  res <- ess(d, "y", "llm", features = c("a", "b"), algorithm = "lasso", grid = c(1, 4, 20), seed = 7)
  py <- reticulate::import("llmsurrogate.ess", convert = FALSE)
  cols <- reticulate::r_to_py(lapply(as.list(d), as.list))
  pres <- py$equivalent_sample_size(cols, "y", "llm", features = list("a", "b"), algorithm = "lasso",
                                    grid = list(1L, 4L, 20L), seed = 7L)
  ptab <- jsonlite::fromJSON(reticulate::py_to_r(pres$table$to_json(orient = "columns", double_precision = 15L)))
  for (col in c("algo_error", "diff", "diff_se", "z", "llm_error")) {
    expect_equal(res$table[[col]], as.numeric(unlist(ptab[[col]])), tolerance = 1e-12, info = col)
  }
  expect_identical(as.integer(res$lower_bound), as.integer(reticulate::py_to_r(pres$lower_bound)))
  perm <- unlist(.call("ess.permutation", 10L, 7L))
  expect_identical(sort(perm), 0:9)

  curve <- error_curve(d, "y", algorithm = "mean", grid = c(2, 10), seed = 1)
  expect_s3_class(curve, "llmsurrogate_error_curve")
  expect_true(all(c("error", "se", "ci_low", "ci_high", "regime") %in% names(as.data.frame(curve))))
})

test_that("error_curve(): intervals at `level`; the earlier `alpha` (1 - level) still works, with a deprecation warning", {
  skip_if_no_llmsurrogate()
  d <- ess_data(200)
  new <- error_curve(d, "y", algorithm = "mean", grid = c(2, 10), seed = 1, level = 0.9)
  expect_identical(new$level, 0.9)
  expect_warning(a <- new$alpha, "field `alpha` of an error curve is deprecated.*use `level`",
                 class = "llmsurrogate_deprecation")
  expect_equal(a, 1 - 0.9)
  expect_null(new$no_such_field)
  expect_warning(old <- error_curve(d, "y", algorithm = "mean", grid = c(2, 10), seed = 1, alpha = 0.1),
                 "argument `alpha` is deprecated.*use `level` \\(level = 1 - alpha\\)", class = "llmsurrogate_deprecation")
  expect_identical(old$table, new$table)
  expect_identical(old$level, new$level)
  expect_error(error_curve(d, "y", algorithm = "mean", grid = c(2, 10), level = 0.9, alpha = 0.1), "renamed `level`")
  expect_error(error_curve(d, "y", algorithm = "mean", grid = c(2, 10), alpha = 0.7), "argument `alpha`")
  expect_error(error_curve(d, "y", algorithm = "mean", grid = c(2, 10), level = 0.3), "level")
  default <- error_curve(d, "y", algorithm = "mean", grid = c(2, 10), seed = 1)
  expect_identical(default$level, 0.95)
  expect_identical(colnames(confint(new)), c("5 %", "95 %"))
  expect_identical(colnames(confint(default)), c("2.5 %", "97.5 %"))
  expect_error(confint(new, level = 0.95), "level 0.9", class = "llmsurrogate_error")
})

test_that("ess results print, summarise and plot", {
  skip_if_no_llmsurrogate()
  d <- ess_data()
  res <- ess(d, "y", d$llm, algorithm = "mean", grid = c(1, 2, 5), seed = 3L)
  out <- capture.output(print(res))
  expect_match(out[1], "^ESS of the fixed rule")
  expect_true(any(grepl("ESS lower bound", out)))
  expect_s3_class(summary(res), "summary.llmsurrogate_result")
  expect_identical(res$grid, c(1L, 2L, 5L))
  expect_identical(res$ci[["upper"]], Inf)
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_identical(plot(res), res)
  expect_identical(plot(error_curve(d, "y", algorithm = "mean", grid = c(2, 5))), error_curve(d, "y", algorithm = "mean", grid = c(2, 5)))
})

test_that("ess() reports bad input as llmsurrogate errors", {
  skip_if_no_llmsurrogate()
  d <- ess_data()
  expect_error(ess(d, "y", "llm", algorithm = "mean", grid = c(2, 100)), "exceeds n/2", class = "llmsurrogate_error")
  expect_error(ess(d, "y", "nope", algorithm = "mean"), "nope", class = "llmsurrogate_error")
  expect_error(ess(as.list(d), "y", "llm"), "data frame", class = "llmsurrogate_error")
  expect_error(ess(d, "y", "llm", algorithm = "mean", grid = 2.5), "whole numbers", class = "llmsurrogate_error")
  d$y[3] <- NA
  expect_error(ess(d, "y", "llm", algorithm = "mean", grid = 2), "non-finite|missing", class = "llmsurrogate_error")
})

test_that("cate_ess() equals block-out CV of the IPW transformed outcome computed in R", {
  skip_if_no_llmsurrogate()
  set.seed(5)
  n <- 240
  x <- rnorm(n)
  d <- rbinom(n, 1, 0.4)
  y <- x + d * (1 + x) + rnorm(n)
  exp_data <- data.frame(x = x, d = d, y = y, tau = 1 + 0.9 * x)
  grid <- c(2, 5, 12, 40)
  res <- cate_ess(exp_data, "y", "d", "tau", propensity = 0.4, algorithm = "mean", grid = grid,
                  seed = NULL, regime = "fixed_N")
  expect_s3_class(res, "llmsurrogate_ess")
  ystar <- y * (d - 0.4) / (0.4 * 0.6)
  llm_loss <- (exp_data$tau - ystar)^2
  z <- stats::qnorm(0.95)
  prev <- 0; bound <- NA
  for (k in seq_along(grid)) {
    r <- r_blockout(ystar, llm_loss, grid[k])
    p <- r_pieces(r$e_b, r$lbar, grid[k])
    dp <- r_pieces(r$de_b, r$dlbar, grid[k])
    expect_equal(res$table$algo_error[k], p$ecv, tolerance = 1e-12)
    expect_equal(res$table$diff_se[k], sqrt(dp$s2N / r$n), tolerance = 1e-10)
    if (is.na(bound) && !(dp$ecv / sqrt(dp$s2N / r$n) > z)) bound <- prev + 1
    prev <- grid[k]
  }
  if (is.na(bound)) bound <- max(grid) + 1
  expect_identical(as.integer(res$lower_bound), as.integer(bound))
  expect_equal(res$llm_error, mean(llm_loss), tolerance = 1e-12)

  # a propensity column and the default (treated share) give the same numbers here
  exp_data$pi <- mean(d)
  a <- cate_ess(exp_data, "y", "d", "tau", propensity = "pi", algorithm = "mean", grid = grid, seed = 1)
  b <- cate_ess(exp_data[, c("x", "d", "y", "tau")], "y", "d", "tau", algorithm = "mean", grid = grid, seed = 1)
  expect_equal(a$table$algo_error, b$table$algo_error, tolerance = 1e-14)
  expect_error(cate_ess(exp_data, "y", "d", "tau", propensity = 1.5, algorithm = "mean", grid = 2),
               "propensity", class = "llmsurrogate_error")
})

test_that("bias_correct adds 2 V_test / (B - 1) to the fixed-N variance", {
  skip_if_no_llmsurrogate()
  d <- ess_data()
  grid <- c(10, 20, 30)
  res <- ess(d, "y", "llm", algorithm = "mean", grid = grid, seed = NULL, regime = "fixed_N",
             bias_correct = TRUE)
  llm_loss <- (d$llm - d$y)^2
  for (k in seq_along(grid)) {
    r <- r_blockout(d$y, llm_loss, grid[k])
    dp <- r_pieces(r$de_b, r$dlbar, grid[k])
    s2 <- dp$s2N + 2 * dp$v_test / (r$B - 1)
    expect_equal(res$table$diff_se[k], sqrt(s2 / r$n), tolerance = 1e-10)
  }
  expect_true(isTRUE(res$bias_correct))
  expect_false(isTRUE(ess(d, "y", "llm", algorithm = "mean", grid = grid, seed = NULL)$bias_correct))
  expect_error(ess(d, "y", "llm", algorithm = "mean", grid = 10, bias_correct = NA), "bias_correct",
               class = "llmsurrogate_error")
})

# Issue 26, item 6: tidy() follows broom's convention of a first `term` column
test_that("tidy() of an ess() result and of an error curve has a term column naming N", {
  skip_if_no_llmsurrogate()
  skip_if_not_installed("generics")
  set.seed(1)
  d <- data.frame(y = rnorm(200))
  d$llm <- 0.2
  res <- ess(d, "y", "llm", algorithm = "mean", grid = c(1, 2, 5))
  td <- generics::tidy(res)
  expect_identical(names(td)[1], "term")
  expect_identical(td$term, paste("N =", as.data.frame(res)$n_train))
  expect_identical(generics::tidy(error_curve(d, "y", algorithm = "mean", grid = c(1, 2)))$term, c("N = 1", "N = 2"))
})
