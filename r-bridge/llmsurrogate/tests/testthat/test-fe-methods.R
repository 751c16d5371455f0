# The post-estimation methods of feols() fits (fitted, residuals, predict, df.residual, fixef,
# model.matrix, weights, deviance, sigma, logLik, ...) against lm() with factor() dummies for the
# fixed effects, to 1e-8; R's names ((Intercept), factor(g)b, the row names of the rows used, and
# unnamed weights, as lm()'s);
# fixest's argument spellings; and classed errors where a method cannot answer (never NULL).

methods_panel <- function(n = 240, seed = 11) {
  set.seed(seed)
  d <- data.frame(firm = factor(sample(sprintf("f%02d", 1:12), n, TRUE)),
                  year = sample(2001:2008, n, TRUE), x = rnorm(n), z = rnorm(n), w = runif(n, 0.5, 2),
                  g = sample(c("lo", "mid", "hi"), n, TRUE))
  d$y <- 1.5 * d$x - 0.5 * d$z + as.integer(d$firm) / 4 + (d$year - 2000) / 10 + rnorm(n)
  rownames(d) <- sprintf("r%03d", sample.int(n))  # row names that are not positions
  d
}

expect_close <- function(object, expected, tol = 1e-8) {
  expect_identical(length(object), length(expected))
  expect_lt(max(abs(unname(object) - unname(expected)) / pmax(abs(unname(expected)), 1)), tol)
}

test_that("fitted, residuals, df.residual, model.matrix, sigma, logLik equal lm() with factor() dummies", {
  skip_if_no_llmsurrogate()
  d <- methods_panel()
  d$x[c(5, 17)] <- NA  # dropped rows: the values are named by the rows used, as lm()'s
  f <- suppressWarnings(feols(y ~ x + z | firm + year, d))
  ref <- lm(y ~ x + z + firm + factor(year), d)
  expect_close(coef(f), coef(ref)[c("x", "z")])
  expect_identical(names(fitted(f)), names(fitted(ref)))
  expect_close(fitted(f), fitted(ref))
  expect_close(residuals(f), residuals(ref))
  expect_close(resid(f), resid(ref))
  expect_identical(names(resid(f)), names(resid(ref)))
  expect_identical(df.residual(f), df.residual(ref))
  expect_close(deviance(f), deviance(ref))
  expect_close(sigma(f), sigma(ref))
  expect_close(logLik(f), logLik(ref))
  expect_identical(attr(logLik(f), "df"), attr(logLik(ref), "df"))
  expect_close(AIC(f), AIC(ref))
  mm <- model.matrix(f)
  expect_identical(dimnames(mm), list(names(fitted(ref)), c("x", "z")))
  expect_close(mm, model.matrix(ref)[, c("x", "z")], 1e-15)
  expect_identical(case.names(f), names(fitted(ref)))
  expect_identical(variable.names(f), c("x", "z"))
  expect_identical(unclass(na.action(f)), unclass(na.action(ref)))
  expect_s3_class(na.action(f), "omit")
  # the clustered fit has the same residual degrees of freedom (fixest's df.residual: n - rank)
  cl <- suppressWarnings(feols(y ~ x + z | firm + year, d, vcov = ~firm))
  expect_identical(df.residual(cl), df.residual(ref))
  expect_null(na.action(feols(y ~ x + z | firm + year, methods_panel())))
})

test_that("weights: fitted, residuals, weights, deviance, sigma and logLik as lm(weights = )", {
  skip_if_no_llmsurrogate()
  d <- methods_panel(seed = 12)
  f <- feols(y ~ x + z | firm, d, weights = ~w)  # fixest's one-sided formula
  ref <- lm(y ~ x + z + firm, d, weights = w)
  expect_close(coef(f), coef(ref)[c("x", "z")])
  expect_close(fitted(f), fitted(ref))
  expect_close(resid(f), resid(ref))
  expect_identical(weights(f), weights(ref))
  expect_close(deviance(f), deviance(ref))
  expect_close(sigma(f), sigma(ref))
  expect_close(logLik(f), logLik(ref))
  expect_null(weights(feols(y ~ x | firm, d)))  # unweighted, as lm()
  wv <- d$w
  wv[3] <- NA
  g <- suppressWarnings(feols(y ~ x + z | firm, d, weights = wv))
  expect_identical(weights(g), d$w[-3])
})

