# ESS with K class probabilities from R (issue 27 item 5; docs/methods/ess.md §1.6): loss =
# "multiclass_log" / "multiclass_brier" in ess() and error_curve(). References: the Python function
# called directly (a pandas DataFrame named by the classes, in another column order: the classes
# paired by label, not through R's path), the per-row losses computed here, and the binary losses
# at K = 2.

mc_data <- function(n = 240, seed = 11) {
  set.seed(seed)
  x1 <- rnorm(n)
  x2 <- rnorm(n)
  truth <- exp(cbind(0, 1.5 * x1, -x1 + 1.2 * x2))
  truth <- truth / rowSums(truth)
  answer <- apply(truth, 1, function(p) sample(c("a", "b", "c"), 1, prob = p))
  llm <- exp(cbind(0, x1, 0.5 * x2))  # a rule that knows part of the truth
  llm <- llm / rowSums(llm)
  list(d = data.frame(x1 = x1, x2 = x2, answer = factor(answer), prob_a = llm[, 1], prob_b = llm[, 2],
                      prob_c = llm[, 3]),
       llm = llm, codes = match(answer, c("a", "b", "c")))
}

# A column of a pandas table as an R vector, exactly (tolist(): Python floats).
py_col <- function(table, col) unlist(reticulate::py_to_r(table$`__getitem__`(col)$tolist()))

# Python's equivalent_sample_size on the same rows: the probabilities as a DataFrame whose columns,
# in the order c, a, b, are the class labels; the outcome as strings.
py_multiclass_ess <- function(d, llm, ...) {
  pd <- reticulate::import("pandas", convert = FALSE)
  py_ess <- reticulate::import("llmsurrogate.ess", convert = FALSE)
  frame <- pd$DataFrame(reticulate::r_to_py(list(x1 = as.list(d$x1), x2 = as.list(d$x2),
                                                 answer = as.list(as.character(d$answer)))))
  probs <- pd$DataFrame(reticulate::r_to_py(list(c = as.list(llm[, 3]), a = as.list(llm[, 1]),
                                                 b = as.list(llm[, 2]))))
  py_ess$equivalent_sample_size(frame, "answer", probs, features = list("x1", "x2"), progress = FALSE, ...)
}

ESS_COLS <- c("n_train", "n_blocks", "algo_error", "algo_se", "llm_error", "diff", "diff_se", "z")

test_that("ess(loss = 'multiclass_log' / 'multiclass_brier') gives the Python function's numbers", {
  skip_if_no_llmsurrogate()
  m <- mc_data()
  for (loss in c("multiclass_log", "multiclass_brier")) {
    for (algorithm in c("mean", "logit_l1")) {
      res <- ess(m$d, "answer", c("prob_a", "prob_b", "prob_c"), algorithm = algorithm, grid = c(5, 20, 60),
                 loss = loss, seed = 3)
      py <- py_multiclass_ess(m$d, m$llm, algorithm = algorithm, grid = list(5L, 20L, 60L), loss = loss, seed = 3L)
      for (col in ESS_COLS) {
        expect_equal(res$table[[col]], py_col(py$table, col), tolerance = 1e-12, info = paste(loss, algorithm, col))
      }
      expect_identical(res$lower_bound, reticulate::py_to_r(py$lower_bound), info = paste(loss, algorithm))
      expect_identical(res$status, reticulate::py_to_r(py$status))
      expect_identical(res$table$params, unlist(reticulate::py_to_r(py$table$`__getitem__`("params")$tolist())))
    }
  }
})

