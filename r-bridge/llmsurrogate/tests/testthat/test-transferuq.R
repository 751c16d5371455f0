# transferUQ's code runs with only the library line changed (issue 10, defect 2): its data object
# CertaintyEquivalents, its README and vignette, the input forms of its help pages (matrix, r + 2
# columns, two columns with `r`, ordered training pairs for r = 2), missing cells, and its answers
# under mode = "transferUQ" / order = "transferUQ". The reference numbers were computed with
# transferUQ 0.1.0 (github.com/lihualei71/transferUQ, commit e709f1b) itself, sourced into R 4.2.2
# with lpSolve 5.6.18, on its own data/CertaintyEquivalents.rda; our copy of the matrices agrees
# with it to 2e-15 (relative), hence `tolerance = 1e-12`.

ref_forecast_deterioration <- c(
  EU_iso = 1.00026711668627, RF = 1.02363609866978, a = 1.00000402270332, ab = 1.00028106745443,
  abd = 1.00267106238514, abdg = 1.00847538135251, abg = 1.00564671338832, ad = 1.00187593163312,
  adg = 1.00715309754846, ag = 1.00381714726053, bd = 1.00105741492328, bdg = 1.00595829147109,
  bg = 1.00004404673453, d = 1.00041853895502, dg = 1.00467232799987, g = 1.00000541613762,
  kernel_ridge_rbf = 1.01946065740565)
ref_forecast_deterioration_ub <- c(
  1.1583196653436, 4.64649287231436, 1.13555620535772, 1.14667821837841, 1.49011440753733,
  1.56851396042428, 1.56130408891351, 1.54707454382058, 1.57414843288058, 1.54839710011076,
  1.3753015651511, 1.47211546418501, 1.38452675988074, 1.32395868583381, 1.44010710061937,
  1.3419136977542, 6.17953774165445)
ref_ete_inverse <- cbind(
  c(0.719093100812077, 0.713170328613179, 0.515994852758821, 0.711619180050646, 0.700305899298504,
    0.659837720029521, 0.711608315811912, 0.700254419362283, 0.6655395590335, 0.711605313804129,
    0.711619232931521, 0.711619844636525, 0.66852497639967, 0.697160626418387, 0.714059208133123,
    0.685346938005685, 0.715443524748079, 0.725866011605755, 0.56094246785899),
  c(0.943325070515806, 0.940560054762148, 0.80446538633939, 0.936852105097422, 0.927899847054829,
    0.910897650267243, 0.935281062354461, 0.92789985707351, 0.911762188082733, 0.935131243075014,
    0.937050715955925, 0.93860199017952, 0.911747536901562, 0.927900940926449, 0.941016865432243,
    0.921586169758707, 0.941725669234453, 0.943355137241096, 0.83495414564817))
ref_median <- cbind(
  c(3.39506893940569, 3.82167816870405, 3.40765033617504, 3.43973905319187, 3.55692885131105,
    3.39154289005391, 3.39699590723996, 3.48863614715329, 3.38420372198616, 3.3538499391495,
    3.49920376812409, 3.43876354318881, 3.3509167132886, 3.4524204981314, 3.35977644605784,
    3.30028312039305, 3.68514105693182),
  c(4.41820978793937, 6.6279656157517, 4.47676753060137, 4.48453055696308, 4.86667943604065,
    4.66793516773511, 4.69293185591611, 4.85674220938292, 4.70885861039583, 4.71242417702664,
    4.81775697182159, 4.71352462764094, 4.59700337030942, 4.78847216710596, 4.60823091160247,
    4.55716951413892, 5.94473546210249))

# transferUQ inverts the U-statistic bound with uniroot() at its default tolerance
# (.Machine$double.eps^0.25, about 1.2e-4 on the level u) and takes f_(ceiling(N u)); the package
# uses the exact discrete rank rule (docs/methods/transfer.md §5.3). Both are valid bounds; they
# can differ by the root-finding error, 1 + 1.2e-4 N order statistics at most.
expect_within_root_tolerance <- function(actual, reference, values) {
  v <- sort(values)
  rank <- function(x) vapply(x, function(y) which.min(abs(v - y)), integer(1))
  expect_true(all(abs(rank(actual) - rank(reference)) <= 1 + ceiling(1.23e-4 * length(v))))
  expect_equal(v[rank(actual)], actual, tolerance = 1e-12)
}

