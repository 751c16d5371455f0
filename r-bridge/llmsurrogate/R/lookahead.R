# Lookahead bias in LLM forecasts (llmsurrogate.lookahead; docs/methods/lookahead.md): LAP of
# texts, the fixed-effects test and its pairs bootstrap.

# The columns of `data` the lookahead functions use, checked (each error names its argument),
# as the bridge's frame.
.lookahead_frame <- function(data, outcome, signal, lap, fe, controls, extra, call) {
  if (!is.data.frame(data)) {
    .abort(sprintf("argument `data` must be a data frame, not %s", .r_type(data)), call)
  }
  for (arg in c("outcome", "signal", "lap")) {
    v <- get(arg, inherits = FALSE)
    .check_string(v, arg, call)
    .check_columns(v, data, arg, call)
  }
  if (is.character(fe) && !length(fe)) {
    .abort(paste0("argument `fe` is empty: the lookahead test absorbs at least one fixed effect (the paper's ",
                  "are c(\"firm\", \"date\")); for a regression without fixed effects use ",
                  "feols(outcome ~ signal * lap, data)"), call)
  }
  if (!is.character(fe) || anyNA(fe) || !all(nzchar(fe))) {
    .abort("argument `fe` must be a character vector of column names, e.g. c(\"firm\", \"date\")", call)
  }
  .check_columns(fe, data, "fe", call)
  if (!is.character(controls) || anyNA(controls)) {
    .abort("argument `controls` must be a character vector of terms, e.g. c(\"small\", \"llm:small\")", call)
  }
  control_cols <- unique(unlist(strsplit(controls, "[:*]")))
  control_cols <- trimws(control_cols[nzchar(trimws(control_cols))])
  .check_columns(control_cols, data, "controls", call)
  # the regression's variables are numbers: a factor or text column said so in R's words (it crosses to
  # Python as its labels, which Python would call "character")
  roles <- c(stats::setNames(c("outcome", "signal", "lap"), c(outcome, signal, lap)),
             stats::setNames(rep("controls", length(control_cols)), control_cols))
  for (col in unique(names(roles))) {
    x <- data[[col]]
    if (!(is.numeric(x) || is.logical(x)) || is.factor(x)) {
      .abort(sprintf(paste("argument `data`: column `%s` (argument `%s`) is %s; the lookahead regression needs",
                           "numbers. Convert it first (as.numeric(as.character(x)) for a factor whose labels are",
                           "numbers)"), col, roles[[col]], .r_type(x)), call)
    }
  }
  for (arg in names(extra)) {
    .check_columns(extra[[arg]], data, arg, call)
  }
  used <- unique(c(outcome, signal, lap, fe, control_cols, unlist(extra)))
  .warn_infinite(data[used], call)
  .frame_arg(data[used], call = call)
}

# Inf and -Inf in the columns of a fit: dropped as missing values are, but named as what they are
# (the fit's own warning counts them among the missing values).
.warn_infinite <- function(data, call) {
  for (name in names(data)) {
    x <- data[[name]]
    if (is.double(x) && !inherits(x, c("Date", "POSIXct")) && any(bad <- is.infinite(x))) {
      rows <- which(bad)
      .warn(sprintf(paste0("column `%s` has %d infinite value(s) (%s at row %d); rows with Inf or -Inf are ",
                           "dropped, as rows with NA are"), name, length(rows), format(x[rows[1]]), rows[1]),
            call = call)
    }
  }
}