test_that("the LLM's error is the per-row log loss and summed Brier score computed in R", {
  skip_if_no_llmsurrogate()
  m <- mc_data()
  p_y <- m$llm[cbind(seq_along(m$codes), m$codes)]
  log_res <- ess(m$d, "answer", c("prob_a", "prob_b", "prob_c"), algorithm = "mean", grid = c(5, 20),
                 loss = "multiclass_log")
  expect_equal(log_res$llm_error, mean(-log(p_y)), tolerance = 1e-12)
  expect_equal(log_res$llm_se, sd(-log(p_y)) / sqrt(nrow(m$d)), tolerance = 1e-10)
  onehot <- diag(3)[m$codes, ]
  brier_res <- ess(m$d, "answer", c("prob_a", "prob_b", "prob_c"), algorithm = "mean", grid = c(5, 20),
                   loss = "multiclass_brier")
  expect_equal(brier_res$llm_error, mean(rowSums((m$llm - onehot)^2)), tolerance = 1e-12)
  # the "mean" learner at N = n/2 (two blocks): each block's class shares, scored on the other block
  n <- nrow(m$d)
  perm <- log_res$permutation  # 1-based
  expect_identical(sort(perm), seq_len(n))
  half <- n / 2
  shares <- function(rows) tabulate(m$codes[rows], 3) / length(rows)
  first <- perm[seq_len(half)]
  second <- perm[half + seq_len(half)]
  brier_of <- function(train, test) mean(rowSums((matrix(shares(train), length(test), 3, byrow = TRUE) -
                                                   onehot[test, ])^2))
  curve <- error_curve(m$d[c("x1", "x2", "answer")], "answer", algorithm = "mean", grid = half,
                       loss = "multiclass_brier")
  expect_equal(curve$table$error, (brier_of(first, second) + brier_of(second, first)) / 2, tolerance = 1e-12)
})

test_that("the prediction as K column names, a named matrix, a data frame with options, or an unnamed matrix with factor levels: the same numbers", {
  skip_if_no_llmsurrogate()
  m <- mc_data(120)
  run <- function(data, prediction, ...) {
    ess(data, "answer", prediction, algorithm = "mean", grid = c(5, 20), loss = "multiclass_log", ...)$table
  }
  ref <- run(m$d, c("prob_a", "prob_b", "prob_c"))
  base <- m$d[c("x1", "x2", "answer")]
  named <- m$llm
  colnames(named) <- c("a", "b", "c")
  expect_identical(run(base, named), ref)
  expect_identical(run(base, m$llm), ref)  # unnamed: the levels of the factor outcome
  shuffled <- data.frame(q = m$llm[, 3], r = m$llm[, 1], s = m$llm[, 2])
  expect_identical(run(base, shuffled, options = c("c", "a", "b")), ref)
  # a character outcome, the columns in another order
  chr <- m$d
  chr$answer <- as.character(chr$answer)
  expect_identical(run(chr, c("prob_c", "prob_b", "prob_a")), ref)
  # the probability columns are never features: all other columns are, as with features = c("x1", "x2")
  expect_identical(run(m$d, c("prob_a", "prob_b", "prob_c"), features = c("x1", "x2")), ref)
  # a numeric outcome's values compare as text with the options
  num <- base
  num$answer <- match(as.character(num$answer), c("a", "b", "c"))
  expect_identical(run(num, m$llm, options = 1:3), ref)
  skip_if_not_installed("tibble")
  expect_identical(run(tibble::as_tibble(m$d), c("prob_a", "prob_b", "prob_c")), ref)
})

test_that("K = 2: multiclass_log equals loss = 'log' and multiclass_brier twice loss = 'brier' on the 0/1 outcome", {
  skip_if_no_llmsurrogate()
  set.seed(4)
  n <- 300
  x1 <- rnorm(n)
  x2 <- rnorm(n)
  y <- as.integer(runif(n) < plogis(1.2 * x1 - 0.6 * x2))
  llm <- plogis(0.8 * x1)
  d <- data.frame(x1 = x1, x2 = x2, y = y, llm = llm)
  d2 <- data.frame(x1 = x1, x2 = x2, y = factor(y, labels = c("no", "yes")), prob_no = 1 - llm, prob_yes = llm)
  for (algorithm in c("mean", "logit_l1")) {
    binary <- ess(d, "y", "llm", algorithm = algorithm, grid = c(5, 20, 50, 100), loss = "log", seed = 3)
    multi <- ess(d2, "y", c("prob_no", "prob_yes"), algorithm = algorithm, grid = c(5, 20, 50, 100),
                 loss = "multiclass_log", seed = 3)
    for (col in ESS_COLS) {
      expect_equal(multi$table[[col]], binary$table[[col]], tolerance = 1e-9, info = paste(algorithm, col))
    }
    expect_identical(multi$lower_bound, binary$lower_bound)
    expect_identical(multi$table$params, binary$table$params)
    brier <- ess(d, "y", "llm", algorithm = algorithm, grid = c(5, 20, 50, 100), loss = "brier", seed = 3)
    multi_b <- ess(d2, "y", c("prob_no", "prob_yes"), algorithm = algorithm, grid = c(5, 20, 50, 100),
                   loss = "multiclass_brier", seed = 3)
    expect_equal(multi_b$table$algo_error, 2 * brier$table$algo_error, tolerance = 1e-9, info = algorithm)
    expect_equal(multi_b$table$z, brier$table$z, tolerance = 1e-7, info = algorithm)
    expect_identical(multi_b$lower_bound, brier$lower_bound)
  }
})

