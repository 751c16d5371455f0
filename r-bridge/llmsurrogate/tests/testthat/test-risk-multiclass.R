# Issue 27, item 6: K answer options and survey weights from R (evaluate_risk_scores() with K
# probability columns, compare_answers()), and the ESS functions' refusal of survey weights.

# Three ordered options, answers drawn from the probabilities, survey weights.
k_option_data <- function(n = 240, seed = 11) {
  set.seed(seed)
  p <- matrix(stats::rexp(3 * n), n)
  p <- p / rowSums(p)
  colnames(p) <- c("low", "mid", "high")
  y <- apply(p, 1, function(pr) sample(colnames(p), 1, prob = pr))
  list(p = p, y = y, w = stats::runif(n, 0.2, 3), g = rep(c("a", "b", "c"), length.out = n))
}

# A pandas DataFrame's columns as R vectors.
py_columns <- function(frame) lapply(frame$to_dict(orient = "list"), unlist)

test_that("evaluate_risk_scores() with K columns: weighted metrics written out in R, and Python's numbers", {
  skip_if_no_llmsurrogate()
  d <- k_option_data()
  ev <- evaluate_risk_scores(factor(d$y, levels = colnames(d$p), ordered = TRUE), d$p, weights = d$w, n_boot = 50)
  expect_s3_class(ev, c("llmsurrogate_multiclass_evaluation", "llmsurrogate_result"))
  expect_true(ev$meta$ordered)  # from the ordered factor
  expect_true(ev$meta$weighted)
  est <- coef(ev)
  # the definitions (docs/methods/survey.md §2), weighted means of per-row losses
  code <- match(d$y, colnames(d$p))
  onehot <- diag(3)[code, ]
  wm <- function(x) sum(d$w * x) / sum(d$w)
  expect_equal(est[["log_loss"]], wm(-log(d$p[cbind(seq_along(code), code)])), tolerance = 1e-12)
  expect_equal(est[["brier"]], wm(rowSums((d$p - onehot)^2)), tolerance = 1e-12)
  cum <- t(apply(d$p, 1, cumsum))[, 1:2] - t(apply(onehot, 1, cumsum))[, 1:2]
  expect_equal(est[["rps"]], wm(rowSums(cum^2) / 2), tolerance = 1e-12)
  expect_equal(est[["accuracy"]], wm(max.col(d$p, ties.method = "last") == code), tolerance = 1e-12)
  # every number (estimates, standard errors, intervals) is the Python function's
  risk <- reticulate::import("llmsurrogate.risk")
  py <- risk$evaluate_multiclass(as.list(d$y), reticulate::r_to_py(as.data.frame(d$p)), weights = d$w,
                                 ordered = TRUE, n_boot = 50L)
  pm <- py_columns(py$metrics)
  expect_identical(ev$table$metric, pm$metric)
  for (col in c("value", "se", "ci_low", "ci_high")) expect_equal(ev$table[[col]], pm[[col]], tolerance = 1e-12)
  # broom's names
  td <- generics::tidy(ev)
  expect_identical(names(td), c("term", "estimate", "std.error", "conf.low", "conf.high"))
  expect_identical(td$term, pm$metric)
  ci <- confint(ev, "accuracy")
  expect_equal(unname(ci[1, ]), c(td$conf.low[td$term == "accuracy"], td$conf.high[td$term == "accuracy"]))
  expect_error(confint(ev, level = 0.9), "level 0.95", class = "llmsurrogate_error")
  expect_output(print(ev), "K = 3 options \\(low, mid, high\\), ordered, survey weights")
  expect_output(print(summary(ev)), "By option")
  # a data frame of prob_<option> columns, as risk_scores() writes them, is the same evaluation
  df <- stats::setNames(as.data.frame(d$p), paste0("prob_", colnames(d$p)))
  again <- evaluate_risk_scores(d$y, df, weights = d$w, ordered = TRUE, n_boot = 50)
  expect_identical(again$table$value, ev$table$value)
  # unnamed columns with `options`; without weights the metrics are plain means
  plain <- evaluate_risk_scores(d$y, unname(d$p), options = colnames(d$p), n_boot = 0)
  expect_false(plain$meta$ordered)
  expect_equal(coef(plain)[["brier"]], mean(rowSums((d$p - onehot)^2)), tolerance = 1e-12)
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_identical(plot(ev), ev)
})

