# Issue 35 §6: the help pages' examples show what each call gives. `example(feols)` printed only
# the last value (the calls sat in one `if (llmsurrogate_available()) { ... }` block, whose value
# is its last call's), and `?lap` had no example. Each page now runs its calls at top level (roxygen's
# @examplesIf: `withAutoprint()` prints every visible value), and every exported function is
# called in the examples of the page that documents it. (docs/r.md, which an installed package
# does not have, is run top to bottom by tests/rbridge/test_rbridge_docs_r_md.py.)

.rd_pages <- function() tools::Rd_db("llmsurrogate")

# A page's example code as example() runs it (Rd2ex; \dontrun commented out, \donttest as asked),
# parsed; NULL for a page without examples.
.example_exprs <- function(rd, donttest = FALSE, dontrun = FALSE) {
  f <- tempfile(fileext = ".R")
  on.exit(unlink(f))
  tools::Rd2ex(rd, f, commentDontrun = !dontrun, commentDonttest = !donttest)
  if (!file.exists(f)) return(NULL)
  parse(f, keep.source = FALSE, encoding = "UTF-8")
}

# roxygen's @examplesIf wrapper: `if (cond) (if (...) withAutoprint else force)({ ... })`; the
# condition and the calls inside, or NULL for any other expression.
.examples_if <- function(e) {
  if (!is.call(e) || !identical(e[[1]], as.name("if")) || length(e) != 3L) return(NULL)
  body <- e[[3]]
  if (!is.call(body) || length(body) != 2L || !("withAutoprint" %in% all.names(body[[1]]))) return(NULL)
  block <- body[[2]]
  if (!is.call(block) || !identical(block[[1]], as.name("{"))) return(NULL)
  list(cond = e[[2]], body = as.list(block)[-1])
}

# The calls of a page that R evaluates at top level (the body of an @examplesIf wrapper
# included, as withAutoprint() evaluates it).
.top_level <- function(exprs) {
  unlist(lapply(as.list(exprs), function(e) {
    w <- .examples_if(e)
    if (is.null(w)) list(e) else w$body
  }), recursive = FALSE)
}

# The statements whose value a reader expects to see: every statement outside function bodies
# (inside `if` and `{` blocks too) that is not an assignment or a call made for its side effect.
.side_effect_calls <- c("library", "require", "set.seed", "plot", "cat", "print", "invisible", "Sys.setenv",
                        "options", "par", "on.exit", "unlink", "writeLines", "message", "dev.off")
.value_statements <- function(exprs) {
  out <- list()
  walk <- function(e) {
    w <- .examples_if(e)
    if (!is.null(w)) return(for (x in w$body) walk(x))
    if (is.call(e) && identical(e[[1]], as.name("{"))) return(for (x in as.list(e)[-1]) walk(x))
    if (is.call(e) && identical(e[[1]], as.name("if"))) {
      for (x in as.list(e)[-(1:2)]) walk(x)
      return(invisible())
    }
    if (is.call(e) && (as.character(e[[1]])[1] %in% c("<-", "=", "<<-", .side_effect_calls))) return(invisible())
    out[[length(out) + 1L]] <<- e
  }
  for (e in as.list(exprs)) walk(e)
  out
}

# Runs a page's top-level calls in a fresh environment on a null graphics device, as example()
# does; returns, per call, whether its value was visible (printed) and what it printed.
.run_example <- function(exprs) {
  env <- new.env(parent = globalenv())
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  shown <- list()
  for (e in as.list(exprs)) {
    w <- .examples_if(e)
    calls <- if (is.null(w)) list(e) else if (isTRUE(eval(w$cond, env))) w$body else list()
    for (x in calls) {
      printed <- utils::capture.output(res <- withCallingHandlers(withVisible(eval(x, env)),
                                                                   warning = function(w) invokeRestart("muffleWarning")))
      if (res$visible) printed <- c(printed, utils::capture.output(print(res$value)))
      shown[[length(shown) + 1L]] <- list(call = x, visible = res$visible, printed = printed,
                                          value = if (res$visible) res$value)
    }
  }
  shown
}

.deparse1 <- function(e) paste(deparse(e, width.cutoff = 500L), collapse = " ")

