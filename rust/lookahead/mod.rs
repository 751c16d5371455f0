//! Kernels of the lookahead-bias test (docs/methods/lookahead.md): the Min-K% reduction of
//! per-token log-probabilities into one Lookahead Propensity (LAP) per text (§1.3).
//!
//! Input is ragged: text `i` holds `values[offsets[i]..offsets[i + 1]]` (what
//! `RaggedLogprobs` stores). With `skip_first` the first value of every text (the first token,
//! which has no context and a NaN log-probability) is not scored, so a text of `T` tokens has
//! `n = T - 1` scored values. Per text, with fraction `k_frac` in (0, 1]:
//!
//! ```text
//! k         = max(1, floor(n * k_frac))       // floor as in both reference repositories
//! bottom    = the k smallest scored values, in ascending order
//! min_k     = mean(bottom)                    // Min-K% Prob (log scale)
//! min_k_arith = mean(exp(bottom))             // the arithmetic-mean variant of the paper's prose
//! ```
//!
//! `n = 0` (empty or one-token texts) gives NaN for both and `k = 0`: the Python layer warns.
//! The sums run over the sorted bottom values with a compensated (Neumaier) sum (`common::numerics`), so a result
//! depends on the multiset of values only: the same bits for any thread count, token order or
//! selection path (`select`: AVX-512 for float32 where the CPU has it, chosen at run time, else
//! a portable scalar selection). Parallel over blocks of texts with rayon (inside the caller's
//! pool, see `common::parallel`); the sums of a block's texts run interleaved.

use crate::common::errors::{CoreError, CoreResult, Part};
use crate::common::numerics::CompensatedSum;
use rayon::prelude::*;

mod select;
pub use select::{Select, Simd, SIMD_MAX_K};
use select::Scratch;

/// Per-text results of [`min_k_reduce`], one entry per text.
#[derive(Debug, Clone, PartialEq)]
pub struct MinK {
    /// Mean of the `k` smallest scored values (NaN when `n = 0`).
    pub min_k: Vec<f64>,
    /// Mean of `exp` of the `k` smallest scored values (NaN when `n = 0`).
    pub min_k_arith: Vec<f64>,
    /// Number of scored values `n`.
    pub n_scored: Vec<u64>,
    /// Number of values averaged `k` (0 when `n = 0`).
    pub k: Vec<u64>,
}

/// `k = max(1, floor(n * k_frac))` for `n >= 1`, 0 for `n = 0` (the reference code's
/// `int(n * ratio)` with our guard).
pub fn k_of(n: usize, k_frac: f64) -> usize {
    if n == 0 {
        return 0;
    }
    // n * k_frac >= 0: the cast truncates, which is the floor (and needs no libm call)
    ((n as f64 * k_frac) as usize).clamp(1, n)
}

/// Check `k_frac` (a fraction in (0, 1]).
pub fn check_k(k_frac: f64) -> CoreResult<()> {
    if !(k_frac > 0.0 && k_frac <= 1.0) {
        return Err(CoreError::invalid(
            "k",
            format!("K is the fraction of least likely tokens kept and must lie in (0, 1] (0.2 = the paper's 20%); got {k_frac}"),
        ));
    }
    Ok(())
}

/// Check the offsets of a ragged array of `len` values: at least one entry, non-negative,
/// non-decreasing, the last at most `len`.
pub fn check_offsets(offsets: &[i64], len: usize) -> CoreResult<()> {
    if offsets.is_empty() {
        return Err(CoreError::Empty { arg: "offsets".to_string() });
    }
    if offsets[0] < 0 {
        return Err(CoreError::invalid_at(
            "offsets",
            vec![Part::text(format!("offsets must be >= 0; got {} at ", offsets[0])), Part::at("position", 0)],
        ));
    }
    for (i, w) in offsets.windows(2).enumerate() {
        if w[1] < w[0] {
            return Err(CoreError::invalid(
                "offsets",
                format!("offsets must be non-decreasing; offsets[{}] = {} < offsets[{i}] = {}", i + 1, w[1], w[0]),
            ));
        }
    }
    let last = offsets[offsets.len() - 1];
    if last as u64 > len as u64 {
        return Err(CoreError::invalid(
            "offsets",
            format!("the last offset ({last}) is past the end of `values` (length {len})"),
        ));
    }
    Ok(())
}

/// Texts reduced together: their compensated sums run interleaved (independent chains), on
/// AVX-512 in the 8 lanes of one register (`select::lane_sums8`).
const BLOCK: usize = 8;

