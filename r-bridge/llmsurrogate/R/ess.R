#' Equivalent sample size of a fixed prediction rule
#'
#' How many domain observations is a fixed rule (an LLM, a textbook model) worth? `ess()` runs
#' block-out cross-validation of a comparison algorithm at each training size in `grid` and the
#' sequential one-sided tests of Gao, Han and Liang (2026, Algorithm 3.1), and returns the
#' one-sided confidence bound \[`lower_bound`, Inf) for the equivalent sample size N*.
#' `error_curve()` returns the block-out CV error curve with pointwise confidence intervals.
#' Both call the Python package (`llmsurrogate.ess`), whose accumulation and tests run in Rust;
#' the numbers are the Python package's numbers.
#'
#' Column types: numeric, integer, logical, factor, character, Date, POSIXct and integer64
#' (package bit64) columns and tibbles are accepted, and `NA` of every type is a missing value
#' (see `missing`). Factor and character features are dummy-coded by Python; a Date feature is a
#' category per date (convert it with `as.numeric()` for a trend). A logical outcome is 0/1
#' (`TRUE` is 1). A two-level factor outcome is coded 0 for its first level and 1 for its second,
#' as [stats::glm()] does, unless the prediction holds labels too; other factor and character outcomes
#' need label predictions (a factor or character column, compared label by label under
#' `loss = "zero_one"`) and are an error otherwise.
#'
#' K classes (a survey answer with K options): `loss = "multiclass_log"` (-log of the probability
#' of the observed class, clipped at 1e-6) or `"multiclass_brier"` (the Brier score summed over the
#' K classes) score the rule's K class probabilities against a factor or character outcome (numbers
#' and logicals are compared as text, `as.character()`); `prediction` names the K probability
#' columns of `data` (e.g. the `prob_<option>` columns of [risk_scores()]), or is a matrix or data
#' frame with K columns, one row per row of `data`, each row summing to 1. The classes of the
#' columns are `options`, else the column names (a common prefix `prob_` left out), else, for an
#' unnamed matrix, the factor levels of the outcome; an `error_curve()` without a prediction takes
#' `options`, else the factor levels, else the sorted distinct values. The probability columns are
#' never features. The comparison algorithm predicts the K probabilities (`"rf"`, `"logit_l1"`,
#' `"mean"`, `"majority"`); with K = 2 the numbers are those of `loss = "log"` (or twice those of
#' `"brier"`) on the 0/1 outcome (docs/methods/ess.md §1.6).
#'
#' @param data A data frame or tibble, one row per observation.
#' @param outcome Name of the outcome column.
#' @param prediction Name of the column holding the fixed rule's predictions, or a vector
#'   aligned with the rows of `data` (numeric, logical, or labels: factor or character). Under a
#'   K-class loss: the names of the K columns of `data` holding the class probabilities, or a
#'   matrix or data frame of K probability columns, one row per row of `data`.
#' @param features Character vector of feature columns; `NULL` uses all other columns.
#' @param algorithm `"rf"`, `"lasso"`, `"logit_l1"` (the paper's models with per-N tuning),
#'   `"mean"` or `"majority"` (simple native learners).
#' @param grid Training sizes (whole numbers between 1 and n/2); `NULL` uses 1, 2, 5, 10, ...
#' @param loss `"squared"`, `"absolute"`, `"zero_one"`, `"brier"`, `"log"`, or for K classes
#'   `"multiclass_log"` or `"multiclass_brier"`.
#' @param alpha The paper's significance level of the one-sided tests: the ESS bound is a one-sided
#'   (1 - alpha) confidence bound (the curve CIs in the table are two-sided at 1 - alpha). For
#'   `error_curve()`, deprecated: the earlier name of `level`, as `level = 1 - alpha` (a warning of
#'   class `"llmsurrogate_deprecation"`; it will be removed in llmsurrogate 0.3).
#' @param level For `error_curve()`: the confidence level of the two-sided intervals, between 0.5
#'   and 1 (0.95: 95% intervals).
#' @param variance `"difference"` (default, the paper's (4.6)) or the conservative `"sum"` (4.7);
#'   see docs/methods/ess.md §4.7.
#' @param regime `"hybrid"`, `"fixed_N"` or `"fixed_B"`.
#' @param tuning `"per_n_subset"` (paper), `"per_block"` or `"none"`.
#' @param seed Permutation seed (a whole number) or `NULL` to keep the rows' order.
#' @param n_jobs Workers for the block fits and threads for the kernels (`NULL`: `LLMSURROGATE_NUM_THREADS`,
#'   else all cores). No number depends on it.
#' @param n_estimators Trees of the random forest.
#' @param bias_correct `TRUE` adds 2 V_test / (B - 1) to the fixed-N variance, removing the
#'   leading finite-B bias of (4.5) (docs/methods/ess.md §4.6; an extension, not in the paper).
#' @param missing What a missing value (`NA`, of any column type) in the outcome, the prediction
#'   or a feature does: `"error"` (default) stops and names the column and the row; `"drop"`
#'   drops the incomplete rows (with a warning from Python; valid only when missingness is
#'   unrelated to the data, e.g. unparseable LLM answers at random).
#' @param weights Not taken: survey weights are refused with an error that says why (the ESS counts
#'   independent draws from the population; neither the estimate nor its variance holds with
#'   weights: docs/methods/survey.md §5). Leave it `NULL`.
#' @param options Under a K-class loss: the class of each probability column, in their order (a
#'   character or factor vector of K distinct labels, as the outcome writes them); `NULL` takes the
#'   column names (or the factor levels, see Details). Not used by the other losses.
#' @return An object of class `c("llmsurrogate_ess", "llmsurrogate_result")`: a list with
#'   `table` (one row per grid point), `summary` (the printed text), `title`, `kind` and `json`,
#'   every field of the Python result under its name (`lower_bound`, `status`, `plugin`,
#'   `llm_error`, `llm_se`, `alpha`, `grid`, `seed`, `n`, `notes`, `permutation` as 1-based row
#'   numbers, ...) and `ci`, the one-sided interval `c(lower = lower_bound, upper = Inf)`.
#'   `error_curve()` returns class `c("llmsurrogate_error_curve", "llmsurrogate_result")`, with
#'   `level` (the confidence level of its intervals) where an ESS result has `alpha`. Both
#'   have `print()` (short), `summary()` (the full report), `plot()`, `as.data.frame()` (the
#'   table; the tuned hyperparameters, JSON in `table$params`, as one column `param_<name>`
#'   each), `confint()`, `coef()`, and, with 'broom' installed, `tidy()` and `glance()` methods
#'   (see [llmsurrogate_result]).
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' d <- data.frame(y = rnorm(400))
#' d$llm <- 0.2
#' res <- ess(d, "y", "llm", algorithm = "mean", grid = c(1, 2, 5, 10, 20))
#' res$lower_bound
#' # the comparison algorithm's error curve alone, without a fixed rule
#' error_curve(d, "y", algorithm = "mean", grid = c(1, 2, 5, 10, 20))
#'
#' # K = 3 classes: the LLM's probabilities in three columns, scored by the log loss
#' x <- rnorm(300)
#' p <- exp(cbind(0, x, -x))
#' p <- p / rowSums(p)
#' answers <- data.frame(x = x, answer = factor(apply(p, 1, function(r) sample(c("a", "b", "c"), 1, prob = r))),
#'                       prob_a = p[, 1], prob_b = p[, 2], prob_c = p[, 3])
#' mc <- ess(answers, "answer", c("prob_a", "prob_b", "prob_c"), algorithm = "mean",
#'           grid = c(5, 20, 50), loss = "multiclass_log")
#' mc$llm_error
#' @export
ess <- function(data, outcome, prediction, features = NULL, algorithm = "rf", grid = NULL,
                loss = "squared", alpha = 0.05, variance = "difference", regime = "hybrid",
                tuning = "per_n_subset", seed = 0L, n_jobs = NULL, n_estimators = 300L,
                bias_correct = FALSE, missing = "error", weights = NULL, options = NULL) {
  call <- sys.call()
  .refuse_weights(weights, "ess", call)
  kw <- .ess_args(algorithm, grid, loss, regime, tuning, seed, n_jobs, n_estimators, call,
                  bias_correct, missing, features)
  prep <- .ess_prepared(data, outcome, prediction, features, options, kw, call)
  do.call(.call, c(list("ess.equivalent_sample_size", prep$data, prep$outcome, prep$prediction,
                        alpha = .check_scalar(alpha, "alpha"), variance = .check_string(variance, "variance")),
                   prep$kw))
}

