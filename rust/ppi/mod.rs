//! Prediction-powered inference kernels (docs/methods/ppi.md): the parts of `llmsurrogate.ppi`
//! that grow with the number of rows. Everything of size `d x d` (the inverse Hessian, lambda-hat,
//! the sandwich) stays in Python; these kernels reduce the `n + N` rows to such summaries in one
//! pass each.
//!
//! * [`Family`]: the linear, logistic and Poisson models with their canonical links;
//! * [`moments`]: per-row gradients `w x (mu - t)` reduced to their count, mean and centred
//!   cross-products ([`Moments`], merged by Chan's formula), with the Hessian sum `sum w v x x'`;
//!   the same reduction of rows given as a matrix; the gradient rows themselves (clusters);
//! * [`qr`]: the R factor (and `Q' b`) of a tall weighted design by Householder QR over row chunks
//!   (TSQR): weighted least squares and the rank check;
//! * [`glm`]: the minimiser of the rectified GLM loss by Newton's method with a backtracking line
//!   search, the rule of `llmsurrogate/ppi/_glm.py`;
//! * [`clusters`]: sums of rows by cluster code;
//! * [`sweep`]: the sorted sweep of the quantile: sums of increments of the rows with value `<= t`
//!   at every `t` of a sorted grid (one parallel sort of the values for several increment rows).
//!
//! Parallel passes cut the rows into chunks of [`CHUNK`] rows (fixed, whatever the thread count),
//! reduce each chunk on its own and combine the chunk results in order, so every result is the
//! same for any number of threads ([`sweep`]: a parallel sort on distinct keys, then sequential
//! sums). Builds on `common/` only.

pub mod clusters;
pub mod glm;
pub mod moments;
pub mod qr;
pub mod sweep;

pub use clusters::cluster_sums;
pub use glm::{fit_rectified, NoFiniteFit};
pub use moments::{glm_moments, gradient_rows, row_moments, Moments};
pub use qr::qr_factor;
pub use sweep::cumulative_at;

use crate::common::errors::{CoreError, CoreResult};

/// Rows per chunk of every parallel pass (the reduction order, hence the rounding, depends on it
/// and on nothing else).
pub const CHUNK: usize = 4096;

/// A GLM with canonical link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Linear,
    Logistic,
    Poisson,
}

impl Family {
    /// `"linear"`, `"logistic"` or `"poisson"`.
    pub fn parse(name: &str) -> CoreResult<Family> {
        match name {
            "linear" => Ok(Family::Linear),
            "logistic" => Ok(Family::Logistic),
            "poisson" => Ok(Family::Poisson),
            _ => Err(CoreError::invalid("family", format!("must be 'linear', 'logistic' or 'poisson'; got {name:?}"))),
        }
    }

    /// The mean `mu` of the linear predictor `eta`.
    #[inline]
    pub fn mean(self, eta: f64) -> f64 {
        match self {
            Family::Linear => eta,
            Family::Logistic => {
                if eta >= 0.0 {
                    1.0 / (1.0 + (-eta).exp())
                } else {
                    let e = eta.exp();
                    e / (1.0 + e)
                }
            }
            Family::Poisson => eta.exp(),
        }
    }

    /// `d mu / d eta` as a function of `mu`.
    #[inline]
    pub fn variance(self, mu: f64) -> f64 {
        match self {
            Family::Linear => 1.0,
            Family::Logistic => mu * (1.0 - mu),
            Family::Poisson => mu,
        }
    }

    /// The cumulant `b(eta)`: the loss of a row is `b(eta) - t eta`.
    #[inline]
    pub fn cumulant(self, eta: f64) -> f64 {
        match self {
            Family::Linear => 0.5 * eta * eta,
            Family::Logistic => eta.max(0.0) + (-eta.abs()).exp().ln_1p(),
            Family::Poisson => eta.exp(),
        }
    }

