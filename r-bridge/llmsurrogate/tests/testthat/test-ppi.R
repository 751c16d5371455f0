# Issue 36 §5: prediction-powered inference from R. The numbers equal Python's llmsurrogate.ppi to
# 1e-12 (called here through reticulate), the classical and lambda = 1 means equal the textbook
# formulas written in R, the classical OLS equals lm(); bad input is an error naming the argument.

ppi_data <- function(n = 150, N = 2000, seed = 1) {
  set.seed(seed)
  make <- function(m) {
    d <- data.frame(x = rnorm(m), g = sample(c("a", "b", "c"), m, replace = TRUE), stringsAsFactors = FALSE)
    d$y <- 1 + 2 * d$x + (d$g == "b") + rnorm(m)
    d$llm <- d$y + rnorm(m, sd = 0.7)
    d$yes <- as.numeric(d$y > 1.5)
    d$p <- plogis(1.5 * (d$llm - 1.5))
    d$count <- rpois(m, exp(0.3 + 0.4 * d$x))
    d$llm_count <- exp(0.3 + 0.4 * d$x) * exp(rnorm(m, sd = 0.2))
    d$w <- runif(m, 0.5, 2)
    d
  }
  list(lab = make(n), unl = make(N))
}

# Python's llmsurrogate.ppi called through reticulate on plain lists (R vectors as lists, matrices
# as {column: list}), which the helper makes numpy arrays and DataFrames; its numbers as R vectors.
py_ppi_call <- function(fn, ...) {
  if (is.null(.ppi_test$call)) {
    reticulate::py_run_string(paste(
      "import numpy as _np, pandas as _pd",
      "from llmsurrogate import ppi as _ppi",
      "def _ppi_test_arg(v):",
      "    if isinstance(v, dict): return _pd.DataFrame({k: _np.asarray(c, dtype=float) for k, c in v.items()})",
      "    if isinstance(v, list): return _np.asarray(v, dtype=float)",
      "    return v",
      "def _ppi_test_call(fn, *args, **kw):",
      "    res = getattr(_ppi, fn)(*[_ppi_test_arg(a) for a in args], **{k: _ppi_test_arg(v) for k, v in kw.items()})",
      "    t = res.table",
      "    return {k: [float(v) for v in t[c]] for k, c in [('estimate', 'estimate'), ('se', 'std_error'),",
      "            ('low', 'ci_low'), ('high', 'ci_high'), ('lam', 'lam')]}",
      sep = "\n"), convert = FALSE)
    .ppi_test$call <- reticulate::py_eval("_ppi_test_call", convert = TRUE)
  }
  as_py <- function(v) {
    if (is.matrix(v)) v <- as.data.frame(v)
    if (is.data.frame(v)) return(lapply(as.list(v), as.list))
    if (is.numeric(v) && length(v) > 1L) return(as.list(v))
    v
  }
  out <- do.call(.ppi_test$call, c(list(fn), lapply(list(...), as_py)))
  lapply(out, unlist)
}
.ppi_test <- new.env()

test_that("ppi_mean equals Python's ppi.mean for every method, lambda and weights (1e-12)", {
  skip_if_no_llmsurrogate()
  d <- ppi_data()
  y <- d$lab$y; yh <- d$lab$llm; yu <- d$unl$llm
  for (m in c("classical", "ppi", "ppi++")) {
    r <- ppi_mean(y, yh, yu, method = m, level = 0.9)
    p <- py_ppi_call("mean", y, yh, yu, method = m, level = 0.9)
    expect_same_numbers(r, p)
    expect_s3_class(r, "llmsurrogate_ppi_result")
  }
  r <- ppi_mean(y, yh, yu, lambda = 0.3, weights = d$lab$w, weights_unlabeled = d$unl$w)
  p <- py_ppi_call("mean", y, yh, yu, lam = 0.3, weights = d$lab$w,
                weights_unlabeled = d$unl$w)
  expect_same_numbers(r, p)
  expect_true(r$weighted)
  # K answer shares: three 0/1 columns, lambda per column
  ind <- function(g) sapply(c("a", "b", "c"), function(o) as.numeric(g == o))
  noisy <- function(g) { m <- ind(g); m[sample(length(g), length(g) %/% 5), ] <- 1 / 3; m }
  Y <- ind(d$lab$g); Yh <- noisy(d$lab$g); Yu <- noisy(d$unl$g)
  r <- ppi_mean(Y, Yh, Yu, lambda_mode = "element")
  p <- py_ppi_call("mean", Y, Yh, Yu, lam_mode = "element")
  expect_same_numbers(r, p)
  expect_identical(r$table$term, c("a", "b", "c"))
  expect_equal(sum(coef(ppi_mean(Y, Yh, Yu, method = "classical"))), 1, tolerance = 1e-12)
})

