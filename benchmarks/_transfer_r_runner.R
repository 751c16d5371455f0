# The transfer workload from R: transferUQ and the llmsurrogate R package in the SAME R process,
# interleaved per function (ours, transferUQ, ours, transferUQ, ...), after one warm-up of each.
# Run by benchmarks/bench_transfer.py (which installs transferUQ into a scratch library first):
#
#   Rscript benchmarks/_transfer_r_runner.R <transferUQ library> <rounds> <out.json> [<slow rounds>] [<pairs>] [<sections>]
#
# <sections>: comma-separated "matrix" (the 44-domain matrices) and "long" (the same errors as r = 1
# long data frames, and transferUQ's r = 2 help-page construction with n = 40: 59,280 rows of ordered
# training pairs); default both. In "long", the side "ours_new_data" gets another data frame (other
# errors) at every call, so that no table kept from an earlier call on the same data frame is reused;
# for r = 1, "ours_new_design" gets data frames with other domain columns as well (nothing kept from
# a data frame of the same design is reused either).
#
# transferUQ's check_worstcase_dominance takes about 13 s per call on this workload: it gets <slow
# rounds> rounds (default 1) and no warm-up call of its own (its code is byte-compiled at install).
#
# Both sides compute the same quantities: llmsurrogate with transferUQ's conventions (mode =
# "transferUQ", order = "transferUQ"); the defaults (exact ranks, U-statistic order r + 1, every rank
# scanned) are an extra line, "ours_defaults". Times are per call of each function (the whole
# workload, 4 models x (9 forecast intervals + 61-beta QTE + ETE) + 4 pairs x (worst-case and
# everywhere dominance at 10 taus), is the sum of calls x per-call time).

args <- commandArgs(trailingOnly = TRUE)
tuq_lib <- args[1]
rounds <- as.integer(args[2])
out <- args[3]
slow_rounds <- if (length(args) >= 4) as.integer(args[4]) else 1L
worst_pairs <- if (length(args) >= 5) as.integer(args[5]) else 4L  # pairs timed for worst-case dominance
sections <- if (length(args) >= 6) strsplit(args[6], ",")[[1]] else c("matrix", "long")
slow <- c("check_worstcase_dominance", "r=1 long: check_worstcase_dominance", "r=2 long: check_worstcase_dominance")

suppressPackageStartupMessages({
  library(transferUQ, lib.loc = tuq_lib)
  library(llmsurrogate)
  library(jsonlite)
})
options(llmsurrogate.transferUQ_notice = FALSE)  # the once-per-session notices are not timed
load0 <- tryCatch(as.numeric(strsplit(readLines("/proc/loadavg"), " ")[[1]][1:3]), error = function(e) NULL)

models <- c("abdg", "RF", "EU_iso", "g")
pairs <- list(c("abdg", "RF"), c("EU_iso", "RF"), c("g", "RF"), c("abdg", "EU_iso"))
coverages <- c(0.8, 0.9, 0.95)
sides <- c("two", "left", "right")
betas <- round(seq(0.2, 0.8, 0.01), 10)
taus <- round(seq(0.5, 0.95, length.out = 10), 10)
raw <- transferUQ::CertaintyEquivalents$unnormalized[models]
inv <- lapply(transferUQ::CertaintyEquivalents$normalized[models], function(m) 1 / m)

tr <- reticulate::import("llmsurrogate.transfer")
clear <- function() invisible(tr$clear_rank_cache())  # cold quantile-CI ranks, as transferUQ

