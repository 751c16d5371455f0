# Fixed-effects OLS (llmsurrogate.fe): feols() and etable(), with S3 methods for the fits.

# A formula (or a string in pyfixest's syntax) as one line of text.
.formula_text <- function(formula, call) {
  if (inherits(formula, "formula")) {
    return(paste(trimws(deparse(formula, width.cutoff = 500L)), collapse = " "))
  }
  if (is.character(formula) && length(formula) == 1L && !is.na(formula)) {
    return(formula)
  }
  .abort(sprintf(paste("argument `formula` must be a formula such as y ~ x1 + x1:x2 | firm + date, or that",
                       "formula as a string; got %s"), .r_type(formula)), call)
}

# The names in a formula's text: R's all.vars() where R parses the text (names in backticks
# whole, no function names or argument values), else anything that looks like a name.
.formula_names <- function(text) {
  e <- .formula_lang(text)
  if (!is.null(e)) return(all.vars(e))
  found <- regmatches(text, gregexpr("[A-Za-z_.][A-Za-z0-9_.]*", text))[[1]]
  unique(found)
}

# A formula's text as R parses it (a call; never evaluated), or NULL where R cannot parse it.
.formula_lang <- function(text) {
  tryCatch(str2lang(text), error = function(e) NULL)
}

# `column` of `data` named by argument `arg`, or an error with a suggestion.
.check_columns <- function(cols, data, arg, call) {
  missing <- setdiff(cols, names(data))
  if (length(missing)) {
    hint <- agrep(missing[1], names(data), value = TRUE, max.distance = 0.2)
    extra <- if (length(hint)) sprintf("; did you mean `%s`?", hint[1]) else ""
    .abort(sprintf("argument `%s`: column `%s` is not in `data`%s", arg, missing[1], extra), call)
  }
  invisible(cols)
}

# `vcov` as the Python side takes it: "iid", "hetero", "HC2", "HC3", or list(CRV1 = "a" / "a+b");
# the cluster columns in attribute "clusters". `fe` names the formula's fixed effects (fixest's
# vcov = "cluster" clusters by the first, "twoway" by the first two).
.vcov_arg <- function(vcov, call, fe = character()) {
  help <- paste('argument `vcov` must be "iid", "hetero" (or "HC1"), "HC2", "HC3", "cluster" (by the first fixed',
                'effect), "twoway" (by the first two), list(CRV1 = "date"), list(CRV1 = c("firm", "date")) or a',
                'one-sided formula such as ~date or ~firm + date')
  clusters <- NULL
  if (is.null(vcov)) {
    return(structure("iid", clusters = character()))
  }
  if (inherits(vcov, "formula")) {
    if (length(vcov) != 2L) .abort(help, call)
    clusters <- all.vars(vcov)
  } else if (is.character(vcov) && length(vcov) == 1L && !is.na(vcov) && is.null(names(vcov))) {
    key <- .vcov_spellings[tolower(vcov)]
    if (is.na(key)) {
      if (tolower(vcov) %in% c("nw", "newey_west", "dk", "driscoll_kraay", "conley")) {
        .abort(sprintf(paste('argument `vcov`: "%s" (fixest\'s panel and spatial variances) is not supported; use',
                             '"iid", "hetero" or clustered errors (vcov = ~firm)'), vcov), call)
      }
      .abort(sprintf("%s; got \"%s\"", help, vcov), call)
    }
    if (key %in% c("cluster", "twoway")) {
      k <- if (key == "cluster") 1L else 2L
      if (length(fe) < k || any(grepl("^", fe[seq_len(k)], fixed = TRUE))) {
        .abort(sprintf(paste('argument `vcov`: "%s" clusters by the formula\'s first %s; this formula has %s:',
                             "name the cluster columns, e.g. cluster = ~firm"), vcov,
                       if (k == 1L) "fixed effect" else "two fixed effects",
                       if (length(fe)) sprintf("%s", paste(fe, collapse = " + ")) else "none"), call)
      }
      clusters <- fe[seq_len(k)]
    } else {
      return(structure(key[[1]], clusters = character()))
    }
  } else if (is.list(vcov) && length(vcov) == 1L && identical(names(vcov), "CRV1")) {
    spec <- vcov[[1]]
    if (inherits(spec, "formula")) {
      clusters <- all.vars(spec)
    } else if (is.character(spec) && length(spec) >= 1L && !anyNA(spec)) {
      clusters <- trimws(unlist(strsplit(spec, "+", fixed = TRUE)))
    } else {
      .abort(help, call)
    }
  } else {
    .abort(help, call)
  }
  clusters <- clusters[nzchar(clusters)]
  if (length(clusters) < 1L || length(clusters) > 2L || anyDuplicated(clusters)) {
    .abort(sprintf("argument `vcov`: one or two different cluster columns; got %s",
                   paste(clusters, collapse = ", ")), call)
  }
  structure(list(CRV1 = paste(clusters, collapse = "+")), clusters = clusters)
}

# The variance types by their spellings in llmsurrogate, fixest (vcov = , se = ) and sandwich.
.vcov_spellings <- c(iid = "iid", standard = "iid", const = "iid", hetero = "hetero", hc1 = "HC1", white = "hetero",
                     hc2 = "HC2", hc3 = "HC3", cluster = "cluster", twoway = "twoway")

# fixest's `se` and `cluster` arguments as a `vcov`: se = "hetero" is vcov = "hetero", cluster = ~firm
# (or "firm", c("firm", "date")) is vcov = ~firm, and se = "cluster" with `cluster` clusters by it.
.fixest_vcov <- function(vcov, vcov_given, se, cluster, call) {
  if (!is.null(cluster)) {
    if (inherits(cluster, "formula") && length(cluster) == 2L) {
      cols <- all.vars(cluster)
    } else if (is.character(cluster) && length(cluster) >= 1L && !anyNA(cluster)) {
      cols <- trimws(unlist(strsplit(cluster, "+", fixed = TRUE)))
    } else {
      .abort(sprintf(paste("argument `cluster` must be a one-sided formula such as ~firm or ~firm + date, or the",
                           "column names; got %s"), .r_type(cluster)), call)
    }
  }
  if (!is.null(se)) {
    if (vcov_given) .abort("give the standard errors by `vcov` or by fixest's `se`, not both", call)
    if (!is.character(se) || length(se) != 1L || is.na(se) || !tolower(se) %in% names(.vcov_spellings)) {
      .abort(sprintf('argument `se` (fixest\'s) must be one of "iid", "standard", "hetero", "cluster" or "twoway"; got %s',
                     if (is.character(se) && length(se) == 1L) sprintf('"%s"', se) else .r_type(se)), call)
    }
    vcov <- se
    vcov_given <- TRUE
  }
  if (is.null(cluster)) return(vcov)
  key <- if (is.character(vcov) && length(vcov) == 1L && !is.na(vcov)) tolower(vcov) else ""
  if (!vcov_given || key %in% c("cluster", "twoway")) {
    return(list(CRV1 = cols))
  }
  .abort(sprintf(paste('argument `cluster` clusters the standard errors, which `%s` sets otherwise; give one of',
                       'them (or vcov = "cluster" with `cluster`)'), if (is.null(se)) "vcov" else "se"), call)
}

# Arguments of fixest::feols() that feols() names otherwise or does not take, with what to use.
.fixest_arguments <- c(
  fml = "use `formula`", fixef.rm = "use `fixef_rm`", nthreads = "use `n_jobs`", cores = "use `n_jobs`",
  split = "fit each subsample with feols(y ~ x, data[rows, ])", fsplit = "fit each subsample with feols(y ~ x, data[rows, ])",
  subset = "give the rows as data[rows, ]",
  panel.id = "panel variances are not supported; cluster the standard errors (cluster = ~firm)",
  offset = "subtract the offset from the outcome first",
  fixef.tol = "the demeaning tolerance is fixed from R", fixef.iter = "the demeaning iterations are fixed from R",
  collin.tol = "the collinearity tolerance is fixed from R",
  lean = "the fit keeps no data in R", mem.clean = "the fit keeps no data in R",
  notes = "wrap the call in suppressWarnings()", warn = "wrap the call in suppressWarnings()",
  demeaned = "model.matrix() gives the regressors", only.coef = "use coef(feols(...))",
  weights.type = "`weights` are analytic weights; frequency weights are not supported from R"
)

# feols()'s own arguments, for the message on an unknown one.
.feols_arguments <- c("formula", "data", "vcov", "weights", "fixef_rm", "n_jobs", "se", "cluster", "ssc")

# An error for arguments of feols() it does not take (`dots`: match.call()'s `...`): what to use
# instead where fixest has the argument, else feols()'s arguments and the closest one.
.check_feols_dots <- function(dots, call) {
  if (!length(dots)) return(invisible())
  nms <- names(dots)
  if (is.null(nms)) nms <- rep("", length(dots))
  if (!all(nzchar(nms))) {
    .abort(sprintf(paste("feols() takes %d arguments by position (formula, data, vcov, weights, fixef_rm, n_jobs);",
                         "give the others by name: %s"), 6L, paste(.feols_arguments, collapse = ", ")), call)
  }
  name <- nms[1]
  use <- .fixest_arguments[name]
  if (!is.na(use)) {
    .abort(sprintf("argument `%s` (fixest's) is not an argument of feols(): %s", name, use), call)
  }
  hint <- agrep(name, .feols_arguments, value = TRUE, max.distance = 0.25)
  .abort(sprintf("argument `%s` is not an argument of feols()%s; its arguments are %s", name,
                 if (length(hint)) sprintf(" (did you mean `%s`?)", hint[1]) else "",
                 paste(.feols_arguments, collapse = ", ")), call)
}

# The fixed effects of a formula's text, as written (`firm`, `year^month`).
.formula_fixef <- function(text) {
  parts <- strsplit(text, "|", fixed = TRUE)[[1]]
  if (length(parts) < 2L) return(character())
  fe <- gsub("`", "", trimws(strsplit(parts[2], "+", fixed = TRUE)[[1]]), fixed = TRUE)
  fe[nzchar(fe) & fe != "0"]
}

