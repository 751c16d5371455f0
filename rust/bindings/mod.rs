//! The `llmsurrogate._core` extension module: registration only.

mod errors;
mod nls;
mod quantiles;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("THREADS_ENV", crate::parallel::THREADS_ENV)?;
    m.add("LEVEL_TOL", crate::quantiles::LEVEL_TOL)?;
    m.add_function(wrap_pyfunction!(errors::resolve_threads, m)?)?;
    m.add_function(wrap_pyfunction!(quantiles::upper_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(quantiles::lower_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(quantiles::weighted_upper_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(quantiles::weighted_lower_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(nls::nls_fit_subsets, m)?)?;
    m.add_function(wrap_pyfunction!(nls::nls_predict, m)?)?;
    Ok(())
}