test_that("CertaintyEquivalents is transferUQ's data object, with the published matrices", {
  skip_if_no_llmsurrogate()
  data("CertaintyEquivalents", package = "llmsurrogate", envir = environment())
  expect_identical(names(CertaintyEquivalents), c("unnormalized", "normalized"))
  expect_identical(names(CertaintyEquivalents$unnormalized),
                   c("EU_iso", "RF", "a", "ab", "abd", "abdg", "abg", "ad", "adg", "ag", "bd", "bdg", "bg",
                     "d", "dg", "g", "kernel_ridge_rbf"))
  expect_length(CertaintyEquivalents$normalized, 19L)
  for (kind in names(CertaintyEquivalents)) {
    for (m in names(CertaintyEquivalents[[kind]])) {
      x <- CertaintyEquivalents[[kind]][[m]]
      expect_true(is.matrix(x) && is.double(x) && is.null(dimnames(x)))
      expect_identical(dim(x), c(44L, 44L))
      expect_identical(x, unname(load_transfer_errors(m, kind = kind)))
    }
  }
})

test_that("transferUQ's README runs unchanged and gives its answers", {
  skip_if_no_llmsurrogate()
  # --- transferUQ README, with library("transferUQ") replaced ---
  library("llmsurrogate")

  # Extract the unnormalized transfor error matrix for the CPT model and Random Forests
  err_CPT <- CertaintyEquivalents$unnormalized[["abdg"]]
  err_RF <- CertaintyEquivalents$unnormalized[["RF"]]

  # Compute 80% two-sided forecast intervals
  fi_CPT <- forecast_interval(err_CPT, 0.8)
  fi_RF <- forecast_interval(err_RF, 0.8)

  # Compute 80% two-sided confidence intervals for the median transfer errors
  q_CPT <- qte_interval(err_CPT, 0.8, betas = 0.5)
  q_RF <- qte_interval(err_RF, 0.8, betas = 0.5)

  # Check if CPT worst-case-upper-dominates RF
  wc <- check_worstcase_dominance(err_CPT, err_RF)

  # Check if CPT everywhere-upper-dominates RF
  ev <- check_everywhere_dominance(err_CPT, err_RF)
  # --- end of the README ---

  expect_equal(fi_CPT, c(2.75924253161243, 9.48248216087769), tolerance = 1e-12)
  expect_equal(fi_RF, c(2.88233949120567, 19.8695394433208), tolerance = 1e-12)
  expect_s3_class(q_CPT, "data.frame")
  expect_identical(names(q_CPT), c("beta", "lb", "ub"))
  # the default U-statistic order is r + 1 (wider); order = "transferUQ" (r) gives its numbers
  expect_true(q_CPT$lb <= 3.39154289005391 && q_CPT$ub >= 4.66793516773511)
  expect_equal(unlist(qte_interval(err_CPT, 0.8, betas = 0.5, order = "transferUQ")),
               c(beta = 0.5, lb = 3.39154289005391, ub = 4.66793516773511), tolerance = 1e-12)
  expect_equal(unlist(qte_interval(err_RF, 0.8, betas = 0.5, order = "transferUQ")),
               c(beta = 0.5, lb = 3.82167816870405, ub = 6.6279656157517), tolerance = 1e-12)
  expect_identical(wc$tau, seq(0.5, 1, 0.01))
  expect_true(all(wc$res))
  expect_true(all(check_worstcase_dominance(err_CPT, err_RF, mode = "transferUQ")$res))
  # everywhere dominance: transferUQ's pruning claims it for tau >= 0.96; the exact check finds none
  tuq <- check_everywhere_dominance(err_CPT, err_RF, mode = "transferUQ")
  expect_equal(tuq$tau[tuq$res], c(0.96, 0.97, 0.98, 0.99, 1))
  expect_false(any(ev$res))
})

