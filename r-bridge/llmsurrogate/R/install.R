#' Install the 'llmsurrogate' Python package for R
#'
#' Creates a Python virtual environment and installs the 'llmsurrogate' Python package into it
#' with pip (with its dependencies: numpy, pandas, scipy, scikit-learn, matplotlib and a few
#' small ones). Run it once; then restart R.
#'
#' Where the package finds the environment in a new R session:
#' * The default `envname = "r-llmsurrogate"` is created in reticulate's folder of virtual
#'   environments ([reticulate::virtualenv_root()], `~/.virtualenvs` unless `WORKON_HOME` is
#'   set). `library(llmsurrogate)` finds it there by itself, with no environment variable, as
#'   long as neither `LLMSURROGATE_PYTHON` nor `RETICULATE_PYTHON` is set (either one wins).
#' * Any other name, or a path, is not found by itself: set `LLMSURROGATE_PYTHON` to the
#'   environment's Python (the value this function returns) before the first call into Python,
#'   for good with a line `LLMSURROGATE_PYTHON=/path/to/env/bin/python` in `~/.Renviron`.
#'
#' The message printed at the end says which of the two applies and names the interpreter.
#' Calling the function again for an existing environment reinstalls the package from `path`
#' (or upgrades it from the package index) and keeps the rest.
#'
#' @param envname Name of the virtual environment (letters, digits, `.`, `_`, `-`), created in
#'   [reticulate::virtualenv_root()]; or a path to one (anything containing `/`, e.g.
#'   `"~/venvs/llmsurrogate"`). Created if it does not exist.
#' @param path Where to install from: `NULL` (default) installs the package named
#'   `"llmsurrogate"` from the Python package index (PyPI); otherwise the path of a wheel file
#'   (`llmsurrogate-*.whl`, e.g. the one `make dist` writes to `dist/` in the source
#'   repository), of a source distribution (`llmsurrogate-*.tar.gz`) or of a checkout of the
#'   source repository (building from source needs Rust's `cargo`).
#' @param ... Passed to [reticulate::virtualenv_install()]: `ignore_installed = TRUE`, or
#'   `pip_options`, a character vector of options for `pip install` (e.g. `"--no-cache-dir"`).
#' @param python Path or command name of the Python (3.10 or newer) that creates the
#'   environment; used only when the environment does not exist yet. `NULL` (default) takes the
#'   first of `python3`, `python3.14`, ..., `python3.10`, `python` on the `PATH` that is 3.10 or
#'   newer and can create virtual environments.
#' @return The path of the environment's Python interpreter, invisibly.
#' @examples
#' \dontrun{
#' # the default environment, which library(llmsurrogate) finds by itself after a restart
#' install_llmsurrogate()                                # from PyPI
#' install_llmsurrogate(path = "dist/llmsurrogate-0.1.0-cp310-abi3-manylinux_2_28_x86_64.whl")
#' install_llmsurrogate(path = "~/src/llmsurrogate")     # a checkout (needs Rust to build)
#'
#' # an environment elsewhere: point LLMSURROGATE_PYTHON at it (here for this session only)
#' Sys.setenv(LLMSURROGATE_PYTHON = install_llmsurrogate("~/venvs/llmsurrogate"))
#' }
#' @export
install_llmsurrogate <- function(envname = "r-llmsurrogate", path = NULL, ..., python = NULL) {
  call <- sys.call()
  ld_library_path <- .python_child_env()
  on.exit(.restore_env(ld_library_path), add = TRUE)
  target <- .install_target(envname, call)
  package <- .install_source(path, call)
  if (!is.null(python)) {
    python <- .check_string(python, "python", call)
  }

  interpreter <- reticulate::virtualenv_python(target$path)
  if (reticulate::virtualenv_exists(target$path)) {
    info <- .python_info(interpreter)
    if (is.null(info) || info$version < "3.10") {
      .abort(sprintf(paste0("argument `envname`: the existing environment %s has %s, but ",
                            "'llmsurrogate' needs Python 3.10 or newer; remove it with ",
                            "reticulate::virtualenv_remove(\"%s\") or choose another `envname`"),
                     target$path, if (is.null(info)) "no working Python" else
                       paste("Python", info$version), target$path), call)
    }
    if (!is.null(python)) {
      message(sprintf("Using the existing environment %s (Python %s); `python` is not used.",
                      target$path, info$version))
    }
  } else {
    if (file.exists(target$path)) {
      .abort(sprintf(paste0("argument `envname`: %s exists but is not a Python virtual ",
                            "environment; choose another `envname`"), target$path), call)
    }
    base <- .find_python(python, call)
    reticulate::virtualenv_create(target$path, python = base)
  }

  # pip skips a wheel or source distribution whose version is already installed: remove the
  # package first so that a rebuilt file of the same version is really installed (its
  # dependencies stay)
  if (!is.null(path) && !is.na(.installed_version(interpreter))) {
    system2(interpreter, c("-m", "pip", "uninstall", "--yes", "--quiet", "llmsurrogate"))
  }
  tryCatch(
    reticulate::virtualenv_install(target$path, packages = package, ...),
    error = function(e) {
      hint <- if (is.null(path)) {
        paste0("; if 'llmsurrogate' is not on the package index you use, install from a wheel ",
               "file: install_llmsurrogate(path = \"llmsurrogate-<version>-<tags>.whl\") ",
               "(`make dist` in the source repository writes one to dist/)")
      } else if (dir.exists(package) && !nzchar(Sys.which("cargo"))) {
        paste0("; building from a checkout needs Rust (cargo was not found on the PATH; ",
               "see https://rustup.rs), or install from a wheel file instead")
      } else {
        ""
      }
      .abort(sprintf("pip could not install %s into %s (its output is above)%s",
                     package, target$path, hint), call)
    })

  version <- .installed_version(interpreter, import = TRUE)
  if (is.na(version)) {
    .abort(sprintf(paste0("'llmsurrogate' was installed into %s but does not import there ",
                          "(the error is above)"), target$path), call)
  }
  message(.install_message(target, interpreter, version))
  invisible(interpreter)
}

