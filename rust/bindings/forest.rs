//! Bindings for `crate::forest`. The Python side (`llmsurrogate/_fast_predict.py`) passes
//! C-contiguous arrays straight from scikit-learn's fitted trees.

use super::errors::run_detached;
use crate::forest as k;
use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// Mean over trees of the leaf values reached by each row of `x` (float32, rows × features):
/// an array rows × n_out, equal bit for bit to scikit-learn's single-job forest prediction.
#[pyfunction]
#[pyo3(signature = (left, right, feature, threshold, value, offsets, x, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub fn forest_predict_mean<'py>(
    py: Python<'py>, left: PyReadonlyArray1<'py, i64>, right: PyReadonlyArray1<'py, i64>,
    feature: PyReadonlyArray1<'py, i64>, threshold: PyReadonlyArray1<'py, f64>, value: PyReadonlyArray2<'py, f64>,
    offsets: PyReadonlyArray1<'py, u64>, x: PyReadonlyArray2<'py, f32>, n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let n_out = value.shape()[1];
    let n_features = x.shape()[1];
    let rows = x.shape()[0];
    let offsets: Vec<usize> = offsets.as_slice()?.iter().map(|&o| o as usize).collect();
    let forest = k::Forest {
        left: left.as_slice()?, right: right.as_slice()?, feature: feature.as_slice()?,
        threshold: threshold.as_slice()?, value: value.as_slice()?, offsets: &offsets, n_out,
    };
    let xs = x.as_slice()?;
    let work = rows.saturating_mul(forest.trees().max(1));
    let out = run_detached(py, n_jobs, work, || k::predict_mean(&forest, xs, n_features))?;
    Ok(out.into_pyarray(py).reshape([rows, n_out])?)
}