test_that("transferUQ's vignette runs with only the library lines changed and gives its answers", {
  skip_if_no_llmsurrogate()
  if (!nzchar(Sys.getenv("TZ"))) {  # loading tidyverse asks timedatectl for the zone: absent in containers
    Sys.setenv(TZ = "UTC")
    on.exit(Sys.unsetenv("TZ"), add = TRUE)
  }
  skip_if_not_installed("tidyverse")
  grDevices::pdf(NULL)  # the vignette's figures go to a null device
  on.exit(grDevices::dev.off(), add = TRUE)
  # --- transferUQ's vignette (vignettes/transferUQ_demo.Rmd), its R chunks in order. Library
  # lines: "transferUQ" -> "llmsurrogate"; "latex2exp" dropped: Debian has no package of it (and
  # CRAN cannot be reached here), and the vignette's code never calls it ---
  library("llmsurrogate")
  suppressPackageStartupMessages(library("tidyverse"))
  set.seed(1)

  ## Load "CertaintyEquivalents" data used in the paper
  data("CertaintyEquivalents")
  transfer_error <- CertaintyEquivalents$unnormalized
  normalized_transfer <- CertaintyEquivalents$normalized
  transfer_deterioration <- lapply(transfer_error, function(err){
      t(t(err) / diag(err))
  })
  inv_normalized_transfer <- lapply(normalized_transfer, function(err){
      1 / err
  })

  ## 80% forecast intervals for transfer deterioration
  forecast_bounds <-
      lapply(names(transfer_deterioration), function(model){
      interval <- forecast_interval(transfer_deterioration[[model]], 0.8, "two")
      data.frame(model = model,
                 lb = interval[1],
                 ub = interval[2])
  }) %>% Reduce(rbind, .) %>%
      mutate(model = recode(model, `EU_iso` = "EU", `kernel_ridge_rbf` = "Ridge"))

  forecast_plot <- forecast_bounds %>%
      ggplot(aes(x = model, color = model)) +
      geom_errorbar(aes(ymin = lb, ymax = ub)) +
      coord_flip() +
      theme_bw() +
      theme(legend.position = "none",
            panel.grid = element_blank()) +
      ylab("Transfer deterioration") +
      xlab("Model")
  forecast_plot

  ## 80% confidence intervals for expected inverse normalized transfer errors
  exp_bounds <-
      lapply(names(inv_normalized_transfer), function(model){
      interval <- ete_interval(inv_normalized_transfer[[model]], 0.8, "two")
      data.frame(model = model,
                 lb = interval[1],
                 ub = interval[2])
  }) %>% Reduce(rbind, .) %>%
      mutate(model = recode(model, `EU_iso` = "EU", `kernel_ridge_rbf` = "Ridge"))

  exp_plot <- exp_bounds %>%
      ggplot(aes(x = model, color = model)) +
      geom_errorbar(aes(ymin = lb, ymax = ub)) +
      coord_flip() +
      theme_bw() +
      theme(legend.position = "none",
            panel.grid = element_blank()) +
      ylab("Expected inverse normalized transfer error") +
      xlab("Model")
  exp_plot

  ## 80% confidence intervals for median (unnormalized) transfer errors
  med_bounds <-
      lapply(names(transfer_error), function(model){
      interval <- qte_interval(transfer_error[[model]], 0.8, betas = 0.5)
      data.frame(model = model,
                 lb = interval$lb[1],
                 ub = interval$ub[1])
  }) %>% Reduce(rbind, .) %>%
      mutate(model = recode(model, `EU_iso` = "EU", `kernel_ridge_rbf` = "Ridge"))

  med_plot <- med_bounds %>%
      ggplot(aes(x = model, color = model)) +
      geom_errorbar(aes(ymin = lb, ymax = ub)) +
      coord_flip() +
      theme_bw() +
      theme(legend.position = "none",
            panel.grid = element_blank()) +
      ylab("Median transfer error") +
      xlab("Model")
  med_plot

  ## Compare CPT and RF in terms of worst-case-upper-dominance
  wc <- check_worstcase_dominance(transfer_error[["abdg"]], transfer_error[["RF"]])

  ## Compare CPT and RF in terms of everywhere-upper-dominance
  ev <- check_everywhere_dominance(transfer_error[["abdg"]], transfer_error[["RF"]])
  # --- end of the vignette ---

  for (p in list(forecast_plot, exp_plot, med_plot)) {
    expect_s3_class(p, "ggplot")
    expect_silent(print(p))
  }
  models <- names(transfer_error)
  expect_identical(forecast_bounds$model, recode(models, `EU_iso` = "EU", `kernel_ridge_rbf` = "Ridge"))
  expect_equal(forecast_bounds$lb, unname(ref_forecast_deterioration), tolerance = 1e-12)
  expect_equal(forecast_bounds$ub, ref_forecast_deterioration_ub, tolerance = 1e-12)
  expect_true(all(exp_bounds$lb < exp_bounds$ub) && nrow(exp_bounds) == 19L)
  expect_true(all(med_bounds$lb < med_bounds$ub) && nrow(med_bounds) == 17L)

  # transferUQ's numbers under order = "transferUQ"; its mean bound comes from uniroot() at the
  # default tolerance (about 1e-4), ours from bisection to 1e-13
  ete_tuq <- t(vapply(inv_normalized_transfer, function(e) ete_interval(e, 0.8, "two", order = "transferUQ"),
                      numeric(2)))
  expect_equal(unname(ete_tuq), ref_ete_inverse, tolerance = 1e-3)
  med_tuq <- t(vapply(transfer_error, function(e) {
    unlist(qte_interval(e, 0.8, betas = 0.5, order = "transferUQ")[c("lb", "ub")])
  }, numeric(2)))
  expect_equal(unname(med_tuq), ref_median, tolerance = 1e-12)
  expect_true(all(wc$res))
  expect_false(any(ev$res))
})