# The variables of a formula's text (before `|`) as R's terms() spells them ("I(x^2)",
# "factor(g)", "poly(x, 2)"), for the coefficient names (llmsurrogate.rbridge.fe.r_term_names).
.formula_variables <- function(text) {
  lhs_rhs <- strsplit(text, "|", fixed = TRUE)[[1]][1]
  tt <- tryCatch(stats::terms(stats::as.formula(lhs_rhs, env = baseenv())), error = function(e) NULL)
  if (is.null(tt)) return(character())
  vapply(as.list(attr(tt, "variables"))[-1],  # a name in backticks as lm() names its coefficient: `my var`
         function(v) paste(deparse(v, width.cutoff = 500L, backtick = TRUE), collapse = " "), character(1))
}

# The formula's text with fixest's powers: a column to a whole number among the regressors
# (`x^2`, not inside a function) is its power, I(x^2), as fixest reads it (and names it) where
# lm() would read the crossing x; `^` between other terms there (`a^b`, `(a + b)^2`) is an error
# (fixest's: `^` interacts fixed effects after `|`). The text as it was where R cannot parse it.
.fixest_powers <- function(text, call) {
  e <- .formula_lang(text)
  if (!is.call(e) || !identical(e[[1]], as.name("~"))) return(text)
  rewrite <- function(x) {
    if (!is.call(x)) return(x)
    fn <- x[[1]]
    if (identical(fn, as.name("^"))) {
      k <- x[[3]]
      if (is.name(x[[2]]) && is.numeric(k) && length(k) == 1L && !is.na(k) && k == round(k)) return(call("I", x))
      .abort(sprintf(paste("argument `formula`: `%s`: `^` among the regressors is a power of a column (x^2, which",
                           "is I(x^2)); write other powers as I(...), interactions with `:` or `*`, and interacted",
                           "fixed effects after `|` (firm^year)"), paste(deparse(x, width.cutoff = 500L), collapse = " ")),
             call)
    }
    if (is.name(fn) && as.character(fn) %in% c("+", "-", "*", ":", "(", "|")) {
      for (j in seq_along(x)[-1]) {
        if (identical(fn, as.name("|")) && j == 3L) next  # the fixed effects: a^b interacts them
        x[[j]] <- rewrite(x[[j]])
      }
    }
    x
  }
  out <- e
  out[[length(e)]] <- rewrite(e[[length(e)]])  # the regressors (and fixed effects); the outcome as written
  if (identical(out, e)) text else paste(trimws(deparse(out, width.cutoff = 500L)), collapse = " ")
}

# The columns that factor(), C() or i() encode among the regressors of a formula's text (their
# first argument, where it is a name), named by the function.
.formula_categorical <- function(text) {
  e <- .formula_lang(strsplit(text, "|", fixed = TRUE)[[1]][1])
  if (is.call(e) && identical(e[[1]], as.name("~"))) e <- e[[length(e)]] else return(character())
  found <- character()
  walk <- function(x) {
    if (!is.call(x)) return(invisible())
    if (is.name(x[[1]]) && as.character(x[[1]]) %in% c("factor", "C", "i") && length(x) >= 2L && is.name(x[[2]])) {
      found <<- c(found, stats::setNames(as.character(x[[2]]), as.character(x[[1]])))
    }
    for (a in as.list(x)[-1]) walk(a)
  }
  walk(e)
  found[!duplicated(paste(names(found), found))]
}

# R's levels of the columns `cols` of `data` that factor()/C()/i() encode, for Python
# (llmsurrogate.rbridge.fe._r_levels): a factor's levels in its order (relevel() kept; lm() drops
# those unused) and a character column's as factor() sorts them (in the session's locale, as
# lm() does) as `order`; for numbers, logicals and Dates (whose order Python's is) the values with
# their labels as factor() writes them ("-2" for -2.0, "TRUE"), for the coefficient names.
.feols_levels <- function(data, cols, call) {
  out <- list()
  poly <- cols[names(cols) %in% c("factor", "C")]
  for (col in intersect(poly, names(data))) {
    if (is.ordered(data[[col]])) {  # lm() would fit polynomial contrasts (contr.poly), not dummies
      .abort(sprintf(paste("argument `formula`: `%s` is an ordered factor, which lm() encodes by polynomial",
                           "contrasts (%s(%s).L, .Q, ...) where feols() makes a dummy per level; for the dummies",
                           "make it unordered first (data$%s <- factor(data$%s, ordered = FALSE)) or use i(%s)"),
                     col, names(poly)[poly == col][1], col, col, col, col), call)
    }
  }
  for (col in intersect(unique(cols), names(data))) {
    x <- data[[col]]
    if (is.factor(x) || is.character(x)) {
      out[[col]] <- list(order = as.list(if (is.factor(x)) levels(x) else levels(factor(x))))
    } else if ((is.numeric(x) && !is.object(x)) || is.logical(x) || inherits(x, "Date")) {
      u <- sort(unique(x[!is.na(x)]))
      if (length(u)) {
        out[[col]] <- list(values = .vector_arg(u, col, call), labels = as.list(as.character(u)))
      }
    }
  }
  out
}

# How a fixed-effect column crosses to Python, so that a level is found in `newdata` whatever type
# its column has there, and fixef() names the levels as R writes them (as.character()): numbers as
# doubles (named back from Python's "2001.0"), logicals as "TRUE"/"FALSE", factors and characters
# as their labels, Dates as dates (text in `newdata` read as "%Y-%m-%d", NA where it is no date: Python
# matches a level by value within its type, docs/methods/fe.md §3); other types as they are.
.fe_kind <- function(x) {
  if (is.factor(x) || is.character(x) || is.logical(x)) return("text")
  if (inherits(x, "Date")) return("date")
  if (!is.object(x) && is.numeric(x)) return("number")
  "other"
}

# Column `x` of the fit's data (`kind` NULL) or of `newdata` (`kind` the fit's) as it crosses.
.fe_values <- function(x, kind = .fe_kind(x)) {
  switch(kind,
    number = if (is.numeric(x) && !is.object(x)) as.double(x) else suppressWarnings(as.double(as.character(x))),
    text = if (is.character(x)) x else as.character(x),
    date = if (inherits(x, "Date")) x else as.Date(as.character(x), format = "%Y-%m-%d"),
    x)
}

# The columns `cols` of `data` as feols() sends them, fixed-effect columns (`kinds`: their kinds,
# named by column) as .fe_values() makes them.
.feols_columns <- function(data, cols, kinds) {
  out <- data[cols]
  for (col in intersect(names(kinds), cols)) out[[col]] <- .fe_values(out[[col]], kinds[[col]])
  out
}

# Python's level names of fixed effect `fe` (`firm`, `year^month`) in R's spelling: the parts from
# numeric columns as as.character() writes the numbers ("2001", not "2001.0").
.fe_level_names <- function(labels, fe, kinds) {
  cols <- strsplit(fe, "^", fixed = TRUE)[[1]]
  numeric <- kinds[cols] %in% "number"
  if (!any(numeric)) return(labels)
  parts <- strsplit(labels, "^", fixed = TRUE)
  vapply(parts, function(p) {
    if (length(p) != length(cols)) return(paste(p, collapse = "^"))
    p[numeric] <- as.character(as.numeric(p[numeric]))
    paste(p, collapse = "^")
  }, character(1))
}

# A FeolsResult from Python as an R fit: the result list (see .as_result()) plus `coefficients`
# and the variance matrix with the terms as names.
.as_feols <- function(res) {
  terms <- as.character(unlist(res$terms))
  terms[terms == "Intercept"] <- "(Intercept)"  # R's name (the fits of lookahead_test() come in Python's)
  res$terms <- terms
  if (is.data.frame(res$table)) res$table$term[res$table$term == "Intercept"] <- "(Intercept)"
  res$coefficients <- stats::setNames(as.numeric(res$beta), terms)
  v <- matrix(as.numeric(res$vcov_matrix), length(terms), length(terms), dimnames = list(terms, terms))
  res$vcov_matrix <- v
  class(res) <- unique(c("llmsurrogate_feols", class(res)))
  res
}

