# Conditions as R users expect them (issue 10, defect 3): Python warnings as classed R warnings,
# 1-based rows and err[i, j] cells, R's type words, messages about the argument instead of
# scikit-learn's, and a one-line message when LLMSURROGATE_PYTHON changes after Python started.

na_frame <- function() {
  set.seed(5)
  d <- data.frame(y = rnorm(60), x = rnorm(60))
  d$llm <- d$x / 2
  d$y[c(4, 9)] <- NA
  d
}

test_that("Python warnings are R warnings of class llmsurrogate_warning", {
  skip_if_no_llmsurrogate()
  d <- na_frame()
  w <- tryCatch(ess(d, "y", "llm", algorithm = "mean", grid = c(1, 2), missing = "drop"),
                warning = function(w) w)
  expect_s3_class(w, c("llmsurrogate_warning", "warning", "condition"), exact = TRUE)
  expect_identical(w$python_class, "LLMSurrogateWarning")
  expect_match(conditionMessage(w), "removed 2 of 60 rows")
  expect_false(grepl("\\.py:[0-9]+", conditionMessage(w)))  # no Python file path
  expect_match(deparse(conditionCall(w))[1], "^ess\\(")
  # suppressWarnings() silences it, and nothing is printed instead
  printed <- capture.output(
    res <- suppressWarnings(ess(d, "y", "llm", algorithm = "mean", grid = c(1, 2), missing = "drop")),
    type = "message")
  expect_s3_class(res, "llmsurrogate_ess")
  expect_identical(printed, character(0))
  expect_warning(ess(d, "y", "llm", algorithm = "mean", grid = c(1, 2), missing = "drop"),
                 class = "llmsurrogate_warning")
})

test_that("rows are 1-based and matrix cells err[i, j] in messages", {
  skip_if_no_llmsurrogate()
  set.seed(5)
  d <- data.frame(y = rnorm(40), x = rnorm(40), llm = 0)
  d$x[7] <- Inf
  expect_error(ess(d, "y", "llm", algorithm = "mean", grid = c(1, 2)), "row 7\\b", class = "llmsurrogate_error")
  E <- matrix(c(NA, 3, 5, 1, NA, 6, 2, 4, NA), 3)
  E[3, 2] <- Inf
  expect_error(forecast_interval(E, 0.8), "err[3, 2] is Inf", fixed = TRUE, class = "llmsurrogate_error")
  long <- data.frame(train = c(2, 3, 1, 3, 1, 2), test = c(1, 1, 2, 2, 3, 3), val = c(3, 5, 1, NaN, 2, -Inf))
  expect_error(forecast_interval(long, 0.8), "error in row 6 is -Inf", fixed = TRUE, class = "llmsurrogate_error")
})

test_that("messages use R's words: TRUE/FALSE, NULL, Inf, numeric, character", {
  skip_if_no_llmsurrogate()
  r_message <- llmsurrogate:::.rbridge$r_message
  # a position is data of the message (llmsurrogate._positions), counted from 1 for R
  pos <- reticulate::import("llmsurrogate._positions", convert = FALSE)
  msg <- pos$located("argument `x` must be True or False; got str at ", pos$at(0L, "row", marked = TRUE))
  expect_identical(r_message(msg), "argument `x` must be TRUE or FALSE; got character at row 1")
  expect_identical(r_message("got float, not None; the value is inf or nan"),
                   "got numeric, not NULL; the value is Inf or NaN")
  # end to end: a Python check that R does not repeat
  e <- tryCatch(ess(data.frame(y = rnorm(20), llm = 0, x = rnorm(20)), "y", "llm", algorithm = "mean",
                    grid = c(1, 2), regime = "other"), error = function(e) e)
  expect_s3_class(e, "llmsurrogate_error")
  expect_false(grepl("\\b(True|False|None|str|NoneType)\\b", conditionMessage(e)))
})

