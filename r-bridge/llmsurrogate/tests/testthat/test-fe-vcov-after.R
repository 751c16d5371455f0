# Standard errors chosen after estimation (issue 35 §1, §3): summary(), vcov(), confint(),
# coeftable(), tidy(), as.data.frame(), print() and etable() with fixest's vcov, se, cluster and ssc
# give the numbers of feols(..., vcov = ) (the same computation on the same rows, to 1e-12), and
# those numbers are sandwich's and estimatr's on lm() with the fixed effects as factor() dummies,
# with the factors stated in ?ssc:
#   iid              vcov(lm)
#   hetero           vcovHC(type = "HC1") = lm_robust(se_type = "HC1")
#   HC2, HC3         vcovHC(type = "HC2"/"HC3") * n / (n - K); with ssc(adj = FALSE, cluster.adj = FALSE)
#                    vcovHC(...) = lm_robust(se_type = "HC2"/"HC3") exactly
#   one-way cluster  vcovCL(type = "HC1") = lm_robust(se_type = "stata") (no fixed effect nested in
#                    the cluster); ssc(adj = FALSE): vcovCL(type = "HC0"); ssc(adj = FALSE,
#                    cluster.adj = FALSE): vcovCL(type = "HC0", cadjust = FALSE) = lm_robust(se_type = "CR0");
#                    a fixed effect of L levels nested in the cluster: vcovCL(type = "HC1") * (n - K) / (n - K + L - 1)
#   two-way cluster  G_min / (G_min - 1) * (n - 1) / (n - K) * (V0(a) + V0(b) - V0(a x b)),
#                    V0 = vcovCL(type = "HC0", cadjust = FALSE)
# where K = length(coef(lm)). An argument a method cannot honour is an error naming it.

va_data <- function(n = 120, seed = 37) {
  set.seed(seed)
  d <- data.frame(firm = sample(sprintf("f%d", 1:8), n, TRUE), yr = sample(2001:2006, n, TRUE),
                  st = sample(1:12, n, TRUE), w = runif(n, 0.5, 2))
  # regressors and errors correlated within st, yr and firm, so that two-way clustering matters
  # (and, at these seeds, V_a + V_b - V_ab is positive definite)
  a <- rnorm(12)
  b <- rnorm(6)
  f <- rnorm(8)
  a2 <- rnorm(12)
  b2 <- rnorm(6)
  f2 <- rnorm(8)
  fi <- match(d$firm, sprintf("f%d", 1:8))
  yi <- d$yr - 2000
  d$x <- rnorm(n) + a[d$st] + b[yi] + f[fi]
  d$z <- rnorm(n) + a2[d$st] - b[yi] + f2[fi]
  d$y <- 1.2 * d$x - 0.4 * d$z + fi / 4 + rnorm(n, sd = 0.5 + abs(d$x) / 2) + 2 * a2[d$st] + 2 * b2[yi] + f2[fi]
  d
}

va_close <- function(object, expected, tol = 1e-10) {
  object <- unname(as.matrix(object))
  expected <- unname(as.matrix(expected))
  expect_identical(dim(object), dim(expected))
  expect_lt(max(abs(object - expected) / pmax(abs(expected), 1e-12)), tol)
}

# The variance spellings of feols() (and of fixest's methods), as argument lists.
va_spellings <- list(
  list(vcov = "iid"), list(vcov = "hetero"), list(vcov = "HC1"), list(se = "hetero"), list(se = "standard"),
  list(vcov = "cluster"), list(se = "cluster"), list(vcov = "twoway"), list(se = "twoway"),
  list(vcov = ~st), list(cluster = ~st), list(cluster = "st"), list(vcov = list(CRV1 = "st")),
  list(vcov = list(CRV1 = c("st", "yr"))), list(vcov = list(CRV1 = "st+yr")), list(vcov = ~firm + st),
  list(cluster = ~st + yr), list(vcov = "cluster", cluster = ~st), list(se = "cluster", cluster = ~st)
)

