#' LLM risk scores for the rows of a data frame
#'
#' Turns every row into the task's prompt (Cruz, Hardt and Mendler-Dünner 2024, the folktexts
#' format), reads a local language model's next-token probabilities on the answer letters (both
#' answer orders averaged) or its verbalized probability (`method = "numeric"`, expected value
#' over the digit distribution), and returns the risk score of each row. Every model output is
#' stored in `cache`, so a rerun -- or a run that was interrupted -- recomputes nothing it
#' finished. The method is described in docs/methods/risk.md §1 (prompts §1.4, answer
#' orders §1.5, scores §1.6 and §1.7).
#'
#' @section Which method:
#' `"multiple_choice"` (the default) reads the probabilities of the answer letters, as folktexts
#' does; it suits instruction-tuned models of a billion parameters or more. `"numeric"` asks for
#' the probability as a number and reads the expected value over the digits; use it with small
#' models and with a model trained on numeric answers, such as [tiny_model()]: its
#' multiple-choice scores all come out 0.5 (a model that small does not read the order of the
#' options, and both orders are averaged), while its numeric scores carry signal.
#'
#' @section A local model, from R:
#' Everything runs offline in this R session: [tiny_model()] builds and trains a tiny GPT-2 in a
#' temporary folder (a minute or less on a laptop's CPU) and writes the task it was trained on;
#' [synthetic_census()] draws census rows with a known income probability `p_true`;
#' `risk_scores()` scores them; [evaluate_risk_scores()] compares the scores with the outcomes.
#' A real model is a folder in Hugging Face's `save_pretrained` layout (for example one
#' downloaded with `huggingface-cli download`), used the same way with `task = "ACSIncome"`.
#'
#' @param data A data frame with the task's feature columns (and its label column, to evaluate).
#' @param task A task TOML file or the name of a built-in task (`"ACSIncome"`).
#' @param model Path of a local model folder (Hugging Face `save_pretrained` layout).
#' @param backend `"transformers"` (also `"hf"`; CPU or GPU), `"vllm"` (GPU) or `"openai"` (any OpenAI-compatible
#'   endpoint: a hosted API, `vllm serve`, llama.cpp's server; `model` is then the served model's
#'   name and `backend_options` describes the endpoint).
#' @param method `"multiple_choice"`, `"numeric"`, `"numeric_argmax"`, `"chain_of_thought"` or
#'   `"numeric_scale"` (see "Which method" below: `"numeric"` for small models such as
#'   [tiny_model()]; `"numeric_scale"` numbers the levels of an ordered question 1 to K, at most 9,
#'   and reads the digits' probabilities: docs/methods/survey.md).
#' @param cache Cache folder, or `NULL` for no cache.
#' @param batch_size Prompts per forward pass, or `NULL` for the backend's default (16 on the
#'   CPU, up to 512 on a GPU).
#' @param correct_order_bias Average over the answer orders (default `TRUE`).
#' @param orders Which answer orders are averaged: `"all"` (the K! orders), `"cyclic"` (the K
#'   rotations: every option once at every letter) or `NULL` (default): `"all"` up to 4 options,
#'   `"cyclic"` above. For two options both are the same two orders.
#' @param backend_options For `backend = "openai"`: a named list such as
#'   `list(base_url = "http://127.0.0.1:8000/v1", api_key_env = "OPENAI_API_KEY", concurrency = 8,
#'   prices = list(input = 0.15, output = 0.6), max_cost = 5)`. The key is read from the named
#'   environment variable, never passed here.
#' @return A data frame with `row` (the row of `data`, 1-based), `score`, `answer_mass`, `label` (when the
#'   data hold it), for multiple choice `score_order_k` per answer order and, for a question with
#'   more than two options, `prob_<option>` per option (the answer distribution, averaged over the
#'   orders; each row sums to 1): give those columns to [evaluate_risk_scores()] or
#'   [compare_answers()] as `scores`.
#' @seealso [evaluate_risk_scores()], [tiny_model()], [synthetic_census()]
#' @examplesIf llmsurrogate_available()
#' \donttest{
#' library(llmsurrogate)
#' m <- tiny_model()  # a tiny GPT-2, trained for a minute or less; m$model, m$task
#' census <- synthetic_census(200, seed = 7)
#' scores <- risk_scores(census, task = m$task, model = m$model, method = "numeric")
#' head(scores)
#' evaluate_risk_scores(census[["PINCP>50000"]], scores$score, n_boot = 100)
#' cor(scores$score, census$p_true)  # the true probabilities are known here
#' }
#' @export
risk_scores <- function(data, task, model, backend = "transformers", method = "multiple_choice",
                        cache = NULL, batch_size = NULL, correct_order_bias = TRUE, backend_options = NULL,
                        orders = NULL) {
  cols <- .frame_arg(data)
  task <- .check_string(task, "task")
  backend <- .check_string(backend, "backend")
  if (identical(backend, "openai")) {
    model <- .check_string(model, "model")
  } else {
    model <- .check_string(normalizePath(model, mustWork = FALSE), "model")
  }
  if (!is.null(backend_options) && (!is.list(backend_options) || is.null(names(backend_options)) ||
                                    any(names(backend_options) == ""))) {
    .abort("argument `backend_options` must be a named list", call = sys.call())
  }
  method <- .check_string(method, "method")
  if (!is.null(cache)) cache <- .check_string(cache, "cache")
  if (!is.null(batch_size)) batch_size <- as.integer(.check_scalar(batch_size, "batch_size"))
  correct_order_bias <- .check_flag(correct_order_bias, "correct_order_bias")
  if (!is.null(orders)) orders <- .check_string(orders, "orders")
  out <- .call("risk.score_table", cols, task, model, backend = backend, method = method, cache = cache,
               batch_size = batch_size, correct_order_bias = correct_order_bias, backend_options = backend_options,
               orders = orders)
  if (is.numeric(out$row)) out$row <- as.integer(out$row) + 1L  # R's row of `data` (Python's is 0-based)
  out
}

