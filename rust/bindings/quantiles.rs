//! Bindings for `crate::common::quantiles`. The Python wrapper (`llmsurrogate.quantiles`)
//! guarantees C-contiguous float64 arrays; these functions only borrow, release the GIL and return
//! arrays.

use super::parallel::run_detached;
use super::slice;
use crate::common::quantiles as k;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

type Out<'py> = PyResult<Bound<'py, PyArray1<f64>>>;

/// Upper empirical quantiles Q̄_τ (R's type-1 quantile), one per level.
#[pyfunction]
#[pyo3(signature = (values, taus, n_jobs=None))]
pub fn upper_quantiles<'py>(py: Python<'py>, values: PyReadonlyArray1<'py, f64>, taus: PyReadonlyArray1<'py, f64>, n_jobs: Option<i64>) -> Out<'py> {
    let (v, t) = (slice(&values)?, slice(&taus)?);
    Ok(run_detached(py, n_jobs, v.len(), || k::upper_quantiles(v, t))?.into_pyarray(py))
}

/// Lower empirical quantiles Q̲_τ, one per level.
#[pyfunction]
#[pyo3(signature = (values, taus, n_jobs=None))]
pub fn lower_quantiles<'py>(py: Python<'py>, values: PyReadonlyArray1<'py, f64>, taus: PyReadonlyArray1<'py, f64>, n_jobs: Option<i64>) -> Out<'py> {
    let (v, t) = (slice(&values)?, slice(&taus)?);
    Ok(run_detached(py, n_jobs, v.len(), || k::lower_quantiles(v, t))?.into_pyarray(py))
}

/// Weighted upper quantiles with mass `inf_weight` at +∞.
#[pyfunction]
#[pyo3(signature = (values, weights, taus, inf_weight=0.0, n_jobs=None))]
pub fn weighted_upper_quantiles<'py>(
    py: Python<'py>, values: PyReadonlyArray1<'py, f64>, weights: PyReadonlyArray1<'py, f64>,
    taus: PyReadonlyArray1<'py, f64>, inf_weight: f64, n_jobs: Option<i64>,
) -> Out<'py> {
    let (v, w, t) = (slice(&values)?, slice(&weights)?, slice(&taus)?);
    Ok(run_detached(py, n_jobs, v.len(), || k::weighted_upper_quantiles(v, w, t, inf_weight))?.into_pyarray(py))
}

/// Weighted lower quantiles with mass `inf_weight` at −∞.
#[pyfunction]
#[pyo3(signature = (values, weights, taus, inf_weight=0.0, n_jobs=None))]
pub fn weighted_lower_quantiles<'py>(
    py: Python<'py>, values: PyReadonlyArray1<'py, f64>, weights: PyReadonlyArray1<'py, f64>,
    taus: PyReadonlyArray1<'py, f64>, inf_weight: f64, n_jobs: Option<i64>,
) -> Out<'py> {
    let (v, w, t) = (slice(&values)?, slice(&weights)?, slice(&taus)?);
    Ok(run_detached(py, n_jobs, v.len(), || k::weighted_lower_quantiles(v, w, t, inf_weight))?.into_pyarray(py))
}

/// Add the common quantiles to `_core` (called once from `bindings/mod.rs`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(upper_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(lower_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(weighted_upper_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(weighted_lower_quantiles, m)?)?;
    Ok(())
}