va_label <- function(spec) paste(names(spec), vapply(spec, function(v) paste(deparse(v), collapse = ""), ""),
                                 sep = " = ", collapse = ", ")

test_that("every vcov spelling after estimation gives feols(..., vcov = )'s numbers in every method", {
  skip_if_no_llmsurrogate()
  d <- va_data(seed = 37)
  fml <- y ~ x + z | firm + yr
  fit <- feols(fml, d)  # iid
  for (spec in va_spellings) {
    info <- va_label(spec)
    ref <- do.call(feols, c(list(fml, d), spec))
    iid <- identical(spec, list(vcov = "iid")) || identical(spec, list(se = "standard"))
    expect_identical(isTRUE(all.equal(vcov(ref), vcov(fit))), iid, info = info)  # the spelling changes the numbers
    v <- do.call(vcov, c(list(fit), spec))
    va_close(v, vcov(ref), 1e-12)  # ... and after estimation they are feols()'s
    expect_identical(dimnames(v), dimnames(vcov(ref)), info = info)
    s <- do.call(summary, c(list(fit), spec))
    va_close(s$coefficients, summary(ref)$coefficients, 1e-12)
    expect_identical(s$vcov_type, ref$vcov_type, info = info)
    va_close(do.call(confint, c(list(fit), spec)), confint(ref), 1e-12)
    va_close(do.call(confint, c(list(fit, "x", level = 0.9), spec)), confint(ref, "x", level = 0.9), 1e-12)
    va_close(do.call(coeftable, c(list(fit), spec)), coeftable(ref), 1e-12)
    expect_identical(do.call(etable, c(list(fit), spec)), etable(ref), info = info)
    td <- do.call(generics::tidy, c(list(fit), spec))
    va_close(td[-1], generics::tidy(ref)[-1], 1e-12)
    va_close(do.call(as.data.frame, c(list(fit), spec))[-1], as.data.frame(ref)[-1], 1e-12)
    expect_identical(capture.output(do.call(print, c(list(fit), spec))), capture.output(print(ref)), info = info)
  }
  # the fit itself is unchanged, and from a clustered fit back to iid
  va_close(vcov(fit), vcov(feols(fml, d)), 1e-14)
  cl <- feols(fml, d, vcov = ~st)
  va_close(vcov(cl, vcov = "iid"), vcov(fit), 1e-12)
  va_close(summary(cl, vcov = "hetero")$coefficients, summary(feols(fml, d, vcov = "hetero"))$coefficients, 1e-12)
  # etable(): one variance for all fits, or one per fit
  f1 <- feols(y ~ x | firm, d)
  expect_identical(etable(f1, fit, vcov = "hetero"),
                   etable(feols(y ~ x | firm, d, vcov = "hetero"), feols(fml, d, vcov = "hetero")))
  expect_identical(etable(f1, fit, vcov = list("hetero", ~st)),
                   etable(feols(y ~ x | firm, d, vcov = "hetero"), feols(fml, d, vcov = ~st)))
})

test_that("without fixed effects and with weights: HC2, HC3 and clusters after estimation are feols()'s", {
  skip_if_no_llmsurrogate()
  d <- va_data(seed = 38)
  for (w in list(NULL, "w")) {
    fml <- y ~ x + z
    fit <- feols(fml, d, weights = w)
    for (spec in list(list(vcov = "hetero"), list(vcov = "HC2"), list(vcov = "HC3"), list(vcov = ~st),
                      list(cluster = ~st + yr), list(vcov = "HC3", ssc = ssc(adj = FALSE, cluster.adj = FALSE)),
                      list(vcov = ~st, ssc = ssc(adj = FALSE)))) {
      ref <- do.call(feols, c(list(fml, d, weights = w), spec))
      va_close(do.call(vcov, c(list(fit), spec)), vcov(ref), 1e-12)
      va_close(do.call(summary, c(list(fit), spec))$coefficients, summary(ref)$coefficients, 1e-12)
    }
  }
})