#' Evaluate risk scores against outcomes: binary scores or K answer options
#'
#' With one score per row (a numeric vector), the metrics of Cruz, Hardt and Mendler-Dünner
#' (2024) with their exact conventions: accuracy and the confusion-matrix rates at
#' `score >= threshold`, balanced accuracy, ROC AUC (ties count 1/2), ECE with 10 equal-width bins
#' on \[0, 1\] and with quantile bins, Brier score and its Murphy decomposition, log loss, confidence
#' bias R_bias, signed calibration error (`mean(score) - mean(y)`), with row-bootstrap standard
#' errors and 95% intervals (another `level` for others; docs/methods/risk.md §2).
#'
#' With K probability columns (a data frame or matrix, one column per answer option, rows summing
#' to 1: for example the `prob_<option>` columns of [risk_scores()] for a question with more than
#' two options), the K-option metrics of docs/methods/survey.md §2: log loss, Brier score (summed
#' over the options, in \[0, 2\]), the ranked probability score (`ordered = TRUE`; normalised by
#' K - 1), accuracy of the most probable option (ties go to the later option), one-vs-rest ROC AUC
#' (macro and weighted) and the top-label and class-wise ECE, each with a row-bootstrap standard
#' error and interval (the same resampled rows as the binary evaluation).
#'
#' @section Survey weights:
#' `weights` makes every metric the weighted mean of the per-row losses: the population quantity
#' under the survey design (docs/methods/survey.md §4). A row keeps its weight in the bootstrap,
#' which treats rows as independent draws (no strata or clusters).
#'
#' @param y Outcomes. Binary scores: a numeric or logical vector of 0/1 (`FALSE`/`TRUE`), or a
#'   factor with two levels, read as glm() reads a binomial factor: the first level is 0 and the
#'   second is 1 (check `levels(y)`; `relevel()` or `factor(y, levels = c("no", "yes"))` sets the
#'   order). For a character vector, convert first, e.g. `as.integer(y == "yes")`. K options: the
#'   answers, as the options' labels (a factor, character or numeric vector: each value, as text,
#'   names a column of `scores`).
#' @param scores A numeric vector of risk scores in \[0, 1\]; or a data frame or matrix of K
#'   probability columns named by the options (column names `prob_<option>`, as [risk_scores()]
#'   writes them, stand for `<option>`), or unnamed with `options`.
#' @param groups Binary scores: an optional vector of group labels for group metrics (groups with
#'   under 4% of the rows are skipped); `NA` is an error. For K options, [compare_answers()] takes
#'   the groups.
#' @param weights Optional survey weights, one non-negative number per row (see "Survey weights").
#' @param threshold Binary scores: the classification threshold.
#' @param n_boot Bootstrap resamples (0 for none).
#' @param seed Bootstrap seed.
#' @param level Confidence level of the bootstrap intervals (0.95: 95% intervals).
#' @param options K options: the option of each column of `scores`, where its column names are
#'   not (a character or numeric vector of length K, in the columns' order). Column names that
#'   are the options in another order (alphabetical after a pivot) are matched by name and put in
#'   the order of `options`; names that share some options but not all are an error.
#' @param ordered K options: are the options ordered (a scale)? `NULL` (default): `TRUE` when `y`
#'   is an ordered factor. Ordered options add the ranked probability score, which depends on the
#'   order of the options: for an ordered factor `y` it is `levels(y)` (the columns are put in that
#'   order by their names, whatever their order in `scores`: alphabetical after
#'   `tidyr::pivot_wider()`, for example; every level needs its column), otherwise the order of the
#'   columns (or of `options`).
#' @return Binary scores: a data frame with one row per metric: `metric`, `value`, `se`, `ci_low`,
#'   `ci_high`; attributes `groups` (per-group metrics, a data frame), `group_summary` (ratios and
#'   differences across groups, a list) and `calibration` (reliability-diagram table).
#'
#'   K options: an object of class `c("llmsurrogate_multiclass_evaluation", "llmsurrogate_result")`,
#'   a list with `metrics` (one row per metric, as above), `per_option` (each option's weighted
#'   share of the answers, mean probability, one-vs-rest AUC and class-wise ECE), `reliability`
#'   (the top-label reliability-diagram table) and `meta`; `print()`, `summary()`, `plot()` (the
#'   reliability diagram), `coef()`, `confint()` and, with 'broom' installed, `tidy()` (broom's
#'   `term`, `estimate`, `std.error`, `conf.low`, `conf.high`) methods.
#' @seealso [compare_answers()] for the LLM's answer distribution against the population's.
#' @examplesIf llmsurrogate_available()
#' y <- c(0, 0, 1, 1, 0, 1, 0, 0, 1, 0)
#' r <- c(.1, .2, .8, .7, .4, .6, .3, .5, .9, .2)
#' evaluate_risk_scores(y, r, n_boot = 50)
#'
#' # three ordered options, with survey weights
#' set.seed(1)
#' p <- matrix(runif(300), 100)
#' p <- p / rowSums(p)
#' colnames(p) <- c("low", "mid", "high")
#' answer <- factor(apply(p, 1, function(pr) sample(colnames(p), 1, prob = pr)),
#'                  levels = colnames(p), ordered = TRUE)
#' ev <- evaluate_risk_scores(answer, p, weights = runif(100, 0.5, 2), n_boot = 50)
#' ev
#' coef(ev)
#' @export
evaluate_risk_scores <- function(y, scores, groups = NULL, weights = NULL, threshold = 0.5, n_boot = 200,
                                 seed = 42, level = 0.95, options = NULL, ordered = NULL) {
  call <- sys.call()
  n_boot <- as.integer(.check_scalar(n_boot, "n_boot", call))
  seed <- as.integer(.check_scalar(seed, "seed", call))
  level <- .check_scalar(level, "level", call)
  if (is.data.frame(scores) || is.matrix(scores)) {
    if (!missing(threshold)) {
      .abort(paste("argument `threshold` applies to binary scores (a numeric vector); with K probability",
                   "columns the prediction is the most probable option"), call)
    }
    if (!is.null(groups)) {
      .abort(paste("argument `groups` gives group metrics of binary scores; with K probability columns compare",
                   "the groups' answer distributions with compare_answers(y, scores, groups), or evaluate each",
                   "group's rows on their own"), call)
    }
    args <- .option_args(y, scores, NULL, weights, options, ordered, call)
    return(.call_in(call, "risk.evaluate_multiclass", args$y, args$probs, options = args$options,
                    weights = args$weights, ordered = args$ordered, n_boot = n_boot, seed = seed, level = level))
  }
  for (arg in c("options", "ordered")) {
    if (!is.null(get(arg, inherits = FALSE))) {
      .abort(sprintf(paste("argument `%s` applies to K probability columns (a data frame or matrix of",
                           "`scores`); binary scores are one number per row"), arg), call)
    }
  }
  y <- .check_numeric(.outcome_01(y, call), "y", call)
  scores <- .check_numeric(scores, "scores", call)
  for (arg in c("y", "scores")) {
    v <- get(arg, inherits = FALSE)
    if (any(bad <- !is.finite(v))) {
      .abort(sprintf("argument `%s` has an infinite value (%s) at position %d", arg, format(v[which(bad)[1]]),
                     which(bad)[1]), call)
    }
  }
  if (length(y) != length(scores)) {
    .abort(sprintf("arguments `y` (length %d) and `scores` (length %d) must have the same length",
                   length(y), length(scores)), call)
  }
  groups <- .check_groups(groups, length(y), call)
  if (length(weights) == 1L && length(y) > 1L) {
    .abort(paste("argument `weights` must have one survey weight per row; a single number is no weighting (was",
                 "it the threshold? give it by name: threshold = ...)"), call)
  }
  weights <- .check_weights(weights, length(y), call)
  threshold <- .check_scalar(threshold, "threshold", call)
  out <- .call_in(call, "risk.evaluate", .vector_arg(y, "y", call), .vector_arg(scores, "scores", call),
                  groups = groups, weights = weights, threshold = threshold, n_boot = n_boot, seed = seed,
                  level = level)
  metrics <- out$metrics
  attr(metrics, "groups") <- out$groups
  attr(metrics, "group_summary") <- out$group_summary
  attr(metrics, "calibration") <- out$calibration
  metrics
}