test_that("error_curve(loss = 'multiclass_log') gives the Python function's numbers; classes from the factor levels", {
  skip_if_no_llmsurrogate()
  m <- mc_data(200)
  base <- m$d[c("x1", "x2", "answer")]
  curve <- error_curve(base, "answer", algorithm = "logit_l1", grid = c(10, 40), loss = "multiclass_log", seed = 2)
  expect_s3_class(curve, c("llmsurrogate_error_curve", "llmsurrogate_result"))
  pd <- reticulate::import("pandas", convert = FALSE)
  py_ess <- reticulate::import("llmsurrogate.ess", convert = FALSE)
  frame <- pd$DataFrame(reticulate::r_to_py(list(x1 = as.list(base$x1), x2 = as.list(base$x2),
                                                 answer = as.list(as.character(base$answer)))))
  py <- py_ess$error_curve(frame, "answer", algorithm = "logit_l1", grid = list(10L, 40L), loss = "multiclass_log",
                           seed = 2L, progress = FALSE)
  for (col in c("error", "se", "ci_low", "ci_high")) {
    expect_equal(curve$table[[col]], py_col(py$table, col), tolerance = 1e-12, info = col)
  }
  expect_true(any(grepl("K = 3", curve$notes)))
  # unused factor levels are classes too (K = 4): the log loss is unchanged, the Brier score too
  # (the learner never gives the unseen class probability)
  four <- base
  four$answer <- factor(four$answer, levels = c("a", "b", "c", "d"))
  curve4 <- error_curve(four, "answer", algorithm = "mean", grid = c(10, 40), loss = "multiclass_log", seed = 2)
  curve3 <- error_curve(base, "answer", algorithm = "mean", grid = c(10, 40), loss = "multiclass_log", seed = 2)
  expect_equal(curve4$table$error, curve3$table$error, tolerance = 1e-12)
  expect_true(any(grepl("K = 4", curve4$notes)))
})

test_that("multiclass results print, summarise and tidy as other ESS results", {
  skip_if_no_llmsurrogate()
  m <- mc_data(120)
  res <- ess(m$d, "answer", c("prob_a", "prob_b", "prob_c"), algorithm = "mean", grid = c(5, 20),
             loss = "multiclass_brier")
  expect_s3_class(res, c("llmsurrogate_ess", "llmsurrogate_result"))
  out <- capture.output(print(res))
  expect_match(out[1], "multiclass_brier loss, n = 120")
  expect_true(any(grepl("Classes \\(K = 3", capture.output(summary(res)))))
  expect_identical(nrow(as.data.frame(res)), 2L)
  expect_identical(unname(confint(res)[1, ]), c(as.numeric(res$lower_bound), Inf))
  skip_if_not_installed("broom")
  expect_identical(broom::tidy(res)$estimate, res$table$diff)
  expect_identical(broom::glance(res)$lower_bound, res$lower_bound)
})

test_that("missing = 'drop' drops the rows with NA, as dropping them by hand", {
  skip_if_no_llmsurrogate()
  m <- mc_data(150)
  d <- m$d
  d$prob_b[7] <- NA
  d$answer[20] <- NA
  cols <- c("prob_a", "prob_b", "prob_c")
  expect_error(ess(d, "answer", cols, algorithm = "mean", grid = c(5, 20), loss = "multiclass_log"),
               "missing value \\(NA\\) at row 7, column `prob_b`", class = "llmsurrogate_error")
  d$prob_b[7] <- m$d$prob_b[7]
  expect_error(ess(d, "answer", cols, algorithm = "mean", grid = c(5, 20), loss = "multiclass_log"),
               "column `answer` has a missing value \\(NA\\) in row 20", class = "llmsurrogate_error")
  d$prob_b[7] <- NA
  dropped <- suppressWarnings(ess(d, "answer", cols, algorithm = "mean", grid = c(5, 20), loss = "multiclass_log",
                                  missing = "drop"))
  by_hand <- ess(m$d[-c(7, 20), ], "answer", cols, algorithm = "mean", grid = c(5, 20), loss = "multiclass_log")
  expect_equal(dropped$table[ESS_COLS], by_hand$table[ESS_COLS], tolerance = 1e-12)
})