#' Lookahead-bias test
#'
#' The test of Gao, Jiang and Yan (2026): regress `outcome` on `signal` (the LLM forecast),
#' `lap` (its Lookahead Propensity, see [lap()]) and their product with absorbed fixed effects
#' `fe` and standard errors clustered by `cluster`. A **positive** interaction (the forecast is
#' more accurate on texts the model finds familiar) is the signature of lookahead bias; the test
#' reports the one-sided p-value of H0: delta <= 0 against delta > 0 (`p_greater`), the other
#' side and the two-sided one, from the t distribution with G - 1 degrees of freedom for
#' clustered errors (docs/methods/lookahead.md §2.2-§2.4).
#'
#' Conventions of the paper: plain products (no centring), no singleton removal, the overall R2
#' including fixed effects. Rows with a missing value (`NA`) in a column used are dropped, with
#' the count in `n_dropped` and a warning. Specifications (§2.4): Table III adds
#' `controls = c("small", "llm:small", "lap:small", "llm:lap:small")`; Table V is
#' `standardize = TRUE`; Table VI `fe = c("firm", "quarter"), cluster = "firm"`.
#'
#' @param data A data frame (or tibble) with one row per text; fixed-effect and cluster columns
#'   may be factors, characters, numbers or Dates.
#' @param outcome,signal,lap Names of the outcome, signal and LAP columns.
#' @param fe Names of the fixed-effect columns.
#' @param cluster Name of the cluster column, or `NULL` for heteroskedasticity-robust (HC1)
#'   errors.
#' @param controls Further terms of the regression (column names, `:` for products).
#' @param standardize Z-score the outcome, signal and LAP within the sample before the product.
#' @param n_jobs Threads (`NULL`: all cores or `LLMSURROGATE_NUM_THREADS`).
#' @return An `"llmsurrogate_lookahead_test"`: a list with `estimate`, `std_error`, `statistic`,
#'   `df`, `p_greater`, `p_less`, `p_two_sided`, `nobs`, `n_dropped`, `magnitudes` (§2.3),
#'   `lap_mean`, `lap_sd`, `lap_min`, `lap_max` (LAP in the rows used, standardised where asked),
#'   `table` (a one-row data frame), and the two regressions `regression` and `baseline` (fits
#'   as from [feols()]). Methods: `print()`, `summary()` (the full report with both regressions),
#'   `coef()`, `confint()`, `as.data.frame()`, `tidy()`, `plot()` (the marginal effect of the
#'   signal across LAP values) and [etable()]. `tidy()` follows broom: `p.value` is the
#'   **two-sided** p-value (as in `tidy(lm())`); the test's one-sided p-value of H1: delta > 0 is
#'   `p.value.greater` (and `p.value.less` the other side), named by the alternative as in
#'   `t.test(alternative = "greater")`.
#' @seealso [lookahead_bootstrap()], [lap()], [feols()]
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' n <- 2000
#' d <- data.frame(firm = factor(sample(1:100, n, TRUE)), date = sample(1:60, n, TRUE),
#'                 llm = sample(c(-1, 0, 1), n, TRUE), lap = runif(n))
#' d$ret <- 0.2 * d$llm + 0.5 * d$llm * d$lap + rnorm(n)
#' res <- lookahead_test(d, "ret", "llm", "lap")
#' res
#' etable(res)
#' plot(res)  # the signal's marginal effect across the observed LAP values
#' @export
lookahead_test <- function(data, outcome, signal, lap, fe = c("firm", "date"), cluster = "date",
                           controls = character(), standardize = FALSE, n_jobs = NULL) {
  call <- sys.call()
  if (!is.null(cluster)) .check_string(cluster, "cluster", call)
  standardize <- .check_flag(standardize, "standardize", call)
  n_jobs <- .check_n_jobs(n_jobs, call)
  cols <- .lookahead_frame(data, outcome, signal, lap, fe, controls, list(cluster = cluster), call)
  out <- .call_in(call, "lookahead.lookahead_test", cols, outcome, signal, lap, fe = as.list(fe),
                  cluster = cluster, controls = as.list(controls), standardize = standardize, n_jobs = n_jobs)
  res <- out$test
  res$fit <- NULL
  res$baseline_fit <- NULL
  res$regression <- .as_feols(out$regression)
  res$baseline <- .as_feols(out$baseline)
  res$fe <- as.character(unlist(res$fe))
  res$controls <- as.character(unlist(res$controls))
  res
}

