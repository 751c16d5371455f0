# lookahead_test(), lookahead_bootstrap() and lap() against references written in R: lm() with
# factor dummies and the clustered sandwich by hand (small-sample factor of
# docs/methods/lookahead.md §5.3.1), weighted lm() with the bootstrap's counts, Min-K% by hand from
# the model's per-token log-probabilities; and against the Python package on the same data.

la_panel <- function(n = 600, seed = 1, bias = 0.5) {
  set.seed(seed)
  d <- data.frame(firm = factor(sample(sprintf("firm%02d", 1:40), n, TRUE)),
                  date = as.Date("2022-01-03") + sample(0:24, n, TRUE),
                  llm = sample(c(-1L, 0L, 1L), n, TRUE), lap = runif(n, 0.001, 0.02),
                  small = rbinom(n, 1, 0.3))
  d$ret <- 0.2 * d$llm + bias * 50 * d$llm * d$lap + as.integer(d$firm) / 100 + rnorm(n)
  d
}

# CR1 by hand from lm()'s full dummy design; df_k as fixest counts it (a fixed effect nested in
# the cluster leaves the count, one level added back).
la_crv1 <- function(fit, term, cluster, df_k) {
  X <- stats::model.matrix(fit)
  e <- stats::residuals(fit)
  B <- solve(crossprod(X))
  S <- rowsum(X * e, as.character(cluster))
  n <- nrow(X)
  G <- nrow(S)
  V <- B %*% crossprod(S) %*% B * (n - 1) / (n - df_k) * G / (G - 1)
  V[term, term]
}

la_rel <- function(object, expected, tol = 1e-8) {
  expect_lt(max(abs(unname(object) - unname(expected)) / pmax(abs(unname(expected)), 1e-300)), tol)
}

test_that("lookahead_test equals lm() with dummies and the clustered sandwich by hand", {
  skip_if_no_llmsurrogate()
  d <- la_panel()
  res <- lookahead_test(d, "ret", "llm", "lap")
  expect_s3_class(res, "llmsurrogate_lookahead_test")
  ref <- lm(ret ~ llm + lap + llm:lap + firm + factor(date), d)
  Lf <- nlevels(d$firm)
  G <- length(unique(d$date))
  la_rel(res$estimate, coef(ref)[["llm:lap"]])
  se <- sqrt(la_crv1(ref, "llm:lap", d$date, df_k = 3 + Lf))  # date FE nested in the date clusters
  la_rel(res$std_error, se)
  expect_identical(as.integer(res$df), G - 1L)
  t <- coef(ref)[["llm:lap"]] / se
  la_rel(res$p_greater, pt(t, G - 1, lower.tail = FALSE), 1e-7)
  la_rel(res$p_two_sided, 2 * pt(abs(t), G - 1, lower.tail = FALSE), 1e-7)
  expect_equal(res$p_greater + res$p_less, 1, tolerance = 1e-12)
  # the two fits: the regression, and the baseline without the LAP terms (Table II col. 1)
  expect_s3_class(res$regression, "llmsurrogate_feols")
  la_rel(coef(res$regression), coef(ref)[c("llm", "lap", "llm:lap")])
  la_rel(coef(res$baseline), coef(lm(ret ~ llm + firm + factor(date), d))[["llm"]])
  expect_identical(unname(coef(res)), res$estimate)
  ci <- confint(res, level = 0.9)
  la_rel(ci[1, ], res$estimate + c(-1, 1) * qt(0.95, G - 1) * se)
  # magnitudes (§2.3): the signal's marginal effect at the mean LAP
  la_rel(res$lap_mean, mean(d$lap))
  la_rel(res$lap_sd, sd(d$lap))
  # HC1 without clusters: n / (n - df_k), df_k = lm's rank
  het <- lookahead_test(d, "ret", "llm", "lap", cluster = NULL)
  X <- model.matrix(ref)
  B <- solve(crossprod(X))
  V <- nrow(X) / (nrow(X) - ref$rank) * B %*% crossprod(X * residuals(ref)) %*% B
  la_rel(het$std_error, sqrt(V["llm:lap", "llm:lap"]))
  expect_output(print(het), "standard errors HC1")
})