#' @rdname ess
#' @export
error_curve <- function(data, outcome, features = NULL, algorithm = "rf", grid = NULL,
                        loss = "squared", level = 0.95, regime = "hybrid", tuning = "per_n_subset",
                        seed = 0L, n_jobs = NULL, n_estimators = 300L, bias_correct = FALSE,
                        missing = "error", alpha = NULL, weights = NULL, options = NULL) {
  call <- sys.call()
  .refuse_weights(weights, "error_curve", call)
  if (!is.null(alpha)) {
    alpha <- .check_scalar(alpha, "alpha", call)
    if (!(alpha > 0 && alpha <= 0.5)) .abort(sprintf("argument `alpha` must be greater than 0 and at most 0.5; got %s", alpha), call)
    level <- 1 - .renamed_arg(alpha, level, "alpha", "level", call, value_given = !missing(level),
                              how = "level = 1 - alpha")
  }
  kw <- .ess_args(algorithm, grid, loss, regime, tuning, seed, n_jobs, n_estimators, call,
                  bias_correct, missing, features)
  prep <- .ess_prepared(data, outcome, NULL, features, options, kw, call)
  do.call(.call, c(list("ess.error_curve", prep$data, prep$outcome, level = .check_scalar(level, "level", call)),
                   prep$kw))
}

