#' Build and train a tiny local language model
#'
#' Builds a tiny GPT-2 (2 layers, a byte-level BPE tokenizer of 800 tokens) in the folder `path` and
#' trains it on one CPU thread (about 30 seconds), on synthetic census rows
#' ([synthetic_census()]): it learns to state the probability that a person's income exceeds
#' 50,000 from four columns (`AGEP`, `SCHL`, `WKHP`, `SEX`). It stands in for a real model to try
#' [risk_scores()] and [evaluate_risk_scores()] end to end on a laptop, offline, with no download:
#' its scores carry real signal (ROC AUC about 0.70-0.74 on held-out synthetic rows, against 0.79
#' for the true probabilities), far from a real model's.
#'
#' Score with `method = "numeric"`: the model was trained on numeric answers only, and a model this
#' small does not learn to read the order of multiple-choice options, so its multiple-choice scores
#' (averaged over both answer orders) all come out 0.5.
#'
#' Inside R, torch keeps its own BLAS (Intel MKL), as in Python: the package's Python bridge loads
#' torch so that its matrix products do not bind to the BLAS R loaded. With R's reference BLAS (the
#' default of Debian's R) they did, and training took 70-100 seconds instead of 30; the model and
#' its scores are now those that Python trains, bit for bit.
#'
#' The model is `llmsurrogate.testing.train_tiny_model()` in Python with faster settings (300
#' steps of 32 prompts at width 32; Python's defaults take one to two minutes); the training
#' prompts are those of the task written to `task.toml` in `path`.
#'
#' @param path Folder to create (it must not exist or be empty); by default a new temporary folder.
#' @param steps Training steps (each of 32 prompts). Fewer train faster, with less signal.
#' @param seed Seed of the weights and the training rows (a whole number >= 0).
#' @return A list with `model` (the model folder, for `risk_scores(model = )`), `task` (the task
#'   file, for `risk_scores(task = )`), `seconds` (training time) and `final_loss`.
#' @seealso [risk_scores()], whose examples use it.
#' @examplesIf llmsurrogate_available()
#' \donttest{
#' m <- tiny_model()  # under a minute or so
#' census <- synthetic_census(200, seed = 7)
#' scores <- risk_scores(census, task = m$task, model = m$model, method = "numeric")
#' evaluate_risk_scores(census[["PINCP>50000"]], scores$score, n_boot = 0)
#' }
#' @export
tiny_model <- function(path = tempfile("llmsurrogate-tiny-model-"), steps = 300, seed = 0) {
  path <- .check_string(path, "path")
  if (dir.exists(path) && length(list.files(path, all.files = TRUE, no.. = TRUE))) {
    .abort(sprintf("argument `path`: the folder %s is not empty; give a new folder", path), sys.call())
  }
  steps <- .check_scalar(steps, "steps")
  if (steps < 1 || steps != round(steps)) .abort("argument `steps` must be a whole number >= 1", sys.call())
  seed <- .check_scalar(seed, "seed")
  if (seed < 0 || seed != round(seed)) .abort("argument `seed` must be a whole number >= 0", sys.call())
  path <- normalizePath(path, mustWork = FALSE)
  out <- .call("testing.tiny_model", path, steps = as.integer(steps), seed = as.integer(seed))
  out[c("model", "task", "seconds", "final_loss")]
}