#' Fixed-effects OLS
#'
#' OLS with absorbed fixed effects, in the formula syntax of fixest (and pyfixest): numeric
#' regressors, `:` and `*` interactions, `factor(g)` (or pyfixest's `C(g)`, `i(g, ref = )`) dummies, `log()`,
#' `exp()`, `sqrt()`, `I(x^2)`, `poly(x, 2)`, `- 1`, and after `|` any number of fixed effects (`a^b` for an interacted
#' one). Standard errors `"iid"`, `"hetero"` (HC1) or clustered (CRV1, one- or two-way), with
#' fixest's small-sample corrections as pyfixest applies them by default
#' (docs/methods/lookahead.md §5.3.1). The demeaning runs in Rust.
#'
#' Column names may be R's with dots (`x.1`, `firm.id`) or names R quotes in backquotes (a column `my var`),
#' everywhere a name may stand (inside `log()`, `factor()`, `poly()`, ... and after `|`). As in
#' fixest, `x^2` among the regressors is the square, `I(x^2)`, and named so (where `lm()` would
#' read it as `x`); `^` between columns there is an error (after `|` it interacts fixed effects).
#' `factor(g)` and `i(g)` order the levels as `lm()`'s `factor()` (and fixest's `i()`): a factor's
#' levels in its order (`relevel()` kept), numbers as numbers, text as `sort()` sorts it in the
#' session's locale, levels without a row used dropped; the first is the reference, and the
#' names are `lm()`'s (`factor(rel)-2`, `factor(b)TRUE`) and fixest's for `i()` (`rel::-6:treat`).
#' [update()][update.llmsurrogate_feols()] changes a fit's formula as fixest's `update()` does
#' (`. ~ . + z`, `. ~ . | . + date`).
#'
#' Rows with a missing value (`NA`) in any column used (outcome, regressors, fixed effects,
#' cluster columns, weights) are dropped, as are rows of weight 0 and, with `fixef_rm =
#' "singleton"`, rows alone in a fixed-effect level; regressors collinear with the others or the
#' fixed effects are dropped. Each drop is counted in the fit (`n_dropped_nan`,
#' `n_dropped_singletons`, `n_dropped_zero_weight`, `dropped_collinear`) and reported by a warning
#' of class `"llmsurrogate_warning"`.
#'
#' Fixed-effect and cluster columns may be factors, characters, numbers, logicals or Dates
#' (their distinct values are the levels, named as `as.character()` writes them); the outcome and
#' regressors must be numeric or logical, or encoded by `factor()`. Tibbles work as data frames.
#' The intercept (a model without fixed effects) is `(Intercept)` and the dummy of level `b` of
#' `factor(g)` is `factor(g)b`, as `lm()` names them.
#'
#' fixest's spellings of the standard errors work too: `vcov = "hetero"`, `"cluster"` (by the
#' first fixed effect), `"twoway"` (by the first two), `se = "standard"`/`"hetero"`/`"cluster"`,
#' and `cluster = ~firm` (or `"firm"`); an argument feols() does not take is an error that says
#' what to use.
#'
#' How the standard errors compare with R's (`lm()` with the fixed effects as `factor()` dummies;
#' `K` its number of coefficients, `n` of rows): `"iid"` is `vcov(lm)`; `"hetero"` is
#' `sandwich::vcovHC(type = "HC1")` and `estimatr::lm_robust(se_type = "HC1")`; a one-way cluster
#' is `sandwich::vcovCL(type = "HC1")` and `lm_robust(se_type = "stata")`, except where a fixed
#' effect is nested in the cluster variable (fixest counts its levels as 1 in `K`: the variance is
#' theirs times `(n - K) / (n - K + L - 1)` for a nested fixed effect of `L` levels). `"HC2"` and
#' `"HC3"` follow pyfixest: sandwich's `vcovHC(type = "HC2")` (`"HC3"`) and estimatr's times
#' `n / (n - K)` (2.6% more variance for n = 80 and K = 2); `ssc = ssc(adj = FALSE, cluster.adj =
#' FALSE)` gives sandwich's and estimatr's values (see [ssc()] for every factor). Two-way
#' clustering multiplies each of the three terms by `G_min / (G_min - 1)` (fixest's), where
#' `vcovCL()` uses each term's own `G`.
#'
#' @param formula A formula such as `y ~ x1 + x1:x2 | firm + date`, or the same as a string.
#' @param data A data frame (or tibble).
#' @param vcov `"iid"` (default), `"hetero"` (HC1), `"HC2"`, `"HC3"` (both without fixed
#'   effects; sandwich's times `n / (n - K)` unless `ssc = ssc(adj = FALSE, cluster.adj = FALSE)`,
#'   see Details), `"cluster"`, `"twoway"`, `list(CRV1 = "date")`, `list(CRV1 = c("firm", "date"))`
#'   (two-way; also `"firm+date"`), or a one-sided formula `~date` / `~firm + date` for clustered
#'   errors.
#' @param weights `NULL`, the name of a column of `data` (or `~w`), or a numeric vector of
#'   `nrow(data)` non-negative analytic weights.
#' @param fixef_rm `"singleton"` (default, as pyfixest and fixest) or `"none"`.
#' @param n_jobs Threads of the demeaning (`NULL`: all cores or `LLMSURROGATE_NUM_THREADS`).
#' @param se,cluster fixest's spellings: `se` one of `"iid"` (`"standard"`), `"hetero"`,
#'   `"cluster"`, `"twoway"` (instead of `vcov`); `cluster` the cluster columns (`~firm`,
#'   `~firm + date`, `"firm"`).
#' @param ... Nothing: an argument feols() does not take (fixest's `split`, `fixef.rm`, ...) is
#'   an error of class `"llmsurrogate_error"` saying what to use.
#' @return An `"llmsurrogate_feols"` fit: a list with `coefficients`, `vcov_matrix`, `terms`,
#'   `nobs`, `r2`, `r2_within`, `rmse`, `df_t` (the t tests' degrees of freedom), `df_k`,
#'   `df_resid`, `fe_levels`, `n_clusters`, the drop counts, `table` (one row per term: `term`,
#'   `estimate`, `std_error`, `statistic`, `p_value`, `conf_low`, `conf_high`) and `summary` (the
#'   report). Methods: `print()`, `summary()`, `coef()`, `confint()`, `vcov()`, `nobs()`,
#'   `fitted()`, `residuals()` (`resid()`), `predict()`, `df.residual()`, [fixef()],
#'   `model.matrix()`, `weights()`, `deviance()`, `sigma()`, `logLik()` (so `AIC()`, `BIC()`),
#'   `formula()`, `terms()`, `getCall()`,
#'   `variable.names()`, `case.names()`, `na.action()`, `as.data.frame()`, and with 'broom' or
#'   'generics' `tidy()` and `glance()`; [etable()] puts several side by side. `fitted()`,
#'   `residuals()` and `model.matrix()` are named by the row names of the rows used, as `lm()`'s.
#' @seealso [etable()], [fixef()], [update.llmsurrogate_feols()], [lookahead_test()]
#' @importFrom stats coef confint nobs quantile vcov fitted residuals predict df.residual model.matrix weights
#' @importFrom stats deviance sigma formula terms variable.names case.names na.action model.frame logLik
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' d <- data.frame(firm = factor(sample(letters[1:10], 300, TRUE)),
#'                 date = as.Date("2020-01-01") + sample(0:14, 300, TRUE), x = rnorm(300))
#' d$y <- 2 * d$x + as.integer(d$firm) / 10 + rnorm(300)
#' fit <- feols(y ~ x | firm + date, d, cluster = ~date)
#' fit
#' coef(fit)
#' confint(fit)
#' head(resid(fit))
#' fixef(fit)$firm
#' predict(fit, newdata = data.frame(x = 1, firm = c("a", "z"), date = as.Date("2020-01-03")))
#' @export
feols <- function(formula, data, vcov = "iid", weights = NULL, fixef_rm = "singleton", n_jobs = NULL,
                  se = NULL, cluster = NULL, ..., ssc = NULL) {
  call <- sys.call()
  .check_feols_dots(match.call(expand.dots = FALSE)$..., call)
  .ssc_arg(ssc, call)  # checked before the fit
  text <- .formula_text(formula, call)  # its own statement: an error inside a promise would be re-run
  text <- .fixest_powers(text, call)
  if (!is.data.frame(data)) {
    .abort(sprintf("argument `data` must be a data frame, not %s", class(data)[1]), call)
  }
  fe <- .formula_fixef(text)
  vc <- .vcov_arg(.fixest_vcov(vcov, !missing(vcov), se, cluster, call), call, fe)
  clusters <- attr(vc, "clusters")
  attr(vc, "clusters") <- NULL
  .check_columns(clusters, data, if (is.null(cluster)) "vcov" else "cluster", call)
  fixef_rm <- .check_string(fixef_rm, "fixef_rm", call)
  n_jobs <- .check_n_jobs(n_jobs, call)
  used <- intersect(.formula_names(text), names(data))
  # names that are not columns: said here, with a suggestion, where R parses the formula (all.vars()
  # are its columns); a formula R cannot parse goes to Python, whose parser names what it refuses
  if (!is.null(.formula_lang(text)) || !grepl("[^A-Za-z0-9_. ~+:*^|-]", text)) {
    missing <- setdiff(.formula_names(text), names(data))
    if (length(missing)) .check_columns(missing, data, "formula", call)
  }
  if (inherits(weights, "formula") && length(weights) == 2L && length(all.vars(weights)) == 1L) {
    weights <- all.vars(weights)  # fixest's weights = ~w
  }
  w <- NULL
  if (!is.null(weights)) {
    if (is.character(weights) && length(weights) == 1L && !is.na(weights)) {
      .check_columns(weights, data, "weights", call)
      used <- c(used, weights)
      w <- weights
    } else if (is.numeric(weights) || is.logical(weights)) {
      if (length(weights) != nrow(data)) {
        .abort(sprintf("argument `weights` has %d values for %d rows of `data`", length(weights), nrow(data)), call)
      }
      w <- .vector_arg(as.numeric(weights), "weights", call)
    } else {
      .abort(sprintf("argument `weights` must be NULL, a column name, ~column or a numeric vector; got %s",
                     .r_type(weights)), call)
    }
  }
  # the columns only a fixed effect reads go as .fe_values() makes them (R's names in fixef())
  fe_cols <- setdiff(intersect(unlist(strsplit(fe, "^", fixed = TRUE)), names(data)),
                     c(.formula_names(strsplit(text, "|", fixed = TRUE)[[1]][1]), if (is.character(w)) w))
  kinds <- vapply(data[fe_cols], .fe_kind, character(1))
  cols <- .frame_arg(.feols_columns(data, unique(c(used, clusters)), kinds), call = call)
  out <- .call_in(call, "fe.feols", text, cols, vc, w, fixef_rm = fixef_rm, n_jobs = n_jobs, handle = TRUE,
                  r_variables = as.list(.formula_variables(text)),
                  r_levels = .feols_levels(data, .formula_categorical(text), call))
  res <- .as_feols(out$fit)
  res$call <- match.call()  # for getCall() and update()
  outcome <- .formula_names(strsplit(text, "~", fixed = TRUE)[[1]][1])
  attr(res, "feols_data") <- list(py = out$handle, row_names = .row_names_info(data, 0L),
                                  newdata_columns = setdiff(intersect(.formula_names(text), names(data)), outcome),
                                  fe_kinds = kinds)
  if (!is.null(ssc)) res <- .feols_with_vcov(res, NULL, NULL, NULL, ssc, "feols()", parent.frame(), call)
  res
}