#' Does the LLM answer like the population?
#'
#' Sets the LLM's answer distribution beside the (survey-weighted) distribution of the human
#' answers `y` for one question with K options, per group (age band, state, ...) and over all rows:
#' the total variation distance and, for ordered options, the Wasserstein-1 distance, each with a
#' row-bootstrap interval (docs/methods/survey.md §3). The LLM's distribution is the weighted mean of
#' its K probabilities (`llm_answer = "probabilities"`): the answer shares of a silicon sample in
#' which each simulated respondent draws its answer from the model's distribution for that person.
#' `"argmax"` (the shares of its most probable answers) is offered because applied work often
#' records one answer per persona, but it is not the model's answer distribution.
#'
#' A distance is biased upwards by sampling noise (column `bias`) and its bootstrap is not
#' consistent at 0: near 0 read the upper end of the interval as a bound. `interval = "hull"` (the
#' default) is the smallest interval holding the basic and the percentile ones; its coverage is
#' reported in docs/methods/survey.md §3.3.
#'
#' @inheritParams evaluate_risk_scores
#' @param y The human answers, as the options' labels (a factor, character or numeric vector).
#' @param scores A data frame or matrix of the LLM's K probabilities per row, one column per option
#'   (named by the options, or `prob_<option>` as [risk_scores()] writes them; else give `options`).
#' @param groups Optional vector of group labels; `NA` is an error.
#' @param ordered Are the options ordered (a scale)? Adds the Wasserstein-1 distance. `NULL`
#'   (default): `TRUE` when `y` is an ordered factor. The scale's order is `levels(y)` for an
#'   ordered factor `y` (the columns are matched to the levels by name, whatever their order in
#'   `scores`), otherwise the order of the columns (or of `options`).
#' @param values Ordered options: their positions on the scale (default 1, 2, ..., K: steps of 1),
#'   in the scale's order (`levels(y)` for an ordered factor `y`).
#' @param llm_answer `"probabilities"` or `"argmax"` (see above).
#' @param interval `"hull"`, `"basic"` or `"percentile"`.
#' @return An object of class `c("llmsurrogate_answer_comparison", "llmsurrogate_result")`: a list
#'   with `table` (one row per scope, group and distance: `value`, `se`, `ci_low`, `ci_high`,
#'   `bias`; scope `"group"`, `"pooled"` (every row) or `"group_mean"` (the groups' distances
#'   averaged with their weight shares)), `distributions` (per group and option, the human and the
#'   LLM shares) and `meta`; `print()`, `summary()`, `plot()` (the distances with their intervals),
#'   `coef()`, `confint()` and, with 'broom' installed, `tidy()` methods.
#' @seealso [evaluate_risk_scores()]
#' @examplesIf llmsurrogate_available()
#' set.seed(2)
#' p <- matrix(rexp(1200), 400)
#' p <- p / rowSums(p)
#' colnames(p) <- c("never", "sometimes", "often")
#' answer <- apply(p, 1, function(pr) sample(colnames(p), 1, prob = pr))  # the LLM is right
#' age <- rep(c("18-39", "40+"), 200)
#' cmp <- compare_answers(answer, p, groups = age, ordered = TRUE, n_boot = 100)
#' cmp
#' plot(cmp)
#' @export
compare_answers <- function(y, scores, groups = NULL, weights = NULL, options = NULL, ordered = NULL, values = NULL,
                            llm_answer = "probabilities", interval = "hull", n_boot = 200, seed = 42,
                            level = 0.95) {
  call <- sys.call()
  if (!is.data.frame(scores) && !is.matrix(scores)) {
    .abort(sprintf(paste("argument `scores` must be a data frame or matrix of K probability columns (one per",
                         "option), not %s"), .r_type(scores)), call)
  }
  args <- .option_args(y, scores, groups, weights, options, ordered, call)
  if (!is.null(values)) values <- as.list(.check_numeric(values, "values", call))
  .call_in(call, "risk.compare_answers", args$y, args$probs, args$groups, options = args$options,
           weights = args$weights, ordered = args$ordered, values = values,
           llm_answer = .check_string(llm_answer, "llm_answer", call),
           interval = .check_string(interval, "interval", call),
           n_boot = as.integer(.check_scalar(n_boot, "n_boot", call)),
           seed = as.integer(.check_scalar(seed, "seed", call)), level = .check_scalar(level, "level", call))
}