test_that("transfer_error_table() output goes straight into forecast_interval() (character domains)", {
  skip_if_no_llmsurrogate()
  ce <- load_certainty_equivalents(domains = c(7, 8, 9))
  tab <- transfer_error_table(ce, "cpt:g", metric = "rmse")
  expect_type(tab$test, "character")
  # n = 3 domains guarantee 0.25 of the nominal 0.5: the one warning is that (CoverageWarning)
  expect_warning(fi <- forecast_interval(tab, 0.5), "guaranteed coverage is 0.25", class = "llmsurrogate_warning")
  e <- sort(tab$error)
  expect_identical(fi, c(e[6 + 1 - ceiling(0.75 * 6)], e[ceiling(0.75 * 6)]))
  # n = 3 domains, r = 1: the correction inflates 0.5 to 0.5 * 4/2 = 1, the [min, max] interval
  expect_identical(forecast_interval(tab, 0.5, correction = TRUE), range(e))
  # factor labels and tibbles too
  tab$train <- factor(tab$train)
  expect_identical(suppressWarnings(forecast_interval(tab, 0.5)), fi)
  skip_if_not_installed("tibble")
  expect_identical(suppressWarnings(forecast_interval(tibble::as_tibble(tab), 0.5)), fi)
})

test_that("the forms of transferUQ's help pages give its answers", {
  skip_if_no_llmsurrogate()
  # forecast_interval's examples: a matrix, r + 2 columns, two columns (test, val)
  n <- 100
  set.seed(1)
  errmat <- matrix(runif(n^2), nrow = n)
  diag(errmat) <- NA
  idx <- expand.grid(train = 1:n, test = 1:n)
  errdf <- cbind(idx, data.frame(val = as.numeric(errmat)))
  errdf <- errdf[!is.na(errdf$val), ]
  errdf2 <- errdf[, 2:3]
  expect_equal(forecast_interval(errmat, 0.9, "two", correction = TRUE),
               c(0.0391000553499907, 0.960402314784005), tolerance = 1e-14)
  expect_equal(forecast_interval(errdf, 0.9, "two"), c(0.0486105645541102, 0.952643642667681), tolerance = 1e-14)
  expect_equal(forecast_interval(errdf2, 0.9, "two"), c(0.0486105645541102, 0.952643642667681), tolerance = 1e-14)
  q <- qte_interval(errdf2, 0.9, "two", betas = c(0.3, 0.5), r = 1, order = "transferUQ")
  expect_within_root_tolerance(q$lb, c(0.198593728709966, 0.386850384296849), errdf2$val)
  expect_within_root_tolerance(q$ub, c(0.405973301967606, 0.608539856038988), errdf2$val)
  expect_equal(ete_interval(errdf2, 0.9, "two", 1, r = 1, order = "transferUQ"),
               c(0.392115850845612, 0.617515665672067), tolerance = 1e-3)
  # without r the two-column form has no U-statistic order, and no correction
  expect_error(qte_interval(errdf2, 0.9, "two"), class = "llmsurrogate_error", regexp = "pass `r`")
  expect_error(forecast_interval(errdf2, 0.9, correction = TRUE), class = "llmsurrogate_error", regexp = "needs r")
  expect_error(qte_interval(errdf, 0.9, r = 2), class = "llmsurrogate_error", regexp = "does not match")
  # dominance works on the two-column form too
  expect_identical(check_worstcase_dominance(errdf2, errdf2, 0.9, mode = "transferUQ")$res, FALSE)

  # r = 2 with ordered training pairs (each unordered pair twice, with different errors)
  n <- 40
  set.seed(1)
  idx <- expand.grid(train1 = 1:n, train2 = 1:n, test = 1:n)
  idx <- idx[idx$train1 != idx$train2 & idx$train1 != idx$test & idx$train2 != idx$test, ]
  err <- cbind(idx, data.frame(val = runif(nrow(idx))))
  # Proposition 1 guarantees 0.834 of the nominal 0.9 with n = 40, r = 2: a warning says so
  expect_warning(fi <- forecast_interval(err, 0.9, "two", correction = FALSE), "guaranteed coverage is 0.8341",
                 class = "llmsurrogate_warning")
  expect_equal(fi, c(0.0499922859016806, 0.950998167041689), tolerance = 1e-14)
  expect_equal(forecast_interval(err, 0.9, "two", correction = TRUE),
               c(0.0142666143365204, 0.986410235753283), tolerance = 1e-14)
  expect_equal(forecast_interval(err, 0.9, "left", correction = TRUE), c(0.0286664597224444, Inf), tolerance = 1e-14)
  expect_equal(forecast_interval(err, 0.9, "right", correction = TRUE), c(-Inf, 0.972384016495198), tolerance = 1e-14)
  q <- qte_interval(err, 0.9, "two", betas = c(0.3, 0.5), order = "transferUQ")
  expect_within_root_tolerance(q$lb, c(0.0773434699513018, 0.232980050612241), err$val)
  expect_within_root_tolerance(q$ub, c(0.551050630630925, 0.768029026919976), err$val)
  expect_equal(ete_interval(err, 0.9, "two", 1, order = "transferUQ"), c(0.260172543932273, 0.754720123952913),
               tolerance = 1e-3)
})