test_that("the classical and lambda = 1 means are the textbook formulas (variance with divisor n)", {
  skip_if_no_llmsurrogate()
  d <- ppi_data()
  y <- d$lab$y; yh <- d$lab$llm; yu <- d$unl$llm
  n <- length(y); N <- length(yu)
  z <- qnorm(0.975)
  var0 <- function(v) mean((v - mean(v))^2)
  cl <- ppi_mean(y, yh, yu, method = "classical")
  se <- sqrt(var0(y) / n)
  expect_equal(coef(cl), c(mean = mean(y)), tolerance = 1e-12)
  expect_equal(unname(confint(cl)[1, ]), mean(y) + c(-1, 1) * z * se, tolerance = 1e-12)
  pp <- ppi_mean(y, yh, yu, method = "ppi")
  est <- mean(yu) + mean(y - yh)
  se1 <- sqrt(var0(yu) / N + var0(y - yh) / n)
  expect_equal(unname(coef(pp)), est, tolerance = 1e-12)
  expect_equal(pp$table$std_error, se1, tolerance = 1e-12)
  expect_equal(unname(confint(pp)[1, ]), est + c(-1, 1) * z * se1, tolerance = 1e-12)
  expect_equal(unname(coef(ppi_mean(y, yh, yu, lambda = 1))), est, tolerance = 1e-12)
  # logical answers are 0/1
  b <- d$lab$yes == 1
  expect_equal(coef(ppi_mean(b, d$lab$p, d$unl$p, method = "classical")), c(mean = mean(b)), tolerance = 1e-12)
})

test_that("ppi_quantile equals Python's ppi.quantile", {
  skip_if_no_llmsurrogate()
  d <- ppi_data()
  for (m in c("ppi", "classical")) {
    r <- ppi_quantile(d$lab$y, d$lab$llm, d$unl$llm, q = 0.3, method = m)
    p <- py_ppi_call("quantile", d$lab$y, d$lab$llm, d$unl$llm, 0.3, method = m)
    expect_same_numbers(r, p)
    expect_identical(r$q, 0.3)
  }
  r <- ppi_quantile(d$lab$y, d$lab$llm, d$unl$llm, q = 0.5, weights = d$lab$w, weights_unlabeled = d$unl$w)
  p <- py_ppi_call("quantile", d$lab$y, d$lab$llm, d$unl$llm, 0.5,
                    weights = d$lab$w, weights_unlabeled = d$unl$w)
  expect_same_numbers(r, p)
})

