# An ordered factor `y` gives the scale of the options (issue 35 §2): the ranked probability score
# and the Wasserstein-1 distance follow levels(y), whatever the order of the probability columns
# (alphabetical after tidyr::pivot_wider(): high, low, mid). References: RPS and W1 written here
# from their definitions (docs/methods/survey.md §2-§3), on the columns put in the scale's order
# by hand.

ord_scale <- c("low", "mid", "high")

# four answers and the LLM's probabilities, columns in alphabetical order (as after a pivot)
ord_probs <- function() {
  data.frame(high = c(.1, .3, .7, .3), low = c(.6, .2, .1, .3), mid = c(.3, .5, .2, .4))
}
ord_y <- function() factor(c("low", "mid", "high", "low"), levels = ord_scale, ordered = TRUE)

# RPS (Epstein 1969), normalised by K - 1: the mean over rows of sum_{k < K} (F_k - O_k)^2 / (K - 1),
# F and O the cumulative forecast and outcome over the options in the scale's order.
rps_by_hand <- function(p, y) {
  p <- as.matrix(p[, levels(y)])
  k <- ncol(p)
  o <- outer(as.integer(y), seq_len(k), `<=`) * 1
  f <- t(apply(p, 1, cumsum))
  mean(rowSums((f[, -k, drop = FALSE] - o[, -k, drop = FALSE])^2) / (k - 1))
}

# W1 between the human answers' shares and the LLM's mean probabilities over the scale at positions
# `values`: sum_{k < K} |H_k - Q_k| (v_{k+1} - v_k), H and Q cumulative.
w1_by_hand <- function(p, y, values = seq_len(nlevels(y))) {
  p <- as.matrix(p[, levels(y)])
  h <- as.numeric(table(y)) / length(y)
  q <- colMeans(p)
  k <- length(h)
  sum(abs(cumsum(h)[-k] - cumsum(q)[-k]) * diff(values))
}

test_that("RPS of an ordered factor y follows levels(y), not the columns' alphabetical order", {
  skip_if_no_llmsurrogate()
  p <- ord_probs()
  y <- ord_y()
  ref <- rps_by_hand(p, y)
  expect_equal(ref, 0.1225)  # (0.085 + 0.065 + 0.05 + 0.29) / 4, by hand on paper
  ev <- evaluate_risk_scores(y, p, n_boot = 0)
  rps <- ev$metrics$value[ev$metrics$metric == "rps"]
  expect_equal(rps, ref, tolerance = 1e-12)
  # the same columns as a matrix, with risk_scores()' prob_ names, and in the scale's order: one answer
  pm <- as.matrix(p)
  colnames(pm) <- paste0("prob_", colnames(pm))
  for (s in list(pm, p[, ord_scale], unname(as.matrix(p)))) {
    opts <- if (is.null(colnames(s))) names(p) else NULL
    e <- evaluate_risk_scores(y, s, options = opts, n_boot = 0)
    expect_equal(e$metrics$value[e$metrics$metric == "rps"], ref, tolerance = 1e-12)
  }
  # log loss and Brier do not depend on the order: unchanged
  ll <- ev$metrics$value[ev$metrics$metric == "log_loss"]
  expect_equal(ll, -mean(log(as.matrix(p)[cbind(1:4, match(as.character(y), names(p)))])), tolerance = 1e-12)
})

test_that("W1 of compare_answers() with an ordered factor y follows levels(y) and `values` in that order", {
  skip_if_no_llmsurrogate()
  p <- ord_probs()
  y <- ord_y()
  cmp <- compare_answers(y, p, n_boot = 0)
  tab <- cmp$table
  w1 <- tab$value[tab$scope == "pooled" & tab$distance == "w1"]
  expect_equal(w1_by_hand(p, y), 0.3)  # |0.5 - 0.3| + |0.75 - 0.65|, by hand on paper
  expect_equal(w1, w1_by_hand(p, y), tolerance = 1e-12)
  # positions 1, 2, 5 for low, mid, high (the scale's order)
  cmp5 <- compare_answers(y, p, values = c(1, 2, 5), n_boot = 0)
  w15 <- cmp5$table$value[cmp5$table$scope == "pooled" & cmp5$table$distance == "w1"]
  expect_equal(w15, w1_by_hand(p, y, c(1, 2, 5)), tolerance = 1e-12)
  # the options are reported in the scale's order
  expect_identical(as.character(unlist(cmp$meta$options)), ord_scale)
})

test_that("columns that cannot be matched to the levels of an ordered y are an error, not a guess", {
  skip_if_no_llmsurrogate()
  p <- ord_probs()
  y4 <- factor(as.character(ord_y()), levels = c("low", "mid", "high", "very high"), ordered = TRUE)
  expect_error(evaluate_risk_scores(y4, p, n_boot = 0),
               'level "very high" has no column', fixed = TRUE, class = "llmsurrogate_error")
  expect_error(compare_answers(y4, p, n_boot = 0), "droplevels(y)", fixed = TRUE, class = "llmsurrogate_error")
  p2 <- p
  names(p2)[2] <- "lo"
  expect_error(compare_answers(ord_y(), p2, n_boot = 0), 'level "low" has no column', fixed = TRUE,
               class = "llmsurrogate_error")
  p3 <- cbind(p * 0.9, other = 0.1)
  expect_error(evaluate_risk_scores(ord_y(), p3, n_boot = 0), 'column "other" is not a level of `y`', fixed = TRUE,
               class = "llmsurrogate_error")
  # ordered = FALSE: no scale, so the columns' names need not be the levels' order (TV only)
  tv <- compare_answers(ord_y(), p, ordered = FALSE, n_boot = 0)$table
  expect_identical(unique(tv$distance), "tv")
})