# one function per (side, function): runs all its calls of the workload
work <- list(
  forecast_interval = list(
    calls = length(models) * length(coverages) * length(sides),
    transferUQ = function() for (m in models) for (c in coverages) for (s in sides)
      transferUQ::forecast_interval(raw[[m]], c, s),
    ours = function() for (m in models) for (c in coverages) for (s in sides)
      llmsurrogate::forecast_interval(raw[[m]], c, s, mode = "transferUQ"),
    ours_defaults = function() for (m in models) for (c in coverages) for (s in sides)
      llmsurrogate::forecast_interval(raw[[m]], c, s)),
  qte_interval = list(
    calls = length(models),
    transferUQ = function() for (m in models) transferUQ::qte_interval(raw[[m]], 0.8, "two", betas),
    ours = function() { clear(); for (m in models) llmsurrogate::qte_interval(raw[[m]], 0.8, "two", betas, order = "transferUQ") },
    ours_defaults = function() { clear(); for (m in models) llmsurrogate::qte_interval(raw[[m]], 0.8, "two", betas) }),
  ete_interval = list(
    calls = length(models),
    transferUQ = function() for (m in models) transferUQ::ete_interval(inv[[m]], 0.8),
    ours = function() for (m in models) llmsurrogate::ete_interval(inv[[m]], 0.8, order = "transferUQ"),
    ours_defaults = function() for (m in models) llmsurrogate::ete_interval(inv[[m]], 0.8)),
  check_worstcase_dominance = list(
    calls = worst_pairs,
    transferUQ = function() for (p in pairs[seq_len(worst_pairs)])
      transferUQ::check_worstcase_dominance(raw[[p[1]]], raw[[p[2]]], taus),
    ours = function() for (p in pairs[seq_len(worst_pairs)])
      llmsurrogate::check_worstcase_dominance(raw[[p[1]]], raw[[p[2]]], taus, mode = "transferUQ"),
    ours_defaults = function() for (p in pairs[seq_len(worst_pairs)])
      llmsurrogate::check_worstcase_dominance(raw[[p[1]]], raw[[p[2]]], taus)),
  check_everywhere_dominance = list(
    calls = length(pairs),
    transferUQ = function() for (p in pairs) transferUQ::check_everywhere_dominance(raw[[p[1]]], raw[[p[2]]], taus),
    ours = function() for (p in pairs)
      llmsurrogate::check_everywhere_dominance(raw[[p[1]]], raw[[p[2]]], taus, mode = "transferUQ"),
    ours_defaults = function() for (p in pairs) llmsurrogate::check_everywhere_dominance(raw[[p[1]]], raw[[p[2]]], taus))
)

# agreement where both compute the same quantity (forecast intervals and dominance exactly)
for (m in models) for (c in coverages) for (s in sides) {
  a <- unname(transferUQ::forecast_interval(raw[[m]], c, s))
  b <- unname(llmsurrogate::forecast_interval(raw[[m]], c, s, mode = "transferUQ"))
  if (!isTRUE(all.equal(a, b))) stop(sprintf("forecast_interval differs: %s %s %s", m, c, s))
}
for (p in pairs) {
  a <- transferUQ::check_everywhere_dominance(raw[[p[1]]], raw[[p[2]]], taus)$res
  b <- llmsurrogate::check_everywhere_dominance(raw[[p[1]]], raw[[p[2]]], taus, mode = "transferUQ")$res
  if (!identical(as.logical(a), as.logical(b))) stop("check_everywhere_dominance differs")
}

elapsed <- function(f) { t <- proc.time()[["elapsed"]]; f(); proc.time()[["elapsed"]] - t }
now <- function() as.numeric(Sys.time())
timer <- function(f) { t <- now(); f(); now() - t }

# Interleaved rounds of each function's sides (every side a function of no arguments running `calls`
# calls), after one warm-up of each (transferUQ's slow functions: none); per-call times.
time_work <- function(work) {
  res <- list()
  for (fn in names(work)) {
    w <- work[[fn]]
    side_names <- intersect(c("ours", "transferUQ", "ours_defaults", "ours_new_data", "ours_new_design"), names(w))
    for (s in side_names) if (!(fn %in% slow && s == "transferUQ")) w[[s]]()  # warm-up
    times <- setNames(lapply(side_names, function(s) numeric(0)), side_names)
    load_before <- tryCatch(as.numeric(strsplit(readLines("/proc/loadavg"), " ")[[1]][1:3]), error = function(e) NULL)
    n_rounds <- if (fn %in% slow) slow_rounds else rounds
    for (i in seq_len(n_rounds)) {
      k <- (i - 1L) %% length(side_names)  # rotate which side goes first
      order <- if (k == 0L) side_names else c(side_names[(k + 1L):length(side_names)], side_names[seq_len(k)])
      for (s in order) times[[s]] <- c(times[[s]], timer(w[[s]]) / w$calls)
    }
    res[[fn]] <- list(calls = w$calls, rounds = n_rounds, warmup = if (fn %in% slow) "ours only" else "all sides",
                      load_before = load_before,
                      load_after = tryCatch(as.numeric(strsplit(readLines("/proc/loadavg"), " ")[[1]][1:3]),
                                            error = function(e) NULL),
                      sides = lapply(times, function(t) list(min_s = min(t), median_s = median(t), rounds_s = I(t))))
  }
  res
}
res <- if ("matrix" %in% sections) time_work(work) else list()