test_that("ppi_ols: the formula's design (intercept as lm()), Python's numbers, lm() for the classical fit", {
  skip_if_no_llmsurrogate()
  d <- ppi_data()
  r <- ppi_ols(y ~ x + g, d$lab, d$unl, "llm", coord = "x")
  X <- model.matrix(~ x + g, rbind(d$lab, d$unl))
  Xl <- X[seq_len(150), ]
  Xu <- X[-seq_len(150), ]
  p <- py_ppi_call("ols", Xl, d$lab$y, d$lab$llm, Xu, d$unl$llm, coord = "x", intercept = FALSE)
  expect_same_numbers(r, p)
  expect_identical(names(coef(r)), c("(Intercept)", "x", "gb", "gc"))
  expect_identical(r$coord, "x")
  expect_true(r$intercept)
  # coord by 1-based position is the same coefficient
  expect_equal(coef(ppi_ols(y ~ x + g, d$lab, d$unl, "llm", coord = 2)), coef(r), tolerance = 1e-14)
  cl <- ppi_ols(y ~ x + g, d$lab, d$unl, "llm", method = "classical")
  expect_equal(coef(cl), coef(lm(y ~ x + g, data = d$lab)), tolerance = 1e-10)
  wl <- ppi_ols(y ~ x, d$lab, d$unl, "llm", method = "classical", weights = "w")
  expect_equal(coef(wl), coef(lm(y ~ x, data = d$lab, weights = w)), tolerance = 1e-10)
  # no intercept when the formula removes it
  r0 <- ppi_ols(y ~ x - 1, d$lab, d$unl, "llm", method = "ppi")
  expect_identical(names(coef(r0)), "x")
  expect_false(r0$intercept)
  p0 <- py_ppi_call("ols", data.frame(x = d$lab$x), d$lab$y, d$lab$llm, data.frame(x = d$unl$x), d$unl$llm,
                method = "ppi", intercept = FALSE)
  expect_same_numbers(r0, p0)
  # a string formula and the same rows shuffled give the same numbers
  shuffled <- ppi_ols("y ~ x + g", d$lab[sample(150), ], d$unl[sample(2000), ], "llm", coord = "x")
  expect_equal(shuffled$table[c("estimate", "std_error", "ci_low", "ci_high", "lam")],
               r$table[c("estimate", "std_error", "ci_low", "ci_high", "lam")], tolerance = 1e-10)
})

test_that("ppi_glm: binomial and poisson equal Python's logistic and poisson", {
  skip_if_no_llmsurrogate()
  d <- ppi_data()
  X <- model.matrix(~ x, rbind(d$lab, d$unl))
  Xl <- X[seq_len(150), ]
  Xu <- X[-seq_len(150), ]
  r <- ppi_glm(yes ~ x, d$lab, d$unl, "p", family = binomial())
  p <- py_ppi_call("logistic", Xl, d$lab$yes, d$lab$p, Xu, d$unl$p, intercept = FALSE)
  expect_same_numbers(r, p)
  expect_identical(r$estimand, "logistic")
  expect_equal(coef(ppi_glm(yes ~ x, d$lab, d$unl, "p", family = "binomial", method = "classical")),
               coef(glm(yes ~ x, binomial(), d$lab)), tolerance = 1e-6)
  r <- ppi_glm(count ~ x, d$lab, d$unl, "llm_count", family = poisson, weights = "w", weights_unlabeled = "w")
  p <- py_ppi_call("poisson", Xl, d$lab$count, d$lab$llm_count, Xu, d$unl$llm_count, intercept = FALSE,
                   weights = d$lab$w, weights_unlabeled = d$unl$w)
  expect_same_numbers(r, p)
})

test_that("cluster ids (a vector, or a column name in the regressions) give Python's cluster-robust numbers", {
  skip_if_no_llmsurrogate()
  d <- ppi_data()
  cl <- rep(1:30, length.out = 150)
  cu <- rep(1:40, length.out = 2000)
  r <- ppi_mean(d$lab$y, d$lab$llm, d$unl$llm, cluster = cl, cluster_unlabeled = cu)
  p <- py_ppi_call("mean", d$lab$y, d$lab$llm, d$unl$llm, cluster = cl, cluster_unlabeled = cu)
  expect_same_numbers(r, p)
  expect_true(r$clustered)
  lab <- d$lab; lab$firm <- cl
  unl <- d$unl; unl$firm <- cu
  r <- ppi_ols(y ~ x, lab, unl, "llm", cluster = "firm", cluster_unlabeled = "firm")
  X <- model.matrix(~ x, rbind(d$lab, d$unl))
  p <- py_ppi_call("ols", X[seq_len(150), ], d$lab$y, d$lab$llm, X[-seq_len(150), ], d$unl$llm,
                   intercept = FALSE, cluster = cl, cluster_unlabeled = cu)
  expect_same_numbers(r, p)
  expect_error(ppi_ols(y ~ x, lab, unl, "llm", cluster = "plant"), "`cluster`: column `plant` is not in `labeled`",
               class = "llmsurrogate_error")
  # the printed notes point to R help, not to a docs/ section an installed package lacks
  text <- paste(capture.output(print(r), print(summary(r))), collapse = "\n")
  expect_false(grepl("docs/methods", text, fixed = TRUE))
  expect_false(grepl("\u00a7", text, fixed = TRUE))
})