test_that("no example sits in one block that prints only its last value", {
  pages <- .rd_pages()
  blocks <- character()
  n_pages <- 0L
  for (name in names(pages)) {
    exprs <- .example_exprs(pages[[name]], donttest = TRUE)
    if (length(exprs)) n_pages <- n_pages + 1L
    for (e in .top_level(exprs)) {
      block <- is.call(e) && (identical(e[[1]], as.name("if")) || identical(e[[1]], as.name("{")))
      n_values <- if (block) length(.value_statements(list(e))) else 0L
      if (n_values > 1L) {
        blocks <- c(blocks, sprintf("%s: `%s...` holds %d calls with a value; example() prints only the last (use @examplesIf)",
                                    name, substr(.deparse1(e), 1, 60), n_values))
      }
    }
  }
  expect_gt(n_pages, 20L)
  expect(!length(blocks), paste(blocks, collapse = "\n"))
})

test_that("every exported function and every documented method has an example that calls it", {
  pages <- .rd_pages()
  aliases <- lapply(pages, function(rd) tools:::.Rd_get_metadata(rd, "alias"))
  keywords <- lapply(pages, function(rd) tools:::.Rd_get_metadata(rd, "keyword"))
  code <- lapply(pages, function(rd) {
    exprs <- .example_exprs(rd, donttest = TRUE, dontrun = TRUE)
    if (is.null(exprs)) character() else all.names(as.call(c(as.name("{"), as.list(exprs))))
  })
  for (fn in sort(getNamespaceExports("llmsurrogate"))) {
    page <- names(pages)[vapply(aliases, function(a) fn %in% a, logical(1))]
    expect(length(page) >= 1L, sprintf("exported %s() has no help page", fn))
    called <- any(vapply(page, function(p) fn %in% code[[p]], logical(1)))
    expect(called, sprintf("the examples of %s do not call %s()", paste(page, collapse = ", "), fn))
  }
  # pages of methods (plot.llmsurrogate_ess, ...) show their method in use too; internal pages,
  # the package page and data sets aside
  for (p in names(pages)) {
    internal <- "internal" %in% keywords[[p]] || "datasets" %in% keywords[[p]] ||
      grepl("-package", p, fixed = TRUE)
    if (!internal) expect(length(code[[p]]) > 0L, sprintf("%s has no example", p))
  }
  expect_true("lap" %in% code[["lap.Rd"]])
})

test_that("every example runs and prints the value of each call that gives one", {
  skip_if_no_llmsurrogate()
  pages <- .rd_pages()
  slow <- character()
  for (name in names(pages)) {
    exprs <- .example_exprs(pages[[name]])
    if (is.null(exprs) || !length(exprs)) next
    t0 <- Sys.time()
    shown <- tryCatch(suppressMessages(.run_example(exprs)),
                      error = function(e) {
                        expect(FALSE, sprintf("the example of %s fails: %s", name, conditionMessage(e)))
                        NULL
                      })
    secs <- as.numeric(difftime(Sys.time(), t0, units = "secs"))
    if (is.null(shown)) next
    if (secs > 20) slow <- c(slow, sprintf("%s (%.0f s)", name, secs))
    # each statement a reader expects to see is evaluated at top level and printed
    expected <- vapply(.value_statements(exprs), .deparse1, character(1))
    # a visible value shows the last statement of its call: all of a plain call, the last one of a
    # block (`if (cond) x` shows x)
    visible <- vapply(Filter(function(s) s$visible && length(s$printed) > 0L, shown), function(s) {
      inner <- .value_statements(list(s$call))
      .deparse1(if (length(inner)) inner[[length(inner)]] else s$call)
    }, character(1))
    missing <- setdiff(expected, visible)
    expect(!length(missing), sprintf("%s: example() shows nothing from %s", name,
                                     paste(sprintf("`%s`", substr(missing, 1, 60)), collapse = ", ")))
    if (length(expected) > 1L) {
      expect(sum(vapply(shown, function(s) s$visible, logical(1))) > 1L,
             sprintf("%s: several calls, one printed value", name))
    }
  }
  expect(!length(slow), sprintf("examples slower than 20 s (keep each to a few seconds): %s", paste(slow, collapse = ", ")))
})

test_that("?lap's example (a tiny local model, \\donttest) runs and prints its scores", {
  skip_if_no_llmsurrogate()
  reticulate::py_module_available("torch") || skip("torch is not installed")
  exprs <- .example_exprs(.rd_pages()[["lap.Rd"]], donttest = TRUE)
  shown <- .run_example(exprs)
  calls <- Filter(function(s) identical(s$call[[1]], as.name("lap")), shown)
  expect_gte(length(calls), 1L)
  for (s in calls) {
    expect_true(s$visible)
    expect_gt(length(s$printed), 0L)
  }
  # the scores it printed: one per text, probabilities (exp of a mean log-probability)
  scores <- Filter(function(s) is.numeric(s$value), calls)
  expect_gte(length(scores), 1L)
  for (s in scores) expect_true(all(s$value > 0 & s$value <= 1))
})