#' Equivalent sample size of an LLM's treatment-effect predictions (CATE-ESS)
#'
#' How many observations of a randomised experiment are an LLM's conditional average treatment
#' effect predictions tau(x) worth? The ESS pipeline of [ess()] run on the IPW transformed outcome
#' Y* = Y (D - pi) / (pi (1 - pi)), whose conditional mean is the CATE, with squared loss: the
#' comparison algorithm learns Y* from the covariates (never from the treatment), and the fixed
#' rule is the LLM's CATE prediction (Gao, Han and Liang 2026, Section 6; docs/methods/ess.md §7).
#'
#' @inheritParams ess
#' @param prediction Name of the column holding the LLM's CATE predictions, or a numeric vector
#'   aligned with the rows of `data`.
#' @param treatment Name of the binary treatment column: 0/1, logical, or a two-level factor
#'   (0 for its first level).
#' @param propensity The known treatment probability: a number, the name of a column, or `NULL`
#'   for the treated share (a completely randomised experiment).
#' @return An object of class `c("llmsurrogate_ess", "llmsurrogate_result")`, as from [ess()];
#'   the errors are on the scale of the transformed outcome.
#' @examplesIf llmsurrogate_available()
#' set.seed(2)
#' n <- 600
#' x <- rnorm(n)
#' d <- rbinom(n, 1, 0.5)
#' y <- x + d * (1 + x) + rnorm(n)
#' exp_data <- data.frame(x = x, d = d, y = y, tau_llm = 1 + 0.8 * x)
#' res <- cate_ess(exp_data, "y", "d", "tau_llm", propensity = 0.5, algorithm = "lasso",
#'                 grid = c(5, 10, 20, 50, 100))
#' res$lower_bound
#' @export
cate_ess <- function(data, outcome, treatment, prediction, propensity = NULL, features = NULL,
                     algorithm = "rf", grid = NULL, alpha = 0.05, variance = "difference",
                     regime = "hybrid", tuning = "per_n_subset", seed = 0L, n_jobs = NULL,
                     n_estimators = 300L, bias_correct = FALSE, missing = "error", weights = NULL) {
  call <- sys.call()
  .refuse_weights(weights, "cate_ess", call)
  kw <- .ess_args(algorithm, grid, "squared", regime, tuning, seed, n_jobs, n_estimators, call,
                  bias_correct, missing, features)
  kw$loss <- NULL
  treatment <- .check_string(treatment, "treatment")
  if (!is.null(propensity)) {
    if (is.character(propensity)) {
      propensity <- .check_string(propensity, "propensity")
    } else if (length(propensity) == 1) {
      propensity <- .check_scalar(propensity, "propensity")
    } else {
      propensity <- as.list(.check_numeric(propensity, "propensity"))
    }
  }
  exclude <- c(treatment, if (is.character(propensity)) propensity)
  prep <- .ess_data(data, outcome, prediction, features, "squared", kw$missing, call, exclude = exclude,
                    treatment = treatment)
  do.call(.call, c(list("ess.cate_ess", prep$data, prep$outcome, treatment, prep$prediction,
                        propensity = propensity, alpha = .check_scalar(alpha, "alpha"),
                        variance = .check_string(variance, "variance")),
                   kw))
}

# Survey weights are refused, with the reason (docs/methods/survey.md §5), in R's words.
.refuse_weights <- function(weights, fn, call) {
  if (is.null(weights)) return(invisible())
  .abort(sprintf(paste(
    "argument `weights`: %s() does not take survey weights. The equivalent sample size counts independent",
    "draws from the population, and block-out cross-validation trains on rows of the sample, so neither the",
    "estimate nor its variance (Gao, Han and Liang 2026, Theorem 4.2) holds with weights (docs/methods/survey.md",
    "\u00a75). Without `weights`, the ESS describes the population as sampled. For the LLM's weighted",
    "population error, use evaluate_risk_scores(y, scores, weights = ...)."), fn), call)
}