test_that("ppi_quantile with cluster ids equals Python's clustered ppi.quantile (1e-12)", {
  skip_if_no_llmsurrogate()
  d <- ppi_data()
  cl <- rep(1:30, length.out = 150)
  cu <- rep(1:40, length.out = 2000)
  for (m in c("ppi", "classical")) {
    r <- ppi_quantile(d$lab$y, d$lab$llm, d$unl$llm, q = 0.3, method = m, cluster = cl, cluster_unlabeled = cu)
    p <- py_ppi_call("quantile", d$lab$y, d$lab$llm, d$unl$llm, 0.3, method = m, cluster = cl,
                     cluster_unlabeled = cu)
    expect_same_numbers(r, p)
    expect_true(r$clustered)
  }
  r <- ppi_quantile(d$lab$y, d$lab$llm, d$unl$llm, q = 0.5, weights = d$lab$w, weights_unlabeled = d$unl$w,
                    cluster = paste0("f", cl), cluster_unlabeled = paste0("f", cu))
  p <- py_ppi_call("quantile", d$lab$y, d$lab$llm, d$unl$llm, 0.5, weights = d$lab$w,
                   weights_unlabeled = d$unl$w, cluster = cl, cluster_unlabeled = cu)
  expect_same_numbers(r, p)
  # only the labelled ids: each unlabelled row is a cluster of its own
  r <- ppi_quantile(d$lab$y, d$lab$llm, d$unl$llm, q = 0.5, cluster = cl)
  p <- py_ppi_call("quantile", d$lab$y, d$lab$llm, d$unl$llm, 0.5, cluster = cl)
  expect_same_numbers(r, p)
  expect_error(ppi_quantile(d$lab$y, d$lab$llm, d$unl$llm, q = 0.5, cluster = cl[-1]), "`cluster`",
               class = "llmsurrogate_error")
  expect_error(ppi_quantile(d$lab$y, d$lab$llm, d$unl$llm, q = 0.5, cluster = c(NA, cl[-1])),
               "`cluster` has a missing value \\(NA\\) at position 1", class = "llmsurrogate_error")
  expect_error(ppi_quantile(d$lab$y, d$lab$llm, d$unl$llm, q = 0.5, cluster = rep(1, 150)), "one cluster",
               class = "llmsurrogate_error")
})

test_that("the methods: print, summary, coef, confint, tidy, glance, plot", {
  skip_if_no_llmsurrogate()
  d <- ppi_data()
  r <- ppi_ols(y ~ x, d$lab, d$unl, "llm")
  expect_output(print(r), "PPI\\+\\+")
  expect_output(print(summary(r)), "lambda")
  expect_false(grepl("docs/methods", paste(capture.output(print(summary(r))), collapse = "\n"), fixed = TRUE))
  ci <- confint(r)
  expect_identical(dimnames(ci), list(c("(Intercept)", "x"), c("2.5 %", "97.5 %")))
  expect_equal(confint(r, "x"), ci["x", , drop = FALSE])
  expect_error(confint(r, level = 0.9), "`level`", class = "llmsurrogate_error")
  td <- llmsurrogate:::tidy.llmsurrogate_ppi_result(r)
  expect_true(all(c("term", "estimate", "std.error", "statistic", "p.value", "conf.low", "conf.high", "lambda")
                  %in% names(td)))
  gl <- llmsurrogate:::glance.llmsurrogate_result(r)
  expect_identical(c(gl$n, gl$N), c(150L, 2000L))
  f <- tempfile(fileext = ".pdf")
  grDevices::pdf(f)
  expect_invisible(plot(r))
  expect_invisible(plot(ppi_quantile(d$lab$y, d$lab$llm, d$unl$llm, q = 0.5), terms = 1))
  expect_error(plot(r, terms = "z"), "`terms`", class = "llmsurrogate_error")
  grDevices::dev.off()
  unlink(f)
})

