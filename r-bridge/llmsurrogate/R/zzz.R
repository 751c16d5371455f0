# Python handles `.py` (llmsurrogate) and `.rbridge` (llmsurrogate.rbridge): active bindings made
# by .onLoad() that call .modules(). Nothing touches reticulate when the package is attached (loading
# reticulate loads Matrix, about 1 s of CPU): reticulate is loaded, and Python started, by the first
# call that needs Python.

# Its finalizer runs when R exits and stops the worker processes that parallel fits (n_jobs > 1)
# started: reticulate does not run Python's exit handlers.
.exit_hook <- new.env()

# Only when llmsurrogate.rbridge was imported: touching the module proxy after a failed import
# (Python without 'llmsurrogate') would print reticulate's configuration dump as R exits.
.stop_python_workers <- function(env) {
  if (isNamespaceLoaded("reticulate") && reticulate::py_available(initialize = FALSE)) {
    try(silent = TRUE, {
      rbridge <- reticulate::py_eval("__import__('sys').modules.get('llmsurrogate.rbridge')")
      if (!is.null(rbridge)) {
        rbridge$shutdown_workers()
      }
    })
  }
}

# LLMSURROGATE_PYTHON as the package last applied it (see .python_check()).
.state <- new.env(parent = emptyenv())

# Called before every call into Python: LLMSURROGATE_PYTHON set or changed after library() is still
# honoured while Python has not started; once it has, the interpreter cannot change within the R
# session, and the user is told to restart R (one line, not reticulate's configuration dump).
.python_check <- function(call) {
  wanted <- Sys.getenv("LLMSURROGATE_PYTHON", unset = "")
  if (identical(wanted, .state$python)) {
    return(invisible(NULL))
  }
  if (reticulate::py_available(initialize = FALSE)) {
    current <- tryCatch(reticulate::py_config()$python, error = function(e) NA_character_)
    same <- nzchar(wanted) && !is.na(current) &&
      identical(normalizePath(wanted, mustWork = FALSE), normalizePath(current, mustWork = FALSE))
    if (!nzchar(wanted) || same) {
      .state$python <- wanted
      return(invisible(NULL))
    }
    .abort(paste0("LLMSURROGATE_PYTHON was set to ", wanted, " after Python started (", current, "); ",
                  "R cannot switch Python within a session: restart R, with LLMSURROGATE_PYTHON set before ",
                  "library(llmsurrogate) (e.g. in ~/.Renviron)"), call)
  }
  if (nzchar(wanted)) {
    Sys.setenv(RETICULATE_PYTHON = wanted)
  }
  .state$python <- wanted
  invisible(NULL)
}

# The virtualenv install_llmsurrogate() creates; reticulate prefers it when no other Python has
# been requested.
.default_envname <- "r-llmsurrogate"

.load_error <- function(e) {
  reason <- sub("\\s+$", "", conditionMessage(e))
  stop("cannot load the 'llmsurrogate' Python package: ", reason, "\n",
       "Run install_llmsurrogate() (then restart R), or set LLMSURROGATE_PYTHON to a Python ",
       "interpreter that has 'llmsurrogate' installed.", call. = FALSE)
}

# The delay-loaded modules, made on first use (before anything else starts Python, so that
# reticulate looks for the virtualenv install_llmsurrogate() creates when no Python was chosen).
.modules <- function() {
  mods <- .state$modules
  if (!is.null(mods)) {
    return(mods)
  }
  if (!nzchar(Sys.getenv("LLMSURROGATE_PYTHON", unset = "")) &&
      utils::packageVersion("reticulate") >= "1.41" &&
      !nzchar(Sys.getenv("RETICULATE_PYTHON", unset = "")) &&
      !reticulate::virtualenv_exists(.default_envname)) {
    # Newer reticulate can provision an ephemeral environment on demand.
    py_require <- getExportedValue("reticulate", "py_require")
    try(py_require("llmsurrogate"), silent = TRUE)
  }
  delay <- list(environment = .default_envname, on_error = .load_error)
  mods <- list(py = reticulate::import("llmsurrogate", delay_load = delay),
               rbridge = reticulate::import("llmsurrogate.rbridge", delay_load = list(on_error = .load_error)))
  .state$modules <- mods
  mods
}

.onLoad <- function(libname, pkgname) {
  # loky's resource tracker (a helper process of parallel fits) removes joblib's temporary folders
  # when R exits, but warns about each one, as R does not run Python's exit handlers: quiet that
  # warning only (set before Python starts, so the tracker inherits it)
  quiet <- "ignore::UserWarning:joblib.externals.loky.backend.resource_tracker"
  old <- Sys.getenv("PYTHONWARNINGS", unset = "")
  if (!grepl(quiet, old, fixed = TRUE)) {
    Sys.setenv(PYTHONWARNINGS = if (nzchar(old)) paste(old, quiet, sep = ",") else quiet)
  }
  python <- Sys.getenv("LLMSURROGATE_PYTHON", unset = "")
  .state$python <- python
  if (nzchar(python)) {
    Sys.setenv(RETICULATE_PYTHON = python)
  }
  ns <- environment(sys.function())
  makeActiveBinding(".py", function() .modules()$py, ns)
  makeActiveBinding(".rbridge", function() .modules()$rbridge, ns)
  reg.finalizer(.exit_hook, .stop_python_workers, onexit = TRUE)
}