test_that("a classifier on a continuous outcome is a message about the argument", {
  skip_if_no_llmsurrogate()
  set.seed(2)
  d <- data.frame(y = rnorm(60), x = rnorm(60))
  d$llm <- d$x
  # before: scikit-learn's "Unknown label type: continuous" from inside a block fit
  expect_error(ess(d, "y", "llm", algorithm = "logit_l1", grid = c(2, 5)),
               "algorithm 'logit_l1' is a classifier and needs a 0/1 outcome", class = "llmsurrogate_error")
  expect_error(error_curve(d, "y", algorithm = "logit_l1", grid = c(2, 5)), "needs a 0/1 outcome",
               class = "llmsurrogate_error")
})

test_that("LLMSURROGATE_PYTHON set after Python started asks for a restart, in one message", {
  skip_if_no_llmsurrogate()
  llmsurrogate_version()  # Python is running
  old <- Sys.getenv("LLMSURROGATE_PYTHON", unset = NA)
  on.exit(if (is.na(old)) Sys.unsetenv("LLMSURROGATE_PYTHON") else Sys.setenv(LLMSURROGATE_PYTHON = old))
  Sys.setenv(LLMSURROGATE_PYTHON = file.path(tempdir(), "another", "python"))
  e <- tryCatch(upper_quantile(1:3, 0.5), error = function(e) e)
  expect_s3_class(e, "llmsurrogate_error")
  expect_match(conditionMessage(e), "restart R")
  expect_false(grepl("libpython|pythonhome|numpy:|python versions found", conditionMessage(e)))
  expect_length(strsplit(conditionMessage(e), "\n")[[1]], 1L)
  # set back to the interpreter in use: calls work again
  if (is.na(old)) Sys.unsetenv("LLMSURROGATE_PYTHON") else Sys.setenv(LLMSURROGATE_PYTHON = old)
  expect_equal(upper_quantile(1:3, 0.5), 2)
})

test_that("cate_ess(missing = \"drop\") drops a missing outcome or treatment before Y* (one classed warning)", {
  skip_if_no_llmsurrogate()
  set.seed(3)
  n <- 80
  d <- data.frame(y = rnorm(n), t = rbinom(n, 1, 0.5), x = rnorm(n), tau = 1)
  d$y[4] <- NA
  d$t[6] <- NA
  # before: Python computed the transformed outcome on every row and failed on the NA
  expect_warning(res <- cate_ess(d, "y", "t", "tau", features = "x", algorithm = "mean", grid = c(1, 2),
                                 missing = "drop"),
                 "removed 2 of 80 rows with a missing or infinite outcome, treatment", class = "llmsurrogate_warning")
  expect_identical(res$n, 78L)
  expect_error(cate_ess(d, "y", "t", "tau", features = "x", algorithm = "mean", grid = c(1, 2)),
               class = "llmsurrogate_error")
})

test_that("LLMSURROGATE_PYTHON set after library() but before Python starts is honoured", {
  skip_if_no_llmsurrogate()
  python <- reticulate::py_config()$python
  code <- sprintf(paste("library(llmsurrogate); Sys.setenv(LLMSURROGATE_PYTHON = %s);",
                        "cat(upper_quantile(c(1, 2, 3), 0.5), reticulate::py_config()$python == %s)"),
                  deparse(python), deparse(python))
  rscript <- file.path(R.home("bin"), "Rscript")
  out <- system2(rscript, c("--vanilla", "-e", shQuote(code)), stdout = TRUE, stderr = TRUE,
                 env = c(paste0("R_LIBS=", paste(.libPaths(), collapse = .Platform$path.sep)),
                         "LLMSURROGATE_PYTHON=", "RETICULATE_PYTHON="))
  expect_identical(utils::tail(out, 1), "2 TRUE")
})