# The keyword arguments shared by ess(), error_curve() and cate_ess(), checked.
.ess_args <- function(algorithm, grid, loss, regime, tuning, seed, n_jobs, n_estimators, call,
                      bias_correct, missing, features) {
  kw <- list(algorithm = .check_string(algorithm, "algorithm", call),
             loss = .check_string(loss, "loss", call),
             regime = .check_string(regime, "regime", call),
             tuning = .check_string(tuning, "tuning", call),
             n_jobs = .check_n_jobs(n_jobs, call),
             bias_correct = .check_flag(bias_correct, "bias_correct", call),
             missing = .check_string(missing, "missing", call))
  if (!kw$missing %in% c("error", "drop")) {
    .abort(sprintf("argument `missing` must be \"error\" or \"drop\", not \"%s\"", kw$missing), call)
  }
  if (!is.null(features)) {
    if (is.factor(features)) features <- as.character(features)
    if (!is.character(features) || anyNA(features)) {
      .abort("argument `features` must be a character vector of column names", call)
    }
    kw$features <- as.list(features)
  }
  if (!is.null(grid)) {
    g <- .check_numeric(grid, "grid", call)
    if (any(g != round(g))) .abort("argument `grid` must hold whole numbers", call)
    kw$grid <- as.list(as.integer(g))
  }
  if (is.null(seed)) {
    kw["seed"] <- list(NULL)
  } else {
    s <- .check_scalar(seed, "seed", call)
    if (s != round(s) || s < 0) .abort("argument `seed` must be a whole number >= 0 or NULL", call)
    kw$seed <- as.integer(s)
  }
  trees <- .check_scalar(n_estimators, "n_estimators", call)
  if (trees < 1 || trees != round(trees) || trees > .Machine$integer.max) {
    .abort(sprintf("argument `n_estimators` must be a whole number >= 1 (trees of the random forest); got %s",
                   format(trees)), call)
  }
  if (identical(kw$algorithm, "rf")) {
    kw$algorithm_options <- list(n_estimators = as.integer(trees))
  }
  kw
}

# The losses of K class probabilities (docs/methods/ess.md §1.6).
.multiclass_losses <- c("multiclass_log", "multiclass_brier")

# The data, outcome and prediction of ess() or error_curve() for the bridge, and their keyword
# arguments `kw` (with `options`, the class labels, under a K-class loss).
.ess_prepared <- function(data, outcome, prediction, features, options, kw, call) {
  if (kw$loss %in% .multiclass_losses) {
    prep <- .ess_multiclass_data(data, outcome, prediction, features, options, kw$loss, kw$missing, call)
    kw$options <- as.list(prep$classes)
  } else {
    if (!is.null(options)) {
      .abort(sprintf(paste("argument `options` names the K classes of loss = \"multiclass_log\" or",
                           "\"multiclass_brier\"; loss \"%s\" does not use it"), kw$loss), call)
    }
    if (is.character(prediction) && length(prediction) > 1L && is.data.frame(data) &&
        length(prediction) != nrow(data) && all(prediction %in% names(data))) {
      .abort(sprintf(paste("argument `prediction` names %d columns of `data`; K class probabilities, one column",
                           "per class, need loss = \"multiclass_log\" or \"multiclass_brier\" (loss is \"%s\")"),
                     length(prediction), kw$loss), call)
    }
    prep <- .ess_data(data, outcome, prediction, features, kw$loss, kw$missing, call)
  }
  prep$kw <- kw
  prep
}