#' @rdname lookahead_test
#' @param x,object An `"llmsurrogate_lookahead_test"`.
#' @param ... Unused (`plot()`: graphical parameters for [graphics::plot()]).
#' @export
print.llmsurrogate_lookahead_test <- function(x, ...) {
  cat("Lookahead-bias test (Gao, Jiang and Yan 2026)\n")
  cat(sprintf("Interaction %s: %s (SE %s), t = %s with %d df\n", x$term, .fmt(x$estimate), .fmt(x$std_error),
              .fmt(x$statistic), as.integer(x$df)))
  cat(sprintf("p-value, H1: delta > 0 (lookahead bias): %s; two-sided: %s\n", .fmt(x$p_greater),
              .fmt(x$p_two_sided)))
  cat("(tidy(): p.value is the two-sided p-value, p.value.greater the one-sided one of H1: delta > 0)\n")
  se <- if (is.null(x$cluster)) "HC1" else sprintf("clustered by %s", x$cluster)
  n <- sprintf("%s observations", format(x$nobs, big.mark = ","))
  if (x$n_dropped > 0) n <- sprintf("%s (%d dropped for NA)", n, as.integer(x$n_dropped))
  cat(sprintf("%s; fixed effects %s; standard errors %s\n", n, paste(x$fe, collapse = " + "), se))
  cat("Use summary() for the full report, etable() for the two regressions.\n")
  invisible(x)
}

#' @rdname lookahead_test
#' @export
coef.llmsurrogate_lookahead_test <- function(object, ...) stats::setNames(object$estimate, object$term)

#' @rdname lookahead_test
#' @param parm,level For `confint()`: unused (the interaction only) and the confidence level
#'   (two-sided, t quantiles with the test's degrees of freedom).
#' @export
confint.llmsurrogate_lookahead_test <- function(object, parm, level = 0.95, ...) {
  confint(object$regression, object$term, level = level)
}

#' @rdname lookahead_test
#' @exportS3Method generics::tidy
tidy.llmsurrogate_lookahead_test <- function(x, ...) {
  tab <- x$table
  # broom's p.value is two-sided (tidy(lm())); the one-sided ones are named by their alternative
  data.frame(term = tab$term, estimate = tab$estimate, std.error = tab$std_error, statistic = tab$statistic,
             df = tab$df, p.value = tab$p_value_two_sided, p.value.greater = tab$p_value_greater,
             p.value.less = tab$p_value_less, stringsAsFactors = FALSE)
}

#' @rdname lookahead_test
#' @param y Unused.
#' @param level_band For `plot()`: the level of the pointwise band. The plot draws the marginal
#'   effect of the signal, `coef(signal) + coef(interaction) * LAP`, from the smallest to the
#'   largest LAP of the rows used (`lap_min`, `lap_max`), the mean LAP dashed.
#' @export
plot.llmsurrogate_lookahead_test <- function(x, y, level_band = 0.95, ...) {
  fit <- x$regression
  b <- coef(fit)
  v <- vcov(fit)
  g <- x$signal
  # over the LAP values of the estimation sample (LAP is a probability: mean +/- 2 SD went below 0)
  lap <- seq(x$lap_min, x$lap_max, length.out = 101L)
  me <- b[[g]] + b[[x$term]] * lap
  se <- sqrt(v[g, g] + lap^2 * v[x$term, x$term] + 2 * lap * v[g, x$term])
  q <- stats::qt(1 - (1 - level_band) / 2, fit$df_t)
  lo <- me - q * se
  hi <- me + q * se
  graphics::plot(lap, me, type = "n", ylim = range(lo, hi, 0), xlab = sprintf("%s (its range in the sample)", x$lap),
                 ylab = sprintf("marginal effect of %s on %s", g, x$outcome), ...)
  graphics::polygon(c(lap, rev(lap)), c(lo, rev(hi)), col = "grey85", border = NA)
  graphics::lines(lap, me, lwd = 2)
  graphics::abline(h = 0, lty = 3)
  graphics::abline(v = x$lap_mean, lty = 2, col = "grey50")
  graphics::title(main = sprintf("Lookahead test: %s = %s", x$term, .fmt(x$estimate)), cex.main = 0.9, font.main = 1)
  invisible(x)
}

