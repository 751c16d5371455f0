# fixest's arguments of the feols() methods that used to be accepted and ignored (issue 35 §3, §5):
# residuals(type = ) and fitted(type = , na.rm = ) against lm() (weights, na.exclude), coef(keep =,
# drop = ) against fixest's rule written out with grepl(), broom's column names in summary() and
# as.data.frame(), glance()'s adj.r.squared and sigma against summary(lm), and etable(digits = )
# refused in R's words.

fa_data <- function(n = 90, seed = 5) {
  set.seed(seed)
  d <- data.frame(firm = sample(c("a", "b", "c", "d", "e"), n, TRUE), x = rnorm(n), z = rnorm(n),
                  w = runif(n, 0.2, 3))
  d$y <- 0.8 * d$x + 0.3 * d$z + match(d$firm, letters[1:5]) + rnorm(n)
  rownames(d) <- sprintf("r%02d", seq_len(n))
  d
}

fa_close <- function(object, expected, tol = 1e-8) {
  expect_identical(names(object), names(expected))
  expect_identical(is.na(unname(object)), is.na(unname(expected)))
  ok <- !is.na(expected)
  expect_lt(max(abs(unname(object)[ok] - unname(expected)[ok]) / pmax(abs(unname(expected)[ok]), 1)), tol)
}

test_that("residuals(type = ) and fitted(type = , na.rm = ) are lm()'s and fixest's, weighted or not", {
  skip_if_no_llmsurrogate()
  d <- fa_data()
  d$x[c(4, 9)] <- NA
  for (w in list(NULL, "w")) {
    f <- suppressWarnings(feols(y ~ x + z | firm, d, weights = w))
    ref <- if (is.null(w)) lm(y ~ x + z + firm, d, na.action = na.exclude) else
      lm(y ~ x + z + firm, d, weights = w, na.action = na.exclude)
    for (type in c("response", "pearson", "deviance")) {
      fa_close(residuals(f, type = type), stats::na.omit(residuals(ref, type = type)))
      fa_close(resid(f, type = type, na.rm = FALSE), residuals(ref, type = type))  # NA in the dropped rows
    }
    fa_close(fitted(f, type = "link"), stats::na.omit(fitted(ref)))
    fa_close(fitted(f, na.rm = FALSE), fitted(ref))
    fa_close(predict(f, type = "link"), stats::na.omit(fitted(ref)))
  }
  f <- suppressWarnings(feols(y ~ x + z | firm, d, weights = ~w))
  expect_error(residuals(f, type = "working"), class = "llmsurrogate_error", regexp = "`type`")
  expect_error(residuals(f, type = "partial"), class = "llmsurrogate_error", regexp = "`type`")
  expect_error(fitted(f, type = "terms"), class = "llmsurrogate_error", regexp = "`type`")
  expect_error(fitted(f, na.rm = NA), class = "llmsurrogate_error", regexp = "`na.rm`")
})

test_that("coef(keep = , drop = ) and coeftable(keep = , drop = ) follow fixest's regular expressions", {
  skip_if_no_llmsurrogate()
  d <- fa_data(seed = 6)
  d$x2 <- d$x^2
  f <- feols(y ~ x + z + x2 + x:z, d)
  b <- coef(f)
  nm <- names(b)
  # fixest: keep the terms matching any pattern ("!p": not matching p), then drop those matching
  expect_identical(coef(f, keep = "^x"), b[grepl("^x", nm)])
  expect_identical(coef(f, keep = c("z$", "Intercept")), b[grepl("z$", nm) | grepl("Intercept", nm)])
  expect_identical(coef(f, keep = "!Intercept"), b[!grepl("Intercept", nm)])
  expect_identical(coef(f, drop = ":"), b[!grepl(":", nm)])
  expect_identical(coef(f, drop = "!^x"), b[grepl("^x", nm)])
  expect_identical(coef(f, keep = "^x", drop = "2"), b[grepl("^x", nm) & !grepl("2", nm)])
  expect_identical(coef(f, keep = "%^z"), b[grepl("^z", nm)])
  expect_identical(coef(f, keep = "nothing"), b[FALSE])
  ct <- coeftable(f, keep = "^x", vcov = "hetero")
  expect_identical(rownames(ct), nm[grepl("^x", nm)])
  expect_equal(ct[, "Std. Error"], sqrt(diag(vcov(f, vcov = "hetero")))[grepl("^x", nm)], tolerance = 1e-12)
  expect_error(coef(f, keep = 1), class = "llmsurrogate_error", regexp = "`keep`")
  expect_error(coef(f, drop = NA_character_), class = "llmsurrogate_error", regexp = "`drop`")
  expect_error(coef(f, keep = "("), class = "llmsurrogate_error", regexp = "`keep`")
})

