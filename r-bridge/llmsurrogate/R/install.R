#' Install the 'llmsurrogate' Python package for R
#'
#' Creates a Python virtual environment with [reticulate::virtualenv_create()] and installs the
#' 'llmsurrogate' Python package into it with pip. The package finds this environment by itself
#' when it is named `"r-llmsurrogate"` (the default) and neither `LLMSURROGATE_PYTHON` nor
#' `RETICULATE_PYTHON` is set; otherwise set `LLMSURROGATE_PYTHON` to the environment's Python
#' before loading the package. Restart R after installing if Python was already started in the
#' session.
#'
#' @param envname Name of (or path to) the virtual environment; created if it does not exist.
#' @param path Where to install from: `NULL` (default) installs `"llmsurrogate"` from the Python
#'   package index; otherwise a local checkout of the source repository or a wheel file.
#' @param ... Passed to [reticulate::virtualenv_install()], e.g. `ignore_installed = TRUE` or
#'   `pip_options = "--upgrade"`.
#' @param python The Python (>= 3.10) used to create the environment; `NULL` lets reticulate
#'   choose.
#' @return The path of the environment's Python interpreter, invisibly.
#' @examples
#' \dontrun{
#' install_llmsurrogate()
#' install_llmsurrogate(path = "~/src/llmsurrogate")  # a local checkout (needs Rust to build)
#' Sys.setenv(LLMSURROGATE_PYTHON = install_llmsurrogate("~/.venvs/llmsurrogate"))
#' }
#' @export
install_llmsurrogate <- function(envname = "r-llmsurrogate", path = NULL, ..., python = NULL) {
  envname <- .check_string(envname, "envname")
  package <- if (is.null(path)) {
    "llmsurrogate"
  } else {
    path <- .check_string(path, "path")
    if (!file.exists(path)) {
      .abort(sprintf("argument `path`: %s does not exist", path), sys.call())
    }
    normalizePath(path)
  }
  if (!reticulate::virtualenv_exists(envname)) {
    reticulate::virtualenv_create(envname, python = python)
  }
  reticulate::virtualenv_install(envname, packages = package, ...)
  interpreter <- reticulate::virtualenv_python(envname)
  message(sprintf(paste0("Installed '%s' into %s.\nRestart R; if the environment is not ",
                         "found automatically, set LLMSURROGATE_PYTHON=\"%s\"."),
                  package, envname, interpreter))
  invisible(interpreter)
}
