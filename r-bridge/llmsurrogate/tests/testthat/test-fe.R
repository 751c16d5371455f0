# feols() and etable() against references written in R from the definitions: lm() with factor
# dummies for the coefficients and the iid variance, the sandwich formulas by hand for HC1 and
# CRV1 with the small-sample factors of docs/methods/lookahead.md §5.3.1; and against the Python
# package called directly on the same data (read from a CSV file, not through the bridge).

fe_panel <- function(n = 300, seed = 1) {
  set.seed(seed)
  d <- data.frame(firm = factor(sample(sprintf("f%02d", 1:15), n, TRUE)),
                  date = as.Date("2021-03-01") + sample(0:11, n, TRUE),
                  x = rnorm(n), z = rnorm(n), w = runif(n, 0.5, 2))
  d$y <- 1.5 * d$x - 0.5 * d$z + 0.3 * d$x * d$z + as.integer(d$firm) / 5 +
    as.numeric(d$date - min(d$date)) / 10 + rnorm(n)
  d
}

# The sandwich by hand from lm()'s full dummy design (its slope block equals the within
# estimator's, by Frisch-Waugh-Lovell); `cluster` a list of one or two vectors.
hand_vcov <- function(fit, terms, kind, df_k = NULL, cluster = NULL) {
  X <- stats::model.matrix(fit)
  e <- stats::residuals(fit)
  w <- if (is.null(stats::weights(fit))) rep(1, length(e)) else stats::weights(fit)
  B <- solve(crossprod(X * sqrt(w)))
  s <- X * (w * e)
  n <- nrow(X)
  p <- fit$rank
  if (is.null(df_k)) df_k <- p
  V <- switch(kind,
    iid = B * sum(w * e^2) / (n - df_k),
    hc1 = n / (n - df_k) * B %*% crossprod(s) %*% B,
    crv1 = {
      dims <- cluster
      if (length(dims) == 2L) dims <- c(dims, list(interaction(dims[[1]], dims[[2]], drop = TRUE)))
      G <- min(vapply(dims, function(g) length(unique(g)), 1))
      signs <- c(1, 1, -1)[seq_along(dims)]
      Reduce(`+`, lapply(seq_along(dims), function(j) {
        S <- rowsum(s, as.character(dims[[j]]))
        signs[j] * B %*% crossprod(S) %*% B
      })) * (n - 1) / (n - df_k) * G / (G - 1)
    })
  V[terms, terms, drop = FALSE]
}

expect_rel <- function(object, expected, tol = 1e-8) {
  expect_lt(max(abs(unname(object) - unname(expected)) / pmax(abs(unname(expected)), 1e-300)), tol)
}