# R puts its own library folder and the system's (/usr/lib/x86_64-linux-gnu on Debian) first on
# LD_LIBRARY_PATH, which every process R starts inherits. A Python with a shared libpython found
# through its RUNPATH (pyenv's, for one) then loads the system's libpython of the same name
# instead of its own, and pip fails ("the ssl module is not available"). Those folders are taken
# off while the Python processes of install_llmsurrogate() run (the dynamic loader searches the
# system's folders by default anyway); the previous value, returned, is put back on exit.
.python_child_env <- function() {
  old <- Sys.getenv("LD_LIBRARY_PATH", unset = NA)
  if (is.na(old)) {
    return(old)
  }
  dirs <- strsplit(old, ":", fixed = TRUE)[[1]]
  r_lib <- normalizePath(R.home("lib"), mustWork = FALSE)
  drop <- !nzchar(dirs) | grepl("^(/usr)?/lib(64|/[^/]*-linux-gnu[^/]*)?/*$", dirs) |
    normalizePath(dirs, mustWork = FALSE) == r_lib
  if (any(!drop)) {
    Sys.setenv(LD_LIBRARY_PATH = paste(dirs[!drop], collapse = ":"))
  } else {
    Sys.unsetenv("LD_LIBRARY_PATH")
  }
  old
}

.restore_env <- function(old, name = "LD_LIBRARY_PATH") {
  if (is.na(old)) Sys.unsetenv(name) else do.call(Sys.setenv, stats::setNames(list(old), name))
}

# envname as the environment's absolute path, and whether it is the default environment (found
# without LLMSURROGATE_PYTHON).
.install_target <- function(envname, call) {
  envname <- .check_string(envname, "envname", call)
  if (grepl("[/\\\\]", envname)) {
    path <- normalizePath(path.expand(envname), winslash = "/", mustWork = FALSE)
  } else if (grepl("^[A-Za-z0-9_][A-Za-z0-9._-]*$", envname)) {
    path <- normalizePath(file.path(path.expand(reticulate::virtualenv_root()), envname),
                          winslash = "/", mustWork = FALSE)
  } else {
    .abort(sprintf(paste0("argument `envname` must be the name of an environment (letters, ",
                          "digits, '.', '_', '-') or a path containing '/'; got \"%s\""),
                   envname), call)
  }
  default <- normalizePath(file.path(path.expand(reticulate::virtualenv_root()), .default_envname),
                           winslash = "/", mustWork = FALSE)
  list(path = path, default = identical(path, default))
}

# What pip installs: "llmsurrogate" from the index, or the absolute path of a wheel, source
# distribution or checkout.
.install_source <- function(path, call) {
  if (is.null(path)) {
    return("llmsurrogate")
  }
  path <- .check_string(path, "path", call)
  full <- normalizePath(path.expand(path), winslash = "/", mustWork = FALSE)
  what <- paste0("give a wheel file (llmsurrogate-*.whl), a source distribution ",
                 "(llmsurrogate-*.tar.gz) or a checkout of the source repository; or leave ",
                 "`path` out to install from PyPI")
  if (!file.exists(full)) {
    .abort(sprintf("argument `path`: %s does not exist; %s", path, what), call)
  }
  if (dir.exists(full)) {
    project <- file.path(full, "pyproject.toml")
    if (!file.exists(project) ||
        !any(grepl("^name\\s*=\\s*[\"']llmsurrogate[\"']", readLines(project, warn = FALSE)))) {
      .abort(sprintf(paste0("argument `path`: the folder %s is not a checkout of llmsurrogate ",
                            "(no pyproject.toml naming it); %s"), path, what), call)
    }
  } else if (!grepl("^llmsurrogate-.*\\.(whl|tar\\.gz)$", basename(full))) {
    .abort(sprintf("argument `path`: %s is not a wheel or source distribution of llmsurrogate; %s",
                   path, what), call)
  }
  full
}