test_that("missing cells: the rest is used, as in transferUQ, with a classed warning", {
  skip_if_no_llmsurrogate()
  E <- CertaintyEquivalents$unnormalized$abdg
  E[2, 5] <- NA
  E[7, 1] <- NA
  E[30, 31] <- NA
  expect_warning(fi <- forecast_interval(E, 0.8), class = "llmsurrogate_warning", regexp = "3 of its 1892")
  expect_equal(fi, c(2.75691858011003, 9.72892027817923), tolerance = 1e-12)
  q <- suppressWarnings(qte_interval(E, 0.8, betas = 0.5, order = "transferUQ"))
  expect_within_root_tolerance(c(q$lb, q$ub), c(3.39154289005391, 4.66845128154685), E[row(E) != col(E) & !is.na(E)])
  expect_equal(suppressWarnings(forecast_interval(E, 0.9, "right", correction = TRUE, mode = "transferUQ")),
               c(-Inf, 14.5874497938772), tolerance = 1e-12)
  # per-domain computations need every cell, and say so
  expect_error(suppressWarnings(check_everywhere_dominance(E, E)), class = "llmsurrogate_error")
  # Inf is not a missing cell: named as err[i, j] (1-based)
  E[3, 4] <- Inf
  expect_error(forecast_interval(E, 0.8), class = "llmsurrogate_error", regexp = "err[3, 4] is Inf", fixed = TRUE)
})

test_that("a vector coverage gives one interval per level", {
  skip_if_no_llmsurrogate()
  err_CPT <- CertaintyEquivalents$unnormalized[["abdg"]]
  out <- forecast_interval(err_CPT, c(0.8, 0.9))
  expect_s3_class(out, "data.frame")
  expect_identical(names(out), c("coverage", "lower", "upper"))
  expect_identical(unlist(out[1, 2:3], use.names = FALSE), forecast_interval(err_CPT, 0.8))
  expect_identical(unlist(out[2, 2:3], use.names = FALSE), forecast_interval(err_CPT, 0.9))
  expect_identical(names(worst_case_interval(err_CPT, tau = c(0.9, 0.95), Gamma = 2)), c("tau", "lower", "upper"))
  expect_identical(nrow(weighted_forecast_interval(err_CPT, rep(1, 44), c(0.5, 0.8, 0.9))), 3L)
})

test_that("mode = \"transferUQ\" reproduces its floating-point rank in corrected intervals", {
  skip_if_no_llmsurrogate()
  err_CPT <- CertaintyEquivalents$unnormalized[["abdg"]]
  ref <- list(
    list(0.5, "two", c(3.1508176218894, 5.73093458380324)), list(0.5, "left", c(3.8344900477044, Inf)),
    list(0.5, "right", c(-Inf, 4.00049980471881)), list(0.8, "two", c(2.67705329569394, 13.1917600254421)),
    list(0.8, "left", c(2.96134533166127, Inf)), list(0.8, "right", c(-Inf, 6.63503772329664)),
    list(0.9, "two", c(1.27805061364869, 74.2361143616951)), list(0.9, "left", c(2.49855731749454, Inf)),
    list(0.9, "right", c(-Inf, 14.5874497938772)))
  for (x in ref) {
    expect_equal(forecast_interval(err_CPT, x[[1]], x[[2]], correction = TRUE, mode = "transferUQ"), x[[3]],
                 tolerance = 1e-12)
  }
  # 0.5 * 45/43 * 1892 = 990 exactly: Definition 2 takes rank 990, transferUQ's fuzz rank 991
  e <- sort(err_CPT[row(err_CPT) != col(err_CPT)], decreasing = TRUE)
  expect_identical(forecast_interval(err_CPT, 0.5, "left", correction = TRUE), c(e[990], Inf))
  expect_identical(forecast_interval(err_CPT, 0.5, "left", correction = TRUE, mode = "transferUQ"), c(e[991], Inf))
})

# The notices' state is per session: tests start from a fresh one.
reset_notices <- function() {
  given <- llmsurrogate:::.notices_given
  rm(list = ls(given), envir = given)
}