test_that("controls, standardize and Table VI's firm clusters", {
  skip_if_no_llmsurrogate()
  d <- la_panel(seed = 2)
  res <- lookahead_test(d, "ret", "llm", "lap", controls = c("small", "llm:small", "lap:small", "llm:lap:small"))
  ref <- lm(ret ~ llm + lap + llm:lap + small + llm:small + lap:small + llm:lap:small + firm + factor(date), d)
  la_rel(res$estimate, coef(ref)[["llm:lap"]])
  expect_true("llm:lap:small" %in% names(coef(res$regression)))
  z <- function(v) (v - mean(v)) / sd(v)
  st <- lookahead_test(d, "ret", "llm", "lap", standardize = TRUE)
  ds <- transform(d, ret = z(ret), llm = z(llm), lap = z(lap))
  la_rel(st$estimate, coef(lm(ret ~ llm * lap + firm + factor(date), ds))[["llm:lap"]])
  # firm clusters with firm effects: the firm levels leave df_k
  t6 <- lookahead_test(d, "ret", "llm", "lap", fe = c("firm", "date"), cluster = "firm")
  ref6 <- lm(ret ~ llm * lap + firm + factor(date), d)
  Ld <- length(unique(d$date))
  la_rel(t6$std_error, sqrt(la_crv1(ref6, "llm:lap", d$firm, df_k = 3 + Ld)))
  expect_identical(as.integer(t6$df), nlevels(d$firm) - 1L)
})

test_that("factor, Date and tibble inputs; integer NA rows dropped with the count", {
  skip_if_no_llmsurrogate()
  d <- la_panel(seed = 3)
  a <- lookahead_test(d, "ret", "llm", "lap")
  d2 <- d
  d2$firm <- as.character(d2$firm)
  d2$date <- as.numeric(d2$date)
  b <- lookahead_test(d2, "ret", "llm", "lap")
  expect_equal(b$estimate, a$estimate, tolerance = 1e-12)
  expect_equal(b$std_error, a$std_error, tolerance = 1e-12)
  dn <- d
  dn$llm[c(5, 17, 40)] <- NA_integer_
  dn$date[60] <- NA
  expect_warning(r <- lookahead_test(dn, "ret", "llm", "lap"), "4 row\\(s\\) dropped for missing values",
                 class = "llmsurrogate_warning")
  expect_identical(as.integer(r$n_dropped), 4L)
  expect_identical(as.integer(r$nobs), nrow(d) - 4L)
  expect_output(print(r), "4 dropped for NA")
  ok <- d[-c(5, 17, 40, 60), ]
  la_rel(r$estimate, coef(lm(ret ~ llm * lap + firm + factor(date), ok))[["llm:lap"]])
  expect_equal(r$estimate, lookahead_test(ok, "ret", "llm", "lap")$estimate, tolerance = 1e-12)
  skip_if_not_installed("tibble")
  tb <- lookahead_test(tibble::as_tibble(d), "ret", "llm", "lap")
  expect_equal(tb$estimate, a$estimate, tolerance = 1e-14)
  expect_equal(tb$std_error, a$std_error, tolerance = 1e-14)
})

test_that("methods of the test: print, summary, tidy, etable, plot", {
  skip_if_no_llmsurrogate()
  d <- la_panel(seed = 4)
  res <- lookahead_test(d, "ret", "llm", "lap")
  expect_output(print(res), "Interaction llm:lap")
  expect_output(print(summary(res)), "Regressions")
  td <- as.data.frame(res)
  expect_identical(td$term, "llm:lap")
  expect_equal(td$p_value_greater, res$p_greater)
  tab <- etable(res)
  expect_match(tab, "llm:lap")
  expect_match(tab, sprintf("%.3f", coef(res$baseline)[["llm"]]), fixed = TRUE)
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_invisible(plot(res))
  skip_if_not_installed("generics")
  g <- generics::tidy(res)
  expect_identical(g$p.value, res$p_two_sided)  # broom's p.value is two-sided (issue 35 §5)
  expect_identical(g$p.value.greater, res$p_greater)
})

test_that("lookahead_test and the bootstrap agree with the Python package on the same data", {
  skip_if_no_llmsurrogate()
  d <- la_panel(seed = 5)
  path <- tempfile(fileext = ".csv")
  utils::write.csv(d, path, row.names = FALSE)
  reticulate::py_run_string(paste(sep = "\n",
    "import pandas as pd, numpy as np",
    "from llmsurrogate import lookahead",
    sprintf("df = pd.read_csv(r'%s')", path),
    "t = lookahead.lookahead_test(df, 'ret', 'llm', 'lap', controls=['small'])",
    "py_t = [t.estimate, t.std_error, t.p_greater]",
    "b = lookahead.bootstrap(df, 'ret', 'llm', 'lap', n_boot=60, seed=11, resample='date')",
    "py_draws = b.draws.tolist()"))
  py <- reticulate::py
  res <- lookahead_test(d, "ret", "llm", "lap", controls = "small")
  la_rel(c(res$estimate, res$std_error, res$p_greater), unlist(py$py_t), 1e-12)
  boot <- lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 60, seed = 11, resample = "date")
  la_rel(boot$draws, unlist(py$py_draws), 1e-12)
  expect_identical(as.integer(boot$n_blocks), length(unique(d$date)))
})