#' Re-estimate a fit from feols() with another formula or arguments
#'
#' As fixest's `update()`: each part of the formula `y ~ x | fe` is updated by
#' [stats::update.formula()]'s rules on its own. `. ~ . + z` adds the regressor `z` and keeps the
#' fixed effects; `. ~ . | . + date` adds the fixed effect `date`; `. ~ . - x | . - firm` removes
#' a regressor and a fixed effect; `. ~ . | 0` drops the fixed effects; a formula without `.` replaces
#' the fit's. Arguments of [feols()] given by name replace the fit's (`vcov = ~firm`; `weights =
#' NULL` removes them). The fit is re-estimated by its call (`getCall(fit)`) evaluated where
#' `update()` is called, as [stats::update()] and fixest do: the data and the other arguments are
#' found by the names the call gives them there (a data frame changed since is read as it is now).
#'
#' @param object A fit from [feols()].
#' @param formula. The changes to the formula, e.g. `. ~ . + z` or `. ~ . | . + date` (fixest's
#'   `fml.update` is accepted as its name too); missing: the fit's formula.
#' @param ... Arguments of [feols()] to change, by name.
#' @param evaluate `TRUE` (default) to re-estimate; `FALSE` returns the new call.
#' @return A fit from [feols()] (or, with `evaluate = FALSE`, its call).
#' @seealso [feols()]
#' @importFrom stats update
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' d <- data.frame(firm = sample(letters[1:5], 200, TRUE), date = sample(1:8, 200, TRUE),
#'                 x = rnorm(200), z = rnorm(200))
#' d$y <- d$x + 0.5 * d$z + rnorm(200)
#' fit <- feols(y ~ x | firm, d)
#' coef(update(fit, . ~ . + z))              # y ~ x + z | firm
#' coef(update(fit, . ~ . + z | . + date))   # y ~ x + z | firm + date
#' getCall(update(fit, . ~ . | 0, vcov = "hetero"))
#' @export
update.llmsurrogate_feols <- function(object, formula., ..., evaluate = TRUE) {
  call <- sys.call()
  fit_call <- object$call
  if (!is.call(fit_call)) {
    .abort("update() needs the fit's call, which this fit lacks (the regressions of lookahead_test() have none): call feols() again",
           call)
  }
  evaluate <- .check_flag(evaluate, "evaluate", call)
  extras <- match.call(expand.dots = FALSE)$...
  if (length(extras) && (is.null(names(extras)) || !all(nzchar(names(extras))))) {
    .abort("update(): give the arguments of feols() to change by name (e.g. vcov = ~firm)", call)
  }
  if ("fml.update" %in% names(extras)) {  # fixest's name of the formula's changes
    if (!missing(formula.)) .abort("update(): give the formula's changes once (`formula.` or fixest's `fml.update`)", call)
    formula. <- eval(extras[["fml.update"]], parent.frame())
    extras[["fml.update"]] <- NULL
  }
  if (!missing(formula.)) {
    fit_call$formula <- .feols_update_formula(object, formula., call)  # match.call() named it `formula`
  }
  for (nm in names(extras)) fit_call[[nm]] <- extras[[nm]]
  if (!evaluate) return(fit_call)
  eval(fit_call, parent.frame())
}

# The formula of fit `object` updated by `change` (update.llmsurrogate_feols()): the regressors'
# part by update.formula(), the fixed effects' part (kept where `change` has none) by
# update.formula() on the fixed effects as terms (a^b kept whole).
.feols_update_formula <- function(object, change, call) {
  if (!inherits(change, "formula")) {
    .abort(sprintf("argument `formula.` must be a formula such as . ~ . + z or . ~ . | . + date; got %s",
                   .r_type(change)), call)
  }
  old <- tryCatch(str2lang(object$formula), error = function(e) NULL)
  if (!is.call(old) || !identical(old[[1]], as.name("~"))) {
    .abort(sprintf(paste("update(): the fit's formula (%s) is not one R parses; give the new formula in full:",
                         "update(fit, y ~ x + z | firm)"), object$formula), call)
  }
  split <- function(f) {
    rhs <- f[[length(f)]]
    fe <- NULL
    if (is.call(rhs) && identical(rhs[[1]], as.name("|"))) {
      fe <- rhs[[3]]
      rhs <- rhs[[2]]
    }
    list(lhs = if (length(f) == 3L) f[[2]] else NULL, rhs = rhs, fe = fe)
  }
  as_formula <- function(lhs, rhs) {
    stats::as.formula(if (is.null(lhs)) call("~", rhs) else call("~", lhs, rhs), env = baseenv())
  }
  o <- split(old)
  n <- split(change)
  linear <- stats::update.formula(as_formula(o$lhs, o$rhs), as_formula(n$lhs, n$rhs))
  fe <- o$fe
  if (!is.null(n$fe)) {
    one <- function(x) paste(deparse(x, width.cutoff = 500L), collapse = " ")
    new_fe <- one(n$fe)
    if (new_fe %in% c("0", "1")) {
      fe <- NULL
    } else if (new_fe != ".") {
      hat <- function(x) stats::as.formula(paste("~", gsub("^", " %^% ", x, fixed = TRUE)), env = baseenv())
      upd <- stats::update.formula(hat(if (is.null(fe)) "1" else one(fe)), hat(new_fe))
      labels <- gsub(" %^% ", "^", attr(stats::terms(upd), "term.labels"), fixed = TRUE)
      fe <- if (length(labels)) str2lang(paste(labels, collapse = " + ")) else NULL
    }
  }
  rhs <- linear[[length(linear)]]
  if (!is.null(fe)) rhs <- call("|", rhs, fe)
  out <- if (length(linear) == 3L) call("~", linear[[2]], rhs) else call("~", rhs)
  stats::as.formula(out, env = environment(change))
}

# ---- the fit's data: methods that read the estimation sample (kept in Python) ------------------

# What the methods below need of a fit from feols(), or an error saying why it is not there.
.feols_data <- function(object, what, call) {
  info <- attr(object, "feols_data")
  if (is.null(info)) {
    .abort(sprintf(paste("%s needs a fit from feols(); this one keeps only its coefficients and variance (the",
                         "regressions of lookahead_test() are such fits): refit it with feols()"), what), call)
  }
  if (reticulate::py_is_null_xptr(info$py)) {
    .abort(sprintf(paste("%s needs the fit's estimation sample, which stays in Python and is gone (the fit was",
                         "saved and loaded, or Python restarted): refit it with feols()"), what), call)
  }
  info
}

# A numeric vector from the bridge (a list with NULL for NaN) as a double vector with NA.
.as_numbers <- function(x) as.numeric(.as_column(x))

# The row names of the estimation rows (positions `rows` in `data`), as lm() names its fitted values.
.feols_row_names <- function(info, rows) {
  rn <- info$row_names
  if (is.integer(rn) && length(rn) == 2L && is.na(rn[1])) as.character(rows) else as.character(rn[rows])
}

# A per-row result of the estimation rows (fe.<fn>: "fitted", "resid", "weights") named by row.
.feols_rows <- function(object, fn, what, call) {
  info <- .feols_data(object, what, call)
  values <- .as_numbers(.call_in(call, paste0("fe.", fn), info$py))
  rows <- .as_column(.call_in(call, "fe.obs_rows", info$py))
  stats::setNames(values, .feols_row_names(info, rows))
}

# ---- fixest's arguments of the methods: honoured, or an error naming them -----------------------

# The arguments in a method's `...`, unevaluated (their expressions, named as given).
.dots <- function(...) as.list(substitute(list(...)))[-1L]

# An error for an argument that a method of feols() fits does not take (`dots`: .dots(...) of the
# method, `what`: the method, `args`: its arguments), named by the argument, with the method's
# arguments and the closest one: no method ignores an argument.
.feols_no_dots <- function(dots, what, args, call) {
  if (!length(dots)) return(invisible())
  nms <- names(dots)
  if (is.null(nms)) nms <- rep("", length(dots))
  if (!nzchar(nms[1])) {
    .abort(sprintf("%s for feols() fits got an extra argument without a name (%s); its arguments are %s", what,
                   paste(deparse(dots[[1]], width.cutoff = 60L)[1], collapse = ""), paste(args, collapse = ", ")),
           call)
  }
  hint <- agrep(nms[1], args, value = TRUE, max.distance = 0.2)
  .abort(sprintf("argument `%s` is not an argument of %s for feols() fits%s; its arguments are %s", nms[1], what,
                 if (length(hint)) sprintf(" (did you mean `%s`?)", hint[1]) else "", paste(args, collapse = ", ")),
         call)
}

# One of `choices` (a single string), as fixest's `type` arguments, or an error naming `arg`.
.feols_choice <- function(x, choices, arg, call) {
  if (is.character(x) && length(x) == length(choices) && identical(x, choices)) return(choices[1])  # the default
  if (!is.character(x) || length(x) != 1L || is.na(x) || !x %in% choices) {
    quoted <- sprintf('"%s"', choices)
    .abort(sprintf("argument `%s` must be %s or %s; got %s", arg, paste(utils::head(quoted, -1L), collapse = ", "),
                   quoted[length(quoted)],
                   if (is.character(x) && length(x) == 1L) sprintf('"%s"', x) else .r_type(x)), call)
  }
  x
}

# Per-row values of the estimation rows as fixest's `na.rm = FALSE` gives them: one per row of the
# fit's data, NA for the rows not used, named by all the row names.
.feols_fill <- function(object, values, what, call) {
  info <- .feols_data(object, what, call)
  rows <- .as_column(.call_in(call, "fe.obs_rows", info$py))
  n <- as.integer(object$n_input)
  out <- stats::setNames(rep(NA_real_, n), .feols_row_names(info, seq_len(n)))
  out[rows] <- unname(values)
  out
}

