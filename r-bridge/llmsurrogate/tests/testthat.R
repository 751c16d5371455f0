# This file is part of the standard setup for testthat; it runs the tests in tests/testthat/
# during R CMD check.
library(testthat)
library(llmsurrogate)

test_check("llmsurrogate")
