# transfer_error_table() against a brute-force loop in R: fit the gamma-only CPT by R's optimise()
# on each training domain and compute the RMSE on every other domain.
cpt_g <- function(g, z1, z2, p) {
  w <- p^g / (p^g + (1 - p)^g)
  w * z1 + (1 - w) * z2
}

test_that("transfer_error_table() equals a brute-force R loop (CPT gamma)", {
  skip_if_no_llmsurrogate()
  ce <- load_certainty_equivalents(domains = c(3, 10, 12))
  tab <- transfer_error_table(ce, "cpt:g", metric = "rmse")
  expect_identical(names(tab), c("train", "test", "error"))
  expect_equal(nrow(tab), 6L)
  doms <- unique(as.character(ce$domain))
  for (i in seq_len(nrow(tab))) {
    tr <- ce[ce$domain == tab$train[i], ]
    te <- ce[ce$domain == tab$test[i], ]
    fit <- optimise(function(g) mean((cpt_g(g, tr$z1, tr$z2, tr$p1) - tr$ce)^2), c(1e-6, 1), tol = 1e-10)
    ref <- sqrt(mean((cpt_g(fit$minimum, te$z1, te$z2, te$p1) - te$ce)^2))
    expect_equal(tab$error[i], ref, tolerance = 1e-5)
  }
})

test_that("deterioration divides by the in-sample error; r = 2 and sampled training sets work", {
  skip_if_no_llmsurrogate()
  ce <- load_certainty_equivalents(domains = c(7, 8, 9, 11))
  raw <- transfer_error_table(ce, "eu")
  det <- transfer_error_table(ce, "eu", normalize = "deterioration")
  ratio <- raw$error / det$error
  # one in-sample error per test domain: the ratio is constant within a test domain
  spread <- tapply(ratio, raw$test, function(x) diff(range(x)) / mean(x))
  expect_true(all(spread < 1e-12))
  two <- transfer_error_table(ce, "cpt:ab", r = 2)
  expect_identical(names(two), c("train_1", "train_2", "test", "error"))
  expect_equal(nrow(two), 4L * choose(3, 2))
  some <- transfer_error_table(ce, "eu", r = 2, subsets = 2, seed = 1)
  expect_equal(nrow(some), 2L * 2L)
})

test_that("transfer_within_domain_cv() gives one column per model", {
  skip_if_no_llmsurrogate()
  ce <- load_certainty_equivalents(domains = c(7, 8))
  cv <- transfer_within_domain_cv(ce, c("eu", "cpt:g"), k = 3)
  expect_identical(names(cv), c("domain", "eu", "cpt:g"))
  expect_true(all(cv$eu > 0))
})

test_that("bad input gives llmsurrogate errors", {
  skip_if_no_llmsurrogate()
  ce <- load_certainty_equivalents(domains = c(7, 8))
  expect_error(transfer_error_table(ce, "cpt:q"), class = "llmsurrogate_error", regexp = "distinct letters")
  expect_error(transfer_error_table(ce, "ols"), class = "llmsurrogate_error", regexp = "unknown model")
  expect_error(transfer_error_table(ce, "eu", r = 2), class = "llmsurrogate_error", regexp = "n > r")
  expect_error(transfer_error_table(list(a = 1), "eu"), class = "llmsurrogate_error", regexp = "data.frame")
  expect_error(transfer_error_table(ce, "eu", domain = "pool"), class = "llmsurrogate_error", regexp = "pool")
  expect_error(transfer_within_domain_cv(ce, 3), class = "llmsurrogate_error", regexp = "character")
})