#' @rdname feols
#' @param na.rm For `fitted()` and `residuals()`: `TRUE` (default) for the rows used only, `FALSE` for
#'   one value per row of `data` (`NA` for the rows dropped), as fixest.
#' @export
fitted.llmsurrogate_feols <- function(object, type = c("response", "link"), na.rm = TRUE, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "fitted()", c("object", "type", "na.rm"), call)
  .feols_choice(type, c("response", "link"), "type", call)  # the same for OLS
  na.rm <- .check_flag(na.rm, "na.rm", call)
  out <- .feols_rows(object, "fitted", "fitted()", call)
  if (na.rm) out else .feols_fill(object, out, "fitted()", call)
}

#' @rdname feols
#' @export
residuals.llmsurrogate_feols <- function(object, type = c("response", "deviance", "pearson", "working"), na.rm = TRUE,
                                         ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "residuals()", c("object", "type", "na.rm"), call)
  type <- .feols_choice(type, c("response", "deviance", "pearson", "working"), "type", call)
  if (type == "working") {
    .abort(paste('argument `type`: "working" residuals are those of a GLM (fixest refuses them for feols()); for OLS',
                 'they are the "response" residuals'), call)
  }
  na.rm <- .check_flag(na.rm, "na.rm", call)
  out <- .feols_rows(object, "resid", "residuals()", call)
  w <- if (type == "response") NULL else weights(object)
  if (!is.null(w)) out <- out * sqrt(w)  # deviance and Pearson residuals of weighted OLS, as lm() and fixest
  if (na.rm) out else .feols_fill(object, out, "residuals()", call)
}

#' @rdname feols
#' @param newdata For `predict()`: `NULL` (the fitted values) or a data frame with the
#'   regressors' and the fixed effects' columns; one prediction per row, named by its row names,
#'   `NA` where a value is missing or a fixed-effect (or `factor()`) level was not in the
#'   estimation rows.
#' @param type For `predict()` and `fitted()`: `"response"` (default) or `"link"`, the same for OLS
#'   (fixest's); for `residuals()`: `"response"` (default, outcome minus fitted value), `"deviance"`
#'   or `"pearson"` (both `sqrt(w)` times it for a weighted fit, as `lm()` and fixest; the same
#'   unweighted); fixest's `"working"` is an error, as in fixest.
#' @export
predict.llmsurrogate_feols <- function(object, newdata = NULL, type = c("response", "link"), ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "predict()", c("object", "newdata", "type"), call)
  .feols_choice(type, c("response", "link"), "type", call)
  if (is.null(newdata)) return(fitted(object))
  info <- .feols_data(object, "predict()", call)
  if (!is.data.frame(newdata)) {
    .abort(sprintf("argument `newdata` must be a data frame, not %s", class(newdata)[1]), call)
  }
  .check_columns(info$newdata_columns, newdata, "newdata", call)
  if (!nrow(newdata)) return(stats::setNames(numeric(0), character(0)))
  cols <- .frame_arg(.feols_columns(newdata, info$newdata_columns, info$fe_kinds), "newdata", call)
  stats::setNames(.as_numbers(.call_in(call, "fe.predict", info$py, cols)), row.names(newdata))
}

#' @rdname feols
#' @export
df.residual.llmsurrogate_feols <- function(object, ...) {
  .feols_no_dots(.dots(...), "df.residual()", c("object"), sys.call())
  if (is.null(object$df_resid)) {
    .abort("df.residual() needs a fit from feols() of this version of llmsurrogate: refit it", sys.call())
  }
  as.integer(object$df_resid)
}

#' @rdname feols
#' @export
model.matrix.llmsurrogate_feols <- function(object, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "model.matrix()", "object", call)
  info <- .feols_data(object, "model.matrix()", call)
  mm <- .call_in(call, "fe.model_matrix", info$py)
  rows <- .as_column(.call_in(call, "fe.obs_rows", info$py))
  names <- as.character(.as_column(mm$names))
  X <- matrix(unlist(lapply(mm$values, .as_numbers), use.names = FALSE), nrow = length(rows), ncol = length(names))
  dimnames(X) <- list(.feols_row_names(info, rows), names)
  X
}

#' @rdname feols
#' @export
weights.llmsurrogate_feols <- function(object, ...) {
  .feols_no_dots(.dots(...), "weights()", c("object"), sys.call())
  if (is.null(object$weights)) return(NULL)  # unweighted, as lm()'s weights()
  unname(.feols_rows(object, "weights", "weights()", sys.call()))  # unnamed, as lm()'s
}

#' @rdname feols
#' @export
deviance.llmsurrogate_feols <- function(object, ...) {
  .feols_no_dots(.dots(...), "deviance()", c("object"), sys.call())
  e <- residuals(object)
  w <- weights(object)
  if (is.null(w)) sum(e^2) else sum(w * e^2)
}

#' @rdname feols
#' @export
sigma.llmsurrogate_feols <- function(object, ...) {
  .feols_no_dots(.dots(...), "sigma()", c("object"), sys.call())
  sqrt(deviance(object) / df.residual(object))
}

#' @rdname feols
#' @export
logLik.llmsurrogate_feols <- function(object, ...) {
  .feols_no_dots(.dots(...), "logLik()", c("object"), sys.call())
  # lm()'s Gaussian log-likelihood (weights as lm's), with the fixed-effect levels among its parameters
  e <- residuals(object)
  w <- weights(object)
  if (is.null(w)) w <- rep(1, length(e))
  n <- length(e)
  ll <- 0.5 * (sum(log(w)) - n * (log(2 * pi) + 1 - log(n) + log(sum(w * e^2))))
  structure(ll, nall = n, nobs = n, df = n - df.residual(object) + 1, class = "logLik")
}

#' @rdname feols
#' @export
formula.llmsurrogate_feols <- function(x, ...) {
  .feols_no_dots(.dots(...), "formula()", c("x"), sys.call())
  stats::as.formula(x$formula, env = globalenv())
}

#' @rdname feols
#' @export
terms.llmsurrogate_feols <- function(x, ...) {
  .feols_no_dots(.dots(...), "terms()", c("x"), sys.call())
  # the regressors' part, as fixest's terms() (the fixed effects are not terms of the design)
  lhs_rhs <- strsplit(x$formula, "|", fixed = TRUE)[[1]][1]
  stats::terms(stats::as.formula(lhs_rhs, env = globalenv()))
}

#' @rdname feols
#' @export
variable.names.llmsurrogate_feols <- function(object, ...) {
  .feols_no_dots(.dots(...), "variable.names()", c("object"), sys.call())
  names(coef(object))
}

#' @rdname feols
#' @export
case.names.llmsurrogate_feols <- function(object, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "case.names()", "object", call)
  info <- .feols_data(object, "case.names()", call)
  .feols_row_names(info, .as_column(.call_in(call, "fe.obs_rows", info$py)))
}

#' @rdname feols
#' @export
na.action.llmsurrogate_feols <- function(object, ...) {
  .feols_no_dots(.dots(...), "na.action()", c("object"), sys.call())
  n <- as.integer(object$n_input)
  if (sum(object$n_dropped_nan, object$n_dropped_singletons, object$n_dropped_zero_weight) == 0) return(NULL)
  call <- sys.call()
  info <- .feols_data(object, "na.action()", call)
  rows <- .as_column(.call_in(call, "fe.obs_rows", info$py))
  out <- setdiff(seq_len(n), rows)
  if (!length(out)) return(NULL)
  structure(out, names = .feols_row_names(info, out), class = "omit")
}

#' @rdname feols
#' @export
model.frame.llmsurrogate_feols <- function(formula, ...) {
  .abort(paste("model.frame() is not kept: feols() sends its columns to Python; use model.matrix() for the",
               "regressors, fitted(), residuals() and case.names() for the rows used"), sys.call())
}

#' Estimated fixed effects
#'
#' The fixed effects of a fit from [feols()], as fixest's `fixef()`: the least-squares solution
#' of outcome minus regressors times coefficients (minus the residual) as the sum of the fixed
#' effects, normalised as fixest and pyfixest normalise it: every level of the first fixed effect
#' is free, and of each further one the first level (in sorted order) is 0. Differences between
#' the levels of one fixed effect do not depend on that choice: they are what `lm()` reports as
#' the coefficients of `factor()` dummies against their reference level.
#'
#' `fixef()` is a generic, as in fixest (and nlme); with fixest or nlme attached after
#' llmsurrogate, their `fixef()` finds this method too.
#'
#' @param object A fit from [feols()] with fixed effects.
#' @param ... Nothing: an argument is an error naming it.
#' @return A named list, one element per fixed effect (`firm`, `year^month`), each a numeric
#'   vector named by level (as `as.character()` writes the column's values).
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' d <- data.frame(firm = sample(c("a", "b", "c"), 200, TRUE), year = sample(2001:2004, 200, TRUE),
#'                 x = rnorm(200))
#' d$y <- d$x + c(a = 0, b = 1, c = 3)[d$firm] + rnorm(200)
#' fe <- fixef(feols(y ~ x | firm + year, d))
#' fe$firm - fe$firm[["a"]]   # about 0, 1, 3
#' @export
fixef <- function(object, ...) UseMethod("fixef")

#' @rdname fixef
#' @export
#' @rawNamespace S3method(fixest::fixef, llmsurrogate_feols)
#' @rawNamespace S3method(nlme::fixef, llmsurrogate_feols)
fixef.llmsurrogate_feols <- function(object, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "fixef()", "object", call)
  if (!length(object$fe_levels)) {
    .abort(sprintf(paste("fixef(): this fit has no fixed effects (its formula has no `|`); the intercept is",
                         "coef(fit)[\"(Intercept)\"]")), call)
  }
  info <- .feols_data(object, "fixef()", call)
  out <- .call_in(call, "fe.fixef", info$py)
  stats::setNames(lapply(names(out), function(fe) {
    f <- out[[fe]]
    stats::setNames(.as_numbers(f$values), .fe_level_names(as.character(.as_column(f$levels)), fe, info$fe_kinds))
  }), names(out))
}

#' @rdname fixef
#' @export
fixef.default <- function(object, ...) {
  .abort(sprintf("fixef() takes a fit from feols(); got %s", class(object)[1]), sys.call())
}

# ---- standard errors chosen after estimation: fixest's vcov, se, cluster and ssc of the methods ---

