//! llmsurrogate's Rust core.
//!
//! Pure kernels (no Python types, unit-tested with `cargo test`) live in the top-level modules;
//! the thin pyo3 layer that exposes them as `llmsurrogate._core` lives in `bindings/` and is
//! compiled only with the default `python` feature.

pub mod errors;
pub mod ess;
pub mod forest;
pub mod nls;
pub mod numerics;
pub mod parallel;
pub mod quantiles;
pub mod transfer;
pub mod ustat;
pub mod risk;

#[cfg(feature = "python")]
mod bindings;
