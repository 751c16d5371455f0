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
//! depends on the multiset of values only: the same bits for any thread count or token order.
//! Parallel over texts with rayon (inside the caller's pool, see `common::parallel`).

use crate::common::errors::{CoreError, CoreResult};
use crate::common::numerics::CompensatedSum;
use rayon::prelude::*;

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
    let k = (n as f64 * k_frac).floor();
    (k as usize).clamp(1, n)
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
        return Err(CoreError::invalid("offsets", format!("offsets must be >= 0; got {} at position 0", offsets[0])));
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

/// The bits of `x` as an integer that orders like `f64::total_cmp` (the transform `total_cmp`
/// itself applies); its own inverse.
#[inline]
fn order_key(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ ((((b >> 63) as u64) >> 1) as i64)
}

#[inline]
fn from_order_key(key: i64) -> f64 {
    f64::from_bits((key ^ ((((key >> 63) as u64) >> 1) as i64)) as u64)
}

/// The `k` smallest order keys of `seg` in ascending order in `buf[..k]`, or `None` when a value
/// is NaN (`0 < k <= seg.len()`).
fn bottom_keys<T: Copy + Into<f64>>(seg: &[T], k: usize, buf: &mut Vec<i64>) -> Option<()> {
    let n = seg.len();
    buf.clear();
    let mut any_nan = false;
    buf.extend(seg.iter().map(|&v| {
        let x: f64 = v.into();
        any_nan |= x.is_nan();
        order_key(x)
    }));
    if any_nan {
        return None;
    }
    // selection on integer keys in the order of `f64::total_cmp` (the same order, but the
    // comparisons are plain integer ones: about twice as fast as selecting on floats)
    if k < n {
        buf.select_nth_unstable(k - 1);
    }
    buf[..k].sort_unstable();
    Some(())
}

/// One text: (min_k, min_k_arith, n, k), or `None` when a scored value is NaN; `buf` is scratch
/// space reused across texts. `arith`: compute `min_k_arith` (else NaN; it costs one `exp` per
/// bottom value, more than the selection itself).
fn reduce_one<T: Copy + Into<f64>>(seg: &[T], k_frac: f64, arith: bool, buf: &mut Vec<i64>) -> Option<(f64, f64, usize, usize)> {
    let n = seg.len();
    let k = k_of(n, k_frac);
    if k == 0 {
        return Some((f64::NAN, f64::NAN, 0, 0));
    }
    bottom_keys(seg, k, buf)?;
    let bottom = &buf[..k];
    let mut s = CompensatedSum::new();
    let mut all_finite = true;
    for &key in bottom {
        let v = from_order_key(key);
        all_finite &= v.is_finite();
        s.add(v);
    }
    // an infinite value (log-probability -inf: probability 0 in float32) makes the compensation
    // NaN; the plain sum is then the answer
    let sum = if all_finite { s.value() } else { bottom.iter().map(|&key| from_order_key(key)).sum() };
    let mean_exp = if arith {
        let mut e = CompensatedSum::new();
        for &key in bottom {
            e.add(from_order_key(key).exp());
        }
        e.value() / k as f64
    } else {
        f64::NAN
    };
    Some((sum / k as f64, mean_exp, n, k))
}

/// Min-K% reduction of every text of a ragged array (see the module documentation).
///
/// Errors: `k_frac` outside (0, 1], bad offsets, a NaN among the scored values (naming the text
/// and position).
pub fn min_k_reduce<T: Copy + Into<f64> + Sync>(
    values: &[T],
    offsets: &[i64],
    k_frac: f64,
    skip_first: bool,
) -> CoreResult<MinK> {
    min_k_reduce_with(values, offsets, k_frac, skip_first, true)
}

/// [`min_k_reduce`], with `min_k_arith` computed only when `arith` (NaN otherwise).
pub fn min_k_reduce_with<T: Copy + Into<f64> + Sync>(
    values: &[T],
    offsets: &[i64],
    k_frac: f64,
    skip_first: bool,
    arith: bool,
) -> CoreResult<MinK> {
    check_k(k_frac)?;
    check_offsets(offsets, values.len())?;
    let n_texts = offsets.len() - 1;
    let segment = |i: usize| -> &[T] {
        let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
        let a = if skip_first && b > a { a + 1 } else { a };
        &values[a..b]
    };
    let per: Vec<Option<(f64, f64, usize, usize)>> = (0..n_texts)
        .into_par_iter()
        .with_min_len(1024)
        .map_init(Vec::new, |buf, i| reduce_one(segment(i), k_frac, arith, buf))
        .collect();
    // a NaN among the scored values is an error, not a silently dropped token
    if let Some(i) = per.iter().position(Option::is_none) {
        let seg = segment(i);
        let j = seg.iter().position(|v| (*v).into().is_nan()).unwrap_or(0);
        let pos = offsets[i] as usize + usize::from(skip_first) + j;
        return Err(CoreError::invalid(
            "values",
            format!(
                "text {i} has a NaN log-probability at position {pos} (token {} of the text){}; only the first token of a text may be NaN (pass skip_first to drop it)",
                pos - offsets[i] as usize,
                if skip_first { "" } else { " and skip_first is off" }
            ),
        ));
    }
    let mut out = MinK {
        min_k: Vec::with_capacity(n_texts),
        min_k_arith: Vec::with_capacity(n_texts),
        n_scored: Vec::with_capacity(n_texts),
        k: Vec::with_capacity(n_texts),
    };
    for (m, a, n, k) in per.into_iter().flatten() {
        out.min_k.push(m);
        out.min_k_arith.push(a);
        out.n_scored.push(n as u64);
        out.k.push(k as u64);
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
    fn bottom_keys_are_the_k_smallest_in_order_and_arith_is_optional() {
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
        let mut buf = Vec::new();
        for len in [1usize, 2, 5, 31, 32, 33, 60, 200, 1000] {
            for _ in 0..20 {
                let seg: Vec<f64> = (0..len).map(|_| next()).collect();
                for k in [1usize, 2, 7, 31, 32, 33, len] {
                    if k == 0 || k > len {
                        continue;
                    }
                    bottom_keys(&seg, k, &mut buf).unwrap();
                    let mut all: Vec<i64> = seg.iter().map(|&v| order_key(v)).collect();
                    all.sort_unstable();
                    assert_eq!(&buf[..k], &all[..k], "len {len}, k {k}");
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
}