#' Small-sample corrections of the standard errors of feols()
#'
#' fixest's `ssc()`, for the `ssc` argument of [feols()] and of its fits' `print()`, `summary()`,
#' `vcov()`, `confint()`, [coeftable()], `tidy()`, `as.data.frame()` and [etable()]. The variance
#' of [feols()] is a sandwich (or `(X'WX)^-1` times a residual variance, for `"iid"`) times two
#' factors, switched by `adj` and `cluster.adj` with fixest's meaning:
#' * `adj = TRUE`: `(n - 1) / (n - K)`, where `K` counts the coefficients and the fixed-effect levels
#'   (one level of each fixed effect after the first is redundant; a fixed effect nested in a
#'   cluster dimension counts 1, fixest's `fixef.K = "nested"`);
#' * `cluster.adj = TRUE`: `G / (G - 1)`, `G` the number of clusters (the smaller of the two
#'   dimensions for two-way clustering, fixest's `cluster.df = "min"`), and `G = n` for `"hetero"`,
#'   `"HC2"` and `"HC3"` (so that their default factor is `n / (n - K)`).
#'
#' For `"iid"`, `adj = TRUE` gives `sum(w e^2) / (n - K)` times `(X'WX)^-1` (as `lm()`),
#' `adj = FALSE` `sum(w e^2) / (n - 1)`; `cluster.adj` does not apply. How they relate to sandwich
#' and estimatr (`lm()` with the fixed effects as `factor()` dummies, so that its `k` is `K`):
#'
#' | `vcov` | default `ssc()` | `ssc(adj = FALSE)` | `ssc(adj = FALSE, cluster.adj = FALSE)` |
#' |---|---|---|---|
#' | `"hetero"` (HC1) | `vcovHC(type = "HC1")` | `vcovHC(type = "HC0") * n / (n - 1)` | `vcovHC(type = "HC0")` |
#' | `"HC2"`, `"HC3"` | `vcovHC(type = "HC2")` (`"HC3"`) `* n / (n - K)` | `vcovHC(...) * n / (n - 1)` | `vcovHC(type = "HC2")` (`"HC3"`), `lm_robust(se_type = "HC2")` (`"HC3"`) |
#' | `~g` (one way) | `vcovCL(type = "HC1")`, `lm_robust(se_type = "stata")` | `vcovCL(type = "HC0")` | `vcovCL(type = "HC0", cadjust = FALSE)`, `lm_robust(se_type = "CR0")` |
#'
#' (the one-way cluster rows where no fixed effect is nested in `g`; two-way: `G_min / (G_min - 1)`
#' multiplies each of sandwich's three terms, where `vcovCL()` uses each dimension's own `G`).
#'
#' fixest's other settings are taken at their defaults only (`fixef.K = "nested"`,
#' `cluster.df = "min"`, `t.df = "min"`, `fixef.force_exact = FALSE`); other values are an error.
#' fixest's own `ssc()` objects (class `"ssc.type"`) are read the same way.
#'
#' @param adj,cluster.adj `TRUE` (default) or `FALSE`: the factors above.
#' @param fixef.K,cluster.df,t.df,fixef.force_exact fixest's; their defaults only.
#' @return An object of class `c("llmsurrogate_ssc", "ssc.type")`: the list of the six settings.
#' @seealso [feols()]
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' d <- data.frame(x = rnorm(60))
#' d$y <- d$x + rnorm(60, sd = abs(d$x))
#' fit <- feols(y ~ x, d)
#' # sandwich's HC3 (no small-sample factor), then pyfixest's (times n / (n - K))
#' sqrt(diag(vcov(fit, vcov = "HC3", ssc = ssc(adj = FALSE, cluster.adj = FALSE))))
#' sqrt(diag(vcov(fit, vcov = "HC3")))
#' @export
ssc <- function(adj = TRUE, fixef.K = "nested", cluster.adj = TRUE, cluster.df = "min", t.df = "min",
                fixef.force_exact = FALSE) {
  out <- list(adj = adj, fixef.K = fixef.K, cluster.adj = cluster.adj, cluster.df = cluster.df, t.df = t.df,
              fixef.force_exact = fixef.force_exact)
  .ssc_check(out, sys.call())
  structure(out, class = c("llmsurrogate_ssc", "ssc.type"))
}

# The settings of ssc() (ours or fixest's) as list(adj, cluster.adj), or an error naming the one
# that is not supported.
.ssc_check <- function(s, call) {
  adj <- .check_flag(s$adj, "adj", call)
  cluster_adj <- .check_flag(s$cluster.adj, "cluster.adj", call)
  fixed <- list(fixef.K = "nested", cluster.df = "min", t.df = "min", fixef.force_exact = FALSE)
  means <- c(fixef.K = "K counts the fixed-effect levels, a fixed effect nested in a cluster dimension as 1",
             cluster.df = "two-way clustering takes G/(G - 1) of the smaller dimension for every term",
             t.df = "t tests with G - 1 degrees of freedom when clustered (G of the smaller dimension), n - K otherwise",
             fixef.force_exact = "K counts one redundant level per fixed effect after the first")
  for (nm in names(fixed)) {
    value <- s[[nm]]
    if (!identical(value, fixed[[nm]])) {
      .abort(sprintf("argument `%s` of ssc(): only fixest's default %s is supported (%s); got %s", nm,
                     paste(deparse(fixed[[nm]]), collapse = ""), means[[nm]], paste(deparse(value), collapse = "")),
             call)
    }
  }
  list(adj = adj, cluster.adj = cluster_adj)
}

# An `ssc` argument as list(adj, cluster.adj); NULL: not given.
.ssc_arg <- function(ssc, call) {
  if (is.null(ssc)) return(NULL)
  if (!inherits(ssc, "ssc.type") || !is.list(ssc)) {
    .abort(sprintf("argument `ssc` must be made by ssc(), e.g. ssc(adj = FALSE); got %s", .r_type(ssc)), call)
  }
  .ssc_check(unclass(ssc), call)
}

# The arguments by which the methods choose the standard errors (fixest's).
.vcov_method_args <- c("vcov", "se", "cluster", "ssc")

# The fit's variance as .vcov_arg() reads it, from its label ("iid", "hetero (HC1)", "HC2",
# "CRV1 by firm+date", with "; ssc(...)" after a variance chosen with ssc()).
.feols_vcov_of <- function(object) {
  label <- sub(";.*$", "", object$vcov_type)
  if (startsWith(label, "CRV1 by ")) return(list(CRV1 = sub("^CRV1 by ", "", label)))
  if (label == "hetero (HC1)") "hetero" else label
}

# The data of a fit, found by its name (the `data` of the feols() call) in `env`, where the method
# was called (as fixest finds it), for cluster columns `cols` that the fit does not keep: the
# columns the formula reads and `cols`, all rows. Python refuses it unless it is the data of the
# fit (rbridge.fe.r_vcov).
.feols_fit_data <- function(object, info, cols, env, arg, what, call) {
  expr <- object$call$data
  name <- if (is.null(expr)) "data" else paste(deparse(expr, width.cutoff = 60L), collapse = " ")
  refit <- sprintf("refit with feols(..., cluster = ~%s)", paste(cols, collapse = " + "))
  data <- if (is.null(expr)) NULL else tryCatch(eval(expr, env), error = function(e) NULL)
  if (!is.data.frame(data)) {
    .abort(sprintf(paste("argument `%s`: cluster column `%s` is neither a fixed effect nor a cluster column of the",
                         "fit, so %s reads it from the fit's data, `%s`, which is not found where %s was called: %s"),
                   arg, cols[1], what, name, what, refit), call)
  }
  if (nrow(data) != object$n_input) {
    .abort(sprintf(paste("argument `%s`: cluster column `%s` is read from the fit's data, `%s`, which has %d rows",
                         "where the fit's data had %d: %s"), arg, cols[1], name, nrow(data),
                   as.integer(object$n_input), refit), call)
  }
  .check_columns(cols, data, arg, call)
  outcome <- intersect(.formula_names(strsplit(object$formula, "~", fixed = TRUE)[[1]][1]), names(data))
  keep <- unique(c(outcome, info$newdata_columns, cols))
  list(data = .frame_arg(.feols_columns(data, keep, info$fe_kinds), call = call), name = sprintf("`%s`", name))
}

# The fit with the standard errors that fixest's arguments of a method ask for (`vcov`, `se`,
# `cluster`, `ssc`, as feols() takes them; `ssc` alone keeps the fit's variance type), recomputed
# in Python from the fit's estimation sample without refitting (FeolsResult.with_vcov: the numbers
# of feols(..., vcov = )); the fit itself when none is given. A cluster column that is neither a
# fixed effect nor a cluster column of the fit is read from the fit's data (.feols_fit_data).
.feols_with_vcov <- function(object, vcov, se, cluster, ssc, what, env, call) {
  ssc <- .ssc_arg(ssc, call)
  if (is.null(vcov) && is.null(se) && is.null(cluster) && is.null(ssc)) return(object)
  info <- .feols_data(object, what, call)
  vcov_given <- !is.null(vcov)
  if (!vcov_given && is.null(se) && is.null(cluster)) {
    vcov <- .feols_vcov_of(object)
    vcov_given <- TRUE
  }
  if (is.null(ssc)) ssc <- list(adj = TRUE, cluster.adj = TRUE)
  fe <- .formula_fixef(object$formula)
  vc <- .vcov_arg(.fixest_vcov(vcov, vcov_given, se, cluster, call), call, fe)
  clusters <- attr(vc, "clusters")
  attr(vc, "clusters") <- NULL
  held <- info$held_clusters
  if (is.null(held)) held <- unique(c(names(object$n_clusters), fe[!grepl("^", fe, fixed = TRUE)]))
  need <- setdiff(clusters, held)
  data <- NULL
  data_name <- "the data"
  if (length(need)) {
    got <- .feols_fit_data(object, info, need, env, if (is.null(cluster)) "vcov" else "cluster", what, call)
    data <- got$data
    data_name <- got$name
  }
  words <- if (ssc$adj && ssc$cluster.adj) "" else sprintf("ssc(adj = %s, cluster.adj = %s)", ssc$adj, ssc$cluster.adj)
  out <- .call_in(call, "fe.vcov", info$py, vc, data, adj = ssc$adj, cluster_adj = ssc$cluster.adj,
                  ssc_words = words, data_name = data_name)
  res <- .as_feols(out$fit)
  res$call <- object$call
  info$py <- out$handle
  info$held_clusters <- held
  attr(res, "feols_data") <- info
  res
}