test_that("lookahead_bootstrap: a replication is the weighted lm() on its counts; p-values; reproducible", {
  skip_if_no_llmsurrogate()
  d <- la_panel(n = 400, seed = 6)
  boot <- lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 40, seed = 123)
  expect_s3_class(boot, "llmsurrogate_lookahead_bootstrap")
  expect_length(boot$draws, 40L)
  la <- reticulate::import("llmsurrogate.lookahead", convert = FALSE)
  for (b in c(0L, 17L)) {
    counts <- as.numeric(reticulate::py_to_r(la$bootstrap_counts(nrow(d), 123L, b)$tolist()))
    expect_identical(sum(counts), as.numeric(nrow(d)))
    keep <- counts > 0
    dd <- d[keep, ]
    dd$firm <- factor(as.character(dd$firm))
    fit <- lm(ret ~ llm * lap + firm + factor(date), dd, weights = counts[keep])
    la_rel(boot$draws[b + 1L], coef(fit)[["llm:lap"]], 1e-8)
  }
  # without a reference: the percentile test of H0: delta <= 0
  expect_identical(boot$p_value, mean(boot$draws <= 0))
  expect_equal(boot$p_value_plus_one, (1 + sum(boot$draws <= 0)) / 41)
  # against a reference (a test result's estimate): #{draws >= reference} / B
  ref_test <- lookahead_test(d, "ret", "llm", "lap")
  again <- lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 40, seed = 123, reference = ref_test)
  expect_identical(again$draws, boot$draws)
  expect_identical(again$reference, ref_test$estimate)
  expect_identical(again$p_value, mean(boot$draws >= ref_test$estimate))
  la_rel(again$estimate, ref_test$estimate, 1e-12)
  other <- lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 40, seed = 124)
  expect_false(identical(other$draws, boot$draws))
  drawn <- lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 5)
  expect_identical(lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 5, seed = drawn$seed)$draws, drawn$draws)
  expect_equal(unname(quantile(boot, 0.5)), median(boot$draws))
  expect_output(print(again), "p = #\\{draws >= ")
  expect_output(print(summary(again)), "Pairs bootstrap")
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_invisible(plot(again))
  expect_invisible(plot(boot, breaks = 10))
})

test_that("bad input to the test and the bootstrap names the argument", {
  skip_if_no_llmsurrogate()
  d <- la_panel(n = 200, seed = 7)
  expect_error(lookahead_test(d, "rett", "llm", "lap"), "argument `outcome`: column `rett` is not in `data`; did you mean `ret`",
               class = "llmsurrogate_error")
  expect_error(lookahead_test(d, "ret", "llm", "lap", fe = c("firm", "dat")), "argument `fe`: column `dat`")
  expect_error(lookahead_test(d, "ret", "llm", "lap", fe = character()), "argument `fe` is empty")
  expect_error(lookahead_test(d, "ret", "llm", "lap", cluster = "quarter"), "argument `cluster`: column `quarter`")
  expect_error(lookahead_test(d, "ret", "llm", "lap", controls = "llm:big"), "argument `controls`: column `big`")
  expect_error(lookahead_test(d, "ret", "llm", "lap", standardize = "yes"), "argument `standardize` must be TRUE or FALSE")
  expect_error(lookahead_test(list(ret = 1), "ret", "llm", "lap"), "argument `data` must be a data frame")
  d$one <- 1
  expect_error(lookahead_test(d, "ret", "llm", "lap", cluster = "one"), "single level")
  expect_error(lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 0), "argument `n_boot`")
  expect_error(lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 10, seed = -1), "argument `seed`")
  expect_error(lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 10, resample = "week"), "argument `resample`: column `week`")
  expect_error(lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 10, reference = "a"), "argument `reference`")
})