# Issue 26, item 4: R users see R words, end to end.
test_that("choices, intervals and types in messages are R's: c(\"lasso\", ...), between 0 and 1, character", {
  skip_if_no_llmsurrogate()
  set.seed(1)
  d <- data.frame(y = rnorm(60))
  d$llm <- 0.2
  e <- tryCatch(ess(d, "y", "llm", algorithm = "foo"), error = function(e) e)
  expect_s3_class(e, "llmsurrogate_error")
  expect_match(conditionMessage(e), 'one of c("lasso", "logit_l1", "rf", "mean", "majority")', fixed = TRUE)
  expect_match(conditionMessage(e), 'got "foo"', fixed = TRUE)
  expect_false(grepl("[", conditionMessage(e), fixed = TRUE))
  e <- tryCatch(error_curve(d, "y", "llm", algorithm = "mean", level = 1.5), error = function(e) e)
  expect_match(conditionMessage(e), "must lie between 0.5 and 1; got 1.5", fixed = TRUE)
  e <- tryCatch(evaluate_risk_scores(c(0, 1, 1), c(0.1, 0.2, 0.3), threshold = 2), error = function(e) e)
  expect_match(conditionMessage(e), "between 0 and 1; got 2$")
  expect_error(upper_quantile(c(1, 2), 2), "must lie between 0 and 1; got 2 at position 1", fixed = TRUE)
  # pandas' dtype of a character column, from Python's check of a regressor
  set.seed(2)
  n <- 200
  dd <- data.frame(firm = sample(1:10, n, TRUE), date = sample(1:10, n, TRUE),
                   llm = sample(c("a", "b"), n, TRUE), lap = runif(n), ret = rnorm(n))
  e <- tryCatch(lookahead_test(dd, "ret", "llm", "lap"), error = function(e) e)
  expect_s3_class(e, "llmsurrogate_error")
  expect_false(grepl("dtype|\\bstr\\b|object", conditionMessage(e)))
  expect_match(conditionMessage(e), "character")
  r_message <- llmsurrogate:::.rbridge$r_message
  expect_identical(r_message("argument `p` must be in (0.0, 1.0]; got 0.0"),
                   "argument `p` must be greater than 0 and at most 1; got 0")
  expect_identical(r_message("argument `k` must lie in (0, inf); got -1.5"),
                   "argument `k` must be strictly between 0 and Inf; got -1.5")
})

test_that("numpy's floating-point warnings reach R once, in R words", {
  skip_if_no_llmsurrogate()
  set.seed(3)
  n <- 120
  d <- data.frame(firm = sample(1:10, n, TRUE), llm = rnorm(n), ret = 1)
  ws <- character(0)
  fit <- withCallingHandlers(feols(ret ~ llm | firm, d), warning = function(w) {
    expect_s3_class(w, "llmsurrogate_warning")
    ws <<- c(ws, conditionMessage(w))
    invokeRestart("muffleWarning")
  })
  expect_length(ws, 1L)  # before: twice, as numpy wrote it
  expect_false(grepl("encountered in", ws))
  expect_match(ws, "gave NaN")
  expect_match(ws, "constant")
})

test_that("a bootstrap's summary prints a missing reference as NA, and a drawn seed as a whole number", {
  skip_if_no_llmsurrogate()
  set.seed(4)
  n <- 300
  d <- data.frame(firm = sample(1:20, n, TRUE), date = sample(1:10, n, TRUE), llm = sample(c(-1, 0, 1), n, TRUE),
                  lap = runif(n), ret = rnorm(n))
  b <- lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 20)
  text <- capture.output(print(summary(b)))
  expect_false(any(grepl("NaN", text)))
  expect_true(is.na(as.data.frame(b)$reference))
  expect_type(b$seed, "integer")  # before: a double such as 6.004461e+14
  expect_false(grepl("e+", format(b$seed), fixed = TRUE))
  again <- lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 20, seed = as.numeric(format(b$seed)))
  expect_identical(again$draws, b$draws)
})