# Version of a Python interpreter and whether it can create virtual environments (venv with
# ensurepip, or virtualenv); NULL if it does not run.
.python_info <- function(python) {
  code <- paste0("import sys; print('%d.%d.%d' % tuple(sys.version_info[:3])); ",
                 "import importlib.util as u; ",
                 "print(int(bool(u.find_spec('virtualenv') or ",
                 "(u.find_spec('venv') and u.find_spec('ensurepip')))))")
  out <- suppressWarnings(tryCatch(
    system2(python, c("-c", shQuote(code)), stdout = TRUE, stderr = FALSE),
    error = function(e) character()))
  if (length(out) == 0L || !grepl("^[0-9]+\\.[0-9]+\\.[0-9]+$", out[[1]])) {
    return(NULL)
  }
  list(version = numeric_version(out[[1]]), venv = identical(out[2], "1"))
}

# The Python that creates the environment: `python` if given, otherwise the first suitable one
# on the PATH. Errors name the argument and say what was found.
.find_python <- function(python, call) {
  if (!is.null(python)) {
    found <- unname(Sys.which(path.expand(python)))
    if (!nzchar(found)) {
      .abort(sprintf("argument `python`: %s was not found (give the path of a Python 3.10 or newer)",
                     python), call)
    }
    info <- .python_info(found)
    if (is.null(info)) {
      .abort(sprintf("argument `python`: %s does not run as Python", python), call)
    }
    if (info$version < "3.10") {
      .abort(sprintf(paste0("argument `python`: %s is Python %s, but 'llmsurrogate' needs ",
                            "Python 3.10 or newer"), python, info$version), call)
    }
    if (!info$venv) {
      .abort(sprintf(paste0("argument `python`: %s (Python %s) cannot create virtual ",
                            "environments: its 'venv' module or 'ensurepip' is missing (on ",
                            "Debian or Ubuntu, install the python3-venv package)"),
                     python, info$version), call)
    }
    return(found)
  }
  names <- c("python3", paste0("python3.", 14:10), "python")
  candidates <- unique(unname(Sys.which(names)))
  candidates <- candidates[nzchar(candidates)]
  seen <- character()
  for (candidate in candidates) {
    info <- .python_info(candidate)
    if (is.null(info)) next
    if (info$version >= "3.10" && info$venv) {
      return(candidate)
    }
    seen <- c(seen, sprintf("%s (Python %s%s)", candidate, info$version,
                            if (info$venv) "" else ", without venv"))
  }
  .abort(paste0("no Python 3.10 or newer that can create virtual environments was found on the ",
                "PATH", if (length(seen)) paste0(" (found: ", paste(seen, collapse = ", "), ")"),
                "; install one (on Debian or Ubuntu: python3 and python3-venv) and give its ",
                "path as argument `python`"), call)
}

# The installed 'llmsurrogate' version in the environment (NA if absent); with import = TRUE,
# by importing the package and its compiled core (NA if that fails, the error shown).
.installed_version <- function(interpreter, import = FALSE) {
  code <- if (import) {
    "import llmsurrogate, llmsurrogate._core; print(llmsurrogate.__version__)"
  } else {
    "import importlib.metadata as m; print(m.version('llmsurrogate'))"
  }
  out <- suppressWarnings(system2(interpreter, c("-c", shQuote(code)), stdout = TRUE,
                                  stderr = if (import) "" else FALSE))
  status <- attr(out, "status")
  if ((!is.null(status) && status != 0L) || length(out) == 0L) NA_character_ else utils::tail(out, 1)
}

# The closing message: where the environment is and exactly how a new R session finds it.
.install_message <- function(target, interpreter, version) {
  home <- normalizePath("~", winslash = "/", mustWork = FALSE)
  where <- if (startsWith(target$path, paste0(home, "/"))) {
    paste0("~", substring(target$path, nchar(home) + 1L))
  } else {
    target$path
  }
  lines <- sprintf("Installed llmsurrogate %s (Python package) into %s.", version, where)
  set <- Filter(nzchar, Sys.getenv(c("LLMSURROGATE_PYTHON", "RETICULATE_PYTHON")))
  if (target$default) {
    lines <- c(lines, paste0("Restart R: library(llmsurrogate) then uses this environment by ",
                             "itself, with no environment variable to set."))
    root <- dirname(target$path)
    if (!identical(root, normalizePath("~/.virtualenvs", winslash = "/", mustWork = FALSE))) {
      vars <- Sys.getenv(c("RETICULATE_VIRTUALENV_ROOT", "WORKON_HOME"))
      vars <- vars[nzchar(vars)]
      lines <- c(lines, sprintf(paste0("(reticulate's folder of environments is %s here, from %s: ",
                                       "a new session finds it only with the same setting.)"),
                                root, paste0(names(vars), "=", vars, collapse = ", ")))
    }
    for (var in names(set)) {
      lines <- c(lines, sprintf(paste0("%s is set (to %s) and takes precedence: unset it (e.g. ",
                                       "remove it from ~/.Renviron) for this environment to be used."),
                                var, set[[var]]))
    }
  } else {
    lines <- c(lines,
               paste0("This environment is not found by itself: restart R and set ",
                      "LLMSURROGATE_PYTHON before the first call, for good with this line in ",
                      "~/.Renviron:"),
               paste0("LLMSURROGATE_PYTHON=", interpreter))
  }
  paste(lines, collapse = "\n")
}
