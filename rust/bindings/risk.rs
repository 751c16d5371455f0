//! Bindings for `crate::risk`. The Python package (`llmsurrogate.risk`) guarantees C-contiguous
//! float64 arrays. `weights` (optional everywhere): survey weights, one per row; `None` gives the
//! unweighted results bit for bit.

use super::parallel::run_detached;
use super::slice;
use crate::risk as k;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;

/// ROC AUC with ties counted ½ (NaN when a class is absent), pairs weighted by `weights`.
#[pyfunction]
#[pyo3(signature = (y, scores, weights=None))]
pub fn risk_roc_auc(py: Python<'_>, y: PyReadonlyArray1<'_, f64>, scores: PyReadonlyArray1<'_, f64>,
                    weights: Option<PyReadonlyArray1<'_, f64>>) -> PyResult<f64> {
    let (y, r) = (slice(&y)?, slice(&scores)?);
    let w = weights.as_ref().map(slice).transpose()?;
    run_detached(py, Some(1), 0, || k::roc_auc(y, r, w))
}

/// Per-bin (counts, score sums, label sums) for the given edges; with `weights`, (weight sums,
/// weighted score sums, weighted label sums).
#[pyfunction]
#[pyo3(signature = (y, scores, edges, right=false, weights=None))]
#[allow(clippy::type_complexity)]
pub fn risk_bin_stats<'py>(
    py: Python<'py>, y: PyReadonlyArray1<'py, f64>, scores: PyReadonlyArray1<'py, f64>,
    edges: PyReadonlyArray1<'py, f64>, right: bool, weights: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<(Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>)> {
    let (y, r, e) = (slice(&y)?, slice(&scores)?, slice(&edges)?);
    let w = weights.as_ref().map(slice).transpose()?;
    let (c, sr, sy) = run_detached(py, Some(1), 0, || k::bin_stats(y, r, e, right, w))?;
    Ok((c.into_pyarray(py), sr.into_pyarray(py), sy.into_pyarray(py)))
}

/// Equal-width ECE on [0, 1] (netcal convention), bins' gaps weighted by `weights`.
#[pyfunction]
#[pyo3(signature = (y, scores, bins=10, weights=None))]
pub fn risk_ece_equal_width(py: Python<'_>, y: PyReadonlyArray1<'_, f64>, scores: PyReadonlyArray1<'_, f64>, bins: usize,
                            weights: Option<PyReadonlyArray1<'_, f64>>) -> PyResult<f64> {
    let (y, r) = (slice(&y)?, slice(&scores)?);
    let w = weights.as_ref().map(slice).transpose()?;
    run_detached(py, Some(1), 0, || k::ece_equal_width(y, r, bins, w))
}

/// Headline metrics on the full sample, in `BOOT_METRICS` order.
#[pyfunction]
#[pyo3(signature = (y, scores, threshold=0.5, bins=10, eps=f64::EPSILON, weights=None))]
#[allow(clippy::too_many_arguments)]
pub fn risk_point_metrics<'py>(
    py: Python<'py>, y: PyReadonlyArray1<'py, f64>, scores: PyReadonlyArray1<'py, f64>, threshold: f64, bins: usize, eps: f64,
    weights: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (y, r) = (slice(&y)?, slice(&scores)?);
    let w = weights.as_ref().map(slice).transpose()?;
    Ok(run_detached(py, Some(1), 0, || k::point_metrics(y, r, threshold, bins, eps, w))?.into_pyarray(py))
}

/// Row-bootstrap replicates (n_boot × 7) of the headline metrics; with `weights` each resampled
/// row keeps its weight (the same rows are drawn as without).
#[pyfunction]
#[pyo3(signature = (y, scores, n_boot=200, seed=42, threshold=0.5, bins=10, eps=f64::EPSILON, n_jobs=None, weights=None))]
#[allow(clippy::too_many_arguments)]
pub fn risk_bootstrap<'py>(
    py: Python<'py>, y: PyReadonlyArray1<'py, f64>, scores: PyReadonlyArray1<'py, f64>, n_boot: usize, seed: u64,
    threshold: f64, bins: usize, eps: f64, n_jobs: Option<i64>, weights: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let (y, r) = (slice(&y)?, slice(&scores)?);
    let w = weights.as_ref().map(slice).transpose()?;
    let flat = run_detached(py, n_jobs, y.len().saturating_mul(n_boot), || k::bootstrap_metrics(y, r, n_boot, seed, threshold, bins, eps, w))?;
    let cols = k::BOOT_METRICS.len();
    Ok(flat.into_pyarray(py).reshape([n_boot, cols])?)
}

/// The row indices of bootstrap replicate `b` (documents the PRNG; used by reference tests).
#[pyfunction]
pub fn risk_bootstrap_indices<'py>(py: Python<'py>, n: usize, seed: u64, b: usize) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let idx = run_detached(py, Some(1), 0, || k::bootstrap_indices(n, seed, b))?;
    // usize and u64 have the same size here: the map reuses the buffer
    Ok(idx.into_iter().map(|i| i as u64).collect::<Vec<u64>>().into_pyarray(py))
}

/// Add this capability's constants and functions to `_core` (called once from `bindings/mod.rs`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RISK_BOOT_METRICS", k::BOOT_METRICS.to_vec())?;
    m.add_function(wrap_pyfunction!(risk_roc_auc, m)?)?;
    m.add_function(wrap_pyfunction!(risk_bin_stats, m)?)?;
    m.add_function(wrap_pyfunction!(risk_ece_equal_width, m)?)?;
    m.add_function(wrap_pyfunction!(risk_point_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(risk_bootstrap, m)?)?;
    m.add_function(wrap_pyfunction!(risk_bootstrap_indices, m)?)?;
    Ok(())
}