# fixest's `keep` and `drop` of coef() and coeftable(): regular expressions; a term is kept when it
# matches any of `keep` (a pattern starting with "!": when it does not match), then dropped when it
# matches a pattern of `drop` (with "!": when it does not); a leading "%" (fixest's original names)
# is the same here. The positions of `terms` kept.
.feols_keep <- function(terms, keep, drop, call) {
  for (arg in c("keep", "drop")) {
    v <- get(arg)
    if (!is.null(v) && (!is.character(v) || anyNA(v))) {
      .abort(sprintf("argument `%s` must be regular expressions (a character vector without NA), as fixest's; got %s",
                     arg, .r_type(v)), call)
    }
  }
  matches <- function(p, arg) {
    p <- sub("^%", "", sub("^!%", "!", p))
    bad <- function(e) {
      .abort(sprintf("argument `%s`: \"%s\" is not a regular expression (%s)", arg, p, conditionMessage(e)), call)
    }
    hit <- tryCatch(grepl(sub("^!", "", p), terms), warning = bad, error = bad)
    if (startsWith(p, "!")) !hit else hit
  }
  kept <- if (length(keep)) Reduce(`|`, lapply(keep, matches, "keep"), rep(FALSE, length(terms))) else
    rep(TRUE, length(terms))
  for (p in drop) kept <- kept & !matches(p, "drop")
  which(kept)
}

#' @rdname feols
#' @param x,object An `"llmsurrogate_feols"` fit.
#' @param digits Significant digits printed.
#' @param ssc For the methods (and `feols()`): the small-sample corrections, from [ssc()]:
#'   `ssc(adj = FALSE, cluster.adj = FALSE)` gives sandwich's `vcovHC()` HC0, HC2 and HC3.
#' @param keep,drop For `coef()` (and [coeftable()]): fixest's regular expressions choosing the
#'   terms: those matching any of `keep` (`"!x"`: not matching `x`), less those matching `drop`.
#' @param ... Nothing: an argument a method does not take is an error naming it.
#' @section Standard errors chosen after estimation:
#' `print()`, `summary()`, `vcov()`, `confint()`, [coeftable()], `tidy()`, `as.data.frame()` and
#' [etable()] take fixest's `vcov`, `se`, `cluster` and `ssc`, with every spelling `feols()` takes
#' (`summary(fit, vcov = "hetero")`, `summary(fit, cluster = ~firm)`, `vcov(fit, vcov = "twoway")`,
#' `confint(fit, se = "hetero")`, `tidy(fit, vcov = ~firm + date)`, `summary(fit, ssc = ssc(adj =
#' FALSE))`): the variance is recomputed from the estimation sample the fit keeps in Python (its
#' demeaned regressors and residuals; no refit), equal to `feols(..., vcov = )` on the same rows.
#' A cluster column that is a fixed effect or a cluster column of the fit is taken from the fit;
#' another is read, as fixest reads it, from the fit's data found by its name (the `data` of the
#' `feols()` call) where the method is called, which must be that data (same rows, same values of
#' the formula's columns: else an error), with no missing value in the rows used (else an error:
#' `feols(..., vcov = )` would drop those rows). `ssc` alone keeps the fit's variance type.
#' @export
print.llmsurrogate_feols <- function(x, digits = max(3L, getOption("digits") - 3L), vcov = NULL, se = NULL,
                                     cluster = NULL, ssc = NULL, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "print()", c("x", "digits", .vcov_method_args), call)
  shown <- x
  x <- .feols_with_vcov(x, vcov, se, cluster, ssc, "print()", parent.frame(), call)
  cat(sprintf("OLS estimation, dependent variable: %s\n", x$outcome))
  cat(sprintf("Observations: %s", format(x$nobs, big.mark = ",")))
  dropped <- c(`with NA` = x$n_dropped_nan, singletons = x$n_dropped_singletons, `zero weight` = x$n_dropped_zero_weight)
  dropped <- dropped[dropped > 0]
  if (length(dropped)) {
    cat(sprintf(" (dropped: %s)", paste(sprintf("%d %s", dropped, names(dropped)), collapse = ", ")))
  }
  cat("\n")
  if (length(x$fe_levels)) {
    cat(sprintf("Fixed effects: %s\n",
                paste(sprintf("%s (%s levels)", names(x$fe_levels), unlist(x$fe_levels)), collapse = ", ")))
  }
  label <- x$vcov_type
  if (length(x$n_clusters)) {
    label <- sprintf("%s (%s clusters)", label, paste(unlist(x$n_clusters), collapse = ", "))
  }
  cat(sprintf("Standard errors: %s; t tests with %d degrees of freedom\n", label, as.integer(x$df_t)))
  stats::printCoefmat(.coef_matrix(x), digits = digits, has.Pvalue = TRUE, P.values = TRUE)
  fit <- sprintf("RMSE: %s   R2: %s", format(x$rmse, digits = digits), format(x$r2, digits = digits))
  if (length(x$fe_levels)) fit <- paste0(fit, sprintf("   Within R2: %s", format(x$r2_within, digits = digits)))
  cat(fit, "\n", sep = "")
  if (length(x$dropped_collinear)) {
    cat(sprintf("Dropped as collinear: %s\n", paste(unlist(x$dropped_collinear), collapse = ", ")))
  }
  invisible(shown)
}

.coef_matrix <- function(x) {
  tab <- x$table
  out <- cbind(tab$estimate, tab$std_error, tab$statistic, tab$p_value)
  dimnames(out) <- list(tab$term, c("Estimate", "Std. Error", "t value", "Pr(>|t|)"))
  out
}

# The Python summary's text with R's spellings and broom's column names in its table
# (std.error, p.value, conf.low, conf.high: as long as Python's, so the columns stay aligned).
.feols_summary_text <- function(text) {
  lines <- strsplit(.r_spellings(text), "\n", fixed = TRUE)[[1]]
  head <- grepl("^\\s*term\\s+estimate\\s+std_error", lines)
  for (nm in c("std_error", "p_value", "conf_low", "conf_high")) {
    lines[head] <- gsub(sprintf("\\b%s\\b", nm), sub("_", ".", nm, fixed = TRUE), lines[head], perl = TRUE)
  }
  paste(lines, collapse = "\n")
}

#' @rdname feols
#' @export
summary.llmsurrogate_feols <- function(object, vcov = NULL, se = NULL, cluster = NULL, ssc = NULL, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "summary()", c("object", .vcov_method_args), call)
  object <- .feols_with_vcov(object, vcov, se, cluster, ssc, "summary()", parent.frame(), call)
  structure(list(coefficients = .coef_matrix(object), conf.int = confint(object), vcov = object$vcov_matrix,
                 nobs = object$nobs, r2 = object$r2, r2_within = object$r2_within, vcov_type = object$vcov_type,
                 df = object$df_t, text = .feols_summary_text(object$summary)),
            class = "summary.llmsurrogate_feols")
}

#' @rdname feols
#' @export
print.summary.llmsurrogate_feols <- function(x, ...) {
  .feols_no_dots(.dots(...), "print()", "x", sys.call())
  cat(x$text, "\n", sep = "")
  invisible(x)
}

#' @rdname feols
#' @export
coef.llmsurrogate_feols <- function(object, keep = NULL, drop = NULL, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "coef()", c("object", "keep", "drop"), call)
  b <- object$coefficients
  if (is.null(keep) && is.null(drop)) return(b)
  b[.feols_keep(names(b), keep, drop, call)]
}

#' @rdname feols
#' @export
vcov.llmsurrogate_feols <- function(object, vcov = NULL, se = NULL, cluster = NULL, ssc = NULL, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "vcov()", c("object", .vcov_method_args), call)
  .feols_with_vcov(object, vcov, se, cluster, ssc, "vcov()", parent.frame(), call)$vcov_matrix
}

#' @rdname feols
#' @export
nobs.llmsurrogate_feols <- function(object, ...) {
  .feols_no_dots(.dots(...), "nobs()", "object", sys.call())
  as.integer(object$nobs)
}

#' @rdname feols
#' @param parm,level For `confint()`: the terms (names or positions; all by default) and the
#'   confidence level; t quantiles with the fit's degrees of freedom (`df_t`).
#' @export
confint.llmsurrogate_feols <- function(object, parm, level = 0.95, vcov = NULL, se = NULL, cluster = NULL, ssc = NULL,
                                       ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "confint()", c("object", "parm", "level", .vcov_method_args), call)
  if (!is.numeric(level) || length(level) != 1L || is.na(level) || level <= 0 || level >= 1) {
    .abort("argument `level` must be a single number in (0, 1)", call)
  }
  object <- .feols_with_vcov(object, vcov, se, cluster, ssc, "confint()", parent.frame(), call)
  b <- coef(object)
  s <- sqrt(diag(object$vcov_matrix))
  a <- (1 - level) / 2
  q <- stats::qt(1 - a, object$df_t)
  out <- cbind(b - q * s, b + q * s)
  pct <- paste(format(100 * c(a, 1 - a), trim = TRUE, scientific = FALSE, digits = 3), "%")
  dimnames(out) <- list(names(b), pct)
  if (!missing(parm)) out <- out[parm, , drop = FALSE]
  out
}