# ---- K answer options: the checks in R's words, shared by evaluate_risk_scores() and compare_answers()

# The options of the columns of `scores`: `options`, else the column names (a common "prob_"
# prefix, as risk_scores() writes the columns, left out).
.score_options <- function(scores, options, call) {
  k <- ncol(scores)
  if (!is.null(options)) {
    if (is.factor(options)) options <- as.character(options)
    if (!is.atomic(options) || length(options) != k || anyNA(options)) {
      .abort(sprintf("argument `options` must name the option of each of the %d columns of `scores` (no NA)", k),
             call)
    }
    opts <- as.character(options)
  } else {
    opts <- colnames(scores)
    if (is.null(opts) || any(!nzchar(opts))) {
      .abort(paste("argument `scores` has columns without names; name them by the options",
                   "(colnames(scores) <- levels(y)) or give `options`"), call)
    }
    if (all(startsWith(opts, "prob_"))) opts <- substring(opts, 6L)
  }
  dup <- unique(opts[duplicated(opts)])
  if (length(dup)) {
    .abort(sprintf("the options (columns of `scores`) must be distinct; \"%s\" appears twice", dup[1]), call)
  }
  opts
}

# `scores` as a numeric matrix of probabilities, checked with R's row and column numbers.
.score_matrix <- function(scores, opts, call) {
  if (NCOL(scores) < 2L) {
    .abort(sprintf("argument `scores` must have at least 2 columns (one per option); got %d", NCOL(scores)), call)
  }
  .probability_matrix(scores, opts, "scores", "options", "answer", call)
}

