# Help and discovery (issue 10, defect 5): every exported function is in the package index and
# on the package's overview page; synthetic_census() returns a data.frame.

rd_text <- function(rd) paste(capture.output(tools::Rd2txt(rd, options = list(underline_titles = FALSE))),
                              collapse = "\n")

test_that("every exported function has a help page in the index and is named on ?llmsurrogate", {
  db <- tools::Rd_db("llmsurrogate")
  internal <- vapply(db, function(rd) "internal" %in% unlist(tools:::.Rd_get_metadata(rd, "keyword")),
                     logical(1))
  aliases <- unlist(lapply(db[!internal], tools:::.Rd_get_metadata, "alias"))
  exports <- getNamespaceExports("llmsurrogate")
  expect_identical(setdiff(exports, aliases), character(0))
  overview <- db[["llmsurrogate-package.Rd"]]
  expect_false(is.null(overview))
  expect_false(internal[["llmsurrogate-package.Rd"]])
  text <- rd_text(overview)
  named <- vapply(exports, function(f) grepl(paste0("\\b", f, "\\(\\)"), text), logical(1))
  expect_identical(names(named)[!named], character(0))
})

test_that("help pages render whole: no truncation by an unescaped %, no literal markdown", {
  db <- tools::Rd_db("llmsurrogate")
  ev <- rd_text(db[["evaluate_risk_scores.Rd"]])
  expect_match(ev, "95% intervals", fixed = TRUE)
  expect_match(ev, "under 4% of the", fixed = TRUE)
  for (name in names(db)) {
    text <- rd_text(db[[name]])
    expect_false(grepl("`", text, fixed = TRUE), info = name)
    expect_false(grepl("](", text, fixed = TRUE), info = name)
  }
})

test_that("synthetic_census() returns a data.frame with NA for missing hours", {
  skip_if_no_llmsurrogate()
  d <- synthetic_census(300, seed = 1)
  expect_s3_class(d, "data.frame")
  expect_identical(dim(d), c(300L, 12L))
  expect_identical(names(d)[c(1, 11, 12)], c("AGEP", "PINCP>50000", "p_true"))
  expect_type(d$AGEP, "integer")
  expect_type(d$WKHP, "double")
  expect_true(anyNA(d$WKHP))
  expect_true(all(d[["PINCP>50000"]] %in% c(0L, 1L)))
  expect_true(all(d$p_true > 0 & d$p_true < 1))
  expect_identical(synthetic_census(300, seed = 1), d)
  expect_false(identical(synthetic_census(300, seed = 2), d))
  expect_error(synthetic_census(-1), "`n`", class = "llmsurrogate_error")
})