test_that("each default that departs from transferUQ says so once per session, naming the argument", {
  skip_if_no_llmsurrogate()
  reset_notices()
  withr::local_options(llmsurrogate.transferUQ_notice = NULL)
  E <- CertaintyEquivalents$unnormalized[["abdg"]]
  R <- CertaintyEquivalents$unnormalized[["RF"]]
  calls <- list(
    forecast_interval = list(function() forecast_interval(E, 0.8), "mode = \"transferUQ\""),
    qte_interval = list(function() qte_interval(E, 0.8, betas = 0.5), "order = \"transferUQ\""),
    ete_interval = list(function() ete_interval(1 / CertaintyEquivalents$normalized[["abdg"]], 0.8),
                        "order = \"transferUQ\""),
    check_everywhere_dominance = list(function() check_everywhere_dominance(E, R, 0.96), "mode = \"transferUQ\""),
    check_worstcase_dominance = list(function() check_worstcase_dominance(E, R, 0.96), "mode = \"transferUQ\""))
  for (fn in names(calls)) {
    f <- calls[[fn]][[1]]
    msgs <- list()
    withCallingHandlers({ f(); f() }, llmsurrogate_transferUQ_notice = function(m) {
      msgs[[length(msgs) + 1L]] <<- conditionMessage(m)
      invokeRestart("muffleMessage")
    })
    expect_length(msgs, 1L)  # once, not at the second call
    expect_match(msgs[[1]], paste0("^", fn, "\\(\\)"))
    expect_match(msgs[[1]], calls[[fn]][[2]], fixed = TRUE)
    expect_match(msgs[[1]], "options(llmsurrogate.transferUQ_notice = FALSE)", fixed = TRUE)
  }
  # naming the argument (either value) is a choice: no notice
  reset_notices()
  expect_silent(qte_interval(E, 0.8, betas = 0.5, order = "transferUQ"))
  expect_silent(check_everywhere_dominance(E, R, 0.96, mode = "exact"))
  # the departures the notices name are real: transferUQ's README median CI and CPT vs RF at tau 0.96
  expect_false(isTRUE(all.equal(suppressMessages(qte_interval(E, 0.8, betas = 0.5)),
                                qte_interval(E, 0.8, betas = 0.5, order = "transferUQ"))))
  expect_false(suppressMessages(check_everywhere_dominance(E, R, 0.96))$res)
  expect_true(check_everywhere_dominance(E, R, 0.96, mode = "transferUQ")$res)
})

test_that("options(llmsurrogate.transferUQ_notice = FALSE) silences the notices", {
  skip_if_no_llmsurrogate()
  reset_notices()
  withr::local_options(llmsurrogate.transferUQ_notice = FALSE)
  E <- CertaintyEquivalents$unnormalized[["abdg"]]
  expect_silent(qte_interval(E, 0.8, betas = 0.5))
  expect_silent(check_worstcase_dominance(E, E, 0.9))
  expect_length(ls(llmsurrogate:::.notices_given), 0L)  # nothing was shown, so nothing is marked shown
})

test_that("a new long data frame (integer domains sent as numbers) gives the matrix's answers and the same errors", {
  skip_if_no_llmsurrogate()
  withr::local_options(llmsurrogate.transferUQ_notice = FALSE)
  E <- CertaintyEquivalents$unnormalized[["abdg"]]
  idx <- which(row(E) != col(E), arr.ind = TRUE)
  # ten data frames of one design (other errors each; more than the package keeps), then rows in
  # another order and the domains renumbered: each a first call, each the matrix's interval
  for (k in 1:10) {
    Ek <- E * (1 + k / 100)
    d <- data.frame(train = idx[, 1], test = idx[, 2], val = Ek[idx])
    expect_identical(forecast_interval(d, 0.9, "two", mode = "transferUQ"),
                     forecast_interval(Ek, 0.9, "two", mode = "transferUQ"))
  }
  relabel <- c(2:44, 1L)
  d <- data.frame(train = relabel[idx[, 1]], test = relabel[idx[, 2]], val = E[idx])[sample(nrow(idx)), ]
  Er <- E
  Er[relabel, relabel] <- E
  expect_identical(forecast_interval(d, 0.8, "right", mode = "transferUQ"),
                   forecast_interval(Er, 0.8, "right", mode = "transferUQ"))
  # huge errors whose sum overflows are finite: no error, the matrix's answer
  Eb <- E / max(E, na.rm = TRUE) * 1e308
  big <- data.frame(train = idx[, 1], test = idx[, 2], val = Eb[idx])
  expect_false(is.finite(sum(big$val)))
  expect_identical(forecast_interval(big, 0.9, mode = "transferUQ"), forecast_interval(Eb, 0.9, mode = "transferUQ"))
  # an infinite error, and a test domain among the training domains, are still errors
  inf <- data.frame(train = idx[, 1], test = idx[, 2], val = E[idx])
  inf$val[7] <- -Inf
  expect_error(forecast_interval(inf, 0.9, mode = "transferUQ"), "the error in row 7 is -Inf",
               class = "llmsurrogate_error")
  clash <- data.frame(train = idx[, 1], test = idx[, 2], val = E[idx] * 3)
  clash$train[5] <- clash$test[5]
  expect_error(forecast_interval(clash, 0.9, mode = "transferUQ"), "row 5 has its test domain",
               class = "llmsurrogate_error")
})

