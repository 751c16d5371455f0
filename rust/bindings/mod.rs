//! The `llmsurrogate._core` extension module: registration only.

mod errors;
mod ess;
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
    m.add_function(wrap_pyfunction!(ess::ess_permutation, m)?)?;
    m.add_function(wrap_pyfunction!(ess::ess_uses_avx2, m)?)?;
    m.add_function(wrap_pyfunction!(ess::ess_losses, m)?)?;
    m.add_function(wrap_pyfunction!(ess::ess_variance_pieces, m)?)?;
    m.add_function(wrap_pyfunction!(ess::ess_sequential_test, m)?)?;
    m.add_class::<ess::BlockOutAccumulator>()?;
    Ok(())
}