/// Per-thread space of [`reduce_block`], reused across blocks.
#[derive(Default)]
struct BlockScratch {
    select: Scratch,
    /// the bottom values of the block's texts, one after the other
    bottom: Vec<f64>,
}

/// Compensated sums of `f(x)` over `bottom[start[l]..start[l] + k[l]]` for each lane `l`, in
/// ascending order within each lane (the chains of the lanes interleave), and whether every
/// `f(x)` was finite.
#[inline]
fn lane_sums(bottom: &[f64], start: &[usize; BLOCK], k: &[usize; BLOCK], f: impl Fn(f64) -> f64) -> ([CompensatedSum; BLOCK], [bool; BLOCK]) {
    let mut acc = [CompensatedSum::new(); BLOCK];
    let mut finite = [true; BLOCK];
    let max_k = k.iter().copied().max().unwrap_or(0);
    for i in 0..max_k {
        for l in 0..BLOCK {
            if i < k[l] {
                let x = f(bottom[start[l] + i]);
                finite[l] &= x.is_finite();
                acc[l].add(x);
            }
        }
    }
    (acc, finite)
}

/// Up to [`BLOCK`] texts (`seg(l)` for `l < out.min_k.len()`) into the output slices; the
/// index of the first text with a NaN among its scored values, if any. `arith`: compute
/// `min_k_arith` (else NaN; it costs one `exp` per bottom value, more than the selection itself).
#[allow(clippy::too_many_arguments)]
fn reduce_block<'a, T: Select + 'a>(
    seg: impl Fn(usize) -> &'a [T],
    k_frac: f64,
    arith: bool,
    simd: Simd,
    scratch: &mut BlockScratch,
    min_k: &mut [f64],
    min_k_arith: &mut [f64],
    n_scored: &mut [u64],
    k_out: &mut [u64],
) -> Option<usize> {
    let m = min_k.len();
    let (mut start, mut k) = ([0usize; BLOCK], [0usize; BLOCK]);
    scratch.bottom.clear();
    for l in 0..m {
        let s = seg(l);
        start[l] = scratch.bottom.len();
        k[l] = k_of(s.len(), k_frac);
        n_scored[l] = s.len() as u64;
        k_out[l] = k[l] as u64;
        if k[l] > 0 && T::bottom(s, k[l], &mut scratch.select, simd, &mut scratch.bottom).is_none() {
            return Some(l);
        }
    }
    // the bottom values in ascending order: the sums depend on the multiset only
    let bottom = &scratch.bottom;
    let (sums, finite) = select::lane_sums8(simd, bottom, &start, &k).unwrap_or_else(|| {
        let (acc, finite) = lane_sums(bottom, &start, &k, |x| x);
        (acc.map(|a| a.value()), finite)
    });
    let exp_sums = if arith { Some(lane_sums(bottom, &start, &k, f64::exp).0) } else { None };
    for l in 0..m {
        if k[l] == 0 {
            (min_k[l], min_k_arith[l]) = (f64::NAN, f64::NAN);
            continue;
        }
        let kf = k[l] as f64;
        // an infinite value (log-probability -inf: probability 0 in float32) makes the
        // compensation NaN; the plain sum is then the answer
        let sum = if finite[l] { sums[l] } else { bottom[start[l]..start[l] + k[l]].iter().sum() };
        min_k[l] = sum / kf;
        min_k_arith[l] = exp_sums.as_ref().map_or(f64::NAN, |e| e[l].value() / kf);
    }
    None
}

/// Min-K% reduction of every text of a ragged array (see the module documentation).
///
/// Errors: `k_frac` outside (0, 1], bad offsets, a NaN among the scored values (naming the text
/// and position).
pub fn min_k_reduce<T: Select>(
    values: &[T],
    offsets: &[i64],
    k_frac: f64,
    skip_first: bool,
) -> CoreResult<MinK> {
    min_k_reduce_with(values, offsets, k_frac, skip_first, true)
}

/// [`min_k_reduce`], with `min_k_arith` computed only when `arith` (NaN otherwise).
pub fn min_k_reduce_with<T: Select>(
    values: &[T],
    offsets: &[i64],
    k_frac: f64,
    skip_first: bool,
    arith: bool,
) -> CoreResult<MinK> {
    min_k_reduce_on(values, offsets, k_frac, skip_first, arith, Simd::detect())
}