test_that("lookahead_bootstrap: the earlier name `reps` still works, with a deprecation warning", {
  skip_if_no_llmsurrogate()
  d <- la_panel(n = 200, seed = 7)
  new <- lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 8, seed = 3)
  expect_warning(old <- lookahead_bootstrap(d, "ret", "llm", "lap", reps = 8, seed = 3),
                 "argument `reps` is deprecated.*use `n_boot`", class = "llmsurrogate_deprecation")
  expect_identical(old$draws, new$draws)
  expect_equal(old$n_boot, 8)
  expect_identical(new$n_boot, old$n_boot)
  expect_error(lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 8, reps = 8), "renamed `n_boot`")
})

test_that("lap() equals Min-K% computed in R from the model's per-token log-probabilities", {
  skip_if_no_llmsurrogate()
  testing <- reticulate::import("llmsurrogate.testing")
  dir <- file.path(tempdir(), "lap-llama")
  testing$build_model(dir, "llama", seed = 7L)
  texts <- c("The age is: 40 years old. The occupation is: manager.", "Answer:",
             "The person works 40 hours per week in a private company and holds a bachelor degree.")
  cache <- file.path(tempdir(), "lap-cache")
  s <- lap(texts, dir, k = 0.2, cache = cache, device = "cpu")
  expect_type(s, "double")
  expect_length(s, 3L)
  hf <- reticulate::import("llmsurrogate.llm.hf", convert = FALSE)
  be <- hf$TransformersBackend(dir, device = "cpu", batch_size = 2L)
  rag <- be$prompt_logprobs(as.list(texts))
  values <- as.numeric(reticulate::py_to_r(rag$values$tolist()))
  offsets <- as.numeric(reticulate::py_to_r(rag$offsets$tolist()))
  by_hand <- function(k, agg = "geometric") {
    vapply(seq_along(texts), function(i) {
      lp <- values[(offsets[i] + 1):offsets[i + 1]][-1]  # the first token is not scored
      kk <- max(1, floor(k * length(lp)))
      low <- sort(lp)[seq_len(kk)]
      if (agg == "geometric") exp(mean(low)) else mean(exp(low))
    }, numeric(1))
  }
  la_rel(s, by_hand(0.2), 1e-6)
  # another k, method and agg from the cache
  la_rel(lap(texts, dir, k = 0.5, cache = cache, device = "cpu"), by_hand(0.5), 1e-6)
  la_rel(lap(texts, dir, method = "mean", cache = cache, device = "cpu"), by_hand(1), 1e-6)
  la_rel(lap(texts, dir, k = 0.5, agg = "arith", cache = cache, device = "cpu"), by_hand(0.5, "arith"), 1e-6)
  det <- lap(factor(texts), dir, cache = cache, details = TRUE, device = "cpu")
  expect_s3_class(det, "data.frame")
  expect_identical(as.integer(det$n_scored), as.integer(diff(offsets) - 1))
  la_rel(det$score, s, 1e-12)
  # a one-token text: NA with a warning giving R's position
  expect_warning(one <- lap(c(texts[1], "A"), dir, cache = cache, device = "cpu"), "first at position 2",
                 class = "llmsurrogate_warning")
  expect_true(is.na(one[2]))
  la_rel(one[1], s[1], 1e-12)
  expect_error(lap(texts, dir, k = 20), "did you mean 0.2", class = "llmsurrogate_error")
  expect_error(lap(c("a", NA), dir), "argument `texts` has a missing value \\(NA\\) at position 2")
  expect_error(lap(1:3, dir), "argument `texts` must be a non-empty character vector")
  expect_error(lap(texts, file.path(tempdir(), "no-model")), "argument `model`: no such folder")
  expect_error(lap(texts, dir, method = "max"), "argument `method`")
})

# Issue 26, item 6
test_that("lookahead_test(fe = character()) says a fixed effect is needed; an Inf is named as Inf", {
  skip_if_no_llmsurrogate()
  set.seed(1)
  n <- 200
  d <- data.frame(firm = sample(1:10, n, TRUE), date = sample(1:10, n, TRUE), llm = rnorm(n), lap = runif(n),
                  ret = rnorm(n))
  expect_error(lookahead_test(d, "ret", "llm", "lap", fe = character()), "`fe` is empty.*feols\\(",
               class = "llmsurrogate_error")
  d$ret[5] <- -Inf
  ws <- character(0)
  res <- withCallingHandlers(lookahead_test(d, "ret", "llm", "lap"), warning = function(w) {
    ws <<- c(ws, conditionMessage(w))
    invokeRestart("muffleWarning")
  })
  expect_true(any(grepl("column `ret` has 1 infinite value(s) (-Inf at row 5)", ws, fixed = TRUE)), info = ws)
  expect_identical(res$regression$nobs, 199L)
})
