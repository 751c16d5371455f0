//! llmsurrogate's Rust core.
//!
//! [`common`] holds the infrastructure every capability shares (errors, thread pools, numerics,
//! the linear solve, the one RNG, quantiles). Pure kernels (no Python types, unit-tested with
//! `cargo test`) live in the other top-level modules;
//! the thin pyo3 layer that exposes them as `llmsurrogate._core` lives in `bindings/` and is
//! compiled only with the default `python` feature.

pub mod common;
pub mod ess;
pub mod forest;
pub mod nls;
pub mod transfer;
pub mod ustat;
pub mod risk;

#[cfg(feature = "python")]
mod bindings;
