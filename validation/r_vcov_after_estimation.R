# Standard errors chosen after estimation in R (issue 35 §1): the standard error of `x` from
# summary(fit, vcov = ...) against feols(..., vcov = ...) and against sandwich and estimatr on lm()
# with the fixed effect as factor() dummies, for one simulated panel (n = 120) and two models, one
# without and one with a fixed effect.
#
# `factor` is the stated ratio of llmsurrogate's (fixest's) variance to sandwich's (?ssc,
# ?feols): 1 where the conventions coincide, n / (n - K) for pyfixest's HC2/HC3 (K: the
# coefficients of lm(), fixed-effect dummies included), and for two-way clusters the ratio of
# fixest's G_min / (G_min - 1) on each term to vcovCL()'s own G / (G - 1) per term (computed here
# from vcovCL(type = "HC0", cadjust = FALSE) of each term). `rel_diff` compares summary() with
# sandwich's standard error times sqrt(factor).
#
# Run from the repository root (needs llmsurrogate's R package, sandwich and estimatr):
#   Rscript validation/r_vcov_after_estimation.R
# Its output is kept in validation/results/r_vcov_after_estimation.txt.

options(width = 200)
suppressPackageStartupMessages({
  library(llmsurrogate)
  library(sandwich)
  library(estimatr)
})

set.seed(37)
n <- 120
d <- data.frame(firm = sample(sprintf("f%d", 1:8), n, TRUE), yr = sample(2001:2006, n, TRUE),
                st = sample(1:12, n, TRUE))
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

se_x <- function(v) sqrt(v["x", "x"])
sandwich_ssc <- ssc(adj = FALSE, cluster.adj = FALSE)

rows <- list()
add <- function(model, vcov, ours, refit, sandwich_v, estimatr_v, factor) {
  ref <- if (is.na(sandwich_v)) NA_real_ else sandwich_v * sqrt(factor)
  rows[[length(rows) + 1L]] <<- data.frame(
    model = model, vcov = vcov, summary = ours, feols = refit, sandwich = sandwich_v, estimatr = estimatr_v,
    factor = factor, sandwich_x_factor = ref, rel_diff = if (is.na(ours) || is.na(ref)) NA_real_ else
      abs(ours - ref) / ref, stringsAsFactors = FALSE)
}

for (model in c("y ~ x + z", "y ~ x + z | firm")) {
  fml <- stats::as.formula(model)
  has_fe <- grepl("|", model, fixed = TRUE)
  lm_fml <- if (has_fe) y ~ x + z + factor(firm) else y ~ x + z
  fit <- feols(fml, d)  # iid: every other variance is chosen after estimation
  ref <- lm(lm_fml, d)
  K <- length(coef(ref))
  ours <- function(...) summary(fit, ...)$coefficients["x", "Std. Error"]
  refit <- function(...) summary(feols(fml, d, ...))$coefficients["x", "Std. Error"]
  rob <- function(...) unname(estimatr::lm_robust(lm_fml, d, ...)$std.error["x"])
  add(model, "iid", ours(vcov = "iid"), refit(vcov = "iid"), se_x(vcov(ref)), rob(se_type = "classical"), 1)
  add(model, "hetero", ours(vcov = "hetero"), refit(vcov = "hetero"), se_x(vcovHC(ref, type = "HC1")),
      rob(se_type = "HC1"), 1)
  for (type in c("HC2", "HC3")) {
    if (has_fe) {
      msg <- tryCatch({ours(vcov = type); "no error"}, error = function(e) conditionMessage(e))
      rows[[length(rows) + 1L]] <- data.frame(model = model, vcov = type, summary = NA, feols = NA,
                                              sandwich = se_x(vcovHC(ref, type = type)), estimatr = rob(se_type = type),
                                              factor = NA, sandwich_x_factor = NA, rel_diff = NA,
                                              stringsAsFactors = FALSE)
      cat(sprintf("%s, vcov = \"%s\": %s\n", model, type, msg))
      next
    }
    add(model, type, ours(vcov = type), refit(vcov = type), se_x(vcovHC(ref, type = type)), rob(se_type = type),
        n / (n - K))
    add(model, paste(type, "+ ssc(adj=F, cluster.adj=F)"), ours(vcov = type, ssc = sandwich_ssc),
        refit(vcov = type, ssc = sandwich_ssc), se_x(vcovHC(ref, type = type)), rob(se_type = type), 1)
  }
  add(model, "cluster = ~st", ours(cluster = ~st), refit(cluster = ~st), se_x(vcovCL(ref, cluster = ~st, type = "HC1")),
      rob(clusters = st, se_type = "stata"), 1)
  add(model, "~st + ssc(adj=F, cluster.adj=F)", ours(cluster = ~st, ssc = sandwich_ssc),
      refit(cluster = ~st, ssc = sandwich_ssc), se_x(vcovCL(ref, cluster = ~st, type = "HC0", cadjust = FALSE)),
      rob(clusters = st, se_type = "CR0"), 1)
  if (has_fe) {  # clustered by the fixed effect: fixest counts its L levels as 1 in K
    L <- length(unique(d$firm))
    add(model, "cluster (by firm, nested)", ours(vcov = "cluster"), refit(vcov = "cluster"),
        se_x(vcovCL(ref, cluster = ~firm, type = "HC1")), rob(clusters = firm, se_type = "stata"),
        (n - K) / (n - K + L - 1))
  }
  # two-way: fixest's G_min / (G_min - 1) on V_st + V_yr - V_st^yr against vcovCL()'s per-term G / (G - 1)
  v0 <- function(g) vcovCL(ref, cluster = g, type = "HC0", cadjust = FALSE)["x", "x"]
  g <- c(length(unique(d$st)), length(unique(d$yr)), length(unique(interaction(d$st, d$yr, drop = TRUE))))
  terms <- c(v0(d$st), v0(d$yr), -v0(interaction(d$st, d$yr, drop = TRUE)))
  fixest_two <- min(g[1:2]) / (min(g[1:2]) - 1) * sum(terms)
  sandwich_two <- sum(g / (g - 1) * terms)
  vcl <- se_x(vcovCL(ref, cluster = ~st + yr, type = "HC1", multi0 = FALSE))
  add(model, "cluster = ~st + yr", ours(cluster = ~st + yr), refit(cluster = ~st + yr), vcl, NA_real_,
      fixest_two / sandwich_two)
}

tab <- do.call(rbind, rows)
num <- vapply(tab, is.numeric, logical(1))
tab[num] <- lapply(tab[num], function(v) signif(v, 7))
cat(sprintf("n = %d; coefficient x; K = coefficients of lm() with the fixed effect as dummies\n", n))
print(tab, row.names = FALSE, right = FALSE)
cat(sprintf("\nlargest |summary() - feols()| / feols(): %.2g\n",
            max(abs(tab$summary - tab$feols) / tab$feols, na.rm = TRUE)))
cat(sprintf("largest rel_diff against sandwich x factor: %.2g\n", max(tab$rel_diff, na.rm = TRUE)))