/// [`min_k_reduce_with`] on a chosen selection path ([`Simd::SCALAR`] or [`Simd::detect`]'s):
/// the same bits on every path.
pub fn min_k_reduce_on<T: Select>(
    values: &[T],
    offsets: &[i64],
    k_frac: f64,
    skip_first: bool,
    arith: bool,
    simd: Simd,
) -> CoreResult<MinK> {
    check_k(k_frac)?;
    check_offsets(offsets, values.len())?;
    let n_texts = offsets.len() - 1;
    let segment = |i: usize| -> &[T] {
        let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
        let a = if skip_first && b > a { a + 1 } else { a };
        &values[a..b]
    };
    let mut out = MinK {
        min_k: vec![0.0; n_texts],
        min_k_arith: vec![0.0; n_texts],
        n_scored: vec![0; n_texts],
        k: vec![0; n_texts],
    };
    let first_nan = out
        .min_k
        .par_chunks_mut(BLOCK)
        .zip(out.min_k_arith.par_chunks_mut(BLOCK))
        .zip(out.n_scored.par_chunks_mut(BLOCK))
        .zip(out.k.par_chunks_mut(BLOCK))
        .enumerate()
        .with_min_len(1024 / BLOCK)
        .map_init(BlockScratch::default, |scratch, (b, (((mk, ma), ns), ko))| {
            let first = b * BLOCK;
            reduce_block(|l| segment(first + l), k_frac, arith, simd, scratch, mk, ma, ns, ko).map(|l| first + l)
        })
        .flatten()
        .min();
    // a NaN among the scored values is an error, not a silently dropped token
    if let Some(i) = first_nan {
        let seg = segment(i);
        let j = seg.iter().position(|v| (*v).into().is_nan()).unwrap_or(0);
        let pos = offsets[i] as usize + usize::from(skip_first) + j;
        return Err(CoreError::invalid_at(
            "values",
            vec![
                Part::at("text", i),
                Part::text(" has a NaN log-probability at "),
                Part::at("position", pos),
                Part::text(" ("),
                Part::at("token", pos - offsets[i] as usize),
                Part::text(format!(
                    " of the text){}; only the first token of a text may be NaN (pass skip_first to drop it)",
                    if skip_first { "" } else { " and skip_first is off" }
                )),
            ],
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-300)
    }

    #[test]
    fn spec_vectors() {
        // spec §1.3: n = 10, k = 2, bottom (-5, -4)
        let v = [f64::NAN, -1.0, -2.0, -3.0, -4.0, -5.0, -0.1, -0.2, -0.3, -0.4, -0.5];
        let r = min_k_reduce(&v, &[0, 11], 0.2, true).unwrap();
        assert_eq!((r.n_scored[0], r.k[0]), (10, 2));
        assert_eq!(r.min_k[0], -4.5);
        assert!((r.min_k[0].exp() - 0.011108996538).abs() < 1e-12, "{}", r.min_k[0].exp());
        assert!(close(r.min_k_arith[0], ((-5f64).exp() + (-4f64).exp()) / 2.0));
        assert!((r.min_k_arith[0] - 0.012526792944).abs() < 1e-12);
        // k = max(1, floor(0.8)) = 1
        let v = [f64::NAN, -0.5, -7.25, -0.01, -3.0];
        let r = min_k_reduce(&v, &[0, 5], 0.2, true).unwrap();
        assert_eq!(r.k[0], 1);
        assert!((r.min_k[0].exp() - 0.000710174389).abs() < 1e-12);
    }

    #[test]
    fn order_keys_order_like_total_cmp_and_invert() {
        use super::select::{from_order_key, order_key};
        let xs = [f64::NEG_INFINITY, -1e300, -7.25, -1.0, -f64::MIN_POSITIVE, -0.0, 0.0, 5e-324, 1.0, 3e300, f64::INFINITY];
        for &a in &xs {
            assert_eq!(from_order_key(order_key(a)).to_bits(), a.to_bits());
            for &b in &xs {
                assert_eq!(order_key(a).cmp(&order_key(b)), a.total_cmp(&b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn k_rounding() {
        for (n, k) in [(4, 1), (5, 1), (9, 1), (10, 2), (11, 2), (0, 0), (1, 1), (15, 3)] {
            assert_eq!(k_of(n, 0.2), k, "n = {n}");
        }
        assert_eq!(k_of(7, 1.0), 7);
        // the reference code's int(n * ratio): 100 * 0.29 = 28.999999999999996 -> 28
        assert_eq!(k_of(100, 0.29), 28);
    }

    #[test]
    fn edge_cases_and_errors() {
        // empty text, one-token text (skip_first), and a normal one
        let v = [f32::NAN, f32::NAN, -1.0, -2.0];
        let r = min_k_reduce(&v, &[0, 0, 1, 4], 0.5, true).unwrap();
        assert!(r.min_k[0].is_nan() && r.min_k[1].is_nan());
        assert_eq!((r.n_scored[1], r.k[1]), (0, 0));
        assert_eq!((r.n_scored[2], r.k[2]), (2, 1));
        assert_eq!(r.min_k[2], -2.0);
        for bad in [0.0, -0.1, 1.5, f64::NAN] {
            let e = min_k_reduce(&v, &[0, 4], bad, true).unwrap_err();
            assert!(e.to_string().contains("(0, 1]"), "{e}");
        }
        let e = min_k_reduce(&v, &[0, 4], 0.2, false).unwrap_err();
        assert!(e.to_string().contains("text 0") && e.to_string().contains("NaN"), "{e}");
        assert!(min_k_reduce(&v, &[0, 5], 0.2, true).unwrap_err().to_string().contains("past the end"));
        assert!(min_k_reduce(&v, &[0, 3, 2], 0.2, true).unwrap_err().to_string().contains("non-decreasing"));
        assert!(min_k_reduce(&v, &[-1, 2], 0.2, true).is_err());
        assert_eq!(min_k_reduce(&v, &[], 0.2, true).unwrap_err().python_class(), "EmptyInputError");
        // no texts at all is fine: empty results
        assert!(min_k_reduce(&v, &[0], 0.2, true).unwrap().min_k.is_empty());
        // -inf (probability 0 in float32) is a valid log-probability
        let r = min_k_reduce(&[f64::NAN, f64::NEG_INFINITY, -1.0], &[0, 3], 0.5, true).unwrap();
        assert_eq!(r.min_k[0], f64::NEG_INFINITY);
        assert_eq!(r.min_k_arith[0], 0.0);
    }

    #[test]
    fn order_and_thread_invariant() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            -((x >> 11) as f64 / (1u64 << 53) as f64) * 10.0
        };
        let mut offsets = vec![0i64];
        let mut values = Vec::new();
        for i in 0..5000 {
            let len = i % 37;
            for _ in 0..len {
                values.push(next());
            }
            offsets.push(values.len() as i64);
        }
        let a = crate::common::parallel::install(Some(1), || min_k_reduce(&values, &offsets, 0.2, true)).unwrap();
        let b = crate::common::parallel::install(Some(4), || min_k_reduce(&values, &offsets, 0.2, true)).unwrap();
        let bits = |r: &MinK| -> Vec<u64> { r.min_k.iter().chain(&r.min_k_arith).map(|v| v.to_bits()).collect() };
        assert_eq!(bits(&a), bits(&b));
        assert_eq!((&a.n_scored, &a.k), (&b.n_scored, &b.k));
        // reversing each text's tokens (after the first) keeps the bits
        let mut rev = values.clone();
        for w in offsets.windows(2) {
            let (s, e) = (w[0] as usize, w[1] as usize);
            if e > s + 1 {
                rev[s + 1..e].reverse();
            }
        }
        let c = min_k_reduce(&rev, &offsets, 0.2, true).unwrap();
        assert!(a.min_k.iter().zip(&c.min_k).all(|(p, q)| p.to_bits() == q.to_bits()));
    }

    #[test]
    fn bottom_is_the_k_smallest_in_order_and_arith_is_optional() {
        // the selected bottom equals a full sort's first k (ties, -inf, -0.0 and 0.0 included)
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // ties on purpose: a coarse grid, with -inf, -0.0 and 0.0 among the values
            match x % 50 {
                0 => f64::NEG_INFINITY,
                1 => -0.0,
                2 => 0.0,
                _ => -(((x >> 20) % 64) as f64) / 4.0,
            }
        };
        let mut scratch = Scratch::default();
        let mut bottom = Vec::new();
        for len in [1usize, 2, 5, 31, 32, 33, 60, 200, 1000] {
            for _ in 0..20 {
                let seg: Vec<f64> = (0..len).map(|_| next()).collect();
                for k in [1usize, 2, 7, 31, 32, 33, len] {
                    if k == 0 || k > len {
                        continue;
                    }
                    bottom.clear();
                    f64::bottom(&seg, k, &mut scratch, Simd::detect(), &mut bottom).unwrap();
                    let mut all = seg.clone();
                    all.sort_by(|a, b| a.total_cmp(b));
                    let bits = |v: &[f64]| -> Vec<u64> { v.iter().map(|x| x.to_bits()).collect() };
                    assert_eq!(bits(&bottom), bits(&all[..k]), "len {len}, k {k}");
                }
            }
        }
        let v = [f64::NAN, -1.0, -2.0, -3.0, -4.0, -5.0, -0.1, -0.2, -0.3, -0.4, -0.5];
        let on = min_k_reduce_with(&v, &[0, 11], 0.2, true, true).unwrap();
        let off = min_k_reduce_with(&v, &[0, 11], 0.2, true, false).unwrap();
        assert_eq!(on.min_k[0].to_bits(), off.min_k[0].to_bits());
        assert!(off.min_k_arith[0].is_nan() && !on.min_k_arith[0].is_nan());
        // a NaN is still an error with arith off
        assert!(min_k_reduce_with(&[f64::NAN, -1.0, f64::NAN, -2.0], &[0, 4], 0.2, true, false).is_err());
    }

    #[test]
    fn every_selection_path_gives_the_same_bits() {
        // float32 texts of every length around the 16-lane chunks, K from 1% to 100% (k past
        // SIMD_MAX_K takes the scalar path inside the AVX-512 run), with ties and -inf
        let simd = Simd::detect();
        if !simd.is_avx512() {
            eprintln!("AVX-512F not on this CPU: the SIMD path is not compared");
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 97 {
                0 => f32::NEG_INFINITY,
                1 => -0.0,
                2 => 0.0,
                3..=30 => -(((x >> 30) % 8) as f32) * 0.5,
                _ => -((x >> 40) as f32) / (1u64 << 24) as f32 * 12.0,
            }
        };
        let mut offsets = vec![0i64];
        let mut values = Vec::new();
        for i in 0..3000 {
            let len = match i % 3 {
                0 => i % 70,
                1 => 1 + (i * 7) % 400,
                _ => 60,
            };
            values.push(f32::NAN);
            for _ in 1..len.max(1) {
                values.push(next());
            }
            offsets.push(values.len() as i64);
        }
        for k_frac in [0.01, 0.1, 0.2, 0.5, 1.0] {
            let a = min_k_reduce_on(&values, &offsets, k_frac, true, true, Simd::SCALAR).unwrap();
            let b = min_k_reduce_on(&values, &offsets, k_frac, true, true, simd).unwrap();
            let bits = |r: &MinK| -> Vec<u64> { r.min_k.iter().chain(&r.min_k_arith).map(|v| v.to_bits()).collect() };
            assert_eq!(bits(&a), bits(&b), "K = {k_frac}");
            assert_eq!((&a.n_scored, &a.k), (&b.n_scored, &b.k));
            // and the same as the float64 path on the widened values
            let wide: Vec<f64> = values.iter().map(|&v| v as f64).collect();
            let c = min_k_reduce_on(&wide, &offsets, k_frac, true, true, simd).unwrap();
            assert_eq!(bits(&a), bits(&c), "K = {k_frac}, float64");
            // and the documented computation, written out: a full sort, then the compensated
            // sums of the first k in ascending order (the plain sum where one is infinite)
            for t in 0..offsets.len() - 1 {
                let (s, e) = (offsets[t] as usize + 1, offsets[t + 1] as usize);
                let mut seg: Vec<f64> = values[s.min(e)..e].iter().map(|&v| v as f64).collect();
                seg.sort_by(|p, q| p.total_cmp(q));
                let k = k_of(seg.len(), k_frac);
                assert_eq!(b.k[t] as usize, k);
                if k == 0 {
                    assert!(b.min_k[t].is_nan() && b.min_k_arith[t].is_nan());
                    continue;
                }
                let bottom = &seg[..k];
                let sum = if bottom.iter().all(|v| v.is_finite()) {
                    crate::common::numerics::compensated_sum(bottom)
                } else {
                    bottom.iter().sum()
                };
                let exps: Vec<f64> = bottom.iter().map(|v| v.exp()).collect();
                assert_eq!(b.min_k[t].to_bits(), (sum / k as f64).to_bits(), "text {t}, K = {k_frac}");
                let arith = crate::common::numerics::compensated_sum(&exps) / k as f64;
                assert_eq!(b.min_k_arith[t].to_bits(), arith.to_bits(), "text {t}, K = {k_frac}");
            }
        }
        // a NaN past the first chunk of a text is an error on every path
        let mut bad = values.clone();
        for t in 0..offsets.len() - 1 {
            let (s, e) = (offsets[t] as usize, offsets[t + 1] as usize);
            if e - s > 50 {
                bad[s + 45] = f32::NAN;
                for p in [Simd::SCALAR, simd] {
                    let err = min_k_reduce_on(&bad, &offsets, 0.2, true, false, p).unwrap_err().to_string();
                    assert!(err.contains(&format!("text {t} ")) && err.contains(&format!("position {}", s + 45)), "{err}");
                }
                break;
            }
        }
    }
}
