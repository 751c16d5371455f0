# install_llmsurrogate() for real: a wheel is installed into a new virtual environment in a
# temporary folder of environments (never the user's ~/.virtualenvs), and a NEW R session
# (Rscript) without LLMSURROGATE_PYTHON or RETICULATE_PYTHON finds it by itself and computes a
# first result. The wheel is the file named by LLMSURROGATE_WHEEL; `make test-r` sets it to the
# newest dist/llmsurrogate-*.whl (built by `make dist`).

# Set (a value) or unset (NA) environment variables; returns a function that puts them back.
set_envvars <- function(...) {
  new <- list(...)
  old <- Sys.getenv(names(new), unset = NA, names = TRUE)
  for (name in names(new)) {
    if (is.na(new[[name]])) Sys.unsetenv(name) else do.call(Sys.setenv, new[name])
  }
  function() {
    for (name in names(old)) {
      if (is.na(old[[name]])) Sys.unsetenv(name) else do.call(Sys.setenv, as.list(old[name]))
    }
  }
}

# A folder of virtual environments that is reticulate's until restore() is called:
# `home`/.virtualenvs, the default place when HOME is `home`.
venv_root <- function() {
  home <- tempfile("home-")
  root <- file.path(home, ".virtualenvs")
  dir.create(root, recursive = TRUE)
  restore_vars <- set_envvars(WORKON_HOME = root, RETICULATE_VIRTUALENV_ROOT = root)
  list(home = normalizePath(home), root = normalizePath(root),
       restore = function() {
         restore_vars()
         unlink(home, recursive = TRUE)
       })
}

# Run `code` in a new Rscript with HOME = `home` (so ~/.virtualenvs is the test's folder), the
# working directory `home`, the installed R package on R_LIBS and no variable that picks a
# Python, except those given in `...`; nor the folder of this session's Python on PATH (which
# reticulate put first). stdout and stderr together, with the exit status.
new_r_session <- function(code, home, ...) {
  pythons <- Sys.getenv(c("LLMSURROGATE_PYTHON", "RETICULATE_PYTHON"))
  if (reticulate::py_available(initialize = FALSE)) {
    pythons <- c(pythons, reticulate::py_config()$python)
  }
  ours <- normalizePath(dirname(pythons[nzchar(pythons)]), mustWork = FALSE)
  path <- strsplit(Sys.getenv("PATH"), .Platform$path.sep, fixed = TRUE)[[1]]
  path <- path[!normalizePath(path, mustWork = FALSE) %in% ours]
  vars <- list(
    HOME = home, PATH = paste(path, collapse = .Platform$path.sep),
    R_LIBS = paste(.libPaths(), collapse = .Platform$path.sep),
    LLMSURROGATE_PYTHON = NA, RETICULATE_PYTHON = NA, RETICULATE_PYTHON_ENV = NA,
    RETICULATE_PYTHON_FALLBACK = NA, WORKON_HOME = NA, RETICULATE_VIRTUALENV_ROOT = NA,
    VIRTUAL_ENV = NA, PYTHONPATH = NA, PYTHONHOME = NA, R_PROFILE_USER = NA, R_ENVIRON_USER = NA)
  extra <- list(...)
  vars[names(extra)] <- extra
  restore <- do.call(set_envvars, vars)
  on.exit(restore(), add = TRUE)
  script <- file.path(home, "first-result.R")
  writeLines(code, script)
  old_wd <- setwd(home)  # not inside the repository: reticulate would read its pyproject.toml
  on.exit(setwd(old_wd), add = TRUE)
  out <- suppressWarnings(system2(file.path(R.home("bin"), "Rscript"), shQuote(script),
                                  stdout = TRUE, stderr = TRUE))
  list(status = if (is.null(attr(out, "status"))) 0L else attr(out, "status"), output = out)
}

# Messages of `expr`, muffled; its value in "value".
collect_messages <- function(expr) {
  messages <- character()
  value <- withCallingHandlers(expr, message = function(m) {
    messages <<- c(messages, conditionMessage(m))
    invokeRestart("muffleMessage")
  })
  list(value = value, messages = paste(messages, collapse = ""))
}

wheel_or_skip <- function() {
  wheel <- Sys.getenv("LLMSURROGATE_WHEEL", unset = "")
  if (!nzchar(wheel)) {
    testthat::skip(paste("set LLMSURROGATE_WHEEL to a wheel of the Python package, e.g.",
                         "LLMSURROGATE_WHEEL=$(ls -t dist/llmsurrogate-*.whl | head -1) after",
                         "`make dist` (`make test-r` does both)"))
  }
  expect_true(file.exists(wheel), info = paste("LLMSURROGATE_WHEEL =", wheel))
  normalizePath(wheel)
}

