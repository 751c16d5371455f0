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

    /// [`CoreError::InvalidArgument`] whose reason names positions (a row, an element, a text):
    /// `parts` keeps them as data ([`Part::At`], 0-based), so the Python bindings build the
    /// message with `llmsurrogate._positions.located` and R reads them 1-based. Every message of
    /// the core that names a position is built with [`CoreError::invalid_at`] (or is
    /// [`CoreError::NonFinite`] / [`CoreError::NegativeWeight`]); none writes one into its text.
    #[error("argument `{arg}`: {}", render(parts))]
    InvalidAt { arg: String, parts: Vec<Part> },

    /// The thread pool could not be built.
    #[error("could not start {threads} worker threads: {reason}")]
    ThreadPool { threads: usize, reason: String },

    /// An argument sets the size of an allocation that this process cannot make (checked before
    /// any work, with fallible allocation: never an abort). `bytes` is what it would need
    /// (a float: the exact count may not fit in 64 bits).
    #[error("argument `{arg}` = {value} would need {} of memory for {what}, more than this process can allocate; choose a smaller `{arg}`", format_bytes(*bytes))]
    TooLarge { arg: String, value: String, bytes: f64, what: String },
}

/// A piece of a message: text, or a 0-based position with its word ("position", "row", "text").
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    At { word: &'static str, index: usize },
}

impl Part {
    /// A text piece.
    pub fn text(s: impl Into<String>) -> Part {
        Part::Text(s.into())
    }

    /// A 0-based position: `at("row", 3)` reads "row 3" in Python and "row 4" in R.
    pub fn at(word: &'static str, index: usize) -> Part {
        Part::At { word, index }
    }
}

/// Python's text of `parts` (positions 0-based).
pub fn render(parts: &[Part]) -> String {
    let mut out = String::new();
    for p in parts {
        match p {
            Part::Text(t) => out.push_str(t),
            Part::At { word, index } => {
                out.push_str(word);
                out.push(' ');
                out.push_str(&index.to_string());
            }
        }
    }
    out
}

/// `bytes` for people: "512 bytes", "1.5 GiB", "16.0 TiB".
pub fn format_bytes(bytes: f64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let (mut n, mut i) = (bytes, 0);
    while n >= 1024.0 && i + 1 < units.len() {
        n /= 1024.0;
        i += 1;
    }
    if i == 0 { format!("{n:.0} {}", units[0]) } else { format!("{n:.1} {}", units[i]) }
}

impl CoreError {
    /// Name of the matching exception class in `llmsurrogate.exceptions`.
    pub fn python_class(&self) -> &'static str {
        match self {
            CoreError::Empty { .. } => "EmptyInputError",
            CoreError::NonFinite { .. } => "NonFiniteError",
            CoreError::LengthMismatch { .. } => "ShapeError",
            CoreError::NegativeWeight { .. } | CoreError::InvalidArgument { .. } | CoreError::InvalidAt { .. } => {
                "InvalidArgumentError"
            }
            CoreError::ThreadPool { .. } => "ComputationError",
            CoreError::TooLarge { .. } => "ResourceError",
        }
    }

    /// Shorthand for [`CoreError::InvalidArgument`].
    pub fn invalid(arg: &str, reason: impl Into<String>) -> Self {
        CoreError::InvalidArgument { arg: arg.to_string(), reason: reason.into() }
    }

    /// [`CoreError::InvalidAt`]: a reason that names positions, given as [`Part`]s, e.g.
    /// `invalid_at("y", vec![Part::text(format!("got {v} at ")), Part::at("position", i)])`.
    pub fn invalid_at(arg: &str, parts: Vec<Part>) -> Self {
        CoreError::InvalidAt { arg: arg.to_string(), parts }
    }

    /// The whole message as [`Part`]s when it names positions (its [`Display`](std::fmt::Display)
    /// text is [`render`] of them); `None` for a message without positions.
    pub fn parts(&self) -> Option<Vec<Part>> {
        match self {
            CoreError::NonFinite { arg, index, value } => Some(vec![
                Part::text(format!("argument `{arg}` has a non-finite value ({value}) at ")),
                Part::at("position", *index),
                Part::text("; drop or impute missing values first"),
            ]),
            CoreError::NegativeWeight { arg, index, value } => Some(vec![
                Part::text(format!("argument `{arg}` has a negative value ({value}) at ")),
                Part::at("position", *index),
                Part::text("; weights must be >= 0"),
            ]),
            CoreError::InvalidAt { arg, parts } => {
                let mut all = vec![Part::text(format!("argument `{arg}`: "))];
                all.extend(parts.iter().cloned());
                Some(all)
            }
            _ => None,
        }
    }
}

