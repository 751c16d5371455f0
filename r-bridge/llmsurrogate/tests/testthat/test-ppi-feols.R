# Issue 36 §5: ppi_feols(), the prediction-powered fixed-effects regression from R in fixest's
# syntax. Its numbers equal Python's llmsurrogate.ppi.feols to 1e-12 (called here through
# reticulate on the same data frames), the classical slopes equal lm() with the fixed effects as
# dummies, the vcov spellings are feols()'s, and bad input is an error in R's words.

feols_data <- function(n = 200, N = 2500, seed = 4) {
  set.seed(seed)
  make <- function(m) {
    d <- data.frame(firm = sample(letters[1:8], m, TRUE), year = sample(2001:2004, m, TRUE), x = rnorm(m),
                    z = rnorm(m), stringsAsFactors = FALSE)
    d$y <- 1.5 * d$x - 0.5 * d$z + match(d$firm, letters) / 4 + (d$year - 2000) / 5 + rnorm(m)
    d$llm <- d$y + rnorm(m, sd = 0.7)
    d$w <- runif(m, 0.5, 2)
    d
  }
  list(lab = make(n), unl = make(N))
}

# Python's ppi.feols on the same data frames (reticulate converts them to pandas).
py_feols <- function(formula, lab, unl, ...) {
  ppi <- reticulate::import("llmsurrogate.ppi", convert = FALSE)
  res <- ppi$feols(formula, reticulate::r_to_py(lab), reticulate::r_to_py(unl), ...)
  tab <- lapply(reticulate::py_to_r(res$table$to_dict("list")), unlist)
  list(term = as.character(tab$term), estimate = tab$estimate, se = tab$std_error, low = tab$ci_low,
       high = tab$ci_high, lam = tab$lam)
}

expect_feols_equal <- function(r, p, tol = 1e-12) {
  expect_identical(r$table$term, p$term)
  expect_false(anyNA(p$se))  # a regression always has standard errors
  expect_same_numbers(r, p, tol)
}

test_that("ppi_feols equals Python's ppi.feols (1e-12) for every method, vcov, weights and coord", {
  skip_if_no_llmsurrogate()
  d <- feols_data()
  for (m in c("ppi++", "ppi", "classical")) {
    r <- ppi_feols(y ~ x + z | firm + year, d$lab, d$unl, "llm", method = m, level = 0.9)
    p <- py_feols("y ~ x + z | firm + year", d$lab, d$unl, prediction = "llm", method = m, level = 0.9)
    expect_feols_equal(r, p)
    expect_s3_class(r, "llmsurrogate_ppi_result")
  }
  crv <- reticulate::dict(CRV1 = "firm")
  p <- py_feols("y ~ x + z | firm", d$lab, d$unl, prediction = "llm", vcov = crv, coord = "z", weights = "w")
  for (spelling in list(list(vcov = ~firm), list(cluster = ~firm), list(vcov = list(CRV1 = "firm")),
                        list(vcov = "cluster"), list(se = "cluster", cluster = "firm"))) {
    r <- do.call(ppi_feols, c(list(y ~ x + z | firm, d$lab, d$unl, "llm", coord = "z", weights = "w"), spelling))
    expect_feols_equal(r, p)
    expect_true(r$clustered)
    expect_identical(r$coord, "z")
  }
  # coord by 1-based position, weights as ~w, the formula as a string
  r <- ppi_feols("y ~ x + z | firm", d$lab, d$unl, "llm", cluster = ~firm, coord = 2, weights = ~w)
  expect_feols_equal(r, p)
  # a fixed lambda, and se = "hetero"
  r <- ppi_feols(y ~ x | firm^year, d$lab, d$unl, "llm", lambda = 0.4, se = "hetero")
  expect_feols_equal(r, py_feols("y ~ x | firm^year", d$lab, d$unl, prediction = "llm", lam = 0.4))
})

