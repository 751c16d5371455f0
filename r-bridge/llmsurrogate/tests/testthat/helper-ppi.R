# Shared by test-ppi.R and test-ppi-feols.R: an R ppi_* result's table against the numbers of
# the same call in Python (a list with estimate, se, low, high, lam); a quantile has no se.
expect_same_numbers <- function(r, p, tol = 1e-12) {
  expect_equal(unname(r$table$estimate), p$estimate, tolerance = tol)
  if (!all(is.na(p$se))) expect_equal(unname(r$table$std_error), p$se, tolerance = tol)
  expect_equal(unname(r$table$ci_low), p$low, tolerance = tol)
  expect_equal(unname(r$table$ci_high), p$high, tolerance = tol)
  expect_equal(unname(r$table$lam), p$lam, tolerance = tol)
}