# Column names that are the options in another order are put in the order of `options` by name
# (columns alphabetical after a pivot, `options` in the scale's order); names that share some
# options but not all are an error naming both, never a relabelling by position. Columns whose
# names are not options at all (none, a data frame's V1, V2, ..., "p_low", ...) are labelled by
# `options` in order, as documented.
.match_option_columns <- function(scores, options, call) {
  cols <- colnames(scores)
  k <- NCOL(scores)
  if (is.null(options) || is.null(cols) || any(is.na(cols)) || any(!nzchar(cols)) || !is.atomic(options) ||
      length(options) != k || anyNA(options)) {
    return(scores)
  }
  if (identical(cols, paste0("V", seq_len(k))) || identical(cols, paste0("X", seq_len(k)))) return(scores)
  names <- if (all(startsWith(cols, "prob_"))) substring(cols, 6L) else cols
  opts <- as.character(if (is.factor(options)) as.character(options) else options)
  if (identical(names, opts)) return(scores)
  if (!anyDuplicated(names) && !anyDuplicated(opts) && setequal(names, opts)) {
    return(scores[, match(opts, names), drop = FALSE])
  }
  if (!length(intersect(names, opts))) return(scores)  # names that are not options: `options` labels them
  extra <- setdiff(opts, names)
  why <- if (length(extra)) {
    sprintf("\"%s\" is in `options` but not a column of `scores`", extra[1])
  } else {
    sprintf("column \"%s\" of `scores` is not in `options`", setdiff(names, opts)[1])
  }
  .abort(sprintf(paste("arguments `options` (%s) and `scores` (its columns %s) name different options: %s;",
                       "columns are matched to `options` by name, never relabelled by position: name the",
                       "columns by the options (or pass unname(scores) to label them by `options` in order)"),
                 .show_options(opts), .show_options(names), why), call)
}

