//! Bindings for `crate::ppi`. The Python package (`llmsurrogate.ppi`) passes C-contiguous float64
//! arrays: designs as (rows, d), per-row vectors of several targets as the rows of a (k, rows)
//! array, cluster codes as intp.

use super::parallel::run_detached;
use super::slice;
use crate::ppi as k;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

type Arr1<'py> = Bound<'py, PyArray1<f64>>;
type Arr2<'py> = Bound<'py, PyArray2<f64>>;

/// The rows of a (k, len) array as k slices (k empty slices when len is 0).
fn rows_of<'a>(values: &'a [f64], shape: &[usize]) -> Vec<&'a [f64]> {
    let (k, len) = (shape[0], shape[1]);
    if len == 0 {
        vec![&values[..0]; k]
    } else {
        values.chunks(len).take(k).collect()
    }
}

fn square<'py>(py: Python<'py>, values: Vec<f64>, d: usize) -> PyResult<Arr2<'py>> {
    values.into_pyarray(py).reshape([d, d])
}

/// The R factor (d, d) and `Q' b` (k, d) of the QR factorisation of `W^1/2 x`, `b = W^1/2 rhs`
/// (rhs: (k, rows)), by Householder QR over row chunks.
#[pyfunction]
#[pyo3(signature = (x, weights=None, rhs=None, n_jobs=None))]
pub fn ppi_qr<'py>(
    py: Python<'py>, x: PyReadonlyArray2<'py, f64>, weights: Option<PyReadonlyArray1<'py, f64>>,
    rhs: Option<PyReadonlyArray2<'py, f64>>, n_jobs: Option<i64>,
) -> PyResult<(Arr2<'py>, Arr2<'py>)> {
    let d = x.shape()[1];
    let xs = slice(&x)?;
    let ws = weights.as_ref().map(slice).transpose()?;
    let b = match &rhs {
        Some(r) => rows_of(slice(r)?, r.shape()),
        None => Vec::new(),
    };
    let nb = b.len();
    let (r, qb) = run_detached(py, n_jobs, xs.len(), || k::qr_factor(xs, d, ws, &b))?;
    Ok((square(py, r, d)?, qb.into_pyarray(py).reshape([nb, d])?))
}

/// One pass over the rows: (count, mean (k d), centred cross-products (k d, k d), Hessian sum
/// (d, d)) of the gradients `w (mu - t) x` at `theta` of the k targets (rows of `targets`).
#[pyfunction]
#[pyo3(signature = (family, x, theta, targets, weights, n_jobs=None))]
#[allow(clippy::type_complexity)]
pub fn ppi_moments<'py>(
    py: Python<'py>, family: &str, x: PyReadonlyArray2<'py, f64>, theta: PyReadonlyArray1<'py, f64>,
    targets: PyReadonlyArray2<'py, f64>, weights: PyReadonlyArray1<'py, f64>, n_jobs: Option<i64>,
) -> PyResult<(usize, Arr1<'py>, Arr2<'py>, Arr2<'py>)> {
    let fam = k::Family::parse(family)?;
    let d = x.shape()[1];
    let (xs, th, ws) = (slice(&x)?, slice(&theta)?, slice(&weights)?);
    let ts = rows_of(slice(&targets)?, targets.shape());
    let (m, h) = run_detached(py, n_jobs, xs.len(), || k::glm_moments(fam, xs, d, th, &ts, ws))?;
    let width = m.width;
    Ok((m.count, m.mean.into_pyarray(py), square(py, m.m2, width)?, square(py, h, d)?))
}

/// (count, mean, centred cross-products) of the rows of `rows` (m, width).
#[pyfunction]
#[pyo3(signature = (rows, n_jobs=None))]
pub fn ppi_row_moments<'py>(
    py: Python<'py>, rows: PyReadonlyArray2<'py, f64>, n_jobs: Option<i64>,
) -> PyResult<(usize, Arr1<'py>, Arr2<'py>)> {
    let width = rows.shape()[1];
    let rs = slice(&rows)?;
    let m = run_detached(py, n_jobs, rs.len(), || k::row_moments(rs, width))?;
    Ok((m.count, m.mean.into_pyarray(py), square(py, m.m2, width)?))
}

/// The gradients `w (mu - t) x` at `theta` of the k targets, (rows, k d).
#[pyfunction]
#[pyo3(signature = (family, x, theta, targets, weights, n_jobs=None))]
pub fn ppi_gradients<'py>(
    py: Python<'py>, family: &str, x: PyReadonlyArray2<'py, f64>, theta: PyReadonlyArray1<'py, f64>,
    targets: PyReadonlyArray2<'py, f64>, weights: PyReadonlyArray1<'py, f64>, n_jobs: Option<i64>,
) -> PyResult<Arr2<'py>> {
    let fam = k::Family::parse(family)?;
    let (rows, d) = (x.shape()[0], x.shape()[1]);
    let (xs, th, ws) = (slice(&x)?, slice(&theta)?, slice(&weights)?);
    let ts = rows_of(slice(&targets)?, targets.shape());
    let kd = ts.len() * d;
    let g = run_detached(py, n_jobs, xs.len(), || k::gradient_rows(fam, xs, d, th, &ts, ws))?;
    g.into_pyarray(py).reshape([rows, kd])
}