test_that("bad K-class input stops with R's words: the argument, 1-based rows, column names, c(...)", {
  skip_if_no_llmsurrogate()
  m <- mc_data(60)
  d <- m$d
  cols <- c("prob_a", "prob_b", "prob_c")
  mc <- function(...) ess(..., algorithm = "mean", grid = c(5, 10), loss = "multiclass_log")
  # without a K-class loss a factor outcome with 3 levels still stops with the factor message
  expect_error(ess(d, "answer", "prob_a", algorithm = "mean", grid = 5, loss = "log"), "factor with 3 levels",
               class = "llmsurrogate_error")
  bad <- d
  bad$prob_a[4] <- 1.2
  expect_error(mc(bad, "answer", cols), "probabilities between 0 and 1; got 1.2 at row 4, column `prob_a`",
               class = "llmsurrogate_error")
  bad <- d
  bad$prob_a[9] <- bad$prob_a[9] + 0.1
  expect_error(mc(bad, "answer", cols), "each row must sum to 1 over the K = 3 classes .*row 9 sums to",
               class = "llmsurrogate_error")
  bad <- d
  bad$answer <- as.character(bad$answer)
  bad$answer[5] <- "d"
  expect_error(mc(bad, "answer", cols), paste0("outcome `answer` has the value \"d\" in row 5, which is not one of ",
                                               "the K = 3 classes c\\(\"a\", \"b\", \"c\"\\)"),
               class = "llmsurrogate_error")
  expect_error(mc(d, "answer", c("prob_a", "prob_b", "prob_c"), options = c("a", "b")),
               "argument `options` must give the class of each of the 3 columns", class = "llmsurrogate_error")
  expect_error(mc(d, "answer", c("prob_a", "prob_b", "prob_c"), options = c("a", "b", "a")),
               "\"a\" appears twice", class = "llmsurrogate_error")
  expect_error(mc(d, "answer", "prob_a"), "name the K >= 2 probability columns", class = "llmsurrogate_error")
  expect_error(mc(d, "answer", c("prob_a", "p_z")), "`data` has no column `p_z`", class = "llmsurrogate_error")
  expect_error(mc(d, "answer", d$prob_a), "not numeric", class = "llmsurrogate_error")
  expect_error(mc(d, "answer", cols, features = c("x1", "prob_b")), "`features` names the probability column `prob_b`",
               class = "llmsurrogate_error")
  expect_error(mc(d[1:30, ], "answer", m$llm), "has 60 rows but `data` has 30", class = "llmsurrogate_error")
  chr <- d
  chr$answer <- as.character(chr$answer)
  expect_error(mc(chr[c("x1", "answer")], "answer", unname(m$llm)), "columns without names.*give `options`",
               class = "llmsurrogate_error")
  expect_error(mc(d[c("x1", "answer")], "answer", m$llm[, 1:2]), "2 unnamed columns but outcome `answer` has 3 levels",
               class = "llmsurrogate_error")
  expect_error(ess(d, "x1", "prob_a", algorithm = "mean", grid = 5, options = c("a", "b")),
               "argument `options` names the K classes of loss = \"multiclass_log\"", class = "llmsurrogate_error")
  expect_error(error_curve(d["answer"][d$answer == "a", , drop = FALSE], "answer", algorithm = "mean", grid = 2,
                           loss = "multiclass_log", options = "a"), "K >= 2 classes", class = "llmsurrogate_error")
  expect_error(ess(d, "answer", cols, algorithm = "mean", grid = 5, loss = "log"),
               "names 3 columns of `data`.*loss = \"multiclass_log\"", class = "llmsurrogate_error")
  # a Python check, in R's words: the losses as c(...)
  expect_error(ess(d, "x1", "prob_a", algorithm = "mean", grid = 5, loss = "multiclass_foo"),
               "c\\(\"squared\", .*\"multiclass_brier\"\\)", class = "llmsurrogate_error")
})
