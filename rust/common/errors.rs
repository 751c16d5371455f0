//! The one error type of the Rust core.
//!
//! Kernels return `Result<T, CoreError>` and never panic on user input. Each variant names the
//! argument at fault and says how to fix it. The Python bindings map a variant to a class of the
//! `llmsurrogate.exceptions` hierarchy through [`CoreError::python_class`], in one place: the
//! `From<CoreError> for PyErr` conversion of `bindings/errors.rs`, so binding code writes `?`.

use thiserror::Error;

/// Every failure a kernel can report.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CoreError {
    /// An input that must hold at least one element is empty.
    #[error("argument `{arg}` is empty; pass at least one value")]
    Empty { arg: String },

    /// A NaN (or an infinity where only finite numbers make sense) in an input array.
    #[error("argument `{arg}` has a non-finite value ({value}) at position {index}; drop or impute missing values first")]
    NonFinite { arg: String, index: usize, value: f64 },

    /// Two arrays that must be aligned have different lengths.
    #[error("arguments `{a}` (length {len_a}) and `{b}` (length {len_b}) must have the same length")]
    LengthMismatch { a: String, len_a: usize, b: String, len_b: usize },

    /// A weight below zero.
    #[error("argument `{arg}` has a negative value ({value}) at position {index}; weights must be >= 0")]
    NegativeWeight { arg: String, index: usize, value: f64 },

    /// Any other argument outside its domain; `reason` says what is allowed.
    #[error("argument `{arg}`: {reason}")]
    InvalidArgument { arg: String, reason: String },

    /// The thread pool could not be built.
    #[error("could not start {threads} worker threads: {reason}")]
    ThreadPool { threads: usize, reason: String },
}

impl CoreError {
    /// Name of the matching exception class in `llmsurrogate.exceptions`.
    pub fn python_class(&self) -> &'static str {
        match self {
            CoreError::Empty { .. } => "EmptyInputError",
            CoreError::NonFinite { .. } => "NonFiniteError",
            CoreError::LengthMismatch { .. } => "ShapeError",
            CoreError::NegativeWeight { .. } | CoreError::InvalidArgument { .. } => "InvalidArgumentError",
            CoreError::ThreadPool { .. } => "ComputationError",
        }
    }

    /// Shorthand for [`CoreError::InvalidArgument`].
    pub fn invalid(arg: &str, reason: impl Into<String>) -> Self {
        CoreError::InvalidArgument { arg: arg.to_string(), reason: reason.into() }
    }
}

/// Result alias used by every kernel.
pub type CoreResult<T> = Result<T, CoreError>;

/// Input checks shared by the kernels.
pub mod check {
    use super::{CoreError, CoreResult};

    /// `values` is non-empty and holds no NaN (infinities are allowed: they order fine).
    pub fn no_nan(arg: &str, values: &[f64]) -> CoreResult<()> {
        if values.is_empty() {
            return Err(CoreError::Empty { arg: arg.to_string() });
        }
        match values.iter().position(|v| v.is_nan()) {
            Some(index) => Err(CoreError::NonFinite { arg: arg.to_string(), index, value: f64::NAN }),
            None => Ok(()),
        }
    }

    /// `values` is non-empty and every value is finite.
    pub fn finite(arg: &str, values: &[f64]) -> CoreResult<()> {
        if values.is_empty() {
            return Err(CoreError::Empty { arg: arg.to_string() });
        }
        match values.iter().position(|v| !v.is_finite()) {
            Some(index) => Err(CoreError::NonFinite { arg: arg.to_string(), index, value: values[index] }),
            None => Ok(()),
        }
    }

    /// Finite, non-negative weights with a positive total.
    pub fn weights(arg: &str, weights: &[f64]) -> CoreResult<()> {
        finite(arg, weights)?;
        if let Some(index) = weights.iter().position(|w| *w < 0.0) {
            return Err(CoreError::NegativeWeight { arg: arg.to_string(), index, value: weights[index] });
        }
        if !weights.iter().any(|w| *w > 0.0) {
            return Err(CoreError::invalid(arg, "all weights are zero; at least one must be positive"));
        }
        Ok(())
    }

    /// Two aligned arrays have the same length.
    pub fn same_len(a: &str, len_a: usize, b: &str, len_b: usize) -> CoreResult<()> {
        if len_a != len_b {
            return Err(CoreError::LengthMismatch { a: a.to_string(), len_a, b: b.to_string(), len_b });
        }
        Ok(())
    }

    /// A probability level in [0, 1].
    pub fn probability(arg: &str, values: &[f64]) -> CoreResult<()> {
        if values.is_empty() {
            return Err(CoreError::Empty { arg: arg.to_string() });
        }
        for (index, &p) in values.iter().enumerate() {
            if !(0.0..=1.0).contains(&p) {
                let shown = if p.is_nan() { "NaN".to_string() } else { format!("{p}") };
                return Err(CoreError::invalid(
                    arg,
                    format!("levels must lie in [0, 1]; got {shown} at position {index}"),
                ));
            }
        }
        Ok(())
    }

    /// A finite number >= 0.
    pub fn nonnegative_scalar(arg: &str, value: f64) -> CoreResult<()> {
        if !value.is_finite() || value < 0.0 {
            return Err(CoreError::invalid(arg, format!("must be a finite number >= 0; got {value}")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_argument_and_the_fix() {
        let e = check::no_nan("values", &[1.0, f64::NAN]).unwrap_err();
        assert_eq!(e.python_class(), "NonFiniteError");
        let msg = e.to_string();
        assert!(msg.contains("`values`") && msg.contains("position 1") && msg.contains("impute"), "{msg}");

        let e = check::same_len("values", 3, "weights", 2).unwrap_err();
        assert_eq!(e.python_class(), "ShapeError");
        assert!(e.to_string().contains("length 3") && e.to_string().contains("length 2"));
    }

    #[test]
    fn weight_checks() {
        assert!(check::weights("w", &[0.0, 1.0]).is_ok());
        assert_eq!(check::weights("w", &[0.0, -1.0]).unwrap_err().python_class(), "InvalidArgumentError");
        assert!(check::weights("w", &[0.0, 0.0]).unwrap_err().to_string().contains("all weights are zero"));
        assert_eq!(check::weights("w", &[f64::INFINITY]).unwrap_err().python_class(), "NonFiniteError");
        assert_eq!(check::weights("w", &[]).unwrap_err().python_class(), "EmptyInputError");
    }

    #[test]
    fn probability_checks() {
        assert!(check::probability("tau", &[0.0, 0.5, 1.0]).is_ok());
        assert!(check::probability("tau", &[1.5]).is_err());
        assert!(check::probability("tau", &[f64::NAN]).unwrap_err().to_string().contains("NaN"));
        assert!(check::no_nan("v", &[f64::INFINITY, 1.0]).is_ok());
        assert!(check::finite("v", &[f64::INFINITY, 1.0]).is_err());
    }
}