test_that("long data frames (r = 1 and r = 2) give what the same errors give as a matrix or in Python", {
  skip_if_no_llmsurrogate()
  withr::local_options(llmsurrogate.transferUQ_notice = FALSE)
  E <- CertaintyEquivalents$unnormalized[["abdg"]]
  R <- CertaintyEquivalents$unnormalized[["RF"]]
  long <- function(m) {
    idx <- which(row(m) != col(m), arr.ind = TRUE)
    data.frame(train = idx[, 1], test = idx[, 2], val = m[idx])
  }
  lE <- long(E)
  lR <- long(R)
  expect_identical(forecast_interval(lE, 0.8), forecast_interval(E, 0.8))
  expect_identical(forecast_interval(lE, 0.8, mode = "transferUQ", correction = TRUE),
                   forecast_interval(E, 0.8, mode = "transferUQ", correction = TRUE))
  expect_identical(qte_interval(lE, 0.8, betas = c(0.3, 0.5)), qte_interval(E, 0.8, betas = c(0.3, 0.5)))
  inv <- 1 / CertaintyEquivalents$normalized[["abdg"]]
  expect_identical(ete_interval(long(inv), 0.8), ete_interval(inv, 0.8))
  expect_identical(check_everywhere_dominance(lE, lR, c(0.9, 0.96)), check_everywhere_dominance(E, R, c(0.9, 0.96)))
  expect_identical(check_worstcase_dominance(lE, lR), check_worstcase_dominance(E, R))
  # a data frame changed after a call gives the changed answer (what is kept is keyed by content)
  before <- forecast_interval(lE, 0.9, "right")
  lE2 <- lE
  lE2$val[which.max(lE2$val)] <- 1e6
  E2 <- E
  E2[which(E2 == max(E2, na.rm = TRUE))] <- 1e6
  for (i in 1:2) expect_identical(forecast_interval(lE, 0.9, "right"), before)
  expect_identical(forecast_interval(lE2, 0.99, "right"), forecast_interval(E2, 0.99, "right"))
  expect_identical(forecast_interval(lE2, 1, "right"), c(-Inf, 1e6))
  expect_identical(forecast_interval(lE, 1, "right"), c(-Inf, max(E, na.rm = TRUE)))
  # the same errors under other domains are another table: the payload kept for lE (same last
  # column) is not reused; here every row's test domain is its training domain
  clash <- lE
  clash$train <- clash$test
  expect_error(forecast_interval(clash, 1, "right"), "among its training domains", class = "llmsurrogate_error")
  # whole-number domains with gaps (coded through a map) and without (a domain's code is its number - 1)
  gaps <- lE
  gaps$train <- 3L * gaps$train + 7L
  gaps$test <- 3L * gaps$test + 7L
  expect_identical(qte_interval(gaps, 0.8, betas = c(0.3, 0.5)), qte_interval(E, 0.8, betas = c(0.3, 0.5)))
  expect_identical(worst_case_interval(gaps, 0.8, Gamma = 2), worst_case_interval(E, 0.8, Gamma = 2))
  # rows in another order, domains as factors or strings: the same table
  shuffled <- lE[sample(nrow(lE)), ]
  shuffled$train <- factor(shuffled$train)
  shuffled$test <- as.character(shuffled$test)
  expect_error(forecast_interval(shuffled, 0.8), NA)
  shuffled$train <- as.character(shuffled$train)
  expect_identical(forecast_interval(shuffled, 0.8), forecast_interval(E, 0.8))

  # r = 2, transferUQ's ordered pairs (its help page's example): the pooled sorted errors
  n <- 12
  set.seed(2)
  idx <- expand.grid(train1 = 1:n, train2 = 1:n, test = 1:n)
  idx <- idx[idx$train1 != idx$train2 & idx$train1 != idx$test & idx$train2 != idx$test, ]
  err <- cbind(idx, data.frame(val = runif(nrow(idx))))
  v <- sort(err$val)
  N <- length(v)
  k <- ceiling(0.95 * N)
  expect_identical(suppressWarnings(forecast_interval(err, 0.9)), c(v[N + 1 - k], v[k]))
  # the data frame as columns of codes (the default) and row by row (the bridge's generic data frame,
  # which Python reads with pandas): the same numbers
  as_rows <- llmsurrogate:::.frame_arg(setNames(err, c("train_1", "train_2", "test", "error")), "err", NULL)
  expect_named(llmsurrogate:::.err_arg(err, "err", NULL), "__rlong__")
  for (fn in c("forecast_interval", "ete_interval")) {
    expect_identical(
      suppressWarnings(llmsurrogate:::.call_in(NULL, paste0("transfer.", fn), as_rows, 0.9, side = "two",
                                               pooled = TRUE)),
      suppressWarnings(llmsurrogate:::.call_in(NULL, paste0("transfer.", fn),
                                               llmsurrogate:::.err_arg(err, "err", NULL), 0.9, side = "two",
                                               pooled = TRUE)))
  }
  expect_identical(qte_interval(err, 0.9, betas = c(0.3, 0.5)),
                   llmsurrogate:::.call_in(NULL, "transfer.qte_interval", as_rows, 0.9, side = "two",
                                           betas = list(0.3, 0.5), pooled = TRUE))
  # Dates as domains cross column by column, and give the same answer
  dated <- err
  for (k in 1:3) dated[[k]] <- as.Date("2020-01-01") + dated[[k]]
  expect_named(llmsurrogate:::.err_arg(dated, "err", NULL), "__rframe__")
  expect_identical(suppressWarnings(forecast_interval(dated, 0.9)), suppressWarnings(forecast_interval(err, 0.9)))
})