test_that("evaluate_risk_scores() says what is wrong with K-option input in R's words", {
  skip_if_no_llmsurrogate()
  d <- k_option_data(20)
  bad <- d$p
  bad[4, 2] <- 1.5
  expect_error(evaluate_risk_scores(d$y, bad), "between 0 and 1; got 1.5 at row 4, column `mid`", fixed = TRUE,
               class = "llmsurrogate_error")
  bad <- d$p
  bad[7, 1] <- bad[7, 1] + 0.1
  expect_error(evaluate_risk_scores(d$y, bad), "row 7 sums to", class = "llmsurrogate_error")
  bad[7, 1] <- NA
  expect_error(evaluate_risk_scores(d$y, bad), "missing value (NA) at row 7, column `low`", fixed = TRUE)
  y <- replace(d$y, 5, "none")
  expect_error(evaluate_risk_scores(y, d$p), 'answer "none" at position 5 is not an option; the options (columns of `scores`) are c("low", "mid", "high")',
               fixed = TRUE, class = "llmsurrogate_error")
  expect_error(evaluate_risk_scores(d$y, unname(d$p)), "give `options`", class = "llmsurrogate_error")
  expect_error(evaluate_risk_scores(d$y, d$p, threshold = 0.3), "applies to binary scores")
  expect_error(evaluate_risk_scores(d$y, d$p, groups = d$g), "compare_answers(y, scores, groups)", fixed = TRUE)
  expect_error(evaluate_risk_scores(d$y, d$p, weights = replace(d$w, 3, -1)),
               "must be finite and non-negative; got -1 at position 3", fixed = TRUE)
  expect_error(evaluate_risk_scores(d$y, d$p, weights = d$w[-1]), "one survey weight per row (20)", fixed = TRUE)
  expect_error(evaluate_risk_scores(d$y, d$p, weights = 0 * d$w), "sums to 0")
  expect_error(evaluate_risk_scores(c(0, 1), c(.2, .7), options = c("a", "b")), "applies to K probability columns")
  # the threshold given by position, as before `weights` was the fourth argument
  expect_error(evaluate_risk_scores(c(0, 1, 1), c(.2, .7, .6), NULL, 0.4), "threshold = ...", fixed = TRUE)
})

test_that("compare_answers() matches the distances written out in R and Python's numbers", {
  skip_if_no_llmsurrogate()
  d <- k_option_data()
  cmp <- compare_answers(d$y, d$p, groups = d$g, weights = d$w, ordered = TRUE, n_boot = 40)
  expect_s3_class(cmp, c("llmsurrogate_answer_comparison", "llmsurrogate_result"))
  share <- function(rows) {
    w <- d$w[rows]
    human <- vapply(colnames(d$p), function(o) sum(w[d$y[rows] == o]), numeric(1)) / sum(w)
    llm <- colSums(w * d$p[rows, , drop = FALSE]) / sum(w)
    c(tv = sum(abs(llm - human)) / 2, w1 = sum(abs(cumsum(llm - human)[1:2])))
  }
  est <- coef(cmp)
  expect_equal(est[c("tv (all rows)", "w1 (all rows)")], share(seq_along(d$y)), ignore_attr = TRUE,
               tolerance = 1e-12)
  expect_equal(est[c("tv (b)", "w1 (b)")], share(which(d$g == "b")), ignore_attr = TRUE, tolerance = 1e-12)
  risk <- reticulate::import("llmsurrogate.risk")
  py <- risk$compare_answers(as.list(d$y), reticulate::r_to_py(as.data.frame(d$p)), as.list(d$g), weights = d$w,
                             ordered = TRUE, n_boot = 40L)
  pt <- py_columns(py$table)
  td <- generics::tidy(cmp)
  expect_identical(td$group, pt$group)
  expect_equal(td$estimate, pt$value, tolerance = 1e-12)
  expect_equal(td$conf.low, pt$ci_low, tolerance = 1e-12)
  expect_equal(td$conf.high, pt$ci_high, tolerance = 1e-12)
  expect_equal(td$bias, pt$bias, tolerance = 1e-12)
  expect_output(print(cmp), "tv \\(all rows\\)")
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_identical(plot(cmp, distance = "w1"), cmp)
  unordered <- compare_answers(d$y, d$p, n_boot = 0)
  expect_identical(unique(unordered$table$distance), "tv")
  expect_error(plot(unordered, distance = "w1"), "ordered = TRUE", class = "llmsurrogate_error")
  expect_error(compare_answers(d$y, d$p[, 1]), "data frame or matrix of K probability columns")
  expect_error(compare_answers(d$y, d$p, llm_answer = "mode"), 'c("probabilities", "argmax")', fixed = TRUE)
})

test_that("ess(), error_curve() and cate_ess() refuse survey weights with the reason, in R's words", {
  skip_if_no_llmsurrogate()
  set.seed(3)
  df <- data.frame(x = rnorm(60), d = rbinom(60, 1, 0.5))
  df$y <- df$x + rnorm(60)
  df$llm <- df$x
  w <- runif(60)
  msg <- "does not take survey weights"
  expect_error(ess(df, "y", "llm", "x", algorithm = "mean", grid = 5, weights = w), paste("ess()", msg),
               fixed = TRUE, class = "llmsurrogate_error")
  expect_error(error_curve(df, "y", "x", algorithm = "mean", grid = 5, weights = w), paste("error_curve()", msg),
               fixed = TRUE, class = "llmsurrogate_error")
  expect_error(cate_ess(df, "y", "d", "llm", propensity = 0.5, features = "x", algorithm = "mean", grid = 5,
                        weights = w), "survey.md \u00a75", fixed = TRUE, class = "llmsurrogate_error")
})