# The arguments of a K-option call, checked in R's words and ready for the bridge.
.option_args <- function(y, scores, groups, weights, options, ordered, call) {
  scores <- .match_option_columns(scores, options, call)
  opts <- .score_options(scores, options, call)
  p <- .score_matrix(scores, opts, call)
  if (is.null(ordered)) {
    ordered <- is.ordered(y)
  } else {
    ordered <- .check_flag(ordered, "ordered", call)
  }
  if (ordered && is.ordered(y)) {
    # the scale is levels(y): the columns put in that order by their options (names), never read in
    # the columns' order (alphabetical after tidyr::pivot_wider), which RPS and W1 depend on
    scale <- levels(y)
    if (!setequal(opts, scale)) {
      extra <- setdiff(scale, opts)
      why <- if (length(extra)) {
        sprintf("level \"%s\" has no column (drop unused levels with droplevels(y) if no answer can take it)",
                extra[1])
      } else {
        sprintf("column \"%s\" is not a level of `y`", setdiff(opts, scale)[1])
      }
      .abort(sprintf(paste("argument `y` is an ordered factor, whose levels %s are the scale of the options, but the",
                           "options (columns of `scores`) are %s: %s; the columns are put in the order of levels(y)",
                           "by their names, so each level needs one column"),
                     .show_options(scale), .show_options(opts), why), call)
    }
    if (!identical(opts, scale)) {
      p <- p[, match(scale, opts), drop = FALSE]
      opts <- scale
    }
  }
  if (!is.atomic(y) || is.matrix(y)) .abort(sprintf("argument `y` must be a vector, not %s", .r_type(y)), call)
  if (length(y) != nrow(p)) {
    .abort(sprintf("arguments `y` (length %d) and `scores` (%d rows) must have one row per answer", length(y),
                   nrow(p)), call)
  }
  if (length(y) == 0L) .abort("argument `y` is empty; pass at least one answer", call)
  if (anyNA(y)) {
    .abort(sprintf("argument `y` has a missing value (NA) at position %d; drop those rows first",
                   which(is.na(y))[1]), call)
  }
  labels <- as.character(y)
  bad <- which(!labels %in% opts)
  if (length(bad)) {
    .abort(sprintf(paste("argument `y`: answer \"%s\" at position %d is not an option; the options (columns of",
                         "`scores`) are %s"), labels[bad[1]], bad[1], .show_options(opts)), call)
  }
  frame <- stats::setNames(as.data.frame(p), opts)
  list(y = .vector_arg(labels, "y", call), probs = .frame_arg(frame, "scores", call), options = as.list(opts),
       groups = .check_groups(groups, length(y), call), weights = .check_weights(weights, length(y), call),
       ordered = ordered)
}

