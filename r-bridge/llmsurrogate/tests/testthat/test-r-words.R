# R's words in messages (issue 35 §5): positions counted from 1 in every entry point that reports
# one (the Python package builds each position with llmsurrogate._positions and the bridge gives R
# the 1-based one, by construction), R's type names ("a factor", "a list"), no Python spelling of a
# list or a subscript, help pages an installed package has, and broom's two-sided p.value.
# References: the position of the bad value computed here with which(), R's own type words.


test_that("positions are 1-based in every entry point whose message comes from Python", {
  skip_if_no_llmsurrogate()
  # quantiles: an infinite weight, at which(is.infinite(w))
  w <- c(1, Inf, 1)
  at_w <- which(is.infinite(w))
  for (f in list(weighted_upper_quantile, weighted_lower_quantile)) {
    expect_error(f(c(1, 2, 3), w, 0.5), sprintf("infinite value at position %d;", at_w), fixed = TRUE,
                 class = "llmsurrogate_error")
  }
  expect_error(weighted_quantile_interval(c(1, 2, 3), w, 0.8), sprintf("infinite value at position %d;", at_w),
               fixed = TRUE, class = "llmsurrogate_error")
  # binary risk scores: an outcome that is not 0/1, a score outside [0, 1]
  y <- c(0, 1, 2, 0)
  expect_error(evaluate_risk_scores(y, c(.1, .2, .3, .4), n_boot = 0),
               sprintf("got 2 at position %d", which(y == 2)), fixed = TRUE, class = "llmsurrogate_error")
  s <- c(.1, 1.5, .3, .4)
  expect_error(evaluate_risk_scores(c(0, 1, 1, 0), s, n_boot = 0),
               sprintf("got 1.5 at position %d", which(s > 1)), fixed = TRUE, class = "llmsurrogate_error")
  # transferUQ: likelihood ratios (one per domain), negative or infinite
  m <- matrix(c(NA, 1, 2, 3, NA, 4, 5, 6, NA), 3)
  expect_error(weighted_forecast_interval(m, c(1, -1, 1), 0.8), "got -1 at position 2", fixed = TRUE,
               class = "llmsurrogate_error")
  expect_error(weighted_forecast_interval(m, c(1, 1, Inf), 0.8), "got Inf at position 3", fixed = TRUE,
               class = "llmsurrogate_error")
  # a long error table whose row 6 tests on a domain it trains on: every function that reads `err`
  long <- data.frame(train = c(2, 3, 1, 3, 1, 1), test = c(1, 1, 2, 2, 3, 1), error = c(3, 5, 1, 6, 2, 4))
  clash <- which(long$train == long$test)
  msg <- sprintf("row %d has its test domain 1", clash)
  old <- options(llmsurrogate.transferUQ_notice = FALSE)
  on.exit(options(old), add = TRUE)
  expect_error(forecast_interval(long, 0.8), msg, fixed = TRUE, class = "llmsurrogate_error")
  expect_error(weighted_forecast_interval(long, c(1, 1, 1), 0.8), msg, fixed = TRUE, class = "llmsurrogate_error")
  expect_error(worst_case_interval(long, 0.8, Gamma = 2), msg, fixed = TRUE, class = "llmsurrogate_error")
  expect_error(qte_interval(long, 0.8), msg, fixed = TRUE, class = "llmsurrogate_error")
  expect_error(ete_interval(long, 0.8), msg, fixed = TRUE, class = "llmsurrogate_error")
  expect_error(check_worstcase_dominance(long, m), msg, fixed = TRUE, class = "llmsurrogate_error")
  expect_error(check_everywhere_dominance(m, long), msg, fixed = TRUE, class = "llmsurrogate_error")
  expect_error(critical_gamma(long, m, 0.8), msg, fixed = TRUE, class = "llmsurrogate_error")
  expect_error(everywhere_dominance_box(long, m), msg, fixed = TRUE, class = "llmsurrogate_error")
  # building a transfer-error table: the row of the domain's samples
  ce <- data.frame(domain = rep(1:3, each = 4), z1 = c(1:5, NA, 7:12) / 10, z2 = 0.5, p1 = 0.3, ce = 1:12)
  bad <- which(is.na(ce$z1))
  in_domain <- bad - min(which(ce$domain == ce$domain[bad])) + 1
  expect_error(transfer_error_table(ce, "eu"), sprintf("(row %d of domain %d)", in_domain, ce$domain[bad]),
               fixed = TRUE, class = "llmsurrogate_error")
  # ESS: a non-finite prediction, outcome or feature, at its row of `data`
  d <- data.frame(y = c(0, 1, 0, 1, 0, 1, 0, 1), x = 1:8, p = c(.2, .8, Inf, .7, .1, .9, .4, .6))
  expect_error(ess(d, "y", "p", features = "x", algorithm = "mean", grid = 2),
               sprintf("(Inf) at row %d;", which(is.infinite(d$p))), fixed = TRUE, class = "llmsurrogate_error")
  d$t <- rep(0:1, 4)
  expect_error(cate_ess(d, "y", "t", "p", features = "x", algorithm = "mean", grid = 2),
               sprintf("(Inf) at row %d;", which(is.infinite(d$p))), fixed = TRUE, class = "llmsurrogate_error")
  d$p[3] <- 0.3
  d$y[4] <- Inf
  expect_error(ess(d, "y", "p", features = "x", algorithm = "mean", grid = 2), "(Inf) at row 4;", fixed = TRUE,
               class = "llmsurrogate_error")
  d$y[4] <- 1
  d$x[5] <- -Inf
  expect_error(error_curve(d, "y", features = "x", algorithm = "mean", grid = 2), "(-Inf) at row 5;", fixed = TRUE,
               class = "llmsurrogate_error")
  # LLM scores: a label that is no option, and a text with no scored token (a warning)
  testing <- reticulate::import("llmsurrogate.testing")
  dir <- file.path(tempdir(), "r-words-llama")
  if (!dir.exists(dir)) testing$build_model(dir, "llama", seed = 7L)
  census <- synthetic_census(5, seed = 1)
  census[["PINCP>50000"]][2] <- 2
  expect_error(risk_scores(census, task = "ACSIncome", model = dir), "at row 2 is not one of 0 and 1", fixed = TRUE,
               class = "llmsurrogate_error")
  expect_warning(lap(c("The age is: 40 years old.", "A"), dir, device = "cpu"), "first at position 2:", fixed = TRUE,
                 class = "llmsurrogate_warning")
})