test_that("feols equals lm() with factor dummies: coefficients, iid, HC1 and CRV1 variances", {
  skip_if_no_llmsurrogate()
  d <- fe_panel()
  ref <- lm(y ~ x + z + x:z + firm + factor(date), d)
  terms <- c("x", "z", "x:z")
  n <- nrow(d)
  Lf <- nlevels(d$firm)
  Ld <- length(unique(d$date))

  iid <- feols(y ~ x + z + x:z | firm + date, d)
  expect_s3_class(iid, "llmsurrogate_feols")
  expect_identical(names(coef(iid)), terms)
  expect_rel(coef(iid), coef(ref)[terms])
  # iid: df_k = k + Lf + Ld - 1 = lm's rank, so the variance is summary.lm's
  expect_identical(as.integer(iid$df_k), ref$rank)
  expect_rel(vcov(iid), vcov(ref)[terms, terms])
  expect_rel(vcov(iid), hand_vcov(ref, terms, "iid"))

  het <- feols(y ~ x + z + x:z | firm + date, d, vcov = "hetero")
  expect_rel(vcov(het), hand_vcov(ref, terms, "hc1"))
  expect_identical(as.integer(het$df_t), n - ref$rank)

  # CRV1 by firm: the firm effect is nested in the cluster, so its levels leave df_k (fixest rule)
  crv <- feols(y ~ x + z + x:z | firm + date, d, vcov = list(CRV1 = "firm"))
  df_k <- 3 + (Lf + Ld - 1) - Lf + 1
  expect_identical(as.integer(crv$df_k), as.integer(df_k))
  expect_rel(vcov(crv), hand_vcov(ref, terms, "crv1", df_k = df_k, cluster = list(d$firm)))
  expect_identical(as.integer(crv$df_t), Lf - 1L)
  # the same through a one-sided formula
  expect_equal(vcov(feols(y ~ x + z + x:z | firm + date, d, vcov = ~firm)), vcov(crv), tolerance = 1e-14)

  # two-way: V_firm + V_date - V_(firm x date), G = min, both effects nested
  two <- feols(y ~ x + z + x:z | firm + date, d, vcov = list(CRV1 = c("firm", "date")))
  df_k2 <- 3 + (Lf + Ld - 1) - Lf - Ld + 2
  expect_rel(vcov(two), hand_vcov(ref, terms, "crv1", df_k = df_k2, cluster = list(d$firm, d$date)))
  expect_equal(vcov(feols("y ~ x + z + x:z | firm + date", d, vcov = list(CRV1 = "firm+date"))), vcov(two),
               tolerance = 1e-14)
  expect_identical(as.integer(two$df_t), as.integer(min(Lf, Ld) - 1))

  # no fixed effects: an intercept, and lm() exactly
  plain <- feols(y ~ x + z, d, vcov = "hetero")
  ref0 <- lm(y ~ x + z, d)
  expect_identical(names(coef(plain)), c("(Intercept)", "x", "z"))  # lm()'s name
  expect_identical(names(coef(plain)), names(coef(ref0)))
  expect_rel(coef(plain), coef(ref0))
  expect_rel(vcov(plain), hand_vcov(ref0, c("(Intercept)", "x", "z"), "hc1"))
  expect_rel(plain$r2, summary(ref0)$r.squared, 1e-10)
  expect_rel(iid$r2, summary(ref)$r.squared, 1e-10)
})

test_that("weights: a column or a vector, as lm(weights = )", {
  skip_if_no_llmsurrogate()
  d <- fe_panel(seed = 2)
  ref <- lm(y ~ x + z + firm, d, weights = w)
  f1 <- feols(y ~ x + z | firm, d, weights = "w")
  f2 <- feols(y ~ x + z | firm, d, weights = d$w)
  expect_rel(coef(f1), coef(ref)[c("x", "z")])
  expect_rel(vcov(f1), vcov(ref)[c("x", "z"), c("x", "z")])
  expect_equal(coef(f2), coef(f1), tolerance = 1e-14)
  cl <- feols(y ~ x + z | firm, d, weights = "w", vcov = ~date)
  df_k <- 2 + nlevels(d$firm)
  expect_rel(vcov(cl), hand_vcov(ref, c("x", "z"), "crv1", df_k = df_k, cluster = list(d$date)))
  # NA weights drop their rows
  wv <- d$w
  wv[c(4, 9)] <- NA
  expect_warning(f3 <- feols(y ~ x + z | firm, d, weights = wv), "2 row\\(s\\) dropped", class = "llmsurrogate_warning")
  expect_rel(coef(f3), coef(lm(y ~ x + z + firm, d[-c(4, 9), ], weights = w))[c("x", "z")])
  expect_error(feols(y ~ x | firm, d, weights = d$w[-1]), "argument `weights` has 299 values for 300 rows")
  expect_error(feols(y ~ x | firm, d, weights = "ww"), "argument `weights`: column `ww` is not in `data`")
  expect_error(feols(y ~ x | firm, d, weights = -d$w), "negative")
})

test_that("factor, Date, character and integer fixed effects give the same fit; tibbles work", {
  skip_if_no_llmsurrogate()
  d <- fe_panel(seed = 3)
  a <- feols(y ~ x + z | firm + date, d, vcov = ~date)
  d2 <- d
  d2$firm <- as.character(d2$firm)
  d2$date <- as.integer(d2$date)
  b <- feols(y ~ x + z | firm + date, d2, vcov = ~date)
  expect_equal(coef(b), coef(a), tolerance = 1e-12)
  expect_equal(vcov(b), vcov(a), tolerance = 1e-12)
  expect_identical(a$fe_levels, list(firm = nlevels(d$firm), date = length(unique(d$date))))
  skip_if_not_installed("tibble")
  tb <- feols(y ~ x + z | firm + date, tibble::as_tibble(d), vcov = ~date)
  expect_equal(coef(tb), coef(a), tolerance = 1e-14)
  expect_equal(vcov(tb), vcov(a), tolerance = 1e-14)
})