# A K-class loss's data for the bridge, checked in R's words: the outcome as class labels (text),
# the K probability columns as a data frame (taken out of `data` when `prediction` names them, so
# that they are never features), and the K class labels of the columns (docs/methods/ess.md §1.6).
.ess_multiclass_data <- function(data, outcome, prediction, features, options, loss, missing, call) {
  if (!is.data.frame(data)) {
    .abort(sprintf("argument `data` must be a data frame, not %s", .r_type(data)), call)
  }
  outcome <- .check_string(outcome, "outcome", call)
  if (!outcome %in% names(data)) {
    .abort(sprintf("argument `outcome`: `data` has no column `%s`", outcome), call)
  }
  y <- data[[outcome]]
  if (!is.atomic(y) || is.matrix(y)) {
    .abort(sprintf("outcome `%s` is %s; a K-class loss needs class labels (a factor or character column)",
                   outcome, .r_type(y)), call)
  }
  probs <- NULL
  if (!is.null(prediction)) {
    if (is.character(prediction) && !is.matrix(prediction)) {
      if (anyNA(prediction) || length(prediction) < 2L) {
        .abort(sprintf(paste("argument `prediction`: loss \"%s\" scores K class probabilities per row; name the",
                             "K >= 2 probability columns of `data`, one per class, or pass a matrix or data",
                             "frame of them; got %s"), loss, .show_labels_in_order(prediction)), call)
      }
      absent <- setdiff(prediction, names(data))
      if (length(absent)) {
        .abort(sprintf("argument `prediction`: `data` has no column `%s`", absent[1]), call)
      }
      if (outcome %in% prediction) {
        .abort(sprintf("argument `prediction` names the outcome `%s` as a probability column", outcome), call)
      }
      dup <- unique(prediction[duplicated(prediction)])
      if (length(dup)) .abort(sprintf("argument `prediction` names column `%s` twice", dup[1]), call)
      if (!is.null(features) && any(features %in% prediction)) {
        .abort(sprintf("argument `features` names the probability column `%s` of `prediction`",
                       features[features %in% prediction][1]), call)
      }
      probs <- data[prediction]
      data <- data[setdiff(names(data), prediction)]
    } else if (is.data.frame(prediction) || is.matrix(prediction)) {
      probs <- prediction
      if (nrow(probs) != nrow(data)) {
        .abort(sprintf(paste("argument `prediction` has %d rows but `data` has %d; pass one row of class",
                             "probabilities per row of `data`, in the same order"), nrow(probs), nrow(data)), call)
      }
    } else {
      .abort(sprintf(paste("argument `prediction`: loss \"%s\" needs the names of K probability columns of",
                           "`data`, or a matrix or data frame of K probability columns; not %s"),
                     loss, .r_type(prediction)), call)
    }
  }
  classes <- .class_labels(y, outcome, probs, options, call)
  labels <- as.character(y)
  bad <- which(!is.na(labels) & !labels %in% classes)
  if (length(bad)) {
    .abort(sprintf(paste("outcome `%s` has the value \"%s\" in row %d, which is not one of the K = %d classes %s",
                         "(%s); give `options`, the class of each probability column"),
                   outcome, labels[bad[1]], bad[1], length(classes), .show_options(classes),
                   attr(classes, "source")), call)
  }
  data[[outcome]] <- labels
  if (!is.null(probs)) {
    probs <- .class_probabilities(probs, classes, missing, call)
  }
  if (missing == "error") {
    used <- if (is.null(features)) setdiff(names(data), outcome) else features
    .check_no_missing(data, unique(c(outcome, used)), call)
  }
  list(data = .frame_arg(data, "data", call), outcome = outcome,
       prediction = if (!is.null(probs)) .frame_arg(probs, "prediction", call),
       classes = as.vector(classes))
}

# The K class labels (text) of a K-class loss, with where they came from (attribute "source"):
# `options`, else the names of the probability columns (a common "prob_" prefix, as
# risk_scores() writes them, left out), else the outcome's factor levels (an unnamed matrix or no
# prediction), else, without a prediction, the outcome's sorted distinct values.
.class_labels <- function(y, outcome, probs, options, call) {
  k <- if (is.null(probs)) NA_integer_ else ncol(probs)
  cols <- if (is.null(probs)) NULL else colnames(probs)
  if (!is.null(options)) {
    if (is.factor(options)) options <- as.character(options)
    if (!is.atomic(options) || is.matrix(options) || anyNA(options) || (!is.na(k) && length(options) != k)) {
      .abort(sprintf("argument `options` must give the class of each %s (a vector without NA)",
                     if (is.na(k)) "class" else sprintf("of the %d columns of `prediction`", k)), call)
    }
    classes <- as.character(options)
    source <- "argument `options`"
  } else if (!is.null(cols) && all(nzchar(cols))) {
    classes <- if (all(startsWith(cols, "prob_"))) substring(cols, 6L) else cols
    source <- "the column names of `prediction`"
  } else if (is.factor(y)) {
    classes <- levels(y)
    source <- sprintf("the levels of outcome `%s`", outcome)
    if (!is.na(k) && length(classes) != k) {
      .abort(sprintf(paste("argument `prediction` has %d unnamed columns but outcome `%s` has %d levels; name the",
                           "columns by the classes (colnames(p) <- levels(%s)) or give `options`"),
                     k, outcome, length(classes), outcome), call)
    }
  } else if (is.na(k)) {
    seen <- unique(y[!is.na(y)])
    classes <- as.character(sort(seen))
    source <- sprintf("the values of outcome `%s`", outcome)
  } else {
    .abort(paste("argument `prediction` has columns without names; name them by the classes",
                 "(colnames(p) <- c(\"yes\", \"no\", ...)) or give `options`"), call)
  }
  dup <- unique(classes[duplicated(classes)])
  if (length(dup)) {
    .abort(sprintf("the classes (%s) must be distinct; \"%s\" appears twice", source, dup[1]), call)
  }
  if (length(classes) < 2L) {
    .abort(sprintf("a K-class loss needs K >= 2 classes; %s give %d%s", source, length(classes),
                   if (length(classes)) sprintf(" (\"%s\")", classes[1]) else ""), call)
  }
  structure(classes, source = source)
}