test_that("the numbers are sandwich's and estimatr's on lm() with factor() dummies, with the stated factors", {
  skip_if_no_llmsurrogate()
  skip_if_not_installed("sandwich")
  skip_if_not_installed("estimatr")
  d <- va_data(seed = 41)
  n <- nrow(d)
  ab <- c("x", "z")
  fit <- feols(y ~ x + z | firm, d)
  lmf <- lm(y ~ x + z + factor(firm), d)
  K <- length(coef(lmf))
  V <- function(...) vcov(fit, ...)[ab, ab]
  S <- function(m) m[ab, ab]
  va_close(V(vcov = "iid"), S(vcov(lmf)))
  va_close(V(vcov = "hetero"), S(sandwich::vcovHC(lmf, type = "HC1")))
  va_close(V(vcov = "hetero"), S(vcov(estimatr::lm_robust(y ~ x + z + factor(firm), d, se_type = "HC1"))))
  va_close(V(vcov = "hetero", ssc = ssc(adj = FALSE, cluster.adj = FALSE)), S(sandwich::vcovHC(lmf, type = "HC0")))
  va_close(V(vcov = "hetero", ssc = ssc(adj = FALSE)), S(sandwich::vcovHC(lmf, type = "HC0")) * n / (n - 1))
  # one-way clusters not nesting the fixed effect
  va_close(V(cluster = ~st), S(sandwich::vcovCL(lmf, cluster = ~st, type = "HC1")))
  va_close(V(cluster = ~st), S(vcov(estimatr::lm_robust(y ~ x + z + factor(firm), d, clusters = st,
                                                        se_type = "stata"))))
  va_close(V(cluster = ~st, ssc = ssc(adj = FALSE)), S(sandwich::vcovCL(lmf, cluster = ~st, type = "HC0")))
  va_close(V(cluster = ~st, ssc = ssc(adj = FALSE, cluster.adj = FALSE)),
           S(sandwich::vcovCL(lmf, cluster = ~st, type = "HC0", cadjust = FALSE)))
  va_close(V(cluster = ~st, ssc = ssc(adj = FALSE, cluster.adj = FALSE)),
           S(vcov(estimatr::lm_robust(y ~ x + z + factor(firm), d, clusters = st, se_type = "CR0"))))
  # clustered by the fixed effect: fixest counts its L levels as 1 in K
  L <- length(unique(d$firm))
  va_close(V(vcov = "cluster"), S(sandwich::vcovCL(lmf, cluster = ~firm, type = "HC1")) * (n - K) / (n - K + L - 1))
  # two-way: G_min / (G_min - 1) on each of the three terms
  V0 <- function(g) S(sandwich::vcovCL(lmf, cluster = g, type = "HC0", cadjust = FALSE))
  G <- min(length(unique(d$st)), length(unique(d$yr)))
  two <- G / (G - 1) * (n - 1) / (n - K) * (V0(d$st) + V0(d$yr) - V0(interaction(d$st, d$yr, drop = TRUE)))
  va_close(V(cluster = ~st + yr), two)
  # weighted
  fw <- feols(y ~ x + z | firm, d, weights = ~w)
  lw <- lm(y ~ x + z + factor(firm), d, weights = w)
  va_close(vcov(fw, vcov = "hetero")[ab, ab], S(sandwich::vcovHC(lw, type = "HC1")))
  va_close(vcov(fw, cluster = ~st)[ab, ab], S(sandwich::vcovCL(lw, cluster = ~st, type = "HC1")))
  va_close(vcov(fw, cluster = ~st)[ab, ab], S(vcov(estimatr::lm_robust(y ~ x + z + factor(firm), d, weights = w,
                                                                        clusters = st, se_type = "stata"))))
})