test_that("rows with NA (integer, double, factor) are dropped with the count", {
  skip_if_no_llmsurrogate()
  d <- fe_panel(seed = 4)
  d$k <- sample(1:3, nrow(d), TRUE)  # an integer regressor
  d$k[c(2, 5)] <- NA_integer_
  d$x[7] <- NA
  d$firm[11] <- NA
  expect_warning(f <- feols(y ~ x + k | firm + date, d, vcov = ~firm), "4 row\\(s\\) dropped for missing values \\(NA\\)",
                 class = "llmsurrogate_warning")
  expect_identical(as.integer(f$n_dropped_nan), 4L)
  expect_identical(nobs(f), nrow(d) - 4L)
  ok <- d[-c(2, 5, 7, 11), ]
  g <- feols(y ~ x + k | firm + date, ok, vcov = ~firm)
  expect_equal(coef(f), coef(g), tolerance = 1e-13)
  expect_equal(vcov(f), vcov(g), tolerance = 1e-13)
  expect_rel(coef(f), coef(lm(y ~ x + k + firm + factor(date), ok))[c("x", "k")])
  expect_output(print(f), "dropped: 4 with NA")
  # a logical regressor with NA stays numeric
  d$flag <- d$z > 0
  d$flag[3] <- NA
  expect_warning(h <- feols(y ~ flag | firm, d), "dropped", class = "llmsurrogate_warning")
  expect_identical(names(coef(h)), "flag")
})

test_that("singletons and collinear regressors are dropped and reported", {
  skip_if_no_llmsurrogate()
  d <- fe_panel(seed = 5)
  d <- rbind(d, transform(d[1, ], firm = factor("lonely", levels = c(levels(d$firm), "lonely"))))
  d$firm <- droplevels(d$firm)
  expect_warning(f <- feols(y ~ x | firm + date, d), "1 singleton", class = "llmsurrogate_warning")
  expect_identical(as.integer(f$n_dropped_singletons), 1L)
  expect_silent(g <- feols(y ~ x | firm + date, d, fixef_rm = "none"))
  expect_identical(nobs(g), nrow(d))
  expect_equal(coef(g), coef(f), tolerance = 1e-10)  # a singleton moves no slope
  d$x2 <- 2 * d$x
  expect_warning(h <- feols(y ~ x + x2 | firm, d, fixef_rm = "none"), "collinear", class = "llmsurrogate_warning")
  expect_identical(names(coef(h)), "x")
  expect_identical(unlist(h$dropped_collinear), "x2")
})

test_that("feols agrees with the Python package on the same data", {
  skip_if_no_llmsurrogate()
  d <- fe_panel(seed = 6)
  d$x[c(3, 8)] <- NA
  path <- tempfile(fileext = ".csv")
  utils::write.csv(d, path, row.names = FALSE)
  reticulate::py_run_string(paste(sep = "\n",
    "import warnings, pandas as pd",
    "from llmsurrogate import fe",
    sprintf("df = pd.read_csv(r'%s')", path),
    "with warnings.catch_warnings():",
    "    warnings.simplefilter('ignore')",
    "    fit = fe.feols('y ~ x + z + x:z | firm + date', df, vcov={'CRV1': 'firm+date'}, weights='w')",
    "py_coef = fit.coef().tolist(); py_se = fit.se().tolist(); py_n = int(fit.nobs)"))
  py <- reticulate::py
  f <- suppressWarnings(feols(y ~ x + z + x:z | firm + date, d, vcov = list(CRV1 = c("firm", "date")), weights = "w"))
  expect_rel(coef(f), unlist(py$py_coef), 1e-12)
  expect_rel(sqrt(diag(vcov(f))), unlist(py$py_se), 1e-12)
  expect_identical(nobs(f), py$py_n)
})