test_that("bad input is an error naming the argument in R's words", {
  skip_if_no_llmsurrogate()
  d <- ppi_data()
  y <- d$lab$y; yh <- d$lab$llm; yu <- d$unl$llm
  err <- function(expr, pattern) expect_error(expr, pattern, class = "llmsurrogate_error")
  y_na <- y; y_na[7] <- NA
  err(ppi_mean(y_na, yh, yu), "`y` has a missing value \\(NA\\) at position 7")
  yu_na <- yu; yu_na[12] <- NA
  err(ppi_mean(y, yh, yu_na), "`yhat_unlabeled` has a missing value \\(NA\\) at position 12")
  err(ppi_mean(factor(y > 1), yh, yu), "argument `y` is a factor; PPI estimates")
  err(ppi_mean(as.character(y), yh, yu), "argument `y` is character")
  err(ppi_mean(y, yh[-1], yu), "`yhat` has 149 rows but `y` has 150")
  err(ppi_mean(y, yh, numeric(0)), "`yhat_unlabeled` is empty")
  err(ppi_mean(y, yh, yu, weights = c(0, rep(1, 149))), "`weights` must be positive; got 0 at position 1")
  err(ppi_mean(y, yh, yu, weights = rep(1, 3)), "`weights` has 3 values for 150 rows")
  err(ppi_mean(y, yh, yu, lambda = 2), "`lambda` must lie between 0 and 1")
  err(ppi_mean(y, yh, yu, level = 95), "`level` must lie strictly between 0 and 1")
  err(ppi_mean(y, yh, yu, method = "bayes"), "`method`")
  err(ppi_mean(y, yh, yu, cluster = c(NA, 1:149)), "`cluster` has a missing value \\(NA\\) at position 1")
  err(ppi_mean(y, yh, unname(cbind(yu, yu))), "`yhat_unlabeled` has 2 columns but `y` has one column")
  err(ppi_quantile(y, yh, yu), "`q` is missing")
  err(ppi_quantile(y, yh, yu, q = 1), "`q` must lie strictly between 0 and 1")
  lab_na <- d$lab; lab_na$x[5] <- NA
  err(ppi_ols(y ~ x, lab_na, d$unl, "llm"), "column `x` has a missing value \\(NA\\) in `labeled`, row 5")
  unl_na <- d$unl; unl_na$x[9] <- NA
  err(ppi_ols(y ~ x, d$lab, unl_na, "llm"), "column `x` has a missing value \\(NA\\) in `unlabeled`, row 9")
  lab_na <- d$lab; lab_na$llm[3] <- NA
  err(ppi_ols(y ~ x, lab_na, d$unl, "llm"), "column `llm` of `labeled` \\(the prediction\\) has a missing value \\(NA\\) at position 3")
  lab_f <- d$lab; lab_f$y <- factor(lab_f$yes)
  err(ppi_glm(y ~ x, lab_f, d$unl, "p"), "the outcome y \\(in `labeled`\\) is a factor")
  err(ppi_ols(g ~ x, d$lab, d$unl, "llm"), "the outcome g \\(in `labeled`\\) is character")
  err(ppi_ols(y ~ x, d$lab, d$unl, "gpt"), "argument `prediction`: column `gpt` is not in `labeled`")
  err(ppi_ols(y ~ x + z, d$lab, d$unl, "llm"), "has no column `z`")
  err(ppi_ols(y ~ x, d$lab, d$unl[0, ], "llm"), "`unlabeled` has no rows")
  err(ppi_ols(~ x, d$lab, d$unl, "llm"), "`formula` must be a two-sided formula")
  err(ppi_ols(y ~ x | g, d$lab, d$unl, "llm"), "`formula`: fixed effects")
  err(ppi_ols(y ~ x, as.list(d$lab), d$unl, "llm"), "`labeled` must be a data frame")
  err(ppi_ols(y ~ x, d$lab, d$unl, "llm", coord = "z"), "`coord`: `z` is not a coefficient")
  err(ppi_ols(y ~ x, d$lab, d$unl, "llm", coord = 3), "`coord` must be a coefficient's name or a position from 1 to 2")
  err(ppi_ols(y ~ x, d$lab, d$unl, "llm", weights = "nope"), "`weights`: column `nope` is not in `labeled`")
  err(ppi_glm(y ~ x, d$lab, d$unl, "llm", family = gaussian()), "`family`: ppi_glm\\(\\) fits binomial")
  err(ppi_glm(y ~ x, d$lab, d$unl, "llm", family = binomial(link = "probit")), "`family`")
  err(ppi_glm(y ~ x, d$lab, d$unl, "llm", family = 3), "`family` must be binomial\\(\\) or poisson\\(\\)")
})