    /// `(mean, cumulant)` of `eta` with one exponential.
    #[inline]
    pub fn mean_cumulant(self, eta: f64) -> (f64, f64) {
        match self {
            Family::Linear => (eta, 0.5 * eta * eta),
            Family::Logistic => {
                let e = (-eta.abs()).exp();
                let mu = if eta >= 0.0 { 1.0 / (1.0 + e) } else { e / (1.0 + e) };
                (mu, eta.max(0.0) + e.ln_1p())
            }
            Family::Poisson => {
                let e = eta.exp();
                (e, e)
            }
        }
    }
}

/// `sum a_i b_i` with eight running sums (so that it vectorises; the order is fixed by the
/// lengths alone).
#[inline]
pub(crate) fn dot8(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut tail = 0.0;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// `sum a_i` with eight running sums.
#[inline]
pub(crate) fn sum8(a: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let ca = a.chunks_exact(8);
    let tail: f64 = ca.remainder().iter().sum();
    for x in ca {
        for k in 0..8 {
            acc[k] += x[k];
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// The row-major `m x d` chunk `xs` as `d` columns of `m` values (column-major, into `out`).
pub(crate) fn to_columns(xs: &[f64], d: usize, out: &mut [f64]) {
    let m = xs.len() / d;
    for (i, row) in xs.chunks_exact(d).enumerate() {
        for (j, v) in row.iter().enumerate() {
            out[j * m + i] = *v;
        }
    }
}

/// `eta_i = x_i' theta` for the columns `cols` (`d` columns of `m` values).
pub(crate) fn linear_predictor(cols: &[f64], m: usize, theta: &[f64], eta: &mut [f64]) {
    eta[..m].fill(0.0);
    for (col, t) in cols.chunks_exact(m).zip(theta) {
        for (e, x) in eta[..m].iter_mut().zip(col) {
            *e += t * x;
        }
    }
}

/// Add `sum_i v_i x_ia x_ib` to the upper triangle of the `d x d` row-major `out` (`cols`: `d`
/// columns of `m` values; `tmp`: `m` values of scratch).
pub(crate) fn add_weighted_gram(cols: &[f64], m: usize, v: &[f64], tmp: &mut [f64], out: &mut [f64]) {
    let d = cols.len() / m.max(1);
    if m == 0 {
        return;
    }
    for a in 0..d {
        let ca = &cols[a * m..(a + 1) * m];
        for ((t, x), vi) in tmp[..m].iter_mut().zip(ca).zip(v) {
            *t = vi * x;
        }
        for b in a..d {
            out[a * d + b] += dot8(&tmp[..m], &cols[b * m..(b + 1) * m]);
        }
    }
}

/// Checks shared by the kernels: `x` holds `rows x d` values, each per-row vector `rows` values.
pub(crate) fn check_shapes(x: &[f64], d: usize, named: &[(&str, usize)]) -> CoreResult<usize> {
    if d == 0 {
        return Err(CoreError::invalid("x", "has no columns"));
    }
    if !x.len().is_multiple_of(d) {
        return Err(CoreError::invalid("x", format!("holds {} values, not a multiple of its {d} columns", x.len())));
    }
    let rows = x.len() / d;
    for (name, len) in named {
        crate::common::errors::check::same_len(name, *len, "x rows", rows)?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(Family::parse("logistic").unwrap(), Family::Logistic);
        assert!(Family::parse("probit").is_err());
        let f = Family::Logistic;
        assert!((f.mean(0.0) - 0.5).abs() < 1e-15);
        assert!((f.mean(-800.0)).abs() < 1e-300 && (f.mean(800.0) - 1.0).abs() < 1e-15);
        assert!((f.cumulant(0.0) - 2f64.ln()).abs() < 1e-15);
        assert!((f.cumulant(50.0) - 50.0).abs() < 1e-12);
        assert_eq!(Family::Poisson.variance(2.5), 2.5);
        assert_eq!(Family::Linear.cumulant(2.0), 2.0);
    }

    #[test]
    fn shapes() {
        assert_eq!(check_shapes(&[0.0; 6], 2, &[("y", 3)]).unwrap(), 3);
        assert!(check_shapes(&[0.0; 6], 4, &[]).is_err());
        assert!(check_shapes(&[0.0; 6], 2, &[("y", 2)]).is_err());
        assert!(check_shapes(&[0.0; 6], 0, &[]).is_err());
    }
}