test_that("methods: print, summary, coef, confint, vcov, nobs, tidy, glance, as.data.frame", {
  skip_if_no_llmsurrogate()
  d <- fe_panel(seed = 7)
  f <- feols(y ~ x + z | firm + date, d, vcov = ~date)
  b <- coef(f)
  se <- sqrt(diag(vcov(f)))
  ci <- confint(f)
  q <- qt(0.975, f$df_t)
  expect_equal(unname(ci[, 1]), unname(b - q * se), tolerance = 1e-12)
  expect_identical(colnames(ci), c("2.5 %", "97.5 %"))
  expect_equal(unname(confint(f, "z", level = 0.9)[1, ]), unname(b[["z"]] + c(-1, 1) * qt(0.95, f$df_t) * se[["z"]]),
               tolerance = 1e-12)
  # the Python table's 95% intervals are the same
  expect_equal(as.data.frame(f)$conf.low, unname(ci[, 1]), tolerance = 1e-12)
  expect_true(isSymmetric(vcov(f)))
  expect_identical(nobs(f), nrow(d))
  expect_output(print(f), "CRV1 by date \\(12 clusters\\); t tests with 11 degrees of freedom")
  expect_output(print(f), "Within R2")
  s <- summary(f)
  expect_s3_class(s, "summary.llmsurrogate_feols")
  expect_equal(s$coefficients[, "Pr(>|t|)"], 2 * pt(abs(b / se), f$df_t, lower.tail = FALSE), tolerance = 1e-10)
  expect_output(print(s), "Fixed effect firm : 15 levels")
  skip_if_not_installed("generics")
  td <- generics::tidy(f, conf.level = 0.9)
  expect_identical(names(td), c("term", "estimate", "std.error", "statistic", "p.value", "conf.low", "conf.high"))
  expect_equal(td$conf.low, unname(confint(f, level = 0.9)[, 1]), tolerance = 1e-14)
  gl <- generics::glance(f)
  expect_identical(gl$nobs, nrow(d))
  expect_equal(gl$r.squared, f$r2)
})

test_that("etable: text, LaTeX and a data frame, from fits and lists of fits", {
  skip_if_no_llmsurrogate()
  d <- fe_panel(seed = 8)
  f1 <- feols(y ~ x | firm, d)
  f2 <- feols(y ~ x + z | firm + date, d, vcov = ~date)
  txt <- etable(f1, f2)
  expect_s3_class(txt, "llmsurrogate_etable")
  expect_match(txt, "FE: date")
  expect_match(txt, sprintf("%.3f", coef(f2)[["z"]]), fixed = TRUE)
  expect_match(txt, sprintf("(%.3f)", sqrt(vcov(f2)["z", "z"])), fixed = TRUE)
  expect_output(print(txt), "S.E. type")
  tex <- etable(list(f1, f2), format = "latex", digits = 2)
  expect_match(tex, "\\begin{tabular}{lcc}", fixed = TRUE)
  expect_match(tex, "\\toprule", fixed = TRUE)
  df <- etable(f1, f2, format = "data.frame")
  expect_s3_class(df, "data.frame")
  expect_identical(names(df), c("row", "(1)", "(2)"))
  expect_identical(df[["(1)"]][df$row == "Observations"], format(nobs(f1), big.mark = ","))
  expect_error(etable(lm(y ~ x, d)), "etable\\(\\) takes fits from feols")
  expect_error(etable(f1, format = "html"), "argument `format` must be \"text\", \"latex\" or \"data.frame\"",
               class = "llmsurrogate_error")
})

test_that("bad input: each error names its argument", {
  skip_if_no_llmsurrogate()
  d <- fe_panel(seed = 9)
  expect_error(feols(42, d), "argument `formula` must be a formula", class = "llmsurrogate_error")
  expect_error(feols(y ~ xx | firm, d), "argument `formula`: column `xx` is not in `data`; did you mean `x`")
  expect_error(feols(y ~ sin(x) | firm, d), "argument `formula`: the function `sin` in 'sin\\(x\\)' is not allowed")
  expect_error(feols(y ~ firm, d), "column 'firm' is not numeric")
  expect_error(feols(y ~ x | firm, as.matrix(d)), "argument `data` must be a data frame")
  expect_error(feols(y ~ x | firm, d, vcov = "clustered"), "argument `vcov` must be")
  expect_error(feols(y ~ x | firm, d, vcov = list(CRV1 = c("a", "b", "c"))), "argument `vcov`: one or two")
  expect_error(feols(y ~ x | firm, d, vcov = ~dat), "argument `vcov`: column `dat` is not in `data`; did you mean `date`")
  d$one <- "a"
  expect_error(feols(y ~ x | firm, d, vcov = ~one), "single level")
})