test_that("HC2 and HC3: sandwich's with ssc(adj = FALSE, cluster.adj = FALSE), times exactly n / (n - K) by default", {
  skip_if_no_llmsurrogate()
  skip_if_not_installed("sandwich")
  skip_if_not_installed("estimatr")
  d <- va_data(n = 80, seed = 38)
  n <- nrow(d)
  sand <- ssc(adj = FALSE, cluster.adj = FALSE)
  for (w in list(NULL, "w")) {
    fit <- feols(y ~ x + z, d, weights = w)
    ref <- if (is.null(w)) lm(y ~ x + z, d) else lm(y ~ x + z, d, weights = w)
    K <- length(coef(ref))
    for (type in c("HC2", "HC3")) {
      hc <- sandwich::vcovHC(ref, type = type)
      va_close(vcov(fit, vcov = type, ssc = sand), hc)
      va_close(vcov(feols(y ~ x + z, d, weights = w, vcov = type, ssc = sand)), hc)
      rob <- if (is.null(w)) estimatr::lm_robust(y ~ x + z, d, se_type = type) else
        estimatr::lm_robust(y ~ x + z, d, weights = w, se_type = type)
      va_close(vcov(fit, vcov = type, ssc = sand), vcov(rob))
      # the default is pyfixest's: sandwich's times n / (n - K)
      va_close(vcov(fit, vcov = type), hc * n / (n - K))
      va_close(vcov(feols(y ~ x + z, d, weights = w, vcov = type)), hc * n / (n - K))
      expect_match(summary(fit, vcov = type, ssc = sand)$vcov_type, "ssc(adj = FALSE, cluster.adj = FALSE)",
                   fixed = TRUE)
    }
  }
  # ssc alone keeps the fit's variance type; fixest's settings other than their defaults are refused
  h3 <- feols(y ~ x + z, d, vcov = "HC3")
  va_close(vcov(h3, ssc = sand), sandwich::vcovHC(lm(y ~ x + z, d), type = "HC3"))
  for (bad in list(quote(ssc(fixef.K = "full")), quote(ssc(cluster.df = "conventional")), quote(ssc(t.df = 10)),
                   quote(ssc(fixef.force_exact = TRUE)), quote(ssc(adj = NA)))) {
    arg <- names(as.list(bad))[2]
    expect_error(eval(bad), class = "llmsurrogate_error", regexp = sprintf("`%s`", arg))
  }
  expect_error(vcov(h3, ssc = list(adj = FALSE)), class = "llmsurrogate_error", regexp = "`ssc`")
  expect_error(feols(y ~ x, d, ssc = "none"), class = "llmsurrogate_error", regexp = "`ssc`")
  # documented in ?feols with the factor
  rd <- paste(unlist(lapply(tools::Rd_db("llmsurrogate")[["feols.Rd"]], as.character)), collapse = "")
  expect_match(rd, "n / (n - K)", fixed = TRUE)
  expect_match(rd, "ssc(adj = FALSE, cluster.adj =", fixed = TRUE)
})

test_that("a cluster column not kept by the fit is read from its data by name, and only from that data", {
  skip_if_no_llmsurrogate()
  d <- va_data(seed = 43)
  fit <- feols(y ~ x | firm, d)  # st is not a column of the fit
  va_close(vcov(fit, cluster = ~st), vcov(feols(y ~ x | firm, d, cluster = ~st)), 1e-12)
  # another `d` where the method is called: refused, not used
  local({
    d$y <- d$y + 1
    expect_error(summary(fit, cluster = ~st), class = "llmsurrogate_error", regexp = "not the one the fit")
  })
  local({
    d <- d[-1, ]
    expect_error(vcov(fit, cluster = ~st), class = "llmsurrogate_error", regexp = "has 119 rows")
  })
  # a missing cluster value in a row used: feols(..., cluster = ~st) would drop it
  d2 <- d
  d2$st[3] <- NA
  f2 <- feols(y ~ x | firm, d2)
  expect_error(summary(f2, cluster = ~st), class = "llmsurrogate_error", regexp = "missing in 1 of the 120")
  expect_error(summary(fit, cluster = ~nope), class = "llmsurrogate_error", regexp = "`nope`")
  # a fit made where its data is not visible: fixed effects and the fit's clusters still work
  make <- function() {
    dd <- va_data(seed = 43)
    feols(y ~ x | firm + yr, dd, vcov = ~st)
  }
  inner <- make()
  expect_error(summary(inner, cluster = ~x), class = "llmsurrogate_error", regexp = "not found")
  va_close(vcov(inner, vcov = "twoway"), vcov(feols(y ~ x | firm + yr, d, vcov = "twoway")), 1e-12)
  va_close(vcov(inner, vcov = "hetero"), vcov(feols(y ~ x | firm + yr, d, vcov = "hetero")), 1e-12)
  va_close(summary(inner, vcov = "iid")$vcov, vcov(feols(y ~ x | firm + yr, d)), 1e-12)
  # ssc(adj = FALSE) drops (n - 1) / (n - K) (no fixed effect nested in st: n - K is df.residual())
  va_close(vcov(inner, ssc = ssc(adj = FALSE)), vcov(inner) * df.residual(inner) / (nobs(inner) - 1), 1e-12)
})