.show_options <- function(opts) {
  shown <- paste0("\"", utils::head(opts, 10L), "\"", collapse = ", ")
  sprintf("c(%s%s)", shown, if (length(opts) > 10L) ", ..." else "")
}

# Group labels for the bridge (NULL stays NULL): one per row, no NA.
.check_groups <- function(groups, n, call) {
  if (is.null(groups)) return(NULL)
  if (length(groups) != n) {
    .abort(sprintf("argument `groups` (length %d) must have one label per row (%d)", length(groups), n), call)
  }
  bad <- which(is.na(groups))
  if (length(bad)) {
    .abort(sprintf(paste0("argument `groups` has a missing value (NA) at position %d; give every row a ",
                          "group (e.g. \"unknown\") or drop those rows"), bad[1]), call)
  }
  .vector_arg(as.character(groups), "groups", call)
}

# Survey weights for the bridge (NULL stays NULL): one finite, non-negative number per row, not all 0.
.check_weights <- function(weights, n, call) {
  if (is.null(weights)) return(NULL)
  w <- .check_numeric(weights, "weights", call)
  if (length(w) != n) {
    .abort(sprintf("argument `weights` (length %d) must have one survey weight per row (%d)", length(w), n), call)
  }
  bad <- which(!is.finite(w) | w < 0)
  if (length(bad)) {
    .abort(sprintf("argument `weights` must be finite and non-negative; got %s at position %d", format(w[bad[1]]),
                   bad[1]), call)
  }
  if (!(sum(w) > 0)) .abort("argument `weights` sums to 0: no row carries weight", call)
  .vector_arg(w, "weights", call)
}

# A binary outcome as 0/1: a two-level factor as glm() reads it (first level 0, second 1); a
# character vector or a factor with another number of levels is an error that says how to convert.
.outcome_01 <- function(y, call) {
  if (is.factor(y)) {
    lv <- levels(y)
    if (length(lv) == 2L) {
      return(as.integer(y) - 1L)
    }
    .abort(sprintf(paste0("argument `y` is a factor with %d levels (%s); give 0/1 outcomes, e.g. ",
                          "as.integer(y == \"%s\"), or a factor with two levels (the second is read as 1)"),
                   length(lv), paste0("\"", utils::head(lv, 4), "\"", collapse = ", "),
                   if (length(lv)) lv[length(lv)] else "yes"), call)
  }
  if (is.character(y)) {
    first <- unique(y[!is.na(y)])
    .abort(sprintf(paste0("argument `y` is character; give 0/1 outcomes, e.g. as.integer(y == \"%s\"), ",
                          "or a factor with two levels (the second is read as 1)"),
                   if (length(first)) first[1] else "yes"), call)
  }
  y
}
