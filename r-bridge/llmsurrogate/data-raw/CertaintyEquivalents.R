# Builds data/CertaintyEquivalents.rda, transferUQ's data object, from the matrices the Python
# package ships (llmsurrogate.datasets.load_transfer_errors; the published 44 x 44 transfer-error
# matrices of transferUQ 0.1.0, MIT License, Lihua Lei). Same structure as transferUQ's object: a
# list with `unnormalized` (17 models) and `normalized` (19 models), each a named list of plain
# 44 x 44 numeric matrices (no dimnames), models in transferUQ's order.
# Run from r-bridge/llmsurrogate with the package installed:  Rscript data-raw/CertaintyEquivalents.R
library(llmsurrogate)
models <- transfer_error_models()
kinds <- c("unnormalized", "normalized")
CertaintyEquivalents <- lapply(stats::setNames(kinds, kinds), function(kind) {
  names <- sort(models$model[models$kind == kind], method = "radix")
  out <- lapply(names, function(m) unname(load_transfer_errors(m, kind = kind)))
  stats::setNames(out, names)
})
save(CertaintyEquivalents, file = "data/CertaintyEquivalents.rda", compress = "xz")