test_that("no fixed effects: (Intercept) and factor() dummies named, valued and predicted as lm()'s", {
  skip_if_no_llmsurrogate()
  d <- methods_panel(seed = 13)
  f <- feols(y ~ x + factor(g) + x:z, d, vcov = "iid")
  ref <- lm(y ~ x + factor(g) + x:z, d)
  expect_setequal(names(coef(f)), names(coef(ref)))
  b <- coef(ref)[names(coef(f))]
  expect_close(coef(f), b)
  expect_close(coef(f)["(Intercept)"], coef(ref)["(Intercept)"])
  expect_identical(dimnames(vcov(f)), list(names(coef(f)), names(coef(f))))
  expect_close(vcov(f), vcov(ref)[names(coef(f)), names(coef(f))])
  expect_close(confint(f)["(Intercept)", ], confint(ref)["(Intercept)", ])
  mm <- model.matrix(f)
  expect_identical(rownames(mm), rownames(d))
  expect_close(mm, model.matrix(ref)[, colnames(mm)], 1e-15)
  expect_close(fitted(f), fitted(ref))
  expect_close(resid(f), resid(ref))
  expect_identical(df.residual(f), df.residual(ref))
  # predict: new rows, one with a level of g not in the data (NA), one with a missing x (NA)
  nd <- data.frame(x = c(0.5, -1, 2, NA), z = c(1, 0, -1, 0), g = c("hi", "lo", "top", "mid"),
                   row.names = c("a", "b", "c", "d"))
  p <- predict(f, newdata = nd)
  expect_identical(names(p), c("a", "b", "c", "d"))
  expect_close(p[1:2], predict(ref, newdata = nd[1:2, ]))
  expect_identical(is.na(p), c(a = FALSE, b = FALSE, c = TRUE, d = TRUE))
  expect_identical(predict(f), fitted(f))
  # (Intercept) in every view of the fit
  expect_identical(as.data.frame(f)$term[1], "(Intercept)")
  expect_output(print(f), "(Intercept)", fixed = TRUE)
  expect_output(print(summary(f)), "(Intercept)", fixed = TRUE)
  expect_match(etable(f), "(Intercept)", fixed = TRUE)
  skip_if_not_installed("generics")
  expect_identical(generics::tidy(f)$term, names(coef(f)))
})

test_that("transforms in R's spelling: I(x^2), log(), poly(), 0 + factor(): lm()'s names, values and predictions", {
  skip_if_no_llmsurrogate()
  d <- methods_panel(seed = 19)
  d$u <- runif(nrow(d), 1, 3)
  for (fml in list(y ~ I(u^2) + log(u) + poly(z, 2) + x:z, y ~ 0 + x + factor(g), y ~ x + I(x * z) + exp(z / 2))) {
    f <- feols(fml, d)
    ref <- lm(fml, d)
    expect_identical(names(coef(f)), names(coef(ref)))
    expect_close(coef(f), coef(ref))
    expect_close(vcov(f), vcov(ref))
    expect_identical(colnames(model.matrix(f)), colnames(model.matrix(ref)))
    expect_close(model.matrix(f), model.matrix(ref), 1e-12)
    expect_close(fitted(f), fitted(ref))
    nd <- d[1:5, ]
    nd$u <- nd$u + 1
    nd$z <- nd$z * 2  # poly() of new values with the fit's coefficients, as predict.lm()
    expect_close(predict(f, newdata = nd), predict(ref, newdata = nd))
  }
  # pyfixest's spellings keep pyfixest's (fixest's) names
  expect_identical(names(coef(feols(y ~ i(g, ref = "lo") | firm, d))), c("g::hi", "g::mid"))
  expect_identical(names(coef(feols(y ~ x + C(g), d)))[3:4], c("C(g)[T.lo]", "C(g)[T.mid]"))
})

