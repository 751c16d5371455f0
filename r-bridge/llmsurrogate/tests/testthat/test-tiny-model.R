# Issue 26, item 5: a local model from R, as ?risk_scores shows it: tiny_model() trains in well
# under a minute, its numeric scores carry the synthetic outcome's signal (checked against the
# known true probabilities), and its multiple-choice scores are 0.5, as the help page says.

test_that("tiny_model() -> synthetic_census() -> risk_scores(method = \"numeric\") gives useful scores", {
  skip_if_no_llmsurrogate()
  expect_error(tiny_model(steps = 0), "`steps`", class = "llmsurrogate_error")
  full <- tempfile("full-")
  dir.create(full)
  writeLines("x", file.path(full, "a.txt"))
  expect_error(tiny_model(path = full), "not empty", class = "llmsurrogate_error")
  unlink(full, recursive = TRUE)
  seconds <- system.time(m <- tiny_model())[["elapsed"]]
  message(sprintf("tiny_model(): %.1f s (load %s)", seconds, readLines("/proc/loadavg")))
  on.exit(unlink(m$model, recursive = TRUE), add = TRUE)
  expect_named(m, c("model", "task", "seconds", "final_loss"))
  expect_true(file.exists(file.path(m$model, "config.json")))
  expect_true(file.exists(m$task))
  census <- synthetic_census(150, seed = 7)
  scores <- risk_scores(census, task = m$task, model = m$model, method = "numeric")
  expect_identical(scores$row, seq_len(150))
  expect_true(all(scores$score >= 0 & scores$score <= 1))
  expect_gt(sd(scores$score), 0.05)
  expect_gt(cor(scores$score, census$p_true), 0.5)
  ev <- evaluate_risk_scores(census[["PINCP>50000"]], scores$score, n_boot = 0)
  expect_gt(ev$value[ev$metric == "roc_auc"], 0.6)
  # the help page's word on multiple choice: 0.5 for every row
  mc <- suppressWarnings(risk_scores(census[1:8, ], task = m$task, model = m$model))
  expect_equal(mc$score, rep(0.5, 8), tolerance = 0.02)
})

# Inside R, torch's sgemm_ bound to R's BLAS (Debian's reference libblas.so.3): products 10 times
# slower than in Python and with other bits. The bridge makes torch keep its own BLAS (MKL), so a
# product in R's Python equals plain Python's bit for bit (this failed before: other bits).
test_that("torch's products inside R are plain Python's (torch keeps its own BLAS)", {
  skip_if_no_llmsurrogate()
  reticulate::py_module_available("torch") || skip("torch is not installed")
  synthetic_census(2, seed = 1)  # any call: imports the bridge, as every function does
  code <- paste(
    "import torch",
    "g = torch.Generator().manual_seed(3)",
    "x, w = torch.randn(96, 64, generator=g), torch.randn(64, 80, generator=g)",
    "product = (x @ w).numpy().tobytes().hex()", sep = "\n")
  in_r <- reticulate::py_run_string(code, local = TRUE)$product
  python <- reticulate::py_config()$python
  plain <- system2(python, c("-c", shQuote(paste0(code, "\nprint(product)"))), stdout = TRUE,
                   env = "LD_PRELOAD=")
  expect_identical(in_r, plain)
})
