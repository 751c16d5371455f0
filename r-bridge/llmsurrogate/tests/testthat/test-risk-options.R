# Issue 34 §2 in R: `options` with named probability columns matches them by name (columns
# alphabetical after a pivot or a dcast, `options` in the scale's order), and names that differ are
# an error naming both, never a relabelling by position. Reference: the same call with the columns
# put in the scale's order by hand.

pivoted_data <- function(n = 200, seed = 3) {
  set.seed(seed)
  scale <- c("never", "rarely", "often")
  p <- matrix(stats::rexp(3 * n) * rep(c(3, 1, 1), each = n), n)
  p <- p / rowSums(p)
  colnames(p) <- scale
  y <- apply(p, 1, function(pr) sample(scale, 1, prob = pr))
  list(p = p, alpha = p[, sort(scale)], y = y, scale = scale, g = rep(c("a", "b"), length.out = n))
}

test_that("evaluate_risk_scores() and compare_answers() match named columns to `options` by name", {
  skip_if_no_llmsurrogate()
  d <- pivoted_data()
  want <- evaluate_risk_scores(d$y, d$p, options = d$scale, ordered = TRUE, n_boot = 0)
  got <- evaluate_risk_scores(d$y, d$alpha, options = d$scale, ordered = TRUE, n_boot = 0)
  expect_identical(got$table$value, want$table$value)
  expect_identical(unlist(got$meta$options), d$scale)
  df <- stats::setNames(as.data.frame(d$alpha), paste0("prob_", colnames(d$alpha)))  # as risk_scores() writes them
  expect_identical(evaluate_risk_scores(d$y, df, options = d$scale, ordered = TRUE, n_boot = 0)$table$value,
                   want$table$value)
  cw <- compare_answers(d$y, d$p, groups = d$g, options = d$scale, ordered = TRUE, n_boot = 0)
  cg <- compare_answers(d$y, d$alpha, groups = d$g, options = d$scale, ordered = TRUE, n_boot = 0)
  expect_identical(cg$table$value, cw$table$value)
  # unnamed columns (and a data frame's default V1.. names): `options` labels them in order
  expect_identical(evaluate_risk_scores(d$y, unname(d$p), options = d$scale, ordered = TRUE, n_boot = 0)$table$value,
                   want$table$value)
  expect_identical(evaluate_risk_scores(d$y, as.data.frame(unname(d$p)), options = d$scale, ordered = TRUE,
                                        n_boot = 0)$table$value, want$table$value)
  # names that are not options at all: `options` labels the columns in order, as documented
  expect_identical(evaluate_risk_scores(d$y, stats::setNames(as.data.frame(d$p), c("p1", "p2", "p3")),
                                        options = d$scale, ordered = TRUE, n_boot = 0)$table$value, want$table$value)
  # names that share some options but not all: an error naming both
  expect_error(evaluate_risk_scores(d$y, d$alpha, options = c("never", "sometimes", "often"), n_boot = 0),
               "`options`.*`scores`.*sometimes", class = "llmsurrogate_error")
  expect_error(compare_answers(d$y, d$alpha, options = c("never", "sometimes", "often"), n_boot = 0),
               "`options`.*`scores`.*sometimes", class = "llmsurrogate_error")
})
