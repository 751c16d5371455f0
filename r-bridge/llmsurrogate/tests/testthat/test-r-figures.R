# Issue 35, figures: what the R plot methods draw, read from the device's display list
# (grDevices::recordPlot()): the plot windows (axis ranges, log axes), titles and axis labels,
# text (legends), points and arrows.
# * plot(ess()) drew only the two marginal bands, which overlap where the paired test rejects;
#   it now draws the paired difference and its one-sided bound (the test's own numbers).
# * plot(lookahead_test()) spanned mean +/- 2 SD of LAP, below 0 for LAP ~ U(0, 1); it now spans
#   the LAP values of the rows used.
# * plot() of the forecast intervals (the transfer figure, three panels) had no x-axis label, the
#   logarithmic one included.
# * plot(compare_answers()) drew the total variation distance only; it now draws every distance
#   (W1 for ordered options) and the mean of the groups.

# The calls a plot made, in order: list(name = "C_title", args = list(...)) each.
.drawn <- function(expr, width = 9, height = 6) {
  f <- tempfile(fileext = ".pdf")
  grDevices::pdf(f, width = width, height = height)
  grDevices::dev.control("enable")
  on.exit({
    grDevices::dev.off()
    unlink(f)
  })
  force(expr)
  lapply(grDevices::recordPlot()[[1]], function(e) {
    fn <- e[[2]][[1]]
    list(name = if (is.list(fn) && !is.null(fn$name)) fn$name else "", args = e[[2]][-1])
  })
}
.calls <- function(drawn, name) Filter(function(d) identical(d$name, name), drawn)
# plot.window(): xlim, ylim, log
.windows <- function(drawn) lapply(.calls(drawn, "C_plot_window"), function(d) {
  list(xlim = d$args[[1]], ylim = d$args[[2]], log = d$args[[3]])
})
# title(): main, sub, xlab, ylab as text
.titles <- function(drawn) lapply(.calls(drawn, "C_title"), function(d) {
  txt <- function(a) if (is.null(a)) "" else paste(as.character(a), collapse = " ")
  list(main = txt(d$args[[1]]), xlab = txt(d$args[[3]]), ylab = txt(d$args[[4]]))
})
# every string drawn: text() (legends), mtext(), axis labels and titles
.strings <- function(drawn) {
  s <- c(unlist(lapply(.calls(drawn, "C_text"), function(d) as.character(d$args[[2]]))),
         unlist(lapply(.calls(drawn, "C_mtext"), function(d) as.character(d$args[[1]]))),
         unlist(lapply(.calls(drawn, "C_axis"), function(d) if (is.null(d$args[[3]]) || is.logical(d$args[[3]])) NULL
                                                               else as.character(d$args[[3]]))),
         unlist(lapply(.titles(drawn), unlist)))
  s[nzchar(s)]
}
# the y (or x) coordinates of everything drawn as points or lines
.xy <- function(drawn) lapply(.calls(drawn, "C_plotXY"), function(d) d$args[[1]])

test_that("plot(ess()) draws the paired difference that the test uses, with its one-sided bound", {
  skip_if_no_llmsurrogate()
  set.seed(1)
  d <- data.frame(x = rnorm(400))
  d$y <- d$x + rnorm(400)
  d$llm <- 0.8 * d$x
  res <- ess(d, "y", "llm", algorithm = "lasso", grid = c(2, 5, 10, 20, 50, 100), n_jobs = 1)
  tab <- res$table
  drawn <- .drawn(plot(res))
  # the paired difference: the algorithm's error minus the rule's, on the same rows
  expect_equal(tab$diff, tab$algo_error - tab$llm_error, tolerance = 1e-10)
  drawn_y <- lapply(.xy(drawn), `[[`, "y")
  expect_true(any(vapply(drawn_y, function(y) length(y) == nrow(tab) && isTRUE(all.equal(y, tab$diff)),
                         logical(1))))
  # the one-sided (1 - alpha) lower bound, diff - qnorm(1 - alpha) * se, drawn from each difference
  expect_equal(tab$lower_diff, tab$diff - stats::qnorm(1 - res$alpha) * tab$diff_se, tolerance = 1e-10)
  arrows <- .calls(drawn, "C_arrows")
  ends <- unlist(lapply(arrows, function(a) a$args[[4]]))
  ok <- tab$diff > tab$lower_diff
  expect_true(all(vapply(tab$lower_diff[ok], function(v) any(abs(ends - v) < 1e-10), logical(1))))
  # rejected where the bound is above 0, as the table says
  expect_identical(tab$reject, tab$lower_diff > 0)
  strings <- .strings(drawn)
  expect_true(any(grepl("paired difference", strings, fixed = TRUE)))
  expect_true(any(grepl("lower bound", strings, fixed = TRUE)))
  expect_true(any(grepl("each error alone", strings, fixed = TRUE)))  # the bands say what they are
  expect_length(.windows(drawn), 2L)
})

