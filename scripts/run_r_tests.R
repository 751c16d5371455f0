# Run the R package's testthat suite against the installed package and fail on any failure,
# error or skip. Used by `make test-r`; run from the repository root.
res <- as.data.frame(testthat::test_dir(
  "r-bridge/llmsurrogate/tests/testthat", package = "llmsurrogate", load_package = "installed",
  reporter = "summary", stop_on_failure = FALSE
))
fail <- sum(res$failed > 0 | res$error)
skip <- sum(res$skipped > 0)
cat(sprintf("testthat: %d passed, %d failed, %d skipped\n", nrow(res) - fail - skip, fail, skip))
if (fail > 0 || skip > 0) quit(status = 1)
