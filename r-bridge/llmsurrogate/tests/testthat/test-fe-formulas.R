# Formulas as R users write them in feols() (issue 35 §2, §4), against lm() on the same data: the
# reference level and the coefficient names of factor() are lm()'s (a factor's levels and
# relevel(), unused levels dropped, numbers sorted as numbers and named as R writes them, text in
# the session's collation), fixest's i() names (rel::-6:treat), R's dotted names and names in
# backticks inside every function, fixest's x^2, and update() of a fit with fixed effects.

formulas_panel <- function(n = 240, seed = 35) {
  set.seed(seed)
  d <- data.frame(x = rnorm(n), z = rnorm(n), firm = sample(sprintf("f%02d", 1:8), n, TRUE),
                  date = sample(1:6, n, TRUE), w = runif(n, 0.5, 2))
  d$edu <- factor(sample(c("low", "mid", "high"), n, TRUE), levels = c("low", "mid", "high"))
  d$y <- d$x - 0.5 * d$z + c(low = 0, mid = 1, high = 2)[as.character(d$edu)] + rnorm(n)
  d
}

# coefficients equal by name, and the same names in the same order
expect_same_coef <- function(fit, ref, keep = names(coef(ref)), tol = 1e-8) {
  b <- coef(fit)
  expect_identical(names(b), keep)
  expect_lt(max(abs(b - coef(ref)[keep]) / pmax(abs(coef(ref)[keep]), 1)), tol)
}

test_that("factor() takes the factor's levels as lm() does: the first is the reference", {
  skip_if_no_llmsurrogate()
  d <- formulas_panel()
  expect_same_coef(feols(y ~ x + factor(edu), d), lm(y ~ x + factor(edu), d))
  expect_equal(unname(coef(feols(y ~ x + factor(edu), d))["factor(edu)mid"]),
               unname(coef(lm(y ~ x + factor(edu), d))["factor(edu)mid"]), tolerance = 1e-8)
  # relevel() is honoured
  d$edu2 <- relevel(d$edu, ref = "high")
  expect_same_coef(feols(y ~ x + factor(edu2), d), lm(y ~ x + factor(edu2), d))
  # with fixed effects: the dummies against the same reference as lm()'s
  f <- feols(y ~ x + factor(edu) | firm, d)
  ref <- lm(y ~ x + factor(edu) + factor(firm), d)
  expect_same_coef(f, ref, c("x", "factor(edu)mid", "factor(edu)high"))
  # interactions with a factor, and without an intercept
  expect_same_coef(feols(y ~ x * factor(edu), d), lm(y ~ x * factor(edu), d))
  expect_same_coef(feols(y ~ x:factor(edu), d), lm(y ~ x:factor(edu), d))
  expect_same_coef(feols(y ~ 0 + x + factor(edu), d), lm(y ~ 0 + x + factor(edu), d))
  # an ordered factor: lm() fits polynomial contrasts, which feols() does not; i() gives the dummies
  d$edu_o <- factor(d$edu, ordered = TRUE)
  expect_error(feols(y ~ x + factor(edu_o), d), "ordered factor.*polynomial", class = "llmsurrogate_error")
  f <- feols(y ~ x + i(edu_o), d)
  expect_identical(names(coef(f)), c("(Intercept)", "x", "edu_o::mid", "edu_o::high"))
  expect_equal(unname(coef(f)), unname(coef(lm(y ~ x + factor(edu), d))), tolerance = 1e-8)
  # predict(newdata) by the level's label, as lm()'s
  nd <- data.frame(x = c(0.5, -1, 2), edu = c("high", "low", "mid"))
  expect_equal(unname(predict(feols(y ~ x + factor(edu), d), newdata = nd)),
               unname(predict(lm(y ~ x + factor(edu), d), newdata = nd)), tolerance = 1e-8)
})

