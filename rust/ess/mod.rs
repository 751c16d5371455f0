//! Equivalent sample size (ESS) of a fixed prediction rule: block-out cross-validation, its
//! variance components and the sequential test (Gao, Han & Liang 2026; docs/methods/ess.md).
//!
//! What lives where (everything but the forest walk is re-exported here, so callers write
//! `crate::ess::BlockOutAccumulator`):
//!
//! * this file: [`permutation`], the one documented row permutation used by every binding
//!   (SplitMix64 + Fisher–Yates), so Python and R permute identically;
//! * `loss.rs`: [`LossKind`] and [`losses`], the per-observation losses ℓ(ŷ, y);
//! * `blockout.rs`: [`BlockOutAccumulator`], streaming accumulation of the cross-fitted losses
//!   into the block test errors ê_b and the observation-level sums (plain and difference loss,
//!   O(n + B) memory, the same bits for any thread count and chunking);
//! * `variance.rs`: [`variance_pieces`], V̂_train, V̂_test, Ĉ, σ̂²_N (4.5), σ̂²_B (B.2), σ̂²_BM
//!   (docs/methods/ess.md §4.5, App. R);
//! * `sequential.rs`: [`sequential_test`], the one-sided z-tests of H_{0,N}: e_N ≤ e^LLM and
//!   Algorithm 3.1;
//! * [`forest`]: prediction of scikit-learn tree ensembles from their node arrays, bit for bit
//!   scikit-learn's, used by the fast prediction of ESS's tree-ensemble learners.

mod blockout;
pub mod forest;
mod loss;
mod sequential;
mod variance;

pub use blockout::{uses_avx2, BlockOutAccumulator, BlockOutResult, ROW_GROUP, TILE};
pub use loss::{losses, LossKind};
pub use sequential::{sequential_test, GridPoint, Regime, SequentialResult, TestRow, VarianceKind};
pub use variance::{variance_pieces, Pieces};

use crate::common::errors::{check, CoreResult};
#[cfg(doc)]
use crate::common::errors::CoreError;
use crate::common::rng::SplitMix64;

/// The permutation of 0..n for `seed`: start from the identity and, for i = n-1 down to 1, swap
/// positions i and j = `below_rejection(i + 1)` of [`SplitMix64`] seeded with `seed`. Row k of
/// the permuted data is row `perm[k]` of the original. The 8·n bytes are allocated fallibly: an
/// `n` this process cannot hold is a [`CoreError::TooLarge`] naming `n`, not an abort.
pub fn permutation(n: usize, seed: u64) -> CoreResult<Vec<u64>> {
    let mut perm: Vec<u64> = check::with_capacity("n", n, n, "the permutation")?;
    perm.extend(0..n as u64);
    let mut rng = SplitMix64::new(seed);
    for i in (1..n).rev() {
        let j = rng.below_rejection(i as u64 + 1) as usize;
        perm.swap(i, j);
    }
    Ok(perm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_a_permutation_and_reproducible() {
        let p = permutation(1000, 42).unwrap();
        let mut s = p.clone();
        s.sort();
        assert_eq!(s, (0..1000).collect::<Vec<u64>>());
        assert_eq!(p, permutation(1000, 42).unwrap());
        assert_ne!(p, permutation(1000, 43).unwrap());
        // pinned: the permutation Python and R reproduce
        assert_eq!(permutation(10, 42).unwrap(), vec![0, 9, 5, 8, 6, 4, 7, 2, 1, 3]);
        assert!(permutation(0, 1).unwrap().is_empty());
    }

    #[test]
    fn huge_permutation_is_an_error_not_an_abort() {
        // 2^47 rows (1 PiB, more than any address space) and 2^63 rows (more bytes than usize
        // counts): clean errors
        for n in [1usize << 47, 1 << 63, usize::MAX] {
            let e = permutation(n, 0).unwrap_err();
            assert_eq!(e.python_class(), "ResourceError");
            assert!(e.to_string().contains(&format!("`n` = {n}")), "{e}");
        }
    }
}
