//! The variance pieces of block-out cross-validation for one training size N
//! (docs/methods/ess.md §4.5, Appendix R): V̂_train, V̂_test, Ĉ, σ̂²_N (4.5), σ̂²_B (B.2) and the
//! batch-means σ̂²_BM, from the block test errors ê_b and the observation-level mean losses L̄_i.

use crate::common::errors::{check, CoreError, CoreResult};
use crate::common::numerics::CompensatedSum;

/// Estimator pieces for one training size N (plain or difference loss).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pieces {
    pub blocks: usize,
    pub n_used: usize,
    pub ecv: f64,
    pub v_train: f64,
    pub v_test: f64,
    pub cov: f64,
    pub sigma2_fixed_n: f64,
    pub sigma2_fixed_b: f64,
    pub sigma2_bm: f64,
}

pub(super) fn mean(v: &[f64]) -> f64 {
    let mut s = CompensatedSum::new();
    for &x in v {
        s.add(x);
    }
    s.value() / v.len() as f64
}

pub(super) fn sample_var(v: &[f64]) -> f64 {
    let m = mean(v);
    let mut s = CompensatedSum::new();
    for &x in v {
        s.add((x - m) * (x - m));
    }
    s.value() / (v.len() as f64 - 1.0)
}

/// V̂_train, V̂_test, Ĉ and the three variance estimators from the block test errors `e_b` (length
/// B) and the observation-level out-of-block mean losses `lbar` (length n = B·N), two-pass.
pub fn variance_pieces(e_b: &[f64], lbar: &[f64], n_block: usize) -> CoreResult<Pieces> {
    let b = e_b.len();
    if n_block == 0 {
        return Err(CoreError::invalid("n_train", "training size must be >= 1"));
    }
    if b < 2 {
        return Err(CoreError::invalid("e_b", format!("block-out CV needs at least 2 blocks; got {b}")));
    }
    // n_train is a caller's number: B · N must not wrap around
    let n_used = b.checked_mul(n_block).ok_or_else(|| {
        CoreError::invalid("n_train", format!("{b} blocks x N = {n_block} overflows; N must be the training size of these blocks"))
    })?;
    check::same_len("lbar", lbar.len(), "B * N", n_used)?;
    check::finite("e_b", e_b)?;
    check::finite("lbar", lbar)?;
    let nf = n_block as f64;
    let ecv = mean(e_b);
    let v_train = sample_var(e_b);
    let v_test = sample_var(lbar);
    let s_b: Vec<f64> = lbar.chunks(n_block).map(mean).collect();
    let (mr, ms) = (ecv, mean(&s_b));
    let mut c = CompensatedSum::new();
    for (r, s) in e_b.iter().zip(&s_b) {
        c.add((r - mr) * (s - ms));
    }
    let cov = c.value() / (b as f64 - 1.0);
    let xi: Vec<f64> = e_b.iter().zip(&s_b).map(|(r, s)| r + s).collect();
    Ok(Pieces {
        blocks: b,
        n_used,
        ecv,
        v_train,
        v_test,
        cov,
        sigma2_fixed_n: nf * v_train + v_test + 2.0 * nf * cov,
        sigma2_fixed_b: v_test,
        sigma2_bm: nf * sample_var(&xi),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_training_size_is_an_error_not_an_overflow() {
        // B · N wraps to 4 for B = 4, N = 2^62 + 1 on 64 bits: must not pass the length check
        let e = variance_pieces(&[1.0, 2.0, 3.0, 4.0], &[1.0; 4], (1usize << 62) + 1).unwrap_err();
        assert!(e.to_string().contains("`n_train`"), "{e}");
        assert!(variance_pieces(&[1.0, 2.0], &[1.0; 4], usize::MAX).is_err());
        assert!(variance_pieces(&[1.0, 2.0], &[1.0, 2.0, 3.0, 4.0], 2).is_ok());
    }
}
