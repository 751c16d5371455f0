#' Certainty equivalents from 44 subject pools
#'
#' Lottery-level certainty equivalents, in long format, from the 44 subject pools of Andrews,
#' Fudenberg, Lei, Liang and Wu (2025), Section 5.1. Each row is one subject's reported certainty
#' equivalent `ce` for a two-outcome lottery that pays `z1` with probability `p1` and `z2`
#' otherwise (`|z1| > |z2|`), prizes in PPP-normalised US dollars.
#'
#' Source: the paper's replication repository (chaofengwu/TransferPerf, MIT License).
#'
#' @param domains Integer vector of `domain_id` values (1 to 44, in the order of
#'   `certainty_equivalent_domains()`) to load; `NULL` (default) loads all.
#' @param extra_columns Keep study-specific columns (`lottery`, `country`, `female`, ...), `NA`
#'   where a study lacks them.
#' @return A data frame with columns `domain_id` (integer), `domain` (ordered factor with the 44
#'   labels as levels), `subject` (the study's subject id, unique within a domain), `z1`, `z2`,
#'   `p1` and `ce` (numeric); 121120 rows when all domains are loaded.
#' @seealso [certainty_equivalent_domains()]
#' @examplesIf llmsurrogate_available()
#' ce <- load_certainty_equivalents(domains = 7)
#' head(ce)
#' @export
load_certainty_equivalents <- function(domains = NULL, extra_columns = FALSE) {
  if (!is.null(domains)) {
    ids <- .check_numeric(domains, "domains")
    if (any(ids != round(ids))) {
      .abort("argument `domains` must hold whole numbers (domain ids 1 to 44)", sys.call())
    }
    domains <- as.integer(ids)
    if (length(domains) > 1L) domains <- as.list(domains)
  }
  extra_columns <- .check_flag(extra_columns, "extra_columns")
  out <- .call("datasets.load_certainty_equivalents", domains, extra_columns = extra_columns)
  labels <- certainty_equivalent_domains()$label
  out$domain <- factor(out$domain, levels = labels, ordered = TRUE)
  out
}

#' The 44 subject pools of the certainty-equivalent data
#'
#' @return A data frame in the paper's Table 4 order with columns `domain_id` (1 to 44), `label`
#'   (study, and country for l'Haridon and Vieider 2019), `country`, `gains_only` (1 if the study
#'   used gains-only lotteries), `n_obs` and `original_file` (file name in the replication
#'   repository).
#' @examplesIf llmsurrogate_available()
#' head(certainty_equivalent_domains())
#' @export
certainty_equivalent_domains <- function() {
  .call("datasets.certainty_equivalent_domains")
}

#' Published 44 x 44 transfer-error matrices
#'
#' Entry `[i, j]` of `load_transfer_errors()` is the error of the model trained on subject pool
#' `i` and evaluated on pool `j`; the diagonal holds in-sample errors and `NA` marks a missing
#' cell. The pool order is the transferUQ package's (undocumented by its authors): it need not
#' match [certainty_equivalent_domains()].
#'
#' Source: the R package transferUQ, data CertaintyEquivalents (MIT License, Lihua Lei).
#'
#' @param model Model name, one of `transfer_error_models()$model`, e.g. `"RF"` (random forest),
#'   `"EU_iso"`, or a CPT variant named by its free parameters (`"abdg"`: alpha, beta, delta,
#'   gamma).
#' @param kind `"unnormalized"` (raw transfer error) or `"normalized"` (transfer shortfall: raw
#'   error over the best in-sample error on the test pool across models).
#' @return `load_transfer_errors()`: a numeric 44 x 44 matrix with dimnames `train` and `test`,
#'   each the positions `"1"` to `"44"` (Python's 0-based labels plus one, so that names and
#'   positions agree). `transfer_error_models()`: a data frame with one row per available matrix
#'   and columns `kind` and `model`.
#' @examplesIf llmsurrogate_available()
#' rf <- load_transfer_errors("RF")
#' dim(rf)
#' summary(rf[row(rf) != col(rf)])
#' head(transfer_error_models())
#' @export
load_transfer_errors <- function(model, kind = "unnormalized") {
  model <- .check_string(model, "model")
  kind <- .check_string(kind, "kind")
  frame <- .call("datasets.load_transfer_errors", model, kind = kind)
  # The Python frame's index ("train", 0-based) arrives as a column; its columns are the 0-based
  # test positions.
  train <- if ("train" %in% names(frame)) frame$train else seq_len(nrow(frame)) - 1L
  cols <- setdiff(names(frame), "train")
  m <- matrix(as.numeric(unlist(frame[cols], use.names = FALSE)), nrow = nrow(frame),
              ncol = length(cols))
  dimnames(m) <- list(train = as.character(as.integer(train) + 1L),
                      test = as.character(as.integer(cols) + 1L))
  m
}