#' Pairs bootstrap of the lookahead interaction
#'
#' Each of `n_boot` replications draws the rows (`resample = "obs"`, the paper's pairs bootstrap)
#' or the levels of a column (`resample = "date"`, `"firm"`: block bootstrap) with replacement
#' and re-estimates the regression of [lookahead_test()]; the replicated interaction
#' coefficients are in `draws` (Figure III; docs/methods/lookahead.md §2.7, §5.4). The
#' replications run in Rust, in parallel, reproducible by `seed` for any number of threads.
#'
#' p-values: against `reference` (the in-sample estimate when `data` are the out-of-sample
#' period, as the paper), #{draws >= reference} / B and (1 + #) / (B + 1); without a reference,
#' the percentile test of H0: delta <= 0, #{draws <= 0} / B and (1 + #) / (B + 1).
#'
#' @inheritParams lookahead_test
#' @param n_boot Replications.
#' @param seed Seed (a whole number >= 0), or `NULL` for one drawn at random and recorded in the
#'   result (`seed`).
#' @param resample `"obs"` or the name of a column whose levels are resampled as blocks.
#' @param reference `NULL`, a number, or a result of [lookahead_test()] (its estimate).
#' @param reps Deprecated: the earlier name of `n_boot` (a warning of class
#'   `"llmsurrogate_deprecation"`; it will be removed in llmsurrogate 0.3).
#' @return An `"llmsurrogate_lookahead_bootstrap"`: a list with `draws` (numeric, `NA` for
#'   replications whose design was singular), `estimate` (full sample), `reference`, `p_value`,
#'   `p_value_plus_one`, `n_boot` (also as `reps`, its earlier name), `seed`, `table` (a one-row data
#'   frame). Methods: `print()`, `summary()`, `plot()` (the histogram of Figure III),
#'   `as.data.frame()`, `quantile()`.
#' @seealso [lookahead_test()]
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' n <- 1000
#' d <- data.frame(firm = sample(1:50, n, TRUE), date = sample(1:40, n, TRUE),
#'                 llm = sample(c(-1, 0, 1), n, TRUE), lap = runif(n))
#' d$ret <- 0.2 * d$llm + 0.5 * d$llm * d$lap + rnorm(n)
#' boot <- lookahead_bootstrap(d, "ret", "llm", "lap", n_boot = 200, seed = 1)
#' boot
#' plot(boot)
#' @export
lookahead_bootstrap <- function(data, outcome, signal, lap, fe = c("firm", "date"), n_boot = 10000, seed = NULL,
                                resample = "obs", controls = character(), standardize = FALSE, reference = NULL,
                                n_jobs = NULL, reps = NULL) {
  call <- sys.call()
  n_boot <- .renamed_arg(reps, n_boot, "reps", "n_boot", call, value_given = !missing(n_boot))
  n_boot <- .check_scalar(n_boot, "n_boot", call)
  if (n_boot < 1 || n_boot != round(n_boot)) .abort("argument `n_boot` must be a whole number >= 1", call)
  if (!is.null(seed)) {
    seed <- .check_scalar(seed, "seed", call)
    if (seed < 0 || seed != round(seed) || seed >= 2^53) {
      .abort("argument `seed` must be a whole number from 0 to 2^53 - 1, or NULL", call)
    }
  }
  resample <- .check_string(resample, "resample", call)
  if (inherits(reference, "llmsurrogate_lookahead_test")) reference <- reference$estimate
  if (!is.null(reference)) reference <- .check_scalar(reference, "reference", call)
  standardize <- .check_flag(standardize, "standardize", call)
  n_jobs <- .check_n_jobs(n_jobs, call)
  extra <- if (resample != "obs") list(resample = resample) else list()
  cols <- .lookahead_frame(data, outcome, signal, lap, fe, controls, extra, call)
  res <- .call_in(call, "lookahead.bootstrap", cols, outcome, signal, lap, fe = as.list(fe),
                  n_boot = as.integer(n_boot), seed = seed, resample = resample, controls = as.list(controls),
                  standardize = standardize, reference = reference, n_jobs = n_jobs)
  res$draws <- as.numeric(res$draws)
  res$n_boot <- res$reps
  res$fe <- as.character(unlist(res$fe))
  res$controls <- as.character(unlist(res$controls))
  res$p_value <- res$table$p_value
  res$p_value_plus_one <- res$table$p_value_plus_one
  res
}