# The K probability columns as a data frame named by the classes, checked with R's row numbers
# and column names: numbers between 0 and 1, each row summing to 1 (within 1e-6); a missing value
# is an error with missing = "error" and its row is left to Python's drop otherwise.
.class_probabilities <- function(probs, classes, missing, call) {
  cols <- if (is.data.frame(probs)) names(probs) else colnames(probs)
  if (is.null(cols) || !all(nzchar(cols))) cols <- sprintf("%d", seq_along(classes))
  p <- .probability_matrix(probs, cols, "prediction", "classes", "outcome", call, keep_na = missing != "error",
                           na_hint = paste("; drop or impute missing values first, or pass missing = \"drop\" to",
                                           "drop the incomplete rows"))
  stats::setNames(as.data.frame(p), classes)
}

.show_labels_in_order <- function(x) {
  if (!length(x)) return("character(0)")
  sprintf("c(%s)", paste0("\"", x, "\"", collapse = ", "))
}

# The data, outcome and prediction of an ESS call, ready for the bridge. R's column types are
# settled here, where Python would guess: a logical outcome or treatment is 0/1; a two-level
# factor outcome is 0 for its first level and 1 for its second (as in glm()) unless the
# prediction holds labels too; other factor or character outcomes are an error unless both sides
# are labels (loss "zero_one"). With missing = "error" a missing value (NA) in any column the
# call uses is an error naming the column and the row; with "drop" Python drops those rows.
.ess_data <- function(data, outcome, prediction, features, loss, missing, call, exclude = character(0),
                      treatment = NULL) {
  if (!is.data.frame(data)) {
    .abort(sprintf("argument `data` must be a data frame, not %s", .r_type(data)), call)
  }
  outcome <- .check_string(outcome, "outcome", call)
  pred_col <- NULL
  pred_values <- NULL
  if (!is.null(prediction)) {
    if (is.character(prediction) && length(prediction) == 1L) {
      pred_col <- .check_string(prediction, "prediction", call)
      pred_values <- data[[pred_col]]
    } else {
      if (!is.atomic(prediction) || is.null(prediction) || !(is.numeric(prediction) || is.logical(prediction) ||
                                                              is.factor(prediction) || is.character(prediction))) {
        .abort(sprintf("argument `prediction` must be a column name or a vector, not %s", .r_type(prediction)),
               call)
      }
      if (length(prediction) != nrow(data)) {
        .abort(sprintf("argument `prediction` has %d values but `data` has %d rows; pass one prediction per row",
                       length(prediction), nrow(data)), call)
      }
      bad <- which(is.na(prediction))
      if (length(bad) && missing == "error") {
        .abort(sprintf(paste0("argument `prediction` has a missing value (NA) at position %d%s; drop or impute ",
                              "missing values first, or pass missing = \"drop\" to drop those rows"),
                       bad[1], .more(bad)), call)
      }
      pred_values <- if (is.logical(prediction)) as.integer(prediction) else prediction
    }
    if (is.logical(pred_values) && !is.null(pred_col)) {
      data[[pred_col]] <- as.integer(pred_values)
    }
  }
  if (outcome %in% names(data)) {
    if (.is_labels(pred_values) && !.is_labels(data[[outcome]])) {
      # labels against numbers: said in R's words (a factor crosses to Python as its labels, "strings")
      .abort(sprintf(paste("argument `prediction`%s is %s, but outcome `%s` holds numbers; give numeric predictions",
                           "(as.numeric(as.character(x)) for a factor whose labels are numbers), or class labels on",
                           "both sides with loss = \"zero_one\""),
                     if (is.null(pred_col)) "" else sprintf(" (column `%s`)", pred_col), .r_type(pred_values),
                     outcome), call)
    }
    data[[outcome]] <- .code_outcome(data[[outcome]], outcome, pred_values, loss, call)
  }
  if (!is.null(treatment) && treatment %in% names(data)) {
    data[[treatment]] <- .code_treatment(data[[treatment]], treatment, call)
  }
  if (missing == "error") {
    used <- if (is.null(features)) setdiff(names(data), c(outcome, pred_col, exclude)) else features
    .check_no_missing(data, unique(c(outcome, pred_col, exclude, used)), call)
  }
  if (is.null(pred_col) && !is.null(pred_values)) {
    prediction <- .vector_arg(pred_values, "prediction", call)
  } else {
    prediction <- pred_col
  }
  list(data = .frame_arg(data, "data", call), outcome = outcome, prediction = prediction)
}

.is_labels <- function(x) is.factor(x) || is.character(x)

.more <- function(bad) if (length(bad) > 1L) sprintf(" (and %d more)", length(bad) - 1L) else ""