test_that("plot(lookahead_test()) spans the LAP values of the rows used, never below them", {
  skip_if_no_llmsurrogate()
  set.seed(1)
  n <- 1500
  d <- data.frame(firm = sample(1:60, n, TRUE), date = sample(1:40, n, TRUE),
                  llm = sample(c(-1, 0, 1), n, TRUE), lap = runif(n))
  d$ret <- 0.2 * d$llm + 0.5 * d$llm * d$lap + rnorm(n)
  d$lap[1] <- 3          # a LAP on a row that is dropped (its outcome is missing)
  d$ret[1] <- NA
  expect_warning(res <- lookahead_test(d, "ret", "llm", "lap"), "dropped|missing")
  used <- d$lap[!is.na(d$ret)]
  expect_equal(c(res$lap_min, res$lap_max), range(used))
  drawn <- .drawn(plot(res))
  win <- .windows(drawn)[[1]]
  expect_equal(win$xlim, range(used))     # mean +/- 2 SD gave about c(-0.08, 1.08)
  expect_gte(win$xlim[1], 0)
  xs <- unlist(lapply(.xy(drawn), `[[`, "x"))
  expect_true(all(xs >= min(used) - 1e-12 & xs <= max(used) + 1e-12))
  # the curve drawn is coef(llm) + coef(llm:lap) * LAP
  b <- coef(res$regression)
  line <- Filter(function(xy) length(xy$x) == 101L, .xy(drawn))[[1]]
  expect_equal(line$y, b[["llm"]] + b[["llm:lap"]] * line$x, tolerance = 1e-10)
  expect_true(any(grepl("range in the sample", .strings(drawn), fixed = TRUE)))
})

test_that("the forecast-interval figure labels every x axis, the logarithmic one as such", {
  skip_if_no_llmsurrogate()
  res <- llmsurrogate_demo()
  drawn <- .drawn(plot(res), width = 11, height = 4)
  wins <- .windows(drawn)
  titles <- .titles(drawn)
  metrics <- unique(res$table$metric)
  expect_length(wins, length(metrics))
  logs <- vapply(wins, function(w) identical(w$log, "x"), logical(1))
  expect_identical(logs, metrics == "raw transfer error")
  xlabs <- vapply(titles, `[[`, "", "xlab")
  xlabs <- xlabs[nzchar(xlabs)]
  expect_length(xlabs, length(metrics))
  expect_identical(grepl("log scale", xlabs, fixed = TRUE), logs)
  for (m in metrics) expect_true(any(startsWith(xlabs, m)))
})

test_that("plot(compare_answers()) draws TV, W1 and the mean of the groups, with every interval", {
  skip_if_no_llmsurrogate()
  set.seed(2)
  p <- matrix(rexp(1200), 400)
  p <- p / rowSums(p)
  colnames(p) <- c("never", "sometimes", "often")
  answer <- apply(p, 1, function(pr) sample(colnames(p), 1, prob = pr))
  age <- rep(c("18-39", "40+"), 200)
  cmp <- compare_answers(answer, p, groups = age, ordered = TRUE, n_boot = 50)
  tab <- cmp$table
  drawn <- .drawn(plot(cmp))
  xlabs <- vapply(.titles(drawn), `[[`, "", "xlab")
  expect_true(any(grepl("total variation", xlabs)))
  expect_true(any(grepl("Wasserstein-1", xlabs)))
  strings <- .strings(drawn)
  expect_true("mean of groups" %in% strings)
  expect_true(all(c("18-39", "40+", "all rows") %in% strings))
  # every estimate of the table is a point drawn: 2 groups, their mean, pooled; per distance
  xs <- unlist(lapply(.xy(drawn), `[[`, "x"))
  for (v in tab$value) expect_true(any(abs(xs - v) < 1e-12))
  expect_length(.windows(drawn), 2L)
  # unordered options have TV only; asking for W1 says why
  cmp_tv <- compare_answers(answer, p, groups = age, n_boot = 20)
  expect_length(.windows(.drawn(plot(cmp_tv))), 1L)
  expect_error(plot(cmp_tv, distance = "w1"), "ordered = TRUE", class = "llmsurrogate_error")
  expect_error(plot(cmp, distance = 1), "`distance`", class = "llmsurrogate_error")
  expect_length(.windows(.drawn(plot(cmp, distance = "w1"))), 1L)
})
