# Issue 26, item 3 (a slow first call): attaching the package loads neither reticulate (which loads
# Matrix, about 1 s of CPU) nor Python; both start on the first call that needs them, which then
# gives the same answers.

test_that("library(llmsurrogate) loads no reticulate and starts no Python; the first call does", {
  skip_if_no_llmsurrogate()
  code <- c(
    "suppressPackageStartupMessages(library(llmsurrogate))",
    "cat('attached:', isNamespaceLoaded('reticulate'), '\\n')",
    "cat('quantile:', upper_quantile(c(1, 2, 3, 10), 0.5), '\\n')",
    "cat('python:', reticulate::py_available(initialize = FALSE), '\\n')",
    "cat('available:', llmsurrogate_available(), '\\n')")
  script <- tempfile(fileext = ".R")
  writeLines(code, script)
  on.exit(unlink(script), add = TRUE)
  rscript <- file.path(R.home("bin"), "Rscript")
  out <- system2(rscript, script, stdout = TRUE, stderr = TRUE,
                 env = paste0("R_LIBS=", paste(.libPaths(), collapse = .Platform$path.sep)))
  expect_null(attr(out, "status"))
  expect_true("attached: FALSE " %in% out, info = paste(out, collapse = "\n"))
  expect_true("quantile: 2 " %in% out, info = paste(out, collapse = "\n"))
  expect_true("python: TRUE " %in% out, info = paste(out, collapse = "\n"))
  expect_true("available: TRUE " %in% out, info = paste(out, collapse = "\n"))
})