.code_outcome <- function(y, outcome, pred_values, loss, call) {
  if (is.logical(y)) {
    return(as.integer(y))
  }
  if (!.is_labels(y)) {
    return(y)
  }
  if (!is.null(pred_values) && .is_labels(pred_values)) {
    seen <- unique(as.character(y[!is.na(y)]))
    said <- unique(as.character(pred_values[!is.na(pred_values)]))
    if (length(seen) && length(said) && !any(said %in% seen)) {
      .abort(sprintf(paste0("the prediction's labels (%s) have no label in common with outcome `%s` (%s); ",
                            "use the same labels on both sides"),
                     .show_labels(said), outcome, .show_labels(seen)), call)
    }
    return(y)
  }
  if (is.null(pred_values) && identical(loss, "zero_one")) {
    return(y)  # class labels for the 0-1 loss of an error curve
  }
  if (is.factor(y) && nlevels(y) == 2L) {
    return(as.integer(y) - 1L)
  }
  if (is.factor(y)) {
    .abort(sprintf(paste0("outcome `%s` is a factor with %d levels; a numeric prediction or loss needs a numeric, ",
                          "logical or two-level factor outcome (coded 0 for the first level and 1 for the ",
                          "second). For class labels, give the prediction as labels too (a factor or character ",
                          "column) with loss = \"zero_one\""), outcome, nlevels(y)), call)
  }
  first <- y[!is.na(y)][1]
  .abort(sprintf(paste0("outcome `%s` is character; code it as numbers (e.g. as.integer(%s == \"%s\")) or as a ",
                        "two-level factor (coded 0 for its first level and 1 for its second). For class labels, ",
                        "give the prediction as labels too with loss = \"zero_one\""),
                 outcome, outcome, if (is.na(first)) "yes" else first), call)
}

.code_treatment <- function(d, treatment, call) {
  if (is.logical(d)) {
    return(as.integer(d))
  }
  if (is.factor(d) && nlevels(d) == 2L) {
    return(as.integer(d) - 1L)
  }
  if (.is_labels(d)) {
    .abort(sprintf(paste0("treatment `%s` is %s; code it 0/1 (a logical or a two-level factor, ",
                          "0 for the first level, also works)"), treatment,
                   if (is.factor(d)) sprintf("a factor with %d levels", nlevels(d)) else "character"), call)
  }
  d
}

.show_labels <- function(x) {
  x <- sort(x)
  shown <- paste0("\"", utils::head(x, 5L), "\"", collapse = ", ")
  if (length(x) > 5L) paste0(shown, ", ...") else shown
}

# With missing = "error": the first missing value (NA) of the used columns, with its row, is an error.
.check_no_missing <- function(data, columns, call) {
  for (col in intersect(columns, names(data))) {
    bad <- which(is.na(data[[col]]))
    if (length(bad)) {
      .abort(sprintf(paste0("column `%s` has a missing value (NA) in row %d%s; drop or impute missing values ",
                            "first, or pass missing = \"drop\" to drop the incomplete rows"),
                     col, bad[1], .more(bad)), call)
    }
  }
}