test_that("positions in errors of the Rust core reach R 1-based (built as data in rust/common/errors.rs)", {
  skip_if_no_llmsurrogate()
  # R's own check of the weights comes first in weighted_upper_quantile(); the bridge call below
  # skips it, so the message is the Rust kernel's, raised through the Python bindings
  w <- c(1, 1, -1)
  expect_error(llmsurrogate:::.call("quantiles.weighted_upper_quantile", c(1, 2, 3), w, 0.5),
               sprintf("has a negative value (-1) at position %d; weights must be >= 0", which(w < 0)),
               fixed = TRUE, class = "llmsurrogate_error")
})

test_that("ESS's n_estimators is checked in R's words (was `algorithm_optionsc(\"n_estimators\")`)", {
  skip_if_no_llmsurrogate()
  d <- data.frame(y = c(0, 1, 0, 1, 0, 1, 0, 1), x = 1:8, p = c(.2, .8, .3, .7, .1, .9, .4, .6))
  for (n in list(0, 2.5, 1e12)) {
    err <- expect_error(ess(d, "y", "p", features = "x", algorithm = "rf", grid = 2, n_estimators = n),
                        "argument `n_estimators` must be a whole number >= 1", fixed = TRUE,
                        class = "llmsurrogate_error")
    expect_false(grepl("algorithm_options", conditionMessage(err), fixed = TRUE))
  }
  # the bridge's word conversion leaves a subscript alone and writes a list of numbers as R does
  r_message <- reticulate::import("llmsurrogate.rbridge")$r_message
  expect_identical(r_message("argument `algorithm_options['n_estimators']` must be >= 1"),
                   "argument `algorithm_options['n_estimators']` must be >= 1")
  expect_identical(r_message("argument `order` must be an integer; got [99.0, 2.5]"),
                   "argument `order` must be an integer; got c(99, 2.5)")
})