test_that("predict(newdata) with fixed effects equals lm()'s; an unseen level or a missing value gives NA", {
  skip_if_no_llmsurrogate()
  d <- methods_panel(seed = 14)
  f <- feols(y ~ x + z | firm + year, d)
  ref <- lm(y ~ x + z + firm + factor(year), d)
  nd <- data.frame(x = c(1, -0.5, 0.2, 1, 0), z = c(0, 2, -1, NA, 1),
                   firm = c("f03", "f11", "f99", "f01", "f05"), year = c(2004L, 2001L, 2002L, 2003L, 2030L))
  p <- predict(f, newdata = nd)
  expect_identical(names(p), as.character(1:5))
  seen <- nd[1:2, ]
  seen$firm <- factor(seen$firm, levels = levels(d$firm))
  expect_close(p[1:2], predict(ref, newdata = seen))
  expect_identical(unname(is.na(p)), c(FALSE, FALSE, TRUE, TRUE, TRUE))  # f99, z NA, year 2030
  # the level matches whatever the column's type in newdata: the year as double or character
  nd2 <- seen
  nd2$firm <- as.character(nd2$firm)
  nd2$year <- as.character(nd2$year)
  expect_close(predict(f, newdata = nd2), p[1:2], 1e-15)
  nd2$year <- as.numeric(nd2$year)
  expect_close(predict(f, newdata = nd2), p[1:2], 1e-15)
  expect_identical(predict(f, newdata = nd[0, ]), stats::setNames(numeric(0), character(0)))
  expect_error(predict(f, newdata = nd[, c("x", "firm", "year")]), "argument `newdata`: column `z` is not in",
               class = "llmsurrogate_error")
  expect_error(predict(f, newdata = nd, se.fit = TRUE), "argument `se.fit` is not an argument of predict()",
               class = "llmsurrogate_error")
  expect_identical(predict(f, newdata = nd, type = "link"), predict(f, newdata = nd))  # the same for OLS (fixest's)
  expect_error(predict(f, newdata = nd, type = "terms"), "argument `type` must be \"response\" or \"link\"",
               class = "llmsurrogate_error")
  expect_error(predict(f, newdata = as.matrix(nd)), "argument `newdata` must be a data frame",
               class = "llmsurrogate_error")
})

test_that("predict() and fixef() find a level whatever the column's type: NA in the data, Dates, logicals, a^b", {
  skip_if_no_llmsurrogate()
  d <- methods_panel(seed = 18)
  d$year[4] <- NA  # an integer fixed effect with a missing value
  d$day <- as.Date("2024-01-01") + (d$year %% 3)
  d$flag <- d$z > 0
  f <- suppressWarnings(feols(y ~ x | year + flag, d))
  ref <- lm(y ~ x + factor(year) + flag, d)
  expect_close(fitted(f), fitted(ref))
  expect_identical(names(fixef(f)$year), as.character(sort(unique(d$year))))
  expect_identical(names(fixef(f)$flag), c("FALSE", "TRUE"))
  nd <- data.frame(x = c(0.3, 0.3, 0.3), year = c(2003L, 2003L, 2099L), flag = c(TRUE, FALSE, TRUE))
  p <- predict(f, newdata = nd)
  expect_close(p[1:2], predict(ref, newdata = nd[1:2, ]))
  expect_true(is.na(p[[3]]))
  nd$year <- as.character(nd$year)
  nd$flag <- as.character(nd$flag)
  expect_equal(predict(f, newdata = nd), p, tolerance = 1e-15)
  # a Date fixed effect: a Date or its text in newdata
  g <- feols(y ~ x | day, d[!is.na(d$year), ])
  nd <- data.frame(x = 1, day = as.Date(c("2024-01-02", "2023-12-31")))
  pg <- predict(g, newdata = nd)
  expect_identical(is.na(unname(pg)), c(FALSE, TRUE))
  expect_identical(predict(g, newdata = transform(nd, day = as.character(day))), pg)
  expect_identical(names(fixef(g)$day), as.character(sort(unique(d$day))))
  # an interacted fixed effect: one level per observed pair, named firm^year
  d <- d[!is.na(d$year), ]
  h <- suppressWarnings(feols(y ~ x | firm^year, d))
  cells <- interaction(d$firm, d$year, drop = TRUE, sep = "^")
  r2 <- lm(y ~ x + cells, d)
  used <- names(fitted(h))
  expect_close(fitted(h), fitted(r2)[used])
  expect_setequal(names(fixef(h)[["firm^year"]]), as.character(unique(cells[match(used, rownames(d))])))
  pair <- d[used[1], c("x", "firm", "year")]
  expect_close(predict(h, newdata = pair), fitted(h)[1])
  expect_true(is.na(predict(h, newdata = data.frame(x = 0, firm = "f01", year = 1999L))))
})