#' Plot an ESS result or an error curve
#'
#' The paper's figure in base graphics: the algorithm's error curve with its pointwise CI band
#' (log x axis when the grid spans a factor of 20 or more), for `ess()` results also the fixed
#' rule's error as a horizontal line with its band and the ESS lower bound as a dashed line.
#'
#' The two bands are each error's own (marginal) interval; they can overlap where the test
#' rejects, because the test compares the two errors on the same held-out rows. An `ess()` result
#' therefore gets a second panel with what the test uses: the paired difference (algorithm's
#' error minus the fixed rule's) at each N with its one-sided lower confidence bound at level
#' 1 - `alpha` (`table$diff`, `table$lower_diff`); the test rejects "the algorithm does as well
#' as the rule" at N where that bound lies above 0 (filled points).
#'
#' @param x A result of [ess()] or [error_curve()].
#' @param y Unused.
#' @param ... Passed to [graphics::plot()] for the error curve (e.g. `cex.axis`).
#' @return `x`, invisibly.
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' d <- data.frame(x = rnorm(400))
#' d$y <- d$x + rnorm(400)
#' d$llm <- 0.8 * d$x
#' res <- ess(d, "y", "llm", algorithm = "lasso", grid = c(2, 5, 10, 20, 50, 100), n_jobs = 1)
#' plot(res)
#' res$table[c("n_train", "diff", "lower_diff", "reject")]
#' plot(error_curve(d, "y", algorithm = "lasso", grid = c(2, 5, 10, 20, 50, 100), n_jobs = 1))
#' @export
plot.llmsurrogate_ess <- function(x, y, ...) {
  t <- x$table
  z <- stats::qnorm(1 - x$alpha / 2)
  level <- sprintf("%g%%", 100 * (1 - x$alpha))
  show_bound <- is.finite(x$lower_bound) && x$lower_bound >= 1
  op <- graphics::par(mfrow = c(2L, 1L), mar = c(3.6, 4.2, 2.2, 1), mgp = c(2.3, 0.7, 0), las = 1)
  on.exit(graphics::par(op), add = TRUE)

  # the two errors, each with its own (marginal) band
  .curve_plot(t$n_train, t$algo_error, t$algo_se * z,
              extra = c(x$llm_error - z * x$llm_se, x$llm_error + z * x$llm_se), title = x$title, ...)
  graphics::rect(min(t$n_train) / 10, x$llm_error - z * x$llm_se, max(t$n_train) * 10,
                 x$llm_error + z * x$llm_se, col = grDevices::adjustcolor("firebrick", 0.15), border = NA)
  graphics::abline(h = x$llm_error, col = "firebrick", lwd = 2)
  if (show_bound) graphics::abline(v = x$lower_bound, lty = 2)
  graphics::legend("topright", c(sprintf("%s (error at N)", x$algorithm), "fixed rule",
                                 sprintf("bands: %s CI of each error alone", level),
                                 if (show_bound) sprintf("ESS lower bound %d", as.integer(x$lower_bound))),
                   col = c("steelblue", "firebrick", "grey60", if (show_bound) "black"),
                   lty = c(1, 1, NA, if (show_bound) 2), lwd = c(2, 2, NA, if (show_bound) 1),
                   pch = c(NA, NA, 15, if (show_bound) NA), pt.cex = 1.6, cex = 0.75, inset = 0.01,
                   bg = grDevices::adjustcolor("white", 0.85), box.col = NA)

  # what the test uses: the paired difference on the same rows, with its one-sided bound
  n <- t$n_train
  lo <- t$lower_diff
  use_log <- max(n) / max(min(n), 1) >= 20
  graphics::plot(n, t$diff, type = "n", log = if (use_log) "x" else "",
                 ylim = range(c(t$diff, lo, 0), finite = TRUE), xlab = "training size N",
                 ylab = "error difference")
  graphics::title(main = sprintf("Paired test: %s minus fixed rule, same rows", x$algorithm), cex.main = 0.8,
                  font.main = 1)
  graphics::abline(h = 0, col = "grey40")
  ok <- is.finite(lo) & is.finite(t$diff) & t$diff > lo
  graphics::arrows(n[ok], t$diff[ok], n[ok], lo[ok], angle = 90, length = 0.04, col = "darkorange3", lwd = 1.5)
  graphics::lines(n, t$diff, col = "darkorange3", lwd = 2)
  graphics::points(n, t$diff, pch = ifelse(t$reject, 19, 1), col = "darkorange3", cex = 0.9)
  if (show_bound) graphics::abline(v = x$lower_bound, lty = 2)
  graphics::legend("topright", c("paired difference", sprintf("one-sided %s lower bound", level),
                                 "rejected at N (bound > 0)"),
                   col = "darkorange3", lty = c(1, 1, NA), lwd = c(2, 1.5, NA), pch = c(NA, NA, 19),
                   cex = 0.75, inset = 0.01, bg = grDevices::adjustcolor("white", 0.85), box.col = NA)
  invisible(x)
}

#' The deprecated field `alpha` of an error curve
#'
#' `curve$alpha` is the earlier field, now `curve$level` (alpha = 1 - level).
#' Read from a curve of this release it warns (class `"llmsurrogate_deprecation"`) and gives
#' `1 - curve$level`, so that an older script gets its number instead of `NULL`.
#' @param x An error curve.
#' @param name A field name.
#' @keywords internal
#' @export
`$.llmsurrogate_error_curve` <- function(x, name) {
  if (identical(name, "alpha") && is.null(.subset2(x, "alpha")) && !is.null(.subset2(x, "level"))) {
    msg <- paste0("field `alpha` of an error curve is deprecated and will be removed in llmsurrogate 0.3; ",
                  "use `level` (alpha = 1 - level)")
    .deprecation_warning(msg)
    return(1 - .subset2(x, "level"))
  }
  .subset2(x, name)
}

#' @rdname plot.llmsurrogate_ess
#' @export
plot.llmsurrogate_error_curve <- function(x, y, ...) {
  t <- x$table
  z <- stats::qnorm((1 + .ci_level(x)) / 2)
  .curve_plot(t$n_train, t$error, t$se * z, extra = numeric(0), title = x$title, ...)
  invisible(x)
}

.curve_plot <- function(n, e, half, extra, title, ...) {
  lo <- e - half
  hi <- e + half
  use_log <- max(n) / max(min(n), 1) >= 20
  graphics::plot(n, e, type = "n", log = if (use_log) "x" else "",
                 ylim = range(c(lo, hi, extra), finite = TRUE), xlab = "training size N",
                 ylab = "error", main = title, cex.main = 0.8, ...)
  graphics::polygon(c(n, rev(n)), c(lo, rev(hi)), col = grDevices::adjustcolor("steelblue", 0.25), border = NA)
  graphics::lines(n, e, type = "o", pch = 19, cex = 0.6, col = "steelblue", lwd = 2)
}