/// The sums of the rows of `rows` (m, width) by cluster code (codes in 0..n_groups): (n_groups, width).
#[pyfunction]
pub fn ppi_cluster_sums<'py>(
    py: Python<'py>, rows: PyReadonlyArray2<'py, f64>, codes: PyReadonlyArray1<'py, i64>, n_groups: usize,
) -> PyResult<Arr2<'py>> {
    let width = rows.shape()[1];
    let (rs, cs) = (slice(&rows)?, slice(&codes)?);
    let out = py.detach(|| k::cluster_sums(rs, width, cs, n_groups))?;
    out.into_pyarray(py).reshape([n_groups, width])
}

/// For each row of `increments` (k, n): the sum of its entries at the `values` (n) that are
/// `<= t`, for each `t` of the sorted `grid` (g): (k, g). One parallel sort of `values` for all k
/// rows; the same bits for any `n_jobs`.
#[pyfunction]
#[pyo3(signature = (values, increments, grid, n_jobs=None))]
pub fn ppi_cumulative_at<'py>(
    py: Python<'py>, values: PyReadonlyArray1<'py, f64>, increments: PyReadonlyArray2<'py, f64>,
    grid: PyReadonlyArray1<'py, f64>, n_jobs: Option<i64>,
) -> PyResult<Arr2<'py>> {
    let (vs, gs) = (slice(&values)?, slice(&grid)?);
    crate::common::errors::check::same_len("increments columns", increments.shape()[1], "values", vs.len())?;
    let inc = rows_of(slice(&increments)?, increments.shape());
    let (rows, g) = (inc.len(), gs.len());
    let out = run_detached(py, n_jobs, vs.len() + g, || k::cumulative_at(vs, &inc, gs))?;
    out.into_pyarray(py).reshape([rows, g])
}

/// The minimiser of the rectified GLM loss at `lam` by Newton's method: (theta, None), or (None,
/// the reason) when it has no finite minimiser.
#[pyfunction]
#[pyo3(signature = (family, x, y, yhat, weights, x_unlabeled, yhat_unlabeled, weights_unlabeled, lam, start=None, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub fn ppi_fit_glm<'py>(
    py: Python<'py>, family: &str, x: PyReadonlyArray2<'py, f64>, y: PyReadonlyArray1<'py, f64>,
    yhat: PyReadonlyArray1<'py, f64>, weights: PyReadonlyArray1<'py, f64>, x_unlabeled: PyReadonlyArray2<'py, f64>,
    yhat_unlabeled: PyReadonlyArray1<'py, f64>, weights_unlabeled: PyReadonlyArray1<'py, f64>, lam: f64,
    start: Option<PyReadonlyArray1<'py, f64>>, n_jobs: Option<i64>,
) -> PyResult<(Option<Arr1<'py>>, Option<String>)> {
    let fam = k::Family::parse(family)?;
    let d = x.shape()[1];
    crate::common::errors::check::same_len("x_unlabeled columns", x_unlabeled.shape()[1], "x columns", d)?;
    let (xs, ys, yh, ws) = (slice(&x)?, slice(&y)?, slice(&yhat)?, slice(&weights)?);
    let (xu, yu, wu) = (slice(&x_unlabeled)?, slice(&yhat_unlabeled)?, slice(&weights_unlabeled)?);
    let st = start.as_ref().map(slice).transpose()?;
    let items = xs.len() + xu.len();
    let out = run_detached(py, n_jobs, items, || k::fit_rectified(fam, xs, d, ys, yh, ws, xu, yu, wu, lam, st))?;
    Ok(match out {
        Ok(theta) => (Some(theta.into_pyarray(py)), None),
        Err(k::NoFiniteFit(reason)) => (None, Some(reason)),
    })
}

/// Add this capability's functions to `_core` (called once from `bindings/mod.rs`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ppi_qr, m)?)?;
    m.add_function(wrap_pyfunction!(ppi_moments, m)?)?;
    m.add_function(wrap_pyfunction!(ppi_row_moments, m)?)?;
    m.add_function(wrap_pyfunction!(ppi_gradients, m)?)?;
    m.add_function(wrap_pyfunction!(ppi_cluster_sums, m)?)?;
    m.add_function(wrap_pyfunction!(ppi_fit_glm, m)?)?;
    m.add_function(wrap_pyfunction!(ppi_cumulative_at, m)?)?;
    Ok(())
}