test_that("unused levels are dropped and text sorts as factor() sorts it, as lm() does", {
  skip_if_no_llmsurrogate()
  d <- formulas_panel()
  # a factor whose first levels have no row (f01 is unused): the reference is lm()'s, f02
  d$g <- factor(sample(sprintf("f%d", c(2, 10, 11, 3)), nrow(d), TRUE), levels = sprintf("f%d", 1:12))
  expect_same_coef(feols(y ~ x + factor(g), d), lm(y ~ x + factor(g), d))
  # numeric labels of a factor in their level order ("5" before "10")
  d$k <- factor(sample(c(5, 10, 20), nrow(d), TRUE))
  expect_identical(levels(d$k), c("5", "10", "20"))
  expect_same_coef(feols(y ~ x + factor(k), d), lm(y ~ x + factor(k), d))
  # a character column: in the order of sort() in this session's locale, as lm()'s factor()
  d$s <- sample(c("b", "B", "a", "A"), nrow(d), TRUE)
  expect_same_coef(feols(y ~ x + factor(s), d), lm(y ~ x + factor(s), d))
  # a level seen only in rows dropped for a missing value is no column (lm() drops it too)
  d$edu[d$edu == "low"][1:3] <- NA
  d$e3 <- factor(ifelse(d$edu == "low", "zero", as.character(d$edu)), levels = c("zero", "low", "mid", "high"))
  d$x[d$e3 == "zero"] <- NA
  expect_same_coef(suppressWarnings(feols(y ~ x + factor(e3), d)), lm(y ~ x + factor(e3), d))
})

test_that("fixest's i() takes the factor's order and its ref", {
  skip_if_no_llmsurrogate()
  d <- formulas_panel()
  f <- feols(y ~ x + i(edu, ref = "mid"), d)
  ref <- lm(y ~ x + relevel(edu, ref = "mid"), d)
  expect_identical(names(coef(f)), c("(Intercept)", "x", "edu::low", "edu::high"))
  expect_equal(unname(coef(f)), unname(coef(ref)), tolerance = 1e-8)
  # without ref, in a model with an intercept: the first level of the factor is left out
  f <- feols(y ~ x + i(edu), d)
  expect_identical(names(coef(f)), c("(Intercept)", "x", "edu::mid", "edu::high"))
  expect_equal(unname(coef(f)), unname(coef(lm(y ~ x + edu, d))), tolerance = 1e-8)
})

test_that("numbers stored as doubles are named as R writes them (factor(rel)-2, rel::-6:treat)", {
  skip_if_no_llmsurrogate()
  d <- formulas_panel()
  d$rel <- sample(c(-6, -2, 0, 3, 100000), nrow(d), TRUE)
  d$treat <- rbinom(nrow(d), 1, 0.5)
  expect_same_coef(feols(y ~ x + factor(rel), d), lm(y ~ x + factor(rel), d))
  expect_true("factor(rel)-2" %in% names(coef(feols(y ~ x + factor(rel), d))))
  expect_true("factor(rel)1e+05" %in% names(coef(feols(y ~ x + factor(rel), d))))  # as.character(1e5)
  f <- feols(y ~ x + i(rel, treat, ref = -2) | firm, d)
  expect_identical(names(coef(f)), c("x", "rel::-6:treat", "rel::0:treat", "rel::3:treat", "rel::1e+05:treat"))
  ref <- lm(y ~ x + I((rel == -6) * treat) + I((rel == 0) * treat) + I((rel == 3) * treat) +
              I((rel == 1e5) * treat) + factor(firm), d)
  expect_equal(unname(coef(f)), unname(coef(ref)[2:6]), tolerance = 1e-8)
  expect_false(is.na(coef(f)["rel::-6:treat"]))
  expect_identical(rownames(vcov(f)), names(coef(f)))
  # a logical column: factor(b)TRUE, as lm()
  d$b <- d$z > 0
  expect_same_coef(feols(y ~ x + factor(b), d), lm(y ~ x + factor(b), d))
})