/// Result alias used by every kernel.
pub type CoreResult<T> = Result<T, CoreError>;

/// Input checks shared by the kernels.
pub mod check {
    use super::{CoreError, CoreResult, Part};

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
                return Err(CoreError::invalid_at(
                    arg,
                    vec![Part::text(format!("levels must lie in [0, 1]; got {shown} at ")), Part::at("position", index)],
                ));
            }
        }
        Ok(())
    }

    /// Bytes taken by `len` values of `T`, or `None` past `isize::MAX` (no allocation can hold
    /// them). The float is for messages.
    pub fn bytes_of<T>(len: usize) -> (Option<usize>, f64) {
        let size = std::mem::size_of::<T>().max(1);
        let exact = len.checked_mul(size).filter(|&b| b <= isize::MAX as usize);
        (exact, len as f64 * size as f64)
    }

    /// Physical memory plus swap in bytes (Linux: `/proc/meminfo`, read once); `None` elsewhere.
    /// An allocation larger than this cannot be used even where the kernel would grant the
    /// address space (`vm.overcommit_memory = 1`), so it is refused up front.
    pub fn memory_total() -> Option<usize> {
        static TOTAL: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
        *TOTAL.get_or_init(|| {
            let text = std::fs::read_to_string("/proc/meminfo").ok()?;
            let kib = |key: &str| -> Option<usize> {
                let line = text.lines().find(|l| l.starts_with(key))?;
                line[key.len()..].trim().trim_end_matches("kB").trim().parse::<usize>().ok()
            };
            let total = kib("MemTotal:")?.saturating_add(kib("SwapTotal:").unwrap_or(0));
            Some(total.saturating_mul(1024))
        })
    }

    fn fits(bytes: usize) -> bool {
        bytes <= isize::MAX as usize && memory_total().map_or(true, |total| bytes <= total)
    }

    fn too_large(arg: &str, value: impl std::fmt::Display, bytes: f64, what: &str) -> CoreError {
        CoreError::TooLarge { arg: arg.to_string(), value: value.to_string(), bytes, what: what.to_string() }
    }

    /// An empty vector with room for `len` values of `T`, allocated fallibly: when the process
    /// cannot get the memory (or `len` overflows) the error names argument `arg` = `value`, the
    /// memory it would need and `what` it is for. Every allocation whose size comes from a user's
    /// number (not from the length of an array already in memory) goes through this or
    /// [`filled`].
    pub fn with_capacity<T>(arg: &str, value: impl std::fmt::Display, len: usize, what: &str) -> CoreResult<Vec<T>> {
        let (exact, approx) = bytes_of::<T>(len);
        if !exact.is_some_and(fits) {
            return Err(too_large(arg, value, approx, what));
        }
        let mut v: Vec<T> = Vec::new();
        v.try_reserve_exact(len).map_err(|_| too_large(arg, value, approx, what))?;
        Ok(v)
    }

    /// `len` copies of `fill`, allocated fallibly (see [`with_capacity`]).
    pub fn filled<T: Clone>(arg: &str, value: impl std::fmt::Display, len: usize, fill: T, what: &str) -> CoreResult<Vec<T>> {
        let mut v = with_capacity(arg, value, len, what)?;
        v.resize(len, fill);
        Ok(v)
    }

    /// Check that `bytes` (possibly several buffers, held at the same time) could be allocated now,
    /// by reserving them and giving them back at once (untouched pages cost nothing). For results
    /// whose pieces are allocated in many places (one per parallel task), before the work starts.
    pub fn memory(arg: &str, value: impl std::fmt::Display, bytes: Option<usize>, approx: f64, what: &str) -> CoreResult<()> {
        match bytes {
            Some(b) if fits(b) => {
                let mut probe: Vec<u8> = Vec::new();
                probe.try_reserve_exact(b).map_err(|_| too_large(arg, value, approx, what))?;
                Ok(())
            }
            _ => Err(too_large(arg, value, approx, what)),
        }
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
    fn positions_are_parts_whose_text_is_the_message() {
        let cases = [
            check::no_nan("values", &[1.0, f64::NAN]).unwrap_err(),
            check::weights("w", &[1.0, 2.0, -1.0]).unwrap_err(),
            check::probability("tau", &[0.5, 1.5]).unwrap_err(),
            CoreError::invalid_at(
                "values",
                vec![Part::at("text", 2), Part::text(" has a NaN at "), Part::at("position", 7), Part::text(".")],
            ),
        ];
        let positions = |e: &CoreError| -> Vec<(&'static str, usize)> {
            e.parts()
                .unwrap()
                .into_iter()
                .filter_map(|p| match p {
                    Part::At { word, index } => Some((word, index)),
                    Part::Text(_) => None,
                })
                .collect()
        };
        for e in &cases {
            assert_eq!(render(&e.parts().unwrap()), e.to_string());
        }
        assert_eq!(positions(&cases[0]), [("position", 1)]);
        assert_eq!(positions(&cases[1]), [("position", 2)]);
        assert_eq!(cases[1].to_string(), "argument `w` has a negative value (-1) at position 2; weights must be >= 0");
        assert_eq!(cases[2].to_string(), "argument `tau`: levels must lie in [0, 1]; got 1.5 at position 1");
        assert_eq!(cases[2].python_class(), "InvalidArgumentError");
        assert_eq!(positions(&cases[3]), [("text", 2), ("position", 7)]);
        assert_eq!(cases[3].to_string(), "argument `values`: text 2 has a NaN at position 7.");
        assert!(CoreError::invalid("x", "no position").parts().is_none());
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

    #[test]
    fn fallible_allocation_names_the_argument_and_the_memory() {
        // 2^47 f64 = 1 PiB: more than any address space gives a process
        let e = check::with_capacity::<f64>("n", 1u64 << 47, 1 << 47, "the permutation").unwrap_err();
        assert_eq!(e.python_class(), "ResourceError");
        let msg = e.to_string();
        assert!(msg.contains("`n` = 140737488355328") && msg.contains("1.0 PiB") && msg.contains("the permutation"), "{msg}");
        // a byte count past usize: an error, not a capacity-overflow panic
        let e = check::with_capacity::<f64>("n", usize::MAX, usize::MAX, "terms").unwrap_err();
        assert!(e.to_string().contains("EiB"), "{e}");
        let e = check::filled("bins", 7, usize::MAX / 2, 0u8, "bins").unwrap_err();
        assert_eq!(e.python_class(), "ResourceError");
        assert_eq!(check::filled("bins", 3, 3, 1.5f64, "bins").unwrap(), vec![1.5; 3]);
        assert!(check::with_capacity::<u64>("n", 0, 0, "x").unwrap().is_empty());
        assert!(check::memory("subsets", 1, Some(1 << 20), 1048576.0, "fits").is_ok());
        assert!(check::memory("subsets", 1, Some(1 << 50), 2f64.powi(50), "fits").is_err());
        assert!(check::memory("subsets", 1, None, 1e30, "fits").unwrap_err().to_string().contains("`subsets` = 1"));
        // more than physical memory and swap: refused before asking the kernel
        if let Some(total) = check::memory_total() {
            assert!(total > 0);
            assert!(check::with_capacity::<u8>("n", 1, total + 1, "x").is_err());
        }
    }

    #[test]
    fn byte_formatting() {
        assert_eq!(format_bytes(512.0), "512 bytes");
        assert_eq!(format_bytes(1536.0), "1.5 KiB");
        assert_eq!(format_bytes(16.0 * 1024f64.powi(4)), "16.0 TiB");
        assert!(format_bytes(1e40).ends_with("EiB"));
    }
}