test_that("ppi_feols(vcov = \"iid\") equals Python's (1e-12), and lm()'s iid standard errors at lambda = 0", {
  skip_if_no_llmsurrogate()
  d <- feols_data()
  for (m in c("ppi++", "ppi", "classical")) {
    r <- ppi_feols(y ~ x + z | firm + year, d$lab, d$unl, "llm", vcov = "iid", method = m, level = 0.9)
    p <- py_feols("y ~ x + z | firm + year", d$lab, d$unl, prediction = "llm", vcov = "iid", method = m, level = 0.9)
    expect_feols_equal(r, p)
    expect_match(r$vcov, "^iid")
  }
  p <- py_feols("y ~ x + z | firm", d$lab, d$unl, prediction = "llm", vcov = "iid", coord = "z", weights = "w")
  for (spelling in list(list(vcov = "iid"), list(se = "standard"), list(se = "iid"))) {
    r <- do.call(ppi_feols, c(list(y ~ x + z | firm, d$lab, d$unl, "llm", coord = "z", weights = ~w), spelling))
    expect_feols_equal(r, p)
  }
  expect_false(isTRUE(all.equal(r$table$std_error, py_feols("y ~ x + z | firm", d$lab, d$unl, prediction = "llm",
                                                              coord = "z", weights = "w")$se)))
  # lambda = 0: the standard errors of lm() with the fixed effects as dummies (and of feols(vcov = "iid"))
  r <- ppi_feols(y ~ x + z | firm + year, d$lab, d$unl, "llm", vcov = "iid", lambda = 0)
  fit <- lm(y ~ x + z + factor(firm) + factor(year), data = d$lab)
  expect_equal(unname(r$table$std_error), unname(sqrt(diag(vcov(fit)))[c("x", "z")]), tolerance = 1e-10)
  expect_equal(unname(r$table$estimate), unname(coef(fit)[c("x", "z")]), tolerance = 1e-10)
})

test_that("ppi_feols: R's term names (x^2 is I(x^2)), lm()'s classical slopes and HC1 at lambda = 0, the PPI slopes of the dummy design", {
  skip_if_no_llmsurrogate()
  d <- feols_data()
  r <- ppi_feols(y ~ x + x^2 | firm, d$lab, d$unl, "llm")
  expect_identical(names(coef(r)), c("x", "I(x^2)"))
  cl <- ppi_feols(y ~ x + z | firm + year, d$lab, d$unl, "llm", method = "classical")
  ref <- coef(lm(y ~ x + z + factor(firm) + factor(year), data = d$lab))[c("x", "z")]
  expect_equal(coef(cl), ref, tolerance = 1e-10)
  # with lambda = 1 the slopes are ppi_ols()'s on the explicit dummy design
  pp <- ppi_feols(y ~ x + z | firm, d$lab, d$unl, "llm", method = "ppi")
  ols <- ppi_ols(y ~ x + z + factor(firm), d$lab, d$unl, "llm", method = "ppi")
  expect_equal(coef(pp), coef(ols)[c("x", "z")], tolerance = 1e-10)
  # the variance is that of the two within regressions, each in its own sample (docs/methods/ppi.md §9.2), not
  # ppi_ols()'s pooled-Hessian sandwich on the dummies; at lambda = 0 it is lm()'s with fixest's HC1
  # (n / (n - p) times the HC0 sandwich) and the classical baseline's, hetero and clustered
  z0 <- ppi_feols(y ~ x + z | firm + year, d$lab, d$unl, "llm", lambda = 0)
  fit <- lm(y ~ x + z + factor(firm) + factor(year), data = d$lab)
  X <- model.matrix(fit)
  bread <- solve(crossprod(X))
  hc1 <- nrow(X) / (nrow(X) - ncol(X)) * bread %*% crossprod(X * residuals(fit)) %*% bread
  expect_equal(unname(z0$table$std_error), unname(sqrt(diag(hc1))[c("x", "z")]), tolerance = 1e-10)
  expect_equal(unname(z0$table$std_error), unname(z0$table$classical_std_error), tolerance = 1e-12)
  c0 <- ppi_feols(y ~ x + z | firm, d$lab, d$unl, "llm", lambda = 0, cluster = ~firm)
  cc <- ppi_feols(y ~ x + z | firm, d$lab, d$unl, "llm", method = "classical", cluster = ~firm)
  expect_equal(unname(c0$table$std_error), unname(cc$table$std_error), tolerance = 1e-12)
  expect_feols_equal(c0, py_feols("y ~ x + z | firm", d$lab, d$unl, prediction = "llm", lam = 0,
                                  vcov = reticulate::dict(CRV1 = "firm")))
  # the methods of the other ppi_* results
  expect_identical(rownames(confint(pp)), c("x", "z"))
  expect_output(print(pp), "fixed-effects linear regression")
  expect_match(paste(format(summary(pp)), collapse = "\n"), "fixed-effects", fixed = TRUE)
  if (requireNamespace("generics", quietly = TRUE)) {
    expect_identical(generics::tidy(pp)$term, c("x", "z"))
    expect_identical(generics::glance(pp)$n, 200L)
  }
  pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_identical(plot(pp), pp)
})

