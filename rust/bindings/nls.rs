//! Bindings for `crate::nls`: batch nonlinear least squares over training subsets and model
//! predictions. The Python wrapper (`llmsurrogate/transfer/models.py`) passes C-contiguous
//! float64/int64 arrays; these functions borrow them, release the GIL and return arrays.

use super::errors::{run_detached, to_pyerr};
use crate::errors::CoreError;
use crate::nls as k;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn slice<'a, T: numpy::Element>(arr: &'a PyReadonlyArray1<'_, T>) -> PyResult<&'a [T]> {
    Ok(arr.as_slice()?)
}

fn to_usize(py: Python<'_>, arg: &str, v: &[i64]) -> PyResult<Vec<usize>> {
    v.iter()
        .map(|&x| usize::try_from(x).map_err(|_| to_pyerr(py, CoreError::invalid(arg, format!("indices must be >= 0; got {x}")))))
        .collect()
}

/// Fit one model per training subset; returns a dict of arrays
/// (theta (S, P), train_mse (S,), mse (S, n), converged (S,), iterations (S,), status list).
#[pyfunction]
#[pyo3(signature = (family, theta, free, lower, upper, starts, z1, z2, p, y, offsets, subsets,
                    max_iter=500, ftol=1e-15, xtol=1e-12, gtol=1e-12, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub fn nls_fit_subsets<'py>(
    py: Python<'py>, family: &str, theta: PyReadonlyArray1<'py, f64>, free: PyReadonlyArray1<'py, i64>,
    lower: PyReadonlyArray1<'py, f64>, upper: PyReadonlyArray1<'py, f64>, starts: PyReadonlyArray2<'py, f64>,
    z1: PyReadonlyArray1<'py, f64>, z2: PyReadonlyArray1<'py, f64>, p: PyReadonlyArray1<'py, f64>,
    y: PyReadonlyArray1<'py, f64>, offsets: PyReadonlyArray1<'py, i64>, subsets: PyReadonlyArray2<'py, i64>,
    max_iter: usize, ftol: f64, xtol: f64, gtol: f64, n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let fam = k::Family::parse(family).map_err(|e| to_pyerr(py, e))?;
    let starts_arr = starts.as_array();
    let spec = k::ModelSpec {
        family: fam,
        theta: slice(&theta)?.to_vec(),
        free: to_usize(py, "free", slice(&free)?)?,
        lower: slice(&lower)?.to_vec(),
        upper: slice(&upper)?.to_vec(),
        starts: starts_arr.rows().into_iter().map(|r| r.to_vec()).collect(),
    };
    let offs = to_usize(py, "offsets", slice(&offsets)?)?;
    let sub_arr = subsets.as_array();
    let r = sub_arr.shape()[1];
    let subs: Vec<i64> = sub_arr.iter().copied().collect();
    let subs = to_usize(py, "subsets", &subs)?;
    let (z1s, z2s, ps, ys) = (slice(&z1)?, slice(&z2)?, slice(&p)?, slice(&y)?);
    let data = k::Lotteries { z1: z1s, z2: z2s, p: ps, y: ys, offsets: &offs };
    let opts = k::LmOptions { max_iter, ftol, xtol, gtol };
    let n_sub = if r == 0 { 0 } else { subs.len() / r };
    let items = if n_sub > 1 { usize::MAX } else { 0 };
    let fits = run_detached(py, n_jobs, items, || k::fit_subsets(&spec, &data, &subs, r, &opts))?;
    let pdim = fam.n_params();
    let n = data.n_domains();
    let mut th = Vec::with_capacity(n_sub * pdim);
    let mut mse = Vec::with_capacity(n_sub * n);
    for f in &fits {
        th.extend_from_slice(&f.theta);
        mse.extend_from_slice(&f.mse);
    }
    let out = PyDict::new(py);
    out.set_item("theta", numpy::ndarray::Array2::from_shape_vec((n_sub, pdim), th).expect("shape").into_pyarray(py))?;
    out.set_item("mse", numpy::ndarray::Array2::from_shape_vec((n_sub, n), mse).expect("shape").into_pyarray(py))?;
    out.set_item("train_mse", fits.iter().map(|f| f.train_mse).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("converged", fits.iter().map(|f| f.converged).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("iterations", fits.iter().map(|f| f.iterations as i64).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("status", fits.iter().map(|f| f.status).collect::<Vec<_>>())?;
    Ok(out)
}

/// Certainty equivalents of the lotteries (z1, z2, p) under the full parameter vector `theta`.
#[pyfunction]
pub fn nls_predict<'py>(
    py: Python<'py>, family: &str, theta: PyReadonlyArray1<'py, f64>, z1: PyReadonlyArray1<'py, f64>,
    z2: PyReadonlyArray1<'py, f64>, p: PyReadonlyArray1<'py, f64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let fam = k::Family::parse(family).map_err(|e| to_pyerr(py, e))?;
    let (t, a, b, q) = (slice(&theta)?, slice(&z1)?, slice(&z2)?, slice(&p)?);
    Ok(run_detached(py, Some(1), 0, || k::predict(fam, t, a, b, q))?.into_pyarray(py))
}

