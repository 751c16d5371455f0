# Skip only when the Python package cannot be imported (e.g. on CRAN-like machines without
# Python). Set LLMSURROGATE_PYTHON to the interpreter that has 'llmsurrogate' installed;
# the pytest wrapper (tests/rbridge/test_rbridge_r_package.py) fails if anything is skipped.
skip_if_no_llmsurrogate <- function() {
  if (!llmsurrogate_available()) {
    testthat::skip(paste("the 'llmsurrogate' Python package is not available;",
                         "set LLMSURROGATE_PYTHON or run install_llmsurrogate()"))
  }
}

# Brute-force quantiles written from the definitions (Andrews et al., Definition 2), with the
# package's 1e-12 tolerance on the probability scale.
tol <- 1e-12

brute_lower <- function(x, tau) {
  vapply(tau, function(t) {
    if (1 - t - tol <= 0) return(Inf)
    ok <- vapply(x, function(b) mean(x >= b) >= 1 - t - tol, logical(1))
    if (any(ok)) max(x[ok]) else -Inf
  }, numeric(1))
}

# Upper: smallest sorted value whose cumulative weight reaches tau * total, total including the
# mass at +Inf; +Inf if none; -Inf at tau = 0.
brute_weighted_upper <- function(x, w, tau, inf_weight = 0) {
  total <- sum(w) + inf_weight
  vapply(tau, function(t) {
    if (t <= 0) return(-Inf)
    mass <- vapply(x, function(b) sum(w[x <= b]), numeric(1))
    ok <- mass >= (t - tol) * total
    if (any(ok)) min(x[ok]) else Inf
  }, numeric(1))
}

# Lower: largest b whose weight on [b, Inf) reaches (1 - tau) * total, the mass at -Inf counting
# only in the total; +Inf when tau is 1; -Inf if none.
brute_weighted_lower <- function(x, w, tau, inf_weight = 0) {
  total <- sum(w) + inf_weight
  vapply(tau, function(t) {
    if (1 - t - tol <= 0) return(Inf)
    mass <- vapply(x, function(b) sum(w[x >= b]), numeric(1))
    ok <- mass >= (1 - t - tol) * total
    if (any(ok)) max(x[ok]) else -Inf
  }, numeric(1))
}

# The repository's Python test helpers (tests/_llama_server.py, tests/_server.py), found where the
# tests run from the repository and under R CMD check of the tarball, which ships no repository:
# the folder LLMSURROGATE_TEST_HELPERS names, the repository around these tests, or the one the
# Python package was installed from (an editable install: <repo>/python/llmsurrogate). NULL if none.
repo_test_helpers <- function(file = "_llama_server.py") {
  candidates <- c(Sys.getenv("LLMSURROGATE_TEST_HELPERS", unset = ""),
                  file.path(testthat::test_path(), "..", "..", "..", "..", "tests"))
  if (llmsurrogate_available()) {
    pkg <- tryCatch(reticulate::py_eval("__import__('llmsurrogate').__file__"), error = function(e) "")
    if (nzchar(pkg)) candidates <- c(candidates, file.path(dirname(dirname(dirname(pkg))), "tests"))
  }
  for (dir in candidates[nzchar(candidates)]) {
    if (file.exists(file.path(dir, file))) return(normalizePath(dir))
  }
  NULL
}
