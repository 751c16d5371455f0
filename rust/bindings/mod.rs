//! The `llmsurrogate._core` extension module: registration, and [`slice`], the array borrow every
//! binding file shares. Bindings stay thin: borrow the arrays, run the kernel with the GIL
//! released, convert the result.
//!
//! * `errors.rs`: `From<CoreError> for PyErr`, the one mapping of kernel errors to the classes of
//!   `llmsurrogate.exceptions` (binding code writes `?`);
//! * `parallel.rs`: `run_detached` (a kernel on the sized pool, GIL released), `resolve_threads`,
//!   `max_threads` and `MAX_CACHED_POOLS` (the bounds of `common::parallel`);
//! * `quantiles.rs`: the common quantiles (`upper_quantiles`, ...), unprefixed because every
//!   capability uses them;
//! * one file per capability, each exporting its names with the capability's prefix: `ess.rs`
//!   (`ess_*`, with the forest walk), `transfer.rs` (`transfer_*` and the `TransferTable` class,
//!   with the U-statistic bounds and the model fits), `risk.rs` (`risk_*`), `lookahead.rs`
//!   (`lookahead_*`), `fe.rs` (`fe_*`), `ppi.rs` (`ppi_*`).
//!
//! Every file ends with `pub fn register(m)`, which adds its names to the module; [`_core`] calls
//! them in turn.

mod errors;
mod ess;
mod fe;
mod lookahead;
mod parallel;
mod ppi;
mod quantiles;
mod risk;
mod transfer;

use numpy::ndarray::Dimension;
use numpy::{Element, PyReadonlyArray};
use pyo3::prelude::*;

/// Borrow a NumPy array of any dimension as a flat slice in memory order (the Python layer passes
/// C-contiguous arrays; a non-contiguous one raises instead of being copied).
fn slice<'a, T: Element, D: Dimension>(arr: &'a PyReadonlyArray<'_, T, D>) -> PyResult<&'a [T]> {
    Ok(arr.as_slice()?)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    parallel::register(m)?;
    quantiles::register(m)?;
    ess::register(m)?;
    transfer::register(m)?;
    risk::register(m)?;
    lookahead::register(m)?;
    fe::register(m)?;
    ppi::register(m)?;
    Ok(())
}