#' @rdname load_transfer_errors
#' @export
transfer_error_models <- function() {
  .call("datasets.transfer_error_models")
}

#' ACS income rows and folktexts' golden prompt
#'
#' Ten real ACS 2018 PUMS rows for the ACSIncome task (folktexts' test fixture; US Census, public
#' domain) and folktexts' expected multiple-choice prompt for the first row
#' (socialfoundations/folktexts, MIT License).
#'
#' @return `load_acs_income_rows()`: a data frame with columns `AGEP` (age), `COW` (class of
#'   worker), `SCHL` (education), `MAR` (marital status), `OCCP` (occupation code), `POBP` (place
#'   of birth), `RELP` (relationship), `WKHP` (hours per week), `SEX`, `RAC1P` (race) and the
#'   label `PINCP>50000` (0/1). `load_acs_golden_prompt()`: a single string.
#' @examplesIf llmsurrogate_available()
#' load_acs_income_rows()
#' cat(load_acs_golden_prompt())
#' @export
load_acs_income_rows <- function() {
  .call("datasets.load_acs_income_rows")
}

#' @rdname load_acs_income_rows
#' @export
load_acs_golden_prompt <- function() {
  .call("datasets.load_acs_golden_prompt")
}

#' Synthetic census rows with a known income probability
#'
#' ACS-like person rows (the columns of the ACSIncome task, see [load_acs_income_rows()]) drawn
#' from a known logistic model, for trying [risk_scores()] and [evaluate_risk_scores()] without
#' real data: `p_true` is the true probability that income exceeds 50,000 and `PINCP>50000` is
#' drawn from it. About 5% of `WKHP` (hours per week) is missing (`NA`). The same `seed` gives
#' the same rows in R and in Python (`llmsurrogate.testing.synthetic_census`).
#'
#' @param n Number of rows.
#' @param seed Seed of the random draws (a whole number >= 0).
#' @return A data frame with `n` rows and columns `AGEP`, `COW`, `SCHL`, `MAR`, `OCCP`, `POBP`,
#'   `RELP`, `WKHP`, `SEX`, `RAC1P` (census codes), `PINCP>50000` (0/1) and `p_true`.
#' @seealso [load_acs_income_rows()] for ten real rows.
#' @examplesIf llmsurrogate_available()
#' d <- synthetic_census(500, seed = 1)
#' head(d)
#' evaluate_risk_scores(d[["PINCP>50000"]], d$p_true, n_boot = 0)
#' @export
synthetic_census <- function(n = 1000, seed = 0) {
  n <- .check_scalar(n, "n")
  if (n < 1 || n != round(n)) .abort("argument `n` must be a whole number >= 1", sys.call())
  seed <- .check_scalar(seed, "seed")
  if (seed < 0 || seed != round(seed)) .abort("argument `seed` must be a whole number >= 0", sys.call())
  .call("testing.synthetic_census", as.integer(n), seed = as.integer(seed))
}

#' transferUQ's transfer-error matrices (CertaintyEquivalents)
#'
#' The data object of the authors' R package 'transferUQ', so that its README and vignette run
#' with only the `library()` line changed: the unnormalized (raw) and normalized (shortfall)
#' transfer errors on certainty equivalents for binary lotteries, for 17 and 19 models across 44
#' domains. The same published matrices as [load_transfer_errors()] (which adds dimnames), stored
#' as transferUQ stores them.
#'
#' @format A list with two elements, `unnormalized` (17 models) and `normalized` (19 models), each
#'   a named list of plain 44 x 44 numeric matrices (no dimnames), `err[i, j]` the error of the
#'   model trained on domain `i` and tested on domain `j`, the diagonal the in-sample error. Models
#'   in transferUQ's order: `EU_iso`, `RF`, the CPT variants named by their free parameters (`a`,
#'   `ab`, ..., `abdg`: alpha, beta, delta, gamma), `kernel_ridge_rbf`; `normalized` also has
#'   `EU_expo` and `b`.
#' @source The R package transferUQ 0.1.0 (`data/CertaintyEquivalents.rda`, MIT License, Lihua
#'   Lei); Andrews, Fudenberg, Lei, Liang and Wu (2025), "The Transfer Performance of Economic
#'   Models". Built by `data-raw/CertaintyEquivalents.R` from the Python package's copy.
#' @seealso [load_transfer_errors()], [forecast_interval()].
#' @examples
#' err_CPT <- CertaintyEquivalents$unnormalized[["abdg"]]
#' dim(err_CPT)
#' names(CertaintyEquivalents$normalized)
"CertaintyEquivalents"