#' @rdname lookahead_bootstrap
#' @param x An `"llmsurrogate_lookahead_bootstrap"`.
#' @param ... `plot()`: graphical parameters for [graphics::hist()]; otherwise unused.
#' @export
print.llmsurrogate_lookahead_bootstrap <- function(x, ...) {
  tab <- x$table
  how <- if (identical(x$resample, "obs")) "rows" else sprintf("blocks of %s (%d)", x$resample, as.integer(x$n_blocks))
  cat(sprintf("Pairs bootstrap of %s: %d replications (%d finite), resampling %s, seed %s\n", x$term,
              as.integer(x$reps), as.integer(tab$finite_reps), how, format(x$seed, scientific = FALSE)))
  cat(sprintf("Full-sample estimate %s; bootstrap mean %s, SD %s, 95th percentile %s\n", .fmt(x$estimate),
              .fmt(tab$boot_mean), .fmt(tab$boot_sd), .fmt(tab$q95)))
  rule <- if (is.null(x$reference)) "#{draws <= 0} / B" else sprintf("#{draws >= %s} / B", .fmt(x$reference))
  cat(sprintf("p = %s = %s; (1 + #) / (B + 1) = %s\n", rule, .fmt(x$p_value), .fmt(x$p_value_plus_one)))
  invisible(x)
}

#' @rdname lookahead_bootstrap
#' @param probs For `quantile()`: probabilities.
#' @export
quantile.llmsurrogate_lookahead_bootstrap <- function(x, probs = c(0.05, 0.5, 0.95), ...) {
  stats::quantile(x$draws, probs, na.rm = TRUE, names = TRUE, type = 7)
}

#' @rdname lookahead_bootstrap
#' @param y Unused.
#' @param breaks Histogram breaks (as [graphics::hist()]).
#' @export
plot.llmsurrogate_lookahead_bootstrap <- function(x, y, breaks = 50, ...) {
  d <- x$draws[is.finite(x$draws)]
  q95 <- stats::quantile(d, 0.95, names = FALSE)
  xlim <- range(d, q95, if (is.null(x$reference)) NULL else x$reference)
  graphics::hist(d, breaks = breaks, col = "grey70", border = "white", xlim = xlim, main = "",
                 xlab = sprintf("bootstrap %s", x$term), ylab = "count", ...)
  graphics::abline(v = q95, col = "blue", lty = 3, lwd = 2)
  labels <- "95th percentile"
  cols <- "blue"
  ltys <- 3
  if (!is.null(x$reference)) {
    graphics::abline(v = x$reference, col = "red", lty = 1, lwd = 2)
    labels <- c(labels, sprintf("reference %s", .fmt(x$reference)))
    cols <- c(cols, "red")
    ltys <- c(ltys, 1)
  }
  graphics::legend("topright", legend = labels, col = cols, lty = ltys, lwd = 2, bty = "n", cex = 0.8)
  graphics::title(main = sprintf("Pairs bootstrap of %s (B = %d)", x$term, as.integer(x$reps)), cex.main = 0.9,
                  font.main = 1)
  invisible(x)
}