test_that("R's dotted names work inside every function, as plain names do", {
  skip_if_no_llmsurrogate()
  d <- formulas_panel()
  d$x.1 <- runif(nrow(d), 1, 3)
  d$z.2 <- d$z
  d$firm.id <- d$firm
  d$y.0 <- d$y + d$x.1
  for (fml in list(y.0 ~ log(x.1) + sqrt(x.1):z.2 + exp(z.2 / 4), y.0 ~ x + factor(firm.id),
                   y.0 ~ poly(x.1, 2) + I(x.1^2):z.2 + abs(z.2), log(x.1) ~ x + z.2)) {
    expect_same_coef(feols(fml, d), lm(fml, d))
  }
  f <- feols(y.0 ~ log(x.1) + z.2 | firm.id, d)
  expect_same_coef(f, lm(y.0 ~ log(x.1) + z.2 + factor(firm.id), d), c("log(x.1)", "z.2"))
  f <- feols(y.0 ~ x + i(firm.id, z.2), d)
  expect_identical(names(coef(f)), c("(Intercept)", "x", paste0("firm.id::", sprintf("f%02d", 1:8), ":z.2")))
  expect_equal(unname(coef(f)), unname(coef(lm(y.0 ~ x + factor(firm.id):z.2, d))), tolerance = 1e-8)
  # a function that is not supported is named as such (not "a column name is expected")
  expect_error(feols(y.0 ~ as.numeric(x.1), d), "the function `as.numeric`", class = "llmsurrogate_error")
})

test_that("x^2 is the square, named I(x^2) (fixest's reading), and backticked names are columns", {
  skip_if_no_llmsurrogate()
  d <- formulas_panel()
  d$x.1 <- runif(nrow(d), 1, 3)
  f <- feols(y ~ x + x^2 + x.1^3, d)
  ref <- lm(y ~ x + I(x^2) + I(x.1^3), d)
  expect_same_coef(f, ref)
  expect_identical(names(coef(f)), c("(Intercept)", "x", "I(x^2)", "I(x.1^3)"))
  expect_error(feols(y ~ x + x^z, d), "`x\\^z`.*`:`", class = "llmsurrogate_error")
  # names in backticks, also inside functions and as fixed effects
  d$`my var` <- d$z
  d$`my firm` <- d$firm
  d$`x 2` <- d$x.1
  ref <- lm(y ~ x + `my var` + log(`x 2`) + factor(`my firm`), d)
  expect_same_coef(feols(y ~ x + `my var` + log(`x 2`) | `my firm`, d), ref, c("x", "`my var`", "log(`x 2`)"))
  expect_same_coef(feols(y ~ x + `my var` + log(`x 2`) + factor(`my firm`), d), ref)
})

test_that("update() changes the formula's parts as fixest's update() and re-estimates on the data", {
  skip_if_no_llmsurrogate()
  d <- formulas_panel()
  fit <- feols(y ~ x | firm, d, vcov = ~firm, weights = ~w)
  f1 <- update(fit, . ~ . + z)
  direct <- feols(y ~ x + z | firm, d, vcov = ~firm, weights = ~w)
  expect_identical(coef(f1), coef(direct))
  expect_identical(vcov(f1), vcov(direct))  # the fit's vcov and weights are kept
  expect_same_coef(f1, lm(y ~ x + z + factor(firm), d, weights = w), c("x", "z"))
  f2 <- update(fit, . ~ . + z | . + date)
  expect_same_coef(f2, lm(y ~ x + z + factor(firm) + factor(date), d, weights = w), c("x", "z"))
  expect_identical(deparse(getCall(f2)$formula), "y ~ x + z | firm + date")
  f3 <- update(f2, . ~ . - x | . - firm, vcov = "iid", weights = NULL)
  expect_same_coef(f3, lm(y ~ z + factor(date), d), "z")
  f4 <- update(fit, . ~ . | 0, vcov = "hetero")
  expect_same_coef(f4, lm(y ~ x, d, weights = w))
  expect_identical(deparse(update(fit, . ~ . | firm^date, evaluate = FALSE)$formula), "y ~ x | firm^date")
  expect_identical(deparse(update(fit, fml.update = . ~ . + z, evaluate = FALSE)$formula), "y ~ x + z | firm")
  # the data is found where update() is called, as stats::update() finds it
  local({
    d2 <- d
    d2$y <- 2 * d2$y
    g <- feols(y ~ x | firm, d2)
    expect_same_coef(update(g, . ~ . + z), lm(y ~ x + z + factor(firm), d2), c("x", "z"))
  })
  expect_error(update(fit, . ~ . + z, 3), "by name", class = "llmsurrogate_error")
})