test_that("fixef(): differences from a reference level are lm()'s factor coefficients; they rebuild the fit", {
  skip_if_no_llmsurrogate()
  d <- methods_panel(seed = 15)
  f <- feols(y ~ x + z | firm + year, d)
  ref <- lm(y ~ x + z + firm + factor(year), d)
  fe <- fixef(f)
  expect_type(fe, "list")
  expect_identical(names(fe), c("firm", "year"))
  expect_identical(names(fe$firm), levels(d$firm))
  expect_identical(names(fe$year), as.character(sort(unique(d$year))))
  b <- coef(ref)
  expect_close((fe$firm - fe$firm[["f01"]])[-1], b[paste0("firm", levels(d$firm)[-1])])
  yrs <- names(fe$year)
  expect_close((fe$year - fe$year[[yrs[1]]])[-1], b[paste0("factor(year)", yrs[-1])])
  # X b + the firm's effect + the year's effect is the fitted value
  rebuilt <- drop(model.matrix(f) %*% coef(f)) + fe$firm[as.character(d$firm)] + fe$year[as.character(d$year)]
  expect_close(rebuilt, fitted(ref))
  # one fixed effect: its effects are lm()'s intercept plus the firm coefficients
  g <- feols(y ~ x | firm, d)
  r1 <- lm(y ~ x + firm, d)
  expect_close(fixef(g)$firm, coef(r1)[["(Intercept)"]] + c(0, coef(r1)[paste0("firm", levels(d$firm)[-1])]))
  expect_error(fixef(feols(y ~ x, d)), "no fixed effects", class = "llmsurrogate_error")
  expect_error(fixef(lm(y ~ x, d)), "fixef\\(\\) takes a fit from feols", class = "llmsurrogate_error")
  # fixef() is a generic as nlme's (and fixest's): attached after llmsurrogate, theirs finds this method
  skip_if_not_installed("nlme")
  expect_identical(nlme::fixef(g), fixef(g))
})

test_that("no stats generic answers NULL: each works or raises an llmsurrogate_error", {
  skip_if_no_llmsurrogate()
  d <- methods_panel(seed = 16)
  f <- feols(y ~ x + z | firm, d)
  for (fn in list(fitted, residuals, resid, df.residual, deviance, sigma, model.matrix, predict, case.names,
                  variable.names, formula, terms, logLik, nobs, coef, vcov, confint, getCall)) {
    expect_false(is.null(fn(f)))
  }
  expect_identical(formula(f), y ~ x + z | firm, ignore_attr = TRUE)
  expect_identical(attr(terms(f), "term.labels"), c("x", "z"))
  expect_identical(coef(update(f, data = d[1:150, ])), coef(feols(y ~ x + z | firm, d[1:150, ])))
  expect_error(model.frame(f), "model.frame\\(\\) is not kept", class = "llmsurrogate_error")
  # a fit without its Python side (the regressions of lookahead_test(); a fit saved and loaded)
  bare <- f
  attr(bare, "feols_data") <- NULL
  for (fn in list(fitted, residuals, model.matrix, fixef, case.names, logLik)) {
    expect_error(fn(bare), "refit it with feols\\(\\)", class = "llmsurrogate_error")
  }
  expect_error(predict(bare, newdata = d), "refit it with feols\\(\\)", class = "llmsurrogate_error")
  expect_identical(df.residual(bare), df.residual(f))  # kept in the fit's values
  path <- tempfile(fileext = ".rds")
  saveRDS(f, path)
  loaded <- readRDS(path)
  expect_identical(coef(loaded), coef(f))
  expect_error(fitted(loaded), "saved and loaded.*refit it with feols\\(\\)", class = "llmsurrogate_error")
})