test_that("the fits of lookahead_test() keep no sample: a vcov after estimation is an error, not their own", {
  skip_if_no_llmsurrogate()
  set.seed(3)
  d <- data.frame(firm = rep(1:10, each = 12), date = rep(1:12, 10), llm = rnorm(120), lap = runif(120))
  d$ret <- 0.1 * d$llm + rnorm(120)
  res <- lookahead_test(d, "ret", "llm", "lap")
  expect_error(summary(res$regression, vcov = "hetero"), class = "llmsurrogate_error", regexp = "refit it with feols")
  expect_error(etable(res, vcov = "hetero"), class = "llmsurrogate_error", regexp = "refit it with feols")
  expect_s3_class(summary(res$regression), "summary.llmsurrogate_feols")
})

test_that("no method of a feols() fit ignores an argument: each names it in an error", {
  skip_if_no_llmsurrogate()
  d <- va_data(seed = 47)
  fit <- feols(y ~ x + z | firm, d)
  methods <- list(print = print, summary = summary, coef = coef, vcov = vcov, confint = confint, nobs = nobs,
                  fitted = fitted, residuals = residuals, resid = resid, predict = predict, df.residual = df.residual,
                  model.matrix = model.matrix, weights = weights, deviance = deviance, sigma = sigma,
                  logLik = logLik, formula = formula, terms = terms, variable.names = variable.names,
                  case.names = case.names, na.action = na.action, fixef = fixef, coeftable = coeftable,
                  tidy = generics::tidy, glance = generics::glance, as.data.frame = as.data.frame, etable = etable)
  for (nm in names(methods)) {
    expect_error(methods[[nm]](fit, bogus_arg = 1), class = "llmsurrogate_error", regexp = "`bogus_arg`", info = nm)
  }
  expect_error(print(summary(fit), bogus_arg = 1), class = "llmsurrogate_error", regexp = "`bogus_arg`")
  expect_error(print(etable(fit), bogus_arg = 1), class = "llmsurrogate_error", regexp = "`bogus_arg`")
  # fixest's misspelt or unsupported arguments: named, with the closest one
  expect_error(summary(fit, vcv = "hetero"), class = "llmsurrogate_error", regexp = "did you mean `vcov`")
  expect_error(summary(fit, clustr = ~firm), class = "llmsurrogate_error", regexp = "did you mean `cluster`")
  expect_error(vcov(fit, attr = TRUE), class = "llmsurrogate_error", regexp = "`attr`")
  expect_error(confint(fit, coef.col = TRUE), class = "llmsurrogate_error", regexp = "`coef.col`")
  expect_error(coef(fit, collin = TRUE), class = "llmsurrogate_error", regexp = "`collin`")
  expect_error(etable(fit, title = "Table 1"), class = "llmsurrogate_error", regexp = "`title`")
  expect_error(summary(fit, "HC9"), class = "llmsurrogate_error", regexp = "`vcov`")
  expect_error(summary(fit, vcov = "NW"), class = "llmsurrogate_error", regexp = "not supported")
  expect_error(summary(fit, vcov = "hetero", cluster = ~firm), class = "llmsurrogate_error", regexp = "`cluster`")
  expect_error(summary(fit, vcov = "HC2"), class = "llmsurrogate_error", regexp = "fixed effects")
})