first_result <- c(
  "library(llmsurrogate)",
  "err <- load_transfer_errors(\"RF\")",
  "pooled <- err[row(err) != col(err)]",
  "print(quantile_interval(pooled, 0.95))",
  "cat(\"VERSION=\", llmsurrogate_version(), \"\\n\", sep = \"\")",
  "cat(\"PYTHON=\", reticulate::py_config()$python, \"\\n\", sep = \"\")"
)

test_that("install_llmsurrogate() checks its arguments before anything is installed", {
  venvs <- venv_root()
  on.exit(venvs$restore(), add = TRUE)
  wheel <- file.path(venvs$home, "llmsurrogate-0.1.0-cp310-abi3-manylinux_2_28_x86_64.whl")
  file.create(wheel)  # passes the checks of `path`; nothing gets as far as installing it
  expect_error(install_llmsurrogate(envname = 3), "argument `envname` must be a single string",
               class = "llmsurrogate_error")
  expect_error(install_llmsurrogate(envname = "my env"), "argument `envname` must be the name",
               class = "llmsurrogate_error")
  expect_error(install_llmsurrogate(path = c("a.whl", "b.whl")),
               "argument `path` must be a single string", class = "llmsurrogate_error")
  expect_error(install_llmsurrogate(path = file.path(venvs$home, "nothing.whl")),
               "argument `path`: .*nothing.whl does not exist", class = "llmsurrogate_error")
  expect_error(install_llmsurrogate(path = venvs$home),
               "argument `path`: the folder .* is not a checkout of llmsurrogate",
               class = "llmsurrogate_error")
  other <- file.path(venvs$home, "numpy-2.0.0-cp311-cp311-manylinux_2_28_x86_64.whl")
  file.create(other)
  expect_error(install_llmsurrogate(path = other), "is not a wheel or source distribution of llmsurrogate",
               class = "llmsurrogate_error")
  expect_error(install_llmsurrogate(path = wheel, python = file.path(venvs$home, "python3")),
               "argument `python`: .*python3 was not found", class = "llmsurrogate_error")
  expect_error(install_llmsurrogate(path = wheel, python = file.path(R.home("bin"), "Rscript")),
               "argument `python`: .*Rscript does not run as Python", class = "llmsurrogate_error")
  dir.create(file.path(venvs$home, "plain-folder"))
  expect_error(install_llmsurrogate(envname = file.path(venvs$home, "plain-folder"), path = wheel),
               "argument `envname`: .*plain-folder exists but is not a Python virtual environment",
               class = "llmsurrogate_error")
  # a real Python older than 3.10, where the machine has one (pyenv's, a system python3.9, ...)
  old <- c(Sys.glob(c("~/.pyenv/versions/3.[0-9].*/bin/python3", "/usr/bin/python3.[0-9]")),
           Sys.which(paste0("python3.", 9:6)))
  old <- unique(old[nzchar(old)])
  old <- Filter(function(p) {
    v <- tryCatch(suppressWarnings(system2(p, c("-c", shQuote("import sys; print(sys.version_info[1])")),
                                           stdout = TRUE, stderr = FALSE)),
                  error = function(e) "")  # e.g. a pyenv shim of a version not selected
    identical(length(v), 1L) && grepl("^[0-9]$", v)
  }, old)
  if (length(old)) {
    expect_error(install_llmsurrogate(path = wheel, python = old[[1]]),
                 "argument `python`: .* is Python 3\\.[0-9]\\.[0-9]+, but 'llmsurrogate' needs Python 3.10 or newer",
                 class = "llmsurrogate_error")
    # the only python3 on the PATH is that one
    only_old <- file.path(venvs$home, "old-bin")
    dir.create(only_old)
    file.symlink(old[[1]], file.path(only_old, "python3"))
    restore_path <- set_envvars(PATH = only_old)
    err <- tryCatch(install_llmsurrogate(path = wheel), error = identity)
    restore_path()
    expect_s3_class(err, "llmsurrogate_error")
    expect_match(conditionMessage(err), paste0("no Python 3.10 or newer that can create virtual ",
                                               "environments was found on the PATH (found: ",
                                               file.path(only_old, "python3"), " (Python 3."),
                 fixed = TRUE)
  }
  # no Python on the PATH at all
  restore_path <- set_envvars(PATH = venvs$root)
  err <- tryCatch(install_llmsurrogate(path = wheel), error = identity)
  restore_path()
  expect_s3_class(err, "llmsurrogate_error")
  expect_match(conditionMessage(err), paste0("no Python 3.10 or newer that can create virtual ",
                                             "environments was found on the PATH; install one (on ",
                                             "Debian or Ubuntu: python3 and python3-venv) and give ",
                                             "its path as argument `python`"), fixed = TRUE)
  expect_identical(list.files(venvs$root), character(0))  # nothing was created
})