test_that("ppi_feols refuses bad input in R's words", {
  skip_if_no_llmsurrogate()
  d <- feols_data(n = 60, N = 300)
  lab_na <- d$lab
  lab_na$x[7] <- NA
  expect_error(ppi_feols(y ~ x | firm, lab_na, d$unl, "llm"), "column `x` has a missing value \\(NA\\) in `labeled`, row 7",
               class = "llmsurrogate_error")
  unl_na <- d$unl
  unl_na$llm[12] <- NA
  expect_error(ppi_feols(y ~ x | firm, d$lab, unl_na, "llm"), "column `llm` has a missing value \\(NA\\) in `unlabeled`, row 12")
  expect_error(ppi_feols(y ~ x, d$lab, d$unl, "llm"), "no fixed effects .* ppi_ols\\(\\)")
  expect_error(ppi_feols(y ~ x | firm, d$lab, d$unl, "llm", vcov = "HC3"), "\"HC3\" is not offered .* \"iid\"")
  expect_error(ppi_feols(y ~ x | firm, d$lab, d$unl, "llm", vcov = ~firm + year), "one column")
  expect_error(ppi_feols(y ~ x | firm, d$lab, d$unl, "gpt"), "`labeled` has no column `gpt`, which argument `prediction` names")
  expect_error(ppi_feols(y ~ x + q | firm, d$lab, d$unl, "llm"), "`labeled` has no column `q`, which the formula uses")
  bad_w <- d$lab
  bad_w$w[3] <- 0
  expect_error(ppi_feols(y ~ x | firm, bad_w, d$unl, "llm", weights = "w"), "must be positive; got 0 in row 3")
  expect_error(ppi_feols(y ~ x | firm, d$lab, d$unl, "llm", fixef.rm = "none"), "takes no argument `fixef.rm`")
  expect_error(ppi_feols(y ~ x | firm, d$lab, d$unl, "llm", coord = 0), "1-based position")
  chr <- d$lab
  chr$llm <- as.character(chr$llm)
  expect_error(ppi_feols(y ~ x | firm, chr, d$unl, "llm"), "code the answers as numbers")
})

# An R result's numbers in py_feols()'s shape, to hold another R result against it.
feols_numbers <- function(r) {
  list(term = r$table$term, estimate = unname(r$table$estimate), se = unname(r$table$std_error),
       low = unname(r$table$ci_low), high = unname(r$table$ci_high), lam = unname(r$table$lam))
}

test_that("ppi_feols: a factor in a meaningful order and a Date column (fixed effect and cluster) equal integer codes", {
  skip_if_no_llmsurrogate()
  d <- feols_data(n = 150, N = 900, seed = 8)
  grades <- c("low", "mid", "high")
  days <- as.Date(c("2024-03-05", "2023-12-31", "2024-02-29", "2023-07-01"))  # years 2001..2004, not in date order
  add <- function(x, lev) {
    x$grade_code <- (match(x$firm, letters) %% 3L) + 1L
    x$grade <- factor(grades[x$grade_code], levels = lev)
    x$day <- days[x$year - 2000L]
    x
  }
  # the factor's levels in the meaningful order (with an unused level) in `labeled`, reversed in `unlabeled`
  lab <- add(d$lab, c(grades, "unused"))
  unl <- add(d$unl, rev(grades))
  expect_identical(levels(lab$grade), c("low", "mid", "high", "unused"))
  expect_s3_class(lab$day, "Date")
  for (m in c("ppi++", "ppi", "classical")) {
    for (vc in list("hetero", "iid", "cluster")) {
      vg <- if (identical(vc, "cluster")) ~grade else vc
      vgc <- if (identical(vc, "cluster")) ~grade_code else vc
      ref <- ppi_feols(y ~ x + z | grade_code + year, lab, unl, "llm", method = m, vcov = vgc)
      expect_feols_equal(ppi_feols(y ~ x + z | grade + year, lab, unl, "llm", method = m, vcov = vg),
                         feols_numbers(ref), tol = 1e-10)
      vd <- if (identical(vc, "cluster")) ~day else vc
      vy <- if (identical(vc, "cluster")) ~year else vc
      ref <- ppi_feols(y ~ x + z | firm + year, lab, unl, "llm", method = m, vcov = vy)
      expect_feols_equal(ppi_feols(y ~ x + z | firm + day, lab, unl, "llm", method = m, vcov = vd),
                         feols_numbers(ref), tol = 1e-10)
    }
    # a Date cluster that is no fixed effect, and the Date interacted with the factor
    ref <- ppi_feols(y ~ x + z | firm, lab, unl, "llm", method = m, cluster = ~year)
    expect_feols_equal(ppi_feols(y ~ x + z | firm, lab, unl, "llm", method = m, cluster = ~day),
                       feols_numbers(ref), tol = 1e-10)
    ref <- ppi_feols(y ~ x + z | grade_code^year, lab, unl, "llm", method = m)
    expect_feols_equal(ppi_feols(y ~ x + z | grade^day, lab, unl, "llm", method = m), feols_numbers(ref), tol = 1e-10)
  }
  # and Python's numbers on the same frames
  expect_feols_equal(ppi_feols(y ~ x + z | grade + day, lab, unl, "llm", cluster = ~day),
                     py_feols("y ~ x + z | grade + day", lab, unl, prediction = "llm",
                              vcov = reticulate::dict(CRV1 = "day")))
})