test_that("issue 36's bad inputs are errors in R's words in every function (no Python argument name)", {
  skip_if_no_llmsurrogate()
  d <- ppi_data()
  y <- d$lab$y; yh <- d$lab$llm; yu <- d$unl$llm
  err <- function(expr, pattern) expect_error(expr, pattern, class = "llmsurrogate_error")
  python_words <- function(expr) {
    msg <- tryCatch({ expr; "" }, llmsurrogate_error = function(e) conditionMessage(e))
    expect_true(nzchar(msg))
    expect_false(grepl("`(X|X_unlabeled|yhat_unlabeled)`|argument `y`|method='|position 0\\b|row 0\\b", msg), info = msg)
  }
  # y and yhat of different lengths
  err(ppi_quantile(y, yh[-1], yu, q = 0.5), "`yhat` has 149 rows but `y` has 150")
  # NaN in either (R's NaN is a missing value too), at its 1-based position
  yh_nan <- yh; yh_nan[4] <- NaN
  err(ppi_mean(y, yh_nan, yu), "`yhat` has a missing value \\(NA\\) at position 4")
  err(ppi_quantile(y, yh_nan, yu, q = 0.5), "`yhat` has a missing value \\(NA\\) at position 4")
  lab_nan <- d$lab; lab_nan$y[6] <- NaN
  err(ppi_ols(y ~ x, lab_nan, d$unl, "llm"), "the outcome y \\(in `labeled`\\) has a missing value \\(NA\\) at position 6")
  lab_nan <- d$lab; lab_nan$p[2] <- NaN
  err(ppi_glm(yes ~ x, lab_nan, d$unl, "p"), "column `p` of `labeled` \\(the prediction\\) has a missing value \\(NA\\) at position 2")
  # no intercept: the formula decides, as in lm(); y ~ 0 + x is a regression through the origin
  origin <- ppi_ols(y ~ 0 + x, d$lab, d$unl, "llm", method = "classical")
  expect_identical(origin$table$term, "x")
  expect_false(origin$intercept)
  expect_equal(unname(coef(origin)), unname(coef(lm(y ~ 0 + x, data = d$lab))), tolerance = 1e-10)
  # all-equal y: refused in every function, with the estimator's reason
  err(ppi_mean(rep(1, 150), yh, yu), "`y` has the same value \\(1\\) in every labelled row: its variance is 0")
  err(ppi_quantile(rep(2, 150), yh, yu, q = 0.5), "`y` has the same value \\(2\\) in every labelled row: the classical interval is that one value")
  shares <- cbind(no = 1 - d$lab$yes, yes = d$lab$yes, maybe = 0)
  shares_hat <- cbind(no = 1 - d$lab$p, yes = d$lab$p, maybe = 0.05)
  shares_u <- cbind(no = 1 - d$unl$p, yes = d$unl$p, maybe = 0.05)
  err(ppi_mean(shares, shares_hat, shares_u), "argument `y`: column 'maybe' has the same value \\(0\\) in every labelled row")
  lab_c <- d$lab; lab_c$y <- 3
  err(ppi_ols(y ~ x, lab_c, d$unl, "llm"), "the outcome y \\(in `labeled`\\) has the same value \\(3\\) in every labelled row: the classical fit is exact")
  lab_c$yes <- 0
  err(ppi_glm(yes ~ x, lab_c, d$unl, "p"), "the outcome yes \\(in `labeled`\\) has the same value \\(0\\) in every labelled row: .*no finite fit")
  err(ppi_glm(yes ~ x, lab_c, d$unl, "p", family = poisson()), "the outcome yes \\(in `labeled`\\) has the same value \\(0\\)")
  python_words(ppi_glm(yes ~ x, lab_c, d$unl, "p"))
  # perfectly separated logistic data: an error naming the outcome and the formula's terms, for every method
  lab_s <- d$lab; lab_s$sep <- as.numeric(lab_s$x > 0)
  for (m in c("classical", "ppi", "ppi++")) {
    err(ppi_glm(sep ~ x, lab_s, d$unl, "p", method = m),
        "the outcome sep \\(in `labeled`\\): the logistic regression on the labelled rows has no finite fit.*perfectly separated: a combination of the formula's terms predicts the outcome sep exactly")
    python_words(ppi_glm(sep ~ x, lab_s, d$unl, "p", method = m))
  }
  # 0/1 predictions separated on the unlabelled rows (right on every labelled row): no PPI fit at lambda = 1
  lab_01 <- d$lab; lab_01$guess <- lab_01$yes
  unl_01 <- d$unl; unl_01$guess <- as.numeric(unl_01$x > 0.3)
  err(ppi_glm(yes ~ x, lab_01, unl_01, "guess", method = "ppi"),
      "column `guess` of `unlabeled` \\(the prediction\\): the prediction-powered logistic loss at lambda = 1 has no finite minimiser.*the formula's terms on `unlabeled`")
  python_words(ppi_glm(yes ~ x, lab_01, unl_01, "guess", method = "ppi"))
  # values a logistic regression cannot take, at their 1-based row
  err(ppi_glm(y ~ x, d$lab, d$unl, "p"), "the outcome y \\(in `labeled`\\) must lie between 0 and 1 for a logistic regression")
  python_words(ppi_glm(y ~ x, d$lab, d$unl, "p"))
  # N = 0 (and N = 1): PPI needs two unlabelled rows
  err(ppi_mean(y, yh, numeric(0)), "`yhat_unlabeled` is empty; PPI needs at least two rows")
  err(ppi_mean(y, yh, yu[1]), "`yhat_unlabeled` has 1 row; PPI needs at least two rows")
  err(ppi_quantile(y, yh, numeric(0), q = 0.5), "`yhat_unlabeled` is empty")
  err(ppi_ols(y ~ x, d$lab, d$unl[1, ], "llm"), "argument `unlabeled` has 1 row; PPI needs at least two unlabelled rows")
  err(ppi_glm(yes ~ x, d$lab, d$unl[0, ], "p"), "argument `unlabeled` has no rows")
  # weights <= 0, at their 1-based position
  err(ppi_quantile(y, yh, yu, q = 0.5, weights_unlabeled = c(rep(1, 1999), -1)),
      "`weights_unlabeled` must be positive; got -1 at position 2000")
  lab_w <- d$lab; lab_w$w[3] <- 0
  err(ppi_ols(y ~ x, lab_w, d$unl, "llm", weights = "w"), "`weights` must be positive; got 0 at position 3")
  err(ppi_glm(yes ~ x, d$lab, d$unl, "p", weights_unlabeled = c(-2, rep(1, 1999))),
      "`weights_unlabeled` must be positive; got -2 at position 1")
  # a design with dependent columns names the formula's design, not X
  lab_d <- d$lab; unl_d <- d$unl; lab_d$x2 <- 2 * lab_d$x; unl_d$x2 <- 2 * unl_d$x
  err(ppi_ols(y ~ x + x2, lab_d, unl_d, "llm"), "the formula's design on `labeled`: the columns are linearly dependent")
})