test_that("new designs (domains relabelled, rows shuffled) give the matrix's intervals; a kept design is reused only for identical domain columns", {
  skip_if_no_llmsurrogate()
  withr::local_options(llmsurrogate.transferUQ_notice = FALSE)
  E <- CertaintyEquivalents$unnormalized[["abdg"]]
  idx <- which(row(E) != col(E), arr.ind = TRUE)
  set.seed(26)
  for (k in 1:6) {  # more designs than the package keeps
    relabel <- sample.int(44L)
    rows <- sample(nrow(idx))
    Ek <- E * (1 + k / 100)
    d <- data.frame(train = relabel[idx[rows, 1]], test = relabel[idx[rows, 2]], val = Ek[idx][rows])
    Er <- Ek
    Er[relabel, relabel] <- Ek  # Er[train, test] = val
    for (s in c("two", "left", "right")) {
      expect_identical(forecast_interval(d, 0.9, s, mode = "transferUQ"), forecast_interval(Er, 0.9, s, mode = "transferUQ"))
    }
    # the same design with other errors: the bytes sent for d's domain columns, the matrix's interval
    d2 <- d
    d2$val <- d2$val * 2
    sent <- llmsurrogate:::.err_arg(d, "err", NULL)$`__rlong__`$numbers
    expect_identical(llmsurrogate:::.long_cache$numbers(unclass(d2), 3L), sent)
    expect_identical(forecast_interval(d2, 0.8, "two", mode = "transferUQ"),
                     forecast_interval(2 * Er, 0.8, "two", mode = "transferUQ"))
    # the same first domain value but other rows' order: another design (not reused), same interval
    d3 <- d[c(1L, 3L, 2L, 4:nrow(d)), ]
    expect_null(llmsurrogate:::.long_cache$numbers(unclass(d3), 3L))
    expect_identical(forecast_interval(d3, 0.95, "right", mode = "transferUQ"),
                     forecast_interval(Er, 0.95, "right", mode = "transferUQ"))
    # a missing error in a kept design: the errors given, as the matrix with that cell missing
    d4 <- d
    d4$val[3] <- NA
    Er4 <- Er
    Er4[d$train[3], d$test[3]] <- NA
    expect_identical(suppressWarnings(forecast_interval(d4, 0.9, "two", mode = "transferUQ")),
                     suppressWarnings(forecast_interval(Er4, 0.9, "two", mode = "transferUQ")))
  }
  # a kept frame is found again (also with NA as its first error), a frame with other errors is not
  d5 <- d
  d5$val[1] <- NA
  sent <- llmsurrogate:::.err_arg(d5, "err", NULL)
  expect_identical(llmsurrogate:::.long_cache$find(d5), sent)
  expect_identical(llmsurrogate:::.long_cache$find(data.frame(unclass(d5))), sent)  # identical(), not the same object
  d6 <- d5
  d6$val[2] <- d6$val[2] + 1
  expect_null(llmsurrogate:::.long_cache$find(d6))
})
