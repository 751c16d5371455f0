# Transfer inference from R: known answers (docs/methods/transfer.md §8.1), the paper's Table 5 and the
# Appendix Q values, R vectors and data.frames out, and errors for bad input.

E3 <- matrix(c(NA, 3, 5, 1, NA, 6, 2, 4, NA), 3)  # [train, test]: row 1 = (NA, 1, 2)

test_that("forecast_interval() gives the known answers as an R vector", {
  skip_if_no_llmsurrogate()
  # 3 domains guarantee far less than the nominal coverage: a warning says so (CoverageWarning)
  w <- expect_warning(fi <- forecast_interval(E3, 0.6), "guaranteed coverage is 0.3, well below the nominal 0.6",
                      class = "llmsurrogate_warning")
  expect_identical(w$python_class, "CoverageWarning")
  expect_identical(fi, c(2, 5))                                      # tau = 0.8
  quiet <- function(x) suppressWarnings(x)
  expect_identical(quiet(forecast_interval(E3, tau = 0.8)), c(2, 5))
  expect_identical(quiet(forecast_interval(E3, tau = 0.9)), c(1, 6))
  expect_identical(quiet(forecast_interval(E3, 0.8, "right")), c(-Inf, 5))  # (-Inf, e_0.8]
  expect_identical(quiet(forecast_interval(E3, 0.8, "left")), c(2, Inf))
  long <- data.frame(train = c(2, 3, 1, 3, 1, 2), test = c(1, 1, 2, 2, 3, 3), val = c(3, 5, 1, 6, 2, 4))
  expect_identical(quiet(forecast_interval(long, tau = 0.8)), c(2, 5))
  expect_identical(weighted_forecast_interval(E3, c(1, 2, 1), tau = 0.76), c(1, 6))
  expect_identical(worst_case_interval(E3, tau = 0.6, Gamma = 2), c(2, 5))
})

test_that("Table 5 and the Appendix Q intervals are reproduced", {
  skip_if_no_llmsurrogate()
  cpt <- as.matrix(load_transfer_errors("abdg"))
  rf <- as.matrix(load_transfer_errors("RF"))
  expect_equal(round(forecast_interval(cpt, 0.9), 2), c(2.46, 15.99))
  expect_equal(round(forecast_interval(rf, 0.9), 2), c(2.71, 31.39))
  q <- qte_interval(cpt, 0.8, betas = c(0.5, 0.6))
  expect_s3_class(q, "data.frame")
  expect_identical(names(q), c("beta", "lb", "ub"))
  expect_equal(round(q$lb[1], 3), 3.246)
  expect_equal(round(q$ub[1], 3), 4.973)
  expect_equal(round(qte_interval(cpt, 0.8, betas = 0.5, order = "transferUQ")$ub, 3), 4.668)
  inv <- 1 / as.matrix(load_transfer_errors("abdg", "normalized"))
  expect_equal(round(ete_interval(inv, 0.8), 4), c(0.6360, 0.9595))
  wc <- check_worstcase_dominance(cpt, rf)
  expect_identical(names(wc), c("tau", "res"))
  expect_true(all(wc$res))
  ev <- check_everywhere_dominance(cpt, rf, c(0.9, 0.96))
  expect_identical(ev$res, c(FALSE, FALSE))
  expect_identical(check_everywhere_dominance(cpt, rf, c(0.9, 0.96), mode = "paper")$res, c(FALSE, TRUE))
  expect_identical(critical_gamma(cpt, rf, c(0.5, 0.9), kind = "worstcase"), c(Inf, Inf))
  expect_equal(round(critical_gamma(cpt, rf, c(0.9, 0.95)), 3), c(1.537, 1.414))
  expect_identical(everywhere_dominance_box(cpt, rf, 0.99, Gamma = 2)$res, TRUE)
  expect_identical(everywhere_dominance_box(cpt, rf, 0.99, Gamma = 3)$res, FALSE)
})

test_that("bad input is an llmsurrogate_error naming the problem", {
  skip_if_no_llmsurrogate()
  bad <- E3
  bad[1, 2] <- NA  # a missing cell: the rest is used, as transferUQ does, with a warning
  expect_warning(expect_warning(forecast_interval(bad, 0.9), "are missing", class = "llmsurrogate_warning"),
                 "guaranteed coverage", class = "llmsurrogate_warning")
  bad[1, 2] <- -Inf
  expect_error(forecast_interval(bad, 0.9), "err[1, 2] is -Inf", fixed = TRUE, class = "llmsurrogate_error")
  expect_error(forecast_interval(E3, 1.5), "coverage", class = "llmsurrogate_error")
  expect_error(forecast_interval(E3, tau = 0.5), "0.5", class = "llmsurrogate_error")
  expect_error(weighted_forecast_interval(E3, c(1, -1, 1), 0.9), "weights", class = "llmsurrogate_error")
  expect_error(check_everywhere_dominance(E3, matrix(1, 4, 4)), class = "llmsurrogate_error")
  expect_error(forecast_interval(matrix(1, 1, 1), 0.9), class = "llmsurrogate_error")
})

test_that("a missing domain in a long error table is named, not sent as -2147483648", {
  skip_if_no_llmsurrogate()
  long <- data.frame(train = c(2L, 3L, 1L, 3L, 1L, NA), test = c(1L, 1L, 2L, 2L, 3L, 3L), val = c(3, 5, 1, 6, 2, 4))
  expect_error(forecast_interval(long, tau = 0.8), "column `train` has a missing domain \\(NA\\) in row 6",
               class = "llmsurrogate_error")
  long$train[6] <- 2L
  long$test[2] <- NA
  expect_error(check_everywhere_dominance(long, long, 0.9), "column `test` has a missing domain \\(NA\\) in row 2",
               class = "llmsurrogate_error")
})

test_that("a table in a file is read in chunks by forecast_interval() and qte_interval()", {
  skip_if_no_llmsurrogate()
  cpt <- as.matrix(load_transfer_errors("abdg"))
  path <- tempfile(fileext = ".npy")
  on.exit(unlink(path))
  # a .npy file as a batch job would write it (NumPy's format 1.0; R's column-major order is Fortran order)
  header <- sprintf("{'descr': '<f8', 'fortran_order': True, 'shape': (%d, %d), }", nrow(cpt), ncol(cpt))
  header <- paste0(header, strrep(" ", 63 - (10 + nchar(header)) %% 64), "\n")
  con <- file(path, "wb")
  writeBin(c(as.raw(0x93), charToRaw("NUMPY"), as.raw(c(1, 0))), con)
  writeBin(nchar(header), con, size = 2L, endian = "little")
  writeBin(charToRaw(header), con)
  writeBin(as.vector(cpt, "double"), con, size = 8L, endian = "little")
  close(con)
  expect_identical(forecast_interval(path, 0.9), forecast_interval(cpt, 0.9))
  expect_identical(qte_interval(path, 0.8, betas = c(0.5, 0.6)), qte_interval(cpt, 0.8, betas = c(0.5, 0.6)))
  expect_error(forecast_interval(file.path(tempdir(), "no-such-table.npy"), 0.9), "no file",
               class = "llmsurrogate_error")
  expect_error(worst_case_interval(path, 0.9, Gamma = 2), "read in chunks by forecast_interval and qte_interval only",
               class = "llmsurrogate_error")
})
