//! Bindings for `crate::lookahead`: the Min-K% reduction of ragged per-token log-probabilities
//! (float32 as the backends return them, or float64, e.g. Min-K%++ z-scores). The Python package
//! (`llmsurrogate.lookahead`) passes C-contiguous arrays and int64 offsets.

use super::parallel::run_detached;
use super::slice;
use crate::lookahead as k;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

type MinKArrays<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>);

fn to_arrays(py: Python<'_>, r: k::MinK) -> MinKArrays<'_> {
    (r.min_k.into_pyarray(py), r.min_k_arith.into_pyarray(py), r.n_scored.into_pyarray(py), r.k.into_pyarray(py))
}

/// Min-K% of every text of a float32 ragged array: (min_k, min_k_arith, n_scored, k);
/// `arith=False` leaves `min_k_arith` NaN (no `exp` per bottom value).
#[pyfunction]
#[pyo3(signature = (values, offsets, k_frac=0.2, skip_first=true, n_jobs=None, arith=true))]
pub fn lookahead_min_k_f32<'py>(
    py: Python<'py>, values: PyReadonlyArray1<'py, f32>, offsets: PyReadonlyArray1<'py, i64>, k_frac: f64,
    skip_first: bool, n_jobs: Option<i64>, arith: bool,
) -> PyResult<MinKArrays<'py>> {
    let (v, o) = (slice(&values)?, slice(&offsets)?);
    let r = run_detached(py, n_jobs, v.len(), || k::min_k_reduce_with(v, o, k_frac, skip_first, arith))?;
    Ok(to_arrays(py, r))
}

/// Min-K% of every text of a float64 ragged array: (min_k, min_k_arith, n_scored, k);
/// `arith=False` leaves `min_k_arith` NaN (no `exp` per bottom value).
#[pyfunction]
#[pyo3(signature = (values, offsets, k_frac=0.2, skip_first=true, n_jobs=None, arith=true))]
pub fn lookahead_min_k_f64<'py>(
    py: Python<'py>, values: PyReadonlyArray1<'py, f64>, offsets: PyReadonlyArray1<'py, i64>, k_frac: f64,
    skip_first: bool, n_jobs: Option<i64>, arith: bool,
) -> PyResult<MinKArrays<'py>> {
    let (v, o) = (slice(&values)?, slice(&offsets)?);
    let r = run_detached(py, n_jobs, v.len(), || k::min_k_reduce_with(v, o, k_frac, skip_first, arith))?;
    Ok(to_arrays(py, r))
}

/// Add this capability's functions to `_core` (called once from `bindings/mod.rs`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(lookahead_min_k_f32, m)?)?;
    m.add_function(wrap_pyfunction!(lookahead_min_k_f64, m)?)?;
    Ok(())
}
