"""What two transfer test files share about the published matrices (Table 5's data): the domain
order of the authors' files and the r = 1 matrix of a build with its in-sample errors on the diagonal."""

from __future__ import annotations

import numpy as np
from llmsurrogate import datasets as ds
from llmsurrogate import transfer as tr


def fixture_order():
    """The published matrices index domains by the sorted file names of the authors' data folder
    (their code enumerates os.walk's sorted file list); verified below by an assignment that
    uses the numbers only."""
    files = ds.certainty_equivalent_domains()["original_file"].to_numpy()
    return np.argsort(files, kind="stable")


def matrix_with_in_sample(data, model, metric):
    """The r = 1 matrix [train, test] with the in-sample errors on the diagonal (from one build:
    in-sample = raw / deterioration)."""
    tabs = tr.error_tables(data, {"m": model}, metric=metric, kinds=("raw", "deterioration"))["m"]
    raw, det = tabs["raw"], tabs["deterioration"]
    mat = raw.to_matrix().to_numpy().copy()
    ins = np.empty(raw.n)
    ins[raw.test] = raw.values / det.values
    np.fill_diagonal(mat, ins)
    return mat