test_that("fixest's spellings: cluster = , se = , vcov = \"hetero\"/\"cluster\"/\"twoway\"; unknown arguments", {
  skip_if_no_llmsurrogate()
  d <- methods_panel(seed = 17)
  base <- feols(y ~ x + z | firm + year, d, vcov = list(CRV1 = "firm"))
  for (f in list(feols(y ~ x + z | firm + year, d, cluster = ~firm),
                 feols(y ~ x + z | firm + year, d, cluster = "firm"),
                 feols(y ~ x + z | firm + year, d, se = "cluster"),
                 feols(y ~ x + z | firm + year, d, vcov = "cluster"),
                 feols(y ~ x + z | firm + year, d, se = "cluster", cluster = ~firm),
                 feols(y ~ x + z | firm + year, d, vcov = ~firm))) {
    expect_identical(vcov(f), vcov(base))
    expect_identical(f$vcov_type, "CRV1 by firm")
  }
  two <- feols(y ~ x + z | firm + year, d, vcov = list(CRV1 = c("firm", "year")))
  expect_identical(vcov(feols(y ~ x + z | firm + year, d, vcov = "twoway")), vcov(two))
  expect_identical(vcov(feols(y ~ x + z | firm + year, d, cluster = ~firm + year)), vcov(two))
  het <- feols(y ~ x + z | firm + year, d, vcov = "hetero")
  expect_identical(vcov(feols(y ~ x + z | firm + year, d, se = "hetero")), vcov(het))
  expect_identical(vcov(feols(y ~ x + z | firm + year, d, vcov = "HC1")), vcov(het))
  iid <- feols(y ~ x + z | firm + year, d)
  expect_identical(vcov(feols(y ~ x + z | firm + year, d, se = "standard")), vcov(iid))
  expect_identical(vcov(feols(y ~ x + z | firm + year, d, vcov = "iid")), vcov(iid))
  err <- function(expr, pattern) expect_error(expr, pattern, class = "llmsurrogate_error")
  err(feols(y ~ x | firm, d, ssc = list()), "argument `ssc` must be made by ssc\\(\\)")
  err(feols(y ~ x | firm, d, fixef.rm = "none"), "argument `fixef.rm` .*use `fixef_rm`")
  err(feols(y ~ x | firm, d, nthreads = 2), "use `n_jobs`")
  err(feols(y ~ x | firm, d, split = ~g), "argument `split`")
  err(feols(y ~ x | firm, d, clustr = ~firm), "argument `clustr` is not an argument of feols\\(\\) \\(did you mean `cluster`")
  err(feols(y ~ x | firm, d, "iid", NULL, "singleton", NULL, NULL, NULL, 3), "give the others by name")
  err(feols(y ~ x, d, vcov = "cluster"), "clusters by the formula's first fixed effect; this formula has none")
  err(feols(y ~ x | firm, d, vcov = "hetero", cluster = ~firm), "argument `cluster` clusters the standard errors")
  err(feols(y ~ x | firm, d, vcov = "hetero", se = "iid"), "by `vcov` or by fixest's `se`, not both")
  err(feols(y ~ x | firm, d, se = "robust"), "argument `se` \\(fixest's\\) must be one of")
  err(feols(y ~ x | firm, d, cluster = 3), "argument `cluster` must be a one-sided formula")
  err(feols(y ~ x | firm, d, vcov = "NW"), "not supported")
  err(feols(y ~ x | firm, d, cluster = ~firms), "argument `cluster`: column `firms` is not in `data`; did you mean `firm`")
})