# ---- long data frames: r = 1 (the matrices above as train, test, val rows) and r = 2 ----------------
long_res <- list()
if ("long" %in% sections) {
  long_of <- function(m) {
    idx <- which(row(m) != col(m), arr.ind = TRUE)
    data.frame(train = idx[, 1], test = idx[, 2], val = m[idx])
  }
  raw_long <- lapply(raw, long_of)
  inv_long <- lapply(inv, long_of)
  # transferUQ's help-page r = 2 construction (ordered training pairs) with n = 40: 59,280 rows
  n2 <- 40L
  set.seed(1)
  idx2 <- expand.grid(train1 = 1:n2, train2 = 1:n2, test = 1:n2)
  idx2 <- idx2[idx2$train1 != idx2$train2 & idx2$train1 != idx2$test & idx2$train2 != idx2$test, ]
  r2 <- lapply(1:2, function(i) cbind(idx2, data.frame(val = runif(nrow(idx2)))))
  # other errors for every call of "ours_new_data" (more than the 8 data frames the package keeps)
  fresh <- lapply(1:12, function(i) cbind(idx2, data.frame(val = runif(nrow(idx2)))))
  fresh_r1 <- lapply(1:12, function(i) { d <- raw_long[["abdg"]]; d$val <- d$val * (1 + i / 100); d })
  # and for "ours_new_design": other domain columns too (the domains renumbered, rows in another
  # order), so that nothing kept from a data frame of the same design is reused either
  fresh_design_r1 <- lapply(1:12, function(i) {
    d <- fresh_r1[[i]]; relabel <- (seq_len(44L) + i - 1L) %% 44L + 1L
    d$train <- relabel[d$train]; d$test <- relabel[d$test]; d
  })
  next_fresh <- local({ i <- 0L; function(pool) { i <<- i %% length(pool) + 1L; pool[[i]] } })
  betas2 <- round(seq(0.2, 0.8, 0.1), 10)
  q <- function(expr) suppressWarnings(expr)  # r = 2, n = 40: the coverage warning of every call
  long_work <- list(
    `r=1 long: forecast_interval` = list(
      calls = length(models) * length(coverages) * length(sides),
      transferUQ = function() for (m in models) for (c in coverages) for (s in sides)
        transferUQ::forecast_interval(raw_long[[m]], c, s),
      ours = function() for (m in models) for (c in coverages) for (s in sides)
        llmsurrogate::forecast_interval(raw_long[[m]], c, s, mode = "transferUQ"),
      ours_defaults = function() for (m in models) for (c in coverages) for (s in sides)
        llmsurrogate::forecast_interval(raw_long[[m]], c, s),
      ours_new_data = function() for (m in models) for (c in coverages) for (s in sides)
        llmsurrogate::forecast_interval(next_fresh(fresh_r1), c, s, mode = "transferUQ"),
      ours_new_design = function() for (m in models) for (c in coverages) for (s in sides)
        llmsurrogate::forecast_interval(next_fresh(fresh_design_r1), c, s, mode = "transferUQ")),
    `r=1 long: qte_interval` = list(
      calls = length(models),
      transferUQ = function() for (m in models) transferUQ::qte_interval(raw_long[[m]], 0.8, "two", betas),
      ours = function() { clear(); for (m in models) llmsurrogate::qte_interval(raw_long[[m]], 0.8, "two", betas, order = "transferUQ") },
      ours_defaults = function() { clear(); for (m in models) llmsurrogate::qte_interval(raw_long[[m]], 0.8, "two", betas) }),
    `r=1 long: ete_interval` = list(
      calls = length(models),
      transferUQ = function() for (m in models) transferUQ::ete_interval(inv_long[[m]], 0.8),
      ours = function() for (m in models) llmsurrogate::ete_interval(inv_long[[m]], 0.8, order = "transferUQ"),
      ours_defaults = function() for (m in models) llmsurrogate::ete_interval(inv_long[[m]], 0.8)),
    `r=1 long: check_everywhere_dominance` = list(
      calls = length(pairs),
      transferUQ = function() for (p in pairs) transferUQ::check_everywhere_dominance(raw_long[[p[1]]], raw_long[[p[2]]], taus),
      ours = function() for (p in pairs)
        llmsurrogate::check_everywhere_dominance(raw_long[[p[1]]], raw_long[[p[2]]], taus, mode = "transferUQ"),
      ours_defaults = function() for (p in pairs) llmsurrogate::check_everywhere_dominance(raw_long[[p[1]]], raw_long[[p[2]]], taus)),
    `r=1 long: check_worstcase_dominance` = list(
      calls = 1L,
      transferUQ = function() transferUQ::check_worstcase_dominance(raw_long[["abdg"]], raw_long[["RF"]], taus),
      ours = function() llmsurrogate::check_worstcase_dominance(raw_long[["abdg"]], raw_long[["RF"]], taus, mode = "transferUQ"),
      ours_defaults = function() llmsurrogate::check_worstcase_dominance(raw_long[["abdg"]], raw_long[["RF"]], taus)),
    `r=2 long: forecast_interval` = list(
      calls = length(coverages) * length(sides),
      transferUQ = function() for (c in coverages) for (s in sides) transferUQ::forecast_interval(r2[[1]], c, s),
      ours = function() for (c in coverages) for (s in sides)
        q(llmsurrogate::forecast_interval(r2[[1]], c, s, mode = "transferUQ")),
      ours_defaults = function() for (c in coverages) for (s in sides) q(llmsurrogate::forecast_interval(r2[[1]], c, s)),
      ours_new_data = function() for (c in coverages) for (s in sides)
        q(llmsurrogate::forecast_interval(next_fresh(fresh), c, s, mode = "transferUQ"))),
    `r=2 long: qte_interval` = list(
      calls = 1L,
      transferUQ = function() transferUQ::qte_interval(r2[[1]], 0.8, "two", betas2),
      ours = function() { clear(); llmsurrogate::qte_interval(r2[[1]], 0.8, "two", betas2, order = "transferUQ") },
      ours_defaults = function() { clear(); llmsurrogate::qte_interval(r2[[1]], 0.8, "two", betas2) },
      ours_new_data = function() { clear(); llmsurrogate::qte_interval(next_fresh(fresh), 0.8, "two", betas2, order = "transferUQ") }),
    `r=2 long: ete_interval` = list(
      calls = length(sides),
      transferUQ = function() for (s in sides) transferUQ::ete_interval(r2[[1]], 0.8, s),
      ours = function() for (s in sides) llmsurrogate::ete_interval(r2[[1]], 0.8, s, order = "transferUQ"),
      ours_defaults = function() for (s in sides) llmsurrogate::ete_interval(r2[[1]], 0.8, s),
      ours_new_data = function() for (s in sides) llmsurrogate::ete_interval(next_fresh(fresh), 0.8, s, order = "transferUQ")),
    `r=2 long: check_worstcase_dominance` = list(
      calls = 1L,
      transferUQ = function() transferUQ::check_worstcase_dominance(r2[[1]], r2[[2]], taus),
      ours = function() llmsurrogate::check_worstcase_dominance(r2[[1]], r2[[2]], taus, mode = "transferUQ"),
      ours_defaults = function() llmsurrogate::check_worstcase_dominance(r2[[1]], r2[[2]], taus)),
    `r=2 long: check_everywhere_dominance` = list(
      calls = 1L,
      transferUQ = function() transferUQ::check_everywhere_dominance(r2[[1]], r2[[2]], taus),
      ours = function() llmsurrogate::check_everywhere_dominance(r2[[1]], r2[[2]], taus, mode = "transferUQ"),
      ours_defaults = function() llmsurrogate::check_everywhere_dominance(r2[[1]], r2[[2]], taus)))
  # agreement where both compute the same quantity
  for (m in models) for (c in coverages) for (s in sides) {
    if (!isTRUE(all.equal(unname(transferUQ::forecast_interval(raw_long[[m]], c, s)),
                          llmsurrogate::forecast_interval(raw_long[[m]], c, s, mode = "transferUQ")))) {
      stop(sprintf("r = 1 long forecast_interval differs: %s %s %s", m, c, s))
    }
  }
  for (d in c(fresh_r1, fresh_design_r1)) for (s in sides) {
    if (!identical(unname(transferUQ::forecast_interval(d, 0.9, s)),
                   llmsurrogate::forecast_interval(d, 0.9, s, mode = "transferUQ"))) {
      stop(sprintf("r = 1 long forecast_interval on a new data frame differs: %s", s))
    }
  }
  for (c in coverages) for (s in sides) {
    if (!isTRUE(all.equal(unname(transferUQ::forecast_interval(r2[[1]], c, s)),
                          q(llmsurrogate::forecast_interval(r2[[1]], c, s, mode = "transferUQ"))))) {
      stop(sprintf("r = 2 long forecast_interval differs: %s %s", c, s))
    }
  }
  long_res <- time_work(long_work)
}