test_that("summary() and as.data.frame() use broom's names, as tidy()", {
  skip_if_no_llmsurrogate()
  d <- fa_data(seed = 7)
  f <- feols(y ~ x + z | firm, d)
  td <- generics::tidy(f)
  expect_identical(names(as.data.frame(f)), names(td))
  expect_identical(names(as.data.frame(f)), c("term", "estimate", "std.error", "statistic", "p.value", "conf.low",
                                               "conf.high"))
  expect_equal(as.data.frame(f)$std.error, unname(sqrt(diag(vcov(f)))), tolerance = 1e-12)
  expect_identical(row.names(as.data.frame(f, row.names = c("a", "b"))), c("a", "b"))
  out <- capture.output(print(summary(f)))
  expect_true(any(grepl("std.error", out, fixed = TRUE)))
  expect_false(any(grepl("std_error|conf_low|p_value", out)))
  expect_identical(names(generics::tidy(f, conf.int = FALSE)), c("term", "estimate", "std.error", "statistic",
                                                                  "p.value"))
})

test_that("glance(): adj.r.squared and sigma as summary(lm) (fixed effects as factor() dummies)", {
  skip_if_no_llmsurrogate()
  d <- fa_data(seed = 8)
  cases <- list(list(feols(y ~ x + z, d), lm(y ~ x + z, d)),
                list(feols(y ~ x + z, d, weights = ~w), lm(y ~ x + z, d, weights = w)),
                list(feols(y ~ x + z | firm, d), lm(y ~ x + z + firm, d)),
                list(feols(y ~ x + z | firm, d, weights = ~w), lm(y ~ x + z + firm, d, weights = w)))
  for (case in cases) {
    gl <- generics::glance(case[[1]])
    s <- summary(case[[2]])
    expect_equal(gl$r.squared, s$r.squared, tolerance = 1e-10)
    expect_equal(gl$adj.r.squared, s$adj.r.squared, tolerance = 1e-10)
    expect_equal(gl$sigma, s$sigma, tolerance = 1e-10)
    expect_equal(gl$sigma, sigma(case[[1]]), tolerance = 1e-12)
    expect_identical(gl$df.residual, df.residual(case[[2]]))
  }
})

test_that("etable(digits = ) outside 0..15 is an R error naming `digits`", {
  skip_if_no_llmsurrogate()
  f <- feols(y ~ x | firm, fa_data(seed = 9))
  for (bad in list(-1, 2.5, NA_real_, 99, "3")) {
    expect_error(etable(f, digits = bad), class = "llmsurrogate_error", regexp = "`digits`")
  }
  expect_match(etable(f, digits = 0), "(0)", fixed = TRUE)
  expect_error(etable(f, format = "html"), class = "llmsurrogate_error", regexp = "`format`")
})

test_that("summary() points to R help pages, not to docs/ files an installed package lacks", {
  skip_if_no_llmsurrogate()
  f <- feols(y ~ x | firm, fa_data(seed = 9))
  for (text in list(capture.output(print(summary(f))), capture.output(print(summary(f, vcov = "hetero"))))) {
    text <- paste(text, collapse = "\n")
    expect_false(grepl("docs/methods", text, fixed = TRUE))
    expect_match(text, "?ssc", fixed = TRUE)
  }
})