#' Coefficient table of a fit
#'
#' fixest's `coeftable()`: the estimates, standard errors, t statistics and p-values of a fit
#' from [feols()] as a matrix (the `coefficients` of its `summary()`), with the standard errors
#' that `vcov`, `se`, `cluster` and `ssc` choose (as in `summary()`; see [feols()], section
#' "Standard errors chosen after estimation") and the terms that `keep` and `drop` choose.
#'
#' `coeftable()` is a generic, as in fixest; with fixest attached after llmsurrogate, its
#' `coeftable()` finds this method too.
#'
#' @param object A fit from [feols()] (the default method: any model whose `summary()` has a
#'   `coefficients` matrix, as `lm()`).
#' @param vcov,se,cluster,ssc The standard errors, as [feols()] takes them; `NULL`: the fit's.
#' @param keep,drop fixest's regular expressions choosing the terms (see `coef()` in [feols()]).
#' @param ... Nothing: an argument the method does not take is an error naming it.
#' @return A matrix with one row per term and columns `Estimate`, `Std. Error`, `t value`,
#'   `Pr(>|t|)`.
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' d <- data.frame(firm = sample(letters[1:8], 120, TRUE), x = rnorm(120), z = rnorm(120))
#' d$y <- d$x + rnorm(120)
#' fit <- feols(y ~ x + z | firm, d)
#' coeftable(fit)
#' coeftable(fit, cluster = ~firm, keep = "^x$")
#' @export
coeftable <- function(object, ...) UseMethod("coeftable")

#' @rdname coeftable
#' @export
#' @rawNamespace S3method(fixest::coeftable, llmsurrogate_feols)
coeftable.llmsurrogate_feols <- function(object, vcov = NULL, se = NULL, cluster = NULL, ssc = NULL, keep = NULL,
                                         drop = NULL, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "coeftable()", c("object", .vcov_method_args, "keep", "drop"), call)
  object <- .feols_with_vcov(object, vcov, se, cluster, ssc, "coeftable()", parent.frame(), call)
  out <- .coef_matrix(object)
  if (is.null(keep) && is.null(drop)) return(out)
  out[.feols_keep(rownames(out), keep, drop, call), , drop = FALSE]
}

#' @rdname coeftable
#' @export
coeftable.default <- function(object, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "coeftable()", "object", call)
  tab <- tryCatch(summary(object)$coefficients, error = function(e) NULL)
  if (!is.matrix(tab)) {
    .abort(sprintf("coeftable() takes a fit from feols() (or a model whose summary() has a coefficient matrix); got %s",
                   class(object)[1]), call)
  }
  tab
}

#' @rdname feols
#' @param conf.int,conf.level For `tidy()`: whether to add `conf.low` and `conf.high` (default
#'   `TRUE`) and their level.
#' @exportS3Method generics::tidy
tidy.llmsurrogate_feols <- function(x, conf.int = TRUE, conf.level = 0.95, vcov = NULL, se = NULL, cluster = NULL,
                                    ssc = NULL, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "tidy()", c("x", "conf.int", "conf.level", .vcov_method_args), call)
  conf.int <- .check_flag(conf.int, "conf.int", call)
  x <- .feols_with_vcov(x, vcov, se, cluster, ssc, "tidy()", parent.frame(), call)
  tab <- x$table
  out <- data.frame(term = tab$term, estimate = tab$estimate, std.error = tab$std_error, statistic = tab$statistic,
                    p.value = tab$p_value, stringsAsFactors = FALSE)
  if (!conf.int) return(out)
  ci <- confint(x, level = conf.level)
  out$conf.low <- unname(ci[, 1])
  out$conf.high <- unname(ci[, 2])
  out
}

#' @rdname feols
#' @param row.names,optional For `as.data.frame()`: row names for the table (`NULL`: 1, 2, ...);
#'   `optional` is accepted and unused, as in base R.
#' @export
as.data.frame.llmsurrogate_feols <- function(x, row.names = NULL, optional = FALSE, vcov = NULL, se = NULL,
                                             cluster = NULL, ssc = NULL, ...) {
  call <- sys.call()
  .feols_no_dots(.dots(...), "as.data.frame()", c("x", "row.names", "optional", .vcov_method_args), call)
  x <- .feols_with_vcov(x, vcov, se, cluster, ssc, "as.data.frame()", parent.frame(), call)
  out <- tidy.llmsurrogate_feols(x)  # broom's names, as tidy()
  if (!is.null(row.names)) row.names(out) <- row.names
  out
}

#' @rdname feols
#' @exportS3Method generics::glance
glance.llmsurrogate_feols <- function(x, ...) {
  .feols_no_dots(.dots(...), "glance()", "x", sys.call())
  n <- as.integer(x$nobs)
  df_resid <- if (is.null(x$df_resid)) NA_integer_ else as.integer(x$df_resid)
  # fixest's adjusted R2: 1 - (1 - R2) (n - 1) / (n - K) with an intercept or fixed effects
  # (summary(lm)'s), K the coefficients and fixed-effect levels; n / (n - K) without either
  centered <- length(x$fe_levels) > 0 || "(Intercept)" %in% names(x$coefficients)
  data.frame(nobs = n, r.squared = x$r2, adj.r.squared = 1 - (1 - x$r2) * (n - centered) / df_resid,
             within.r.squared = x$r2_within, sigma = x$rmse * sqrt(n / df_resid), rmse = x$rmse,
             vcov_type = x$vcov_type, df = as.integer(x$df_t), df.residual = df_resid,
             n_dropped_nan = as.integer(x$n_dropped_nan), n_dropped_singletons = as.integer(x$n_dropped_singletons),
             stringsAsFactors = FALSE)
}

#' Fixed-effects regressions side by side
#'
#' The table economists put in papers: one column per model, coefficients with significance
#' stars (`*** p<0.001, ** p<0.01, * p<0.05`) and standard errors in parentheses, then the fixed
#' effects, the standard-error type, observations, R2 and within R2.
#'
#' @param ... Fits from [feols()], lists of them, or results of [lookahead_test()] (which give
#'   their two regressions, without and with the LAP terms). Another named argument is an error
#'   naming it.
#' @param format `"text"` (default), `"latex"` (a booktabs `tabular`) or `"data.frame"`.
#' @param digits Decimals: a whole number from 0 to 15.
#' @param stars Significance stars.
#' @param vcov,se,cluster,ssc The standard errors of every fit, as [feols()] takes them (see its
#'   section "Standard errors chosen after estimation"); `vcov` may also be an unnamed list with
#'   one for each fit. `NULL`: each fit's own.
#' @return For `"text"` and `"latex"` a string of class `"llmsurrogate_etable"` (printed as is;
#'   `cat()` or `writeLines()` it into a file); for `"data.frame"` the table, its row labels in
#'   column `row`.
#' @examplesIf llmsurrogate_available()
#' set.seed(1)
#' d <- data.frame(firm = sample(1:10, 300, TRUE), date = sample(1:15, 300, TRUE), x = rnorm(300),
#'                 z = rnorm(300))
#' d$y <- 2 * d$x + rnorm(300)
#' f1 <- feols(y ~ x | firm, d)
#' f2 <- feols(y ~ x + z | firm + date, d, vcov = ~date)
#' etable(f1, f2)
#' etable(f1, f2, vcov = "hetero")
#' etable(f1, f2, format = "latex")
#' @export
etable <- function(..., format = c("text", "latex", "data.frame"), digits = 3, stars = TRUE, vcov = NULL, se = NULL,
                   cluster = NULL, ssc = NULL) {
  call <- sys.call()
  env <- parent.frame()
  format <- .feols_choice(format, c("text", "latex", "data.frame"), "format", call)
  fits <- list()
  add <- function(m, name) {
    if (inherits(m, "llmsurrogate_feols")) {
      fits[[length(fits) + 1L]] <<- m
    } else if (inherits(m, "llmsurrogate_lookahead_test")) {
      fits[[length(fits) + 1L]] <<- m$baseline
      fits[[length(fits) + 1L]] <<- m$regression
    } else if (is.list(m) && !is.object(m)) {
      for (mm in m) add(mm, name)
    } else if (nzchar(name)) {
      .abort(sprintf(paste("argument `%s` is not an argument of etable(); its arguments are the fits (...), format,",
                           "digits, stars, vcov, se, cluster and ssc"), name), call)
    } else {
      .abort(sprintf("etable() takes fits from feols() or results of lookahead_test(); got %s", class(m)[1]), call)
    }
  }
  models <- list(...)
  nms <- names(models)
  if (is.null(nms)) nms <- rep("", length(models))
  for (i in seq_along(models)) add(models[[i]], nms[i])
  if (!length(fits)) .abort("etable() needs at least one fit from feols()", call)
  digits <- .check_scalar(digits, "digits", call)
  if (is.na(digits) || digits < 0 || digits > 15 || digits != round(digits)) {
    .abort(sprintf("argument `digits` (decimals) must be a whole number from 0 to 15; got %s", paste(digits)), call)
  }
  stars <- .check_flag(stars, "stars", call)
  each <- is.list(vcov) && !is.object(vcov) && is.null(names(vcov))  # one vcov per fit
  if (each && length(vcov) != length(fits)) {
    .abort(sprintf("argument `vcov`: a list of %d variances for %d fits; give one per fit, or one for all",
                   length(vcov), length(fits)), call)
  }
  fits <- lapply(seq_along(fits), function(i) {
    .feols_with_vcov(fits[[i]], if (each) vcov[[i]] else vcov, se, cluster, ssc, "etable()", env, call)
  })
  type <- c(text = "text", latex = "tex", data.frame = "df")[[format]]
  out <- .call_in(call, "fe.etable", lapply(fits, function(f) f$json), type = type,
                  digits = as.integer(digits), stars = stars)
  if (format == "data.frame") return(out)
  structure(out, class = "llmsurrogate_etable", format = format)
}

#' @rdname etable
#' @param x An `"llmsurrogate_etable"`.
#' @export
print.llmsurrogate_etable <- function(x, ...) {
  .feols_no_dots(.dots(...), "print()", "x", sys.call())
  cat(x, "\n", sep = "")
  invisible(x)
}