# where a call's time goes (forecast_interval on one 44 x 44 matrix, per call)
E <- raw[["abdg"]]
rb <- reticulate::import("llmsurrogate.rbridge")
bi <- reticulate::import_builtins()
payload <- llmsurrogate:::.err_arg(E, "err", quote(f()))
py_len <- bi$len
r_call <- llmsurrogate:::.r_call_fn()  # the package looks it up once per session
per <- function(f, k = 200L) { f(); t <- now(); for (i in seq_len(k)) f(); (now() - t) / k }
breakdown <- list(
  transferUQ_forecast_interval = per(function() transferUQ::forecast_interval(E, 0.9, "two")),
  ours_forecast_interval = per(function() llmsurrogate::forecast_interval(E, 0.9, "two", mode = "transferUQ")),
  r_side_checks_err_arg = per(function() llmsurrogate:::.err_arg(E, "err", quote(f()))),
  reticulate_attribute_lookup_module_dollar = per(function() rb$r_call),
  reticulate_empty_call_cached_function = per(function() py_len(list())),
  reticulate_matrix_as_numeric_vector_to_python_list = per(function() py_len(as.vector(E, mode = "double"))),
  reticulate_matrix_as_raw_bytes_to_python = per(function()
    py_len(writeBin(as.vector(E, mode = "double"), raw(), size = 8L, endian = "little"))),
  r_call_python_side_and_conversions = per(function() r_call("transfer.forecast_interval", payload, 0.9, "two", FALSE,
                                                             tau = NULL, mode = "transferUQ", pooled = TRUE))
)
load1 <- tryCatch(as.numeric(strsplit(readLines("/proc/loadavg"), " ")[[1]][1:3]), error = function(e) NULL)
versions <- list(R = R.version.string, transferUQ = as.character(packageVersion("transferUQ", lib.loc = tuq_lib)),
                 llmsurrogate = as.character(packageVersion("llmsurrogate")),
                 reticulate = as.character(packageVersion("reticulate")),
                 lpSolve = as.character(packageVersion("lpSolve")))
writeLines(toJSON(list(functions = res, long = long_res, breakdown_s = breakdown, load_before = load0, load_after = load1,
                       rounds = rounds, slow_rounds = slow_rounds, versions = versions), auto_unbox = TRUE, digits = NA, null = "null"), out)
