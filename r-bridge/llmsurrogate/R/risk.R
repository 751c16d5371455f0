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
#' @param method `"multiple_choice"`, `"numeric"` or `"numeric_argmax"` (see "Which method"
#'   below: `"numeric"` for small models such as [tiny_model()]).
#' @param cache Cache folder, or `NULL` for no cache.
#' @param batch_size Prompts per forward pass, or `NULL` for the backend's default (16 on the
#'   CPU, up to 512 on a GPU).
#' @param correct_order_bias Average over all answer orders (default `TRUE`).
#' @param backend_options For `backend = "openai"`: a named list such as
#'   `list(base_url = "http://127.0.0.1:8000/v1", api_key_env = "OPENAI_API_KEY", concurrency = 8,
#'   prices = list(input = 0.15, output = 0.6), max_cost = 5)`. The key is read from the named
#'   environment variable, never passed here.
#' @return A data frame with `row` (the row of `data`, 1-based), `score`, `answer_mass`, `label` (when the
#'   data hold it) and, for multiple choice, `score_order_k` per answer order.
#' @seealso [evaluate_risk_scores()], [tiny_model()], [synthetic_census()]
#' @examples
#' \donttest{
#' if (llmsurrogate_available()) {
#'   library(llmsurrogate)
#'   m <- tiny_model()  # a tiny GPT-2, trained for a minute or less; m$model, m$task
#'   census <- synthetic_census(200, seed = 7)
#'   scores <- risk_scores(census, task = m$task, model = m$model, method = "numeric")
#'   head(scores)
#'   evaluate_risk_scores(census[["PINCP>50000"]], scores$score, n_boot = 100)
#'   cor(scores$score, census$p_true)  # the true probabilities are known here
#' }
#' }
#' @export
risk_scores <- function(data, task, model, backend = "transformers", method = "multiple_choice",
                        cache = NULL, batch_size = NULL, correct_order_bias = TRUE, backend_options = NULL) {
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
  out <- .call("risk.score_table", cols, task, model, backend = backend, method = method, cache = cache,
               batch_size = batch_size, correct_order_bias = correct_order_bias, backend_options = backend_options)
  if (is.numeric(out$row)) out$row <- as.integer(out$row) + 1L  # R's row of `data` (Python's is 0-based)
  out
}

#' Evaluate risk scores against binary outcomes
#'
#' The metrics of Cruz, Hardt and Mendler-Dünner (2024) with their exact conventions: accuracy
#' and the confusion-matrix rates at `score >= threshold`, balanced accuracy, ROC AUC (ties count
#' 1/2), ECE with 10 equal-width bins on \[0, 1\] and with quantile bins, Brier score and its
#' Murphy decomposition, log loss, confidence bias R_bias, signed calibration error
#' (`mean(score) - mean(y)`), with row-bootstrap standard errors and 95% intervals
#' (docs/methods/risk.md §2).
#'
#' @param y Outcomes: a numeric or logical vector of 0/1 (`FALSE`/`TRUE`), or a factor with two
#'   levels, read as glm() reads a binomial factor: the first level is 0 and the second is 1
#'   (check `levels(y)`; `relevel()` or `factor(y, levels = c("no", "yes"))` sets the order). For a
#'   character vector, convert first, e.g. `as.integer(y == "yes")`.
#' @param scores Numeric vector of risk scores in \[0, 1\].
#' @param groups Optional vector of group labels for group metrics (groups with under 4% of the
#'   rows are skipped); `NA` is an error.
#' @param threshold Classification threshold.
#' @param n_boot Bootstrap resamples (0 for none).
#' @param seed Bootstrap seed.
#' @return A data frame with one row per metric: `metric`, `value`, `se`, `ci_low`, `ci_high`.
#'   Attributes `groups` (per-group metrics, a data frame), `group_summary` (ratios and
#'   differences across groups, a list) and `calibration` (reliability-diagram table).
#' @examples
#' if (llmsurrogate_available()) {
#'   y <- c(0, 0, 1, 1, 0, 1, 0, 0, 1, 0)
#'   r <- c(.1, .2, .8, .7, .4, .6, .3, .5, .9, .2)
#'   evaluate_risk_scores(y, r, n_boot = 50)
#' }
#' @export
evaluate_risk_scores <- function(y, scores, groups = NULL, threshold = 0.5, n_boot = 200, seed = 42) {
  y <- .check_numeric(.outcome_01(y, sys.call()), "y")
  scores <- .check_numeric(scores, "scores")
  for (arg in c("y", "scores")) {
    v <- get(arg, inherits = FALSE)
    if (any(bad <- !is.finite(v))) {
      .abort(sprintf("argument `%s` has an infinite value (%s) at position %d", arg, format(v[which(bad)[1]]),
                     which(bad)[1]), sys.call())
    }
  }
  if (length(y) != length(scores)) {
    .abort(sprintf("arguments `y` (length %d) and `scores` (length %d) must have the same length",
                   length(y), length(scores)), sys.call())
  }
  if (!is.null(groups)) {
    if (length(groups) != length(y)) .abort("argument `groups` must have the length of `y`", sys.call())
    bad <- which(is.na(groups))
    if (length(bad)) {
      .abort(sprintf(paste0("argument `groups` has a missing value (NA) at position %d; give every row a ",
                            "group (e.g. \"unknown\") or drop those rows"), bad[1]), sys.call())
    }
    groups <- .vector_arg(as.character(groups), "groups")
  }
  threshold <- .check_scalar(threshold, "threshold")
  n_boot <- as.integer(.check_scalar(n_boot, "n_boot"))
  seed <- as.integer(.check_scalar(seed, "seed"))
  out <- .call("risk.evaluate_table", .vector_arg(y, "y"), .vector_arg(scores, "scores"), groups = groups,
               threshold = threshold, n_boot = n_boot, seed = seed)
  metrics <- out$metrics
  attr(metrics, "groups") <- out$groups
  attr(metrics, "group_summary") <- out$group_summary
  attr(metrics, "calibration") <- out$calibration
  metrics
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