#' Lookahead Propensity (LAP) of texts
#'
#' One score per text: the exponential of the mean log-probability of its K% least likely
#' tokens under a local language model (Min-K% Prob; eq. 1 of Gao, Jiang and Yan 2026;
#' docs/methods/lookahead.md §1.3). Larger means more familiar. The first token has no context
#' and is not scored; `k = max(1, floor(K * n))` of the `n` scored tokens are averaged; a text of
#' one token gets `NA` with a warning. Per-token log-probabilities are stored in `cache`, so
#' another `k`, `method` or `agg` on the same texts needs no model pass.
#'
#' @param texts Character vector of texts, exactly as given to the model.
#' @param model Path of a local model folder (Hugging Face `save_pretrained` layout).
#' @param k The fraction K in (0, 1] of least likely tokens (0.2 = the paper's 20%).
#' @param method `"min_k"` (LAP), `"mean"` (all tokens) or `"min_k_plus_plus"` (Min-K%++
#'   z-scores; transformers backend only).
#' @param cache Cache folder, or `NULL` for none.
#' @param backend `"transformers"` (also `"hf"`; CPU or GPU) or `"vllm"` (GPU), as Python's
#'   `backend` names.
#' @param batch_size Texts per forward pass.
#' @param agg `"geometric"` (default, eq. 1) or `"arith"` (mean of the bottom probabilities).
#' @param details Return a data frame (`score`, `min_k`, `min_k_arith`, `n_scored`, `k`) instead
#'   of the scores.
#' @param device `NULL` (cuda when available), `"cpu"` or `"cuda"` (transformers backend).
#' @return A numeric vector, one score per text (`NA` where a text has no scored token), or a
#'   data frame with `details = TRUE`.
#' @seealso [lookahead_test()]
#' @examplesIf llmsurrogate_available() && reticulate::py_module_available("torch")
#' \donttest{
#' # any local model folder; tiny_model() builds a small GPT-2 in seconds (5 training steps here)
#' m <- tiny_model(steps = 5)
#' texts <- c("Apple reported record revenue for the quarter.",
#'            "Shares fell after the company cut its full-year forecast.")
#' lap(texts, m$model)
#' lap(texts, m$model, k = 0.5, details = TRUE)  # the bottom half of the tokens, with the details
#' }
#' @export
lap <- function(texts, model, k = 0.2, method = "min_k", cache = NULL, backend = "transformers", batch_size = 16,
                agg = "geometric", details = FALSE, device = NULL) {
  call <- sys.call()
  if (is.factor(texts)) texts <- as.character(texts)
  if (!is.character(texts) || !length(texts)) {
    .abort(sprintf("argument `texts` must be a non-empty character vector; got %s", .r_type(texts)), call)
  }
  if (anyNA(texts)) {
    .abort(sprintf("argument `texts` has a missing value (NA) at position %d", which(is.na(texts))[1]), call)
  }
  model <- .check_string(model, "model", call)
  if (!dir.exists(model)) .abort(sprintf("argument `model`: no such folder %s", model), call)
  model <- normalizePath(model)
  k <- .check_scalar(k, "k", call)
  method <- .check_string(method, "method", call)
  if (!is.null(cache)) cache <- .check_string(cache, "cache", call)
  backend <- .check_string(backend, "backend", call)
  batch_size <- .check_scalar(batch_size, "batch_size", call)
  agg <- .check_string(agg, "agg", call)
  details <- .check_flag(details, "details", call)
  if (!is.null(device)) device <- .check_string(device, "device", call)
  out <- .call_in(call, "lookahead.lap", as.list(texts), model, k = k, method = method, cache = cache,
                  backend = backend, batch_size = as.integer(batch_size), agg = agg, details = details,
                  device = device)
  if (details) return(out)
  as.numeric(.as_column(out))
}