test_that("a bare R session without the Python package gets one clear error", {
  venvs <- venv_root()
  on.exit(venvs$restore(), add = TRUE)
  empty <- file.path(venvs$root, "no-llmsurrogate")
  python <- Sys.which("python3")
  expect_true(nzchar(python))
  expect_identical(system2(python, c("-m", "venv", "--without-pip", shQuote(empty))), 0L)
  # a folder named llmsurrogate in the working directory imports as an empty namespace package:
  # not the Python package (before: llmsurrogate_available() said TRUE)
  dir.create(file.path(venvs$home, "llmsurrogate"))
  run <- new_r_session(c("library(llmsurrogate)", "cat(\"AVAILABLE=\", llmsurrogate_available(), \"\\n\", sep = \"\")",
                         "upper_quantile(c(1, 2, 3), 0.5)"),
                       venvs$home, LLMSURROGATE_PYTHON = file.path(empty, "bin", "python"))
  text <- paste(run$output, collapse = "\n")
  expect_identical(run$status, 1L, info = text)
  expect_match(text, "AVAILABLE=FALSE", fixed = TRUE)
  expect_match(text, "cannot load the 'llmsurrogate' Python package: ModuleNotFoundError", fixed = TRUE)
  expect_match(text, "Run install_llmsurrogate() (then restart R)", fixed = TRUE)
  # and nothing after R gives up (before: reticulate's configuration dump as R exited)
  expect_match(utils::tail(run$output, 1), "Execution halted", fixed = TRUE)
})

test_that("a wheel installed with install_llmsurrogate() is found by a new R session by itself", {
  wheel <- wheel_or_skip()
  version <- sub("^llmsurrogate-([^-]+)-.*$", "\\1", basename(wheel))
  venvs <- venv_root()
  on.exit(venvs$restore(), add = TRUE)
  env <- file.path(venvs$root, "r-llmsurrogate")

  got <- collect_messages(install_llmsurrogate(path = wheel, pip_options = "--quiet"))
  expect_identical(got$value, file.path(env, "bin", "python"))
  expect_true(file.exists(got$value))
  expect_match(got$messages, sprintf("Installed llmsurrogate %s (Python package) into %s.", version, env),
               fixed = TRUE)
  expect_match(got$messages, "Restart R: library(llmsurrogate) then uses this environment by itself, with no environment variable to set.",
               fixed = TRUE)

  run <- new_r_session(first_result, venvs$home)
  text <- paste(run$output, collapse = "\n")
  expect_identical(run$status, 0L, info = text)
  expect_identical(utils::tail(run$output, 4),
                   c("   lower    upper ", " 2.71072 31.39048 ",
                     paste0("VERSION=", version), paste0("PYTHON=", got$value)))

  # again, with the same wheel: the package is reinstalled (pip alone would skip a wheel of the
  # installed version), its dependencies kept
  site <- Sys.glob(file.path(env, "lib", "python3*", "site-packages"))
  info <- function() file.info(Sys.glob(file.path(site, "llmsurrogate-*.dist-info")))$mtime
  numpy <- function() file.info(Sys.glob(file.path(site, "numpy-*.dist-info")))$mtime
  before <- info()
  numpy_before <- numpy()
  Sys.sleep(1.1)
  again <- collect_messages(install_llmsurrogate(path = wheel, pip_options = "--quiet"))
  expect_identical(again$value, got$value)
  expect_length(before, 1L)
  expect_true(info() > before)
  expect_identical(numpy(), numpy_before)
})

test_that("an environment elsewhere is found through LLMSURROGATE_PYTHON, as the message says", {
  wheel <- wheel_or_skip()
  venvs <- venv_root()
  on.exit(venvs$restore(), add = TRUE)
  env <- file.path(venvs$home, "venvs", "llmsurrogate")
  # --no-deps: the dependencies were installed for real above; here only where the environment is
  # found matters (the environment has numpy, which the compiled core needs)
  got <- collect_messages(install_llmsurrogate(envname = file.path(venvs$home, "venvs", "llmsurrogate"),
                                               path = wheel, python = Sys.which("python3"),
                                               pip_options = c("--quiet", "--no-deps")))
  expect_identical(got$value, file.path(env, "bin", "python"))
  expect_match(got$messages, paste0("This environment is not found by itself: restart R and set ",
                                    "LLMSURROGATE_PYTHON before the first call, for good with this ",
                                    "line in ~/.Renviron:\nLLMSURROGATE_PYTHON=", got$value),
               fixed = TRUE)
  expect_identical(list.files(venvs$root), character(0))  # not in the folder of environments

  code <- c("library(llmsurrogate)", first_result[5:6])
  # a new session with the line the message gives
  run <- new_r_session(code, venvs$home, LLMSURROGATE_PYTHON = got$value)
  text <- paste(run$output, collapse = "\n")
  expect_identical(run$status, 0L, info = text)
  expect_identical(utils::tail(run$output, 1), paste0("PYTHON=", got$value))
  # without it, that session does not find the environment
  run <- new_r_session(code, venvs$home)
  expect_false(any(run$output == paste0("PYTHON=", got$value)))
})
