test_that("risk_scores scores rows without an answer (NA label) and names an answer that is no option", {
  skip_if_no_llmsurrogate()
  testing <- reticulate::import("llmsurrogate.testing")
  dir <- file.path(tempdir(), "tiny-gpt2-answers")
  testing$build_model(dir, "gpt2", seed = 3L)
  full <- load_acs_income_rows()[1:4, ]
  rows <- full
  rows[["PINCP>50000"]][2] <- NA
  # issue 34 §4: the row is scored, its label is NA (was -9223372036854775808)
  s <- suppressWarnings(risk_scores(rows, "ACSIncome", dir))
  expect_identical(nrow(s), 4L)
  expect_identical(is.na(s$label), c(FALSE, TRUE, FALSE, FALSE))
  expect_identical(as.numeric(s$label[-2]), as.numeric(full[["PINCP>50000"]][-2]))
  ref <- suppressWarnings(risk_scores(full, "ACSIncome", dir))
  expect_equal(s$score, ref$score, tolerance = 1e-12)
  # a 0/1 label of 0.5 is refused, naming the column, R's row and the value, before any prompt is scored
  rows[["PINCP>50000"]][3] <- 0.5
  expect_error(risk_scores(rows, "ACSIncome", dir), "column 'PINCP>50000': value 0.5 at row 3", fixed = TRUE)
})