test_that("risk_scores() on a question with three ordered options returns the prob_ columns, orders chosen", {
  skip_if_no_llmsurrogate()
  testing <- reticulate::import("llmsurrogate.testing")
  dir <- file.path(tempdir(), "tiny-gpt2-k")
  testing$build_model(dir, "gpt2", seed = 3L)
  task <- file.path(tempdir(), "band.toml")
  writeLines(c('name = "IncomeBand"', 'target = "BAND"', "[question]", 'text = "Yearly income?"', "ordered = true",
               "[[question.options]]", 'text = "Low"', "value = 1", "[[question.options]]", 'text = "Middle"',
               "value = 2", "[[question.options]]", 'text = "High"', "value = 3", "[[columns]]", 'name = "AGEP"',
               "[[columns]]", 'name = "SEX"'), task)
  rows <- synthetic_census(12, seed = 4)
  rows$BAND <- as.integer(cut(rows$p_true, stats::quantile(rows$p_true, c(0, 1 / 3, 2 / 3, 1)),
                              include.lowest = TRUE))
  s <- suppressWarnings(risk_scores(rows, task, dir, orders = "cyclic"))
  probs <- c("prob_1", "prob_2", "prob_3")
  expect_true(all(probs %in% names(s)))
  expect_equal(rowSums(s[probs]), rep(1, 12), tolerance = 1e-12)
  # Python's numbers for the same rows and orders; all 3! orders give other numbers
  reticulate::py_capture_output(  # the tiny model's answer-mass warning, logged by Python
    py <- reticulate::import("llmsurrogate.risk")$score_table(reticulate::r_to_py(rows[c("AGEP", "SEX", "BAND")]),
                                                               task, dir, orders = "cyclic"))
  cols <- py_columns(py)
  for (p in probs) expect_equal(s[[p]], cols[[p]], tolerance = 1e-12)
  every <- suppressWarnings(risk_scores(rows, task, dir, orders = "all"))
  expect_false(isTRUE(all.equal(every$prob_2, s$prob_2, tolerance = 1e-12)))
  # the prob_ columns go to evaluate_risk_scores() as they are
  ev <- evaluate_risk_scores(s$label, s[probs], ordered = TRUE, n_boot = 0)
  expect_identical(ev$meta$options, c("1", "2", "3"))
  code <- s$label
  expect_equal(coef(ev)[["log_loss"]], -mean(log(as.matrix(s[probs])[cbind(1:12, code)])), tolerance = 1e-12)
  expect_error(risk_scores(rows, task, dir, orders = "some"), 'c("all", "cyclic")', fixed = TRUE,
               class = "llmsurrogate_error")
  # the ordered scale's levels numbered 1 to 3: a distribution over the levels too
  scale <- suppressWarnings(risk_scores(rows, task, dir, method = "numeric_scale"))
  expect_equal(rowSums(scale[probs]), rep(1, 12), tolerance = 1e-12)
  expect_equal(scale$score, as.vector(as.matrix(scale[probs]) %*% 1:3), tolerance = 1e-12)  # the expected level
})

test_that("evaluate_risk_scores() with binary scores and survey weights: weighted metrics, Python's numbers", {
  skip_if_no_llmsurrogate()
  set.seed(5)
  r <- round(runif(200), 2)
  y <- as.numeric(runif(200) < r)
  w <- runif(200, 0.2, 3)
  m <- evaluate_risk_scores(y, r, weights = w, n_boot = 30, level = 0.9)
  val <- setNames(m$value, m$metric)
  expect_equal(val[["brier"]], sum(w * (r - y)^2) / sum(w), tolerance = 1e-12)
  expect_equal(val[["accuracy"]], sum(w * ((r >= 0.5) == (y == 1))) / sum(w), tolerance = 1e-12)
  expect_equal(val[["sce"]], sum(w * r) / sum(w) - sum(w * y) / sum(w), tolerance = 1e-12)
  expect_false(isTRUE(all.equal(val[["brier"]], mean((r - y)^2))))
  py <- reticulate::import("llmsurrogate.risk")$evaluate(y, r, weights = w, n_boot = 30L, level = 0.9)
  pm <- py_columns(py$metrics)
  expect_identical(m$metric, pm$metric)
  for (col in c("value", "se", "ci_low", "ci_high")) expect_equal(m[[col]], pm[[col]], tolerance = 1e-12)
  expect_error(evaluate_risk_scores(y, r, weights = replace(w, 9, NA)), "missing value (NA) at position 9",
               fixed = TRUE, class = "llmsurrogate_error")
})