test_that("factors and lists are named by R's type words", {
  skip_if_no_llmsurrogate()
  lt <- data.frame(ret = sin(1:20), sig = factor(rep(c("a", "b"), 10)), lap = (1:20) / 21, firm = rep(1:4, 5),
                   date = rep(1:5, each = 4))
  expect_error(lookahead_test(lt, "ret", "sig", "lap"), "column `sig` (argument `signal`) is a factor", fixed = TRUE,
               class = "llmsurrogate_error")
  lt$sig <- cos(1:20)
  lt$lap <- as.character(lt$lap)
  expect_error(lookahead_bootstrap(lt, "ret", "sig", "lap", n_boot = 5), "column `lap` (argument `lap`) is character",
               fixed = TRUE, class = "llmsurrogate_error")
  d <- data.frame(y = c(0, 1, 0, 1, 0, 1, 0, 1), x = 1:8, f = factor(rep(c("a", "b"), 4)))
  err <- expect_error(ess(d, "y", "f", features = "x", algorithm = "mean", grid = 2),
                      "argument `prediction` (column `f`) is a factor", fixed = TRUE, class = "llmsurrogate_error")
  expect_false(grepl("pandas|strings", conditionMessage(err)))
  expect_error(ess(d, "y", d$f, features = "x", algorithm = "mean", grid = 2), "argument `prediction` is a factor",
               fixed = TRUE, class = "llmsurrogate_error")
  # lists
  expect_error(upper_quantile(list(99), 0.5), "argument `values` must be a numeric vector, not a list", fixed = TRUE,
               class = "llmsurrogate_error")
  expect_error(evaluate_risk_scores(factor(c("a", "b")), list(.5, .5)), "not a list", fixed = TRUE,
               class = "llmsurrogate_error")
  expect_error(ess(list(y = 1:3), "y", "p"), "argument `data` must be a data frame, not a list", fixed = TRUE,
               class = "llmsurrogate_error")
  m <- matrix(c(NA, 1, 2, 3, NA, 4, 5, 6, NA), 3)
  err <- expect_error(qte_interval(m, 0.8, order = list(99)), "argument `order` must be a numeric vector, not a list",
                      fixed = TRUE, class = "llmsurrogate_error")
  expect_false(grepl("[", conditionMessage(err), fixed = TRUE))
  expect_error(ete_interval(m, 0.8, order = 2.5), "whole number >= 1; got 2.5", fixed = TRUE,
               class = "llmsurrogate_error")
})

test_that("transferUQ notices point to ?transfer_inference, a help page the installed package has", {
  skip_if_no_llmsurrogate()
  expect_true(length(utils::help("transfer_inference", package = "llmsurrogate")) == 1L)
  notices <- llmsurrogate:::.transferuq_notices
  expect_false(any(grepl("docs/", notices, fixed = TRUE)))
  rd <- tools::Rd_db("llmsurrogate")[["transfer_inference.Rd"]]
  text <- paste(capture.output(tools::Rd2txt(rd, options = list(underline_titles = FALSE))), collapse = " ")
  for (section in regmatches(notices, regexpr("\"[A-Za-z -]+\" in \\?transfer_inference", notices))) {
    expect_true(grepl(sub("\" in .*$", "", sub("^\"", "", section)), text, fixed = TRUE))
  }
  expect_length(regmatches(notices, regexpr("\\?transfer_inference", notices)), 3L)
  rm(list = ls(llmsurrogate:::.notices_given), envir = llmsurrogate:::.notices_given)
  old <- options(llmsurrogate.transferUQ_notice = TRUE)
  on.exit(options(old), add = TRUE)
  m <- matrix(seq_len(100) / 100, 10)
  diag(m) <- NA
  expect_message(qte_interval(m, 0.8), "?transfer_inference", fixed = TRUE,
                 class = "llmsurrogate_transferUQ_notice")
})

test_that("tidy() of the lookahead test: p.value is two-sided as broom's, the one-sided named by its alternative", {
  skip_if_no_llmsurrogate()
  skip_if_not_installed("generics")
  set.seed(3)
  n <- 240
  d <- data.frame(firm = rep(1:12, each = 20), date = rep(1:20, 12))
  d$lap <- runif(n)
  d$llm <- rnorm(n)
  d$ret <- 0.4 * d$llm + 0.3 * d$llm * d$lap + rnorm(n)
  res <- lookahead_test(d, "ret", "llm", "lap")
  g <- generics::tidy(res)
  t <- g$statistic
  expect_equal(g$p.value, 2 * stats::pt(-abs(t), g$df), tolerance = 1e-10)  # two-sided, as tidy(lm())
  expect_equal(g$p.value.greater, stats::pt(t, g$df, lower.tail = FALSE), tolerance = 1e-10)
  expect_equal(g$p.value.less, stats::pt(t, g$df), tolerance = 1e-10)
  expect_output(print(res), "p.value is the two-sided p-value, p.value.greater the one-sided one", fixed = TRUE)
})
