//! Concentration bounds for U-statistics of order k and the confidence intervals built on them
//! (Appendix Q of Andrews, Fudenberg, Lei, Liang & Wu 2025; docs/methods/transfer.md §5, A8–A9).
//!
//! B_{n,k}(x; y) bounds P(U ≤ x) for a U-statistic U of order k with kernel in [0, 1] and mean y:
//! the minimum of Hoeffding's b¹ = exp(−m·KL(x∧y ‖ y)), Bentkus's b² = e·P(Bin(m, y) ≤ ⌈m x⌉)
//! and Maurer's b³ = exp(min_λ (nλ/k)(x − y/(1 + k g(λ)))), g(λ) = (e^λ − λ − 1)/λ, with
//! m = ⌊n/k⌋ (the definition's ⌈n/k⌉, the missing exp and the printed g are corrected as in
//! docs/methods/transfer.md §5). For transfer errors k = r + 1; the authors' package uses k = r.

use crate::common::errors::{check, CoreError, CoreResult};

/// Bernoulli KL divergence h₁(x; y) with 0·log 0 = 0.
pub fn kl_bernoulli(x: f64, y: f64) -> f64 {
    let term = |p: f64, q: f64| if p <= 0.0 { 0.0 } else if q <= 0.0 { f64::INFINITY } else { p * (p / q).ln() };
    term(x, y) + term(1.0 - x, 1.0 - y)
}

/// log P(Bin(m, y) ≤ kmax), summed in log space. The kmax + 1 terms are held at once (8 bytes
/// each, allocated fallibly): when they do not fit, the error names argument `n` (the number of
/// domains, m = ⌊n/k⌋) and the memory.
pub fn log_binom_cdf(kmax: i64, m: u64, y: f64) -> CoreResult<f64> {
    if kmax < 0 {
        return Ok(f64::NEG_INFINITY);
    }
    if kmax as u64 >= m || y <= 0.0 {
        return Ok(0.0);
    }
    if y >= 1.0 {
        return Ok(f64::NEG_INFINITY);
    }
    let (ly, l1y) = (y.ln(), (-y).ln_1p());
    // log terms t_i = log C(m,i) + i log y + (m−i) log(1−y), i = 0..kmax
    let mut logc = 0.0f64;
    // kmax < m <= usize::MAX here, so kmax + 1 does not overflow
    let len = usize::try_from(kmax).unwrap_or(usize::MAX).saturating_add(1);
    let what = format!("the {len} binomial terms of Bentkus's bound (m = {m})");
    let mut terms: Vec<f64> = check::with_capacity("n", m, len, &what)?;
    for i in 0..=kmax as u64 {
        if i > 0 {
            logc += ((m - i + 1) as f64).ln() - (i as f64).ln();
        }
        terms.push(logc + i as f64 * ly + (m - i) as f64 * l1y);
    }
    let mx = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok(mx + terms.iter().map(|t| (t - mx).exp()).sum::<f64>().ln())
}

fn g_lambda(l: f64) -> f64 {
    if l < 1e-5 {
        l / 2.0 + l * l / 6.0 + l * l * l / 24.0
    } else {
        (l.exp_m1() - l) / l
    }
}

/// log b³: min over λ > 0 of (nλ/k)(x − y/(1 + k g(λ))), clamped to ≤ 0.
pub fn log_maurer(x: f64, y: f64, n: f64, k: f64) -> f64 {
    let f = |ll: f64| {
        let l = ll.exp();
        let v = (n * l / k) * (x - y / (1.0 + k * g_lambda(l)));
        if v.is_nan() { f64::INFINITY } else { v }
    };
    let (lo, hi, steps) = (-20.0f64, 6.0f64, 52usize);
    let h = (hi - lo) / steps as f64;
    let (mut best_i, mut best) = (0usize, f64::INFINITY);
    for i in 0..=steps {
        let v = f(lo + h * i as f64);
        if v < best {
            best = v;
            best_i = i;
        }
    }
    // golden-section refinement on the bracketing grid cells
    let (mut a, mut b) = (lo + h * (best_i.max(1) - 1) as f64, lo + h * (best_i + 1).min(steps) as f64);
    let gr = (5.0f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - gr * (b - a), a + gr * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..64 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - gr * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + gr * (b - a);
            fd = f(d);
        }
    }
    best.min(fc).min(fd).min(0.0)
}

/// Put the caller's `n` (and `k`) into a memory error of [`log_binom_cdf`].
fn name_n(err: CoreError, n: usize, k: usize) -> CoreError {
    match err {
        CoreError::TooLarge { bytes, what, .. } => {
            CoreError::TooLarge { arg: "n".into(), value: format!("{n} (with k = {k})"), bytes, what }
        }
        other => other,
    }
}

/// (B, b¹, b², b³) for P(U ≤ x), E U = y, n domains, order k. B = 1 when x ≥ y.
pub fn tail_bound_parts(x: f64, y: f64, n: usize, k: usize) -> CoreResult<(f64, f64, f64, f64)> {
    if k == 0 || k > n {
        return Err(CoreError::invalid("k", format!("the U-statistic order must lie in 1..=n ({n}); got {k}")));
    }
    if !(0.0..=1.0).contains(&x) || !(0.0..=1.0).contains(&y) {
        return Err(CoreError::invalid("x", format!("x and y must lie in [0, 1]; got x = {x}, y = {y}")));
    }
    let m = (n / k) as u64;
    let b1 = (-(m as f64) * kl_bernoulli(x.min(y), y)).exp();
    let b2 = (1.0 + log_binom_cdf((m as f64 * x - 1e-12).ceil() as i64, m, y).map_err(|e| name_n(e, n, k))?).exp();
    let b3 = log_maurer(x, y, n as f64, k as f64).exp();
    let b = if x >= y { 1.0 } else { b1.min(b2).min(b3).min(1.0) };
    Ok((b, b1, b2, b3))
}

/// Is B_{n,k}(x; y) ≤ level (or < level when `strict`)? Evaluates the cheap bounds first and
/// Maurer's (an optimisation over λ) only when they do not decide.
pub fn tail_bound_below(x: f64, y: f64, n: usize, k: usize, level: f64, strict: bool) -> CoreResult<bool> {
    if k == 0 || k > n {
        return Err(CoreError::invalid("k", format!("the U-statistic order must lie in 1..=n ({n}); got {k}")));
    }
    let ok = |b: f64| if strict { b < level } else { b <= level };
    if x >= y {
        return Ok(ok(1.0));
    }
    let m = (n / k) as u64;
    if ok((-(m as f64) * kl_bernoulli(x, y)).exp()) {
        return Ok(true);
    }
    if ok((1.0 + log_binom_cdf((m as f64 * x - 1e-12).ceil() as i64, m, y).map_err(|e| name_n(e, n, k))?).exp()) {
        return Ok(true);
    }
    Ok(ok(log_maurer(x, y, n as f64, k as f64).exp()) || ok(1.0))
}

/// B_{n,k}(x; y).
pub fn tail_bound(x: f64, y: f64, n: usize, k: usize) -> CoreResult<f64> {
    Ok(tail_bound_parts(x, y, n, k)?.0)
}

/// Largest table size N that [`quantile_ci_ranks`] accepts: 2^53, where integers stop being exact
/// as floats (far beyond any table that fits in memory).
pub const MAX_TABLE_SIZE: usize = 1 << 53;

/// Ranks (j_L, j_U) of the quantile CI (docs/methods/transfer.md §5.3):
/// j_L = max{j : B((j−1)/N; β) ≤ α} (0 if none: q̂^L = −∞),
/// j_U = min{j : B(1 − j/N; 1 − β) ≤ α} (N+1 if none: q̂^U = +∞).
pub fn quantile_ci_ranks(big_n: usize, n: usize, k: usize, beta: f64, alpha: f64) -> CoreResult<(usize, usize)> {
    if !(beta > 0.0 && beta < 1.0) {
        return Err(CoreError::invalid("betas", format!("quantile levels must lie in (0, 1); got {beta}")));
    }
    // the searches below compute lo + hi and big_n + 1: keep them far from overflow (and N exact
    // as a float)
    if big_n == 0 || big_n > MAX_TABLE_SIZE {
        return Err(CoreError::invalid("N", format!("the table size must lie in 1..={MAX_TABLE_SIZE}; got {big_n}")));
    }
    let nf = big_n as f64;
    // j_L: predicate B((j-1)/N; β) ≤ α is true on a prefix of 1..=N.
    let (mut lo, mut hi) = (0usize, big_n); // invariant: pred(lo) true (lo = 0 virtual), answer in [lo, hi]
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if tail_bound_below((mid - 1) as f64 / nf, beta, n, k, alpha, false)? {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let j_l = lo;
    // j_U: predicate B(1 − j/N; 1 − β) ≤ α is true on a suffix of 1..=N.
    let (mut lo, mut hi) = (1usize, big_n + 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if tail_bound_below((1.0 - mid as f64 / nf).max(0.0), 1.0 - beta, n, k, alpha, false)? {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok((j_l, lo))
}

/// μ̂⁺(α) = sup{μ' : B(u; μ') ≥ α} by bisection on [u, 1]
/// (docs/methods/transfer.md §5.4).
pub fn mean_upper(u: f64, n: usize, k: usize, alpha: f64) -> CoreResult<f64> {
    if !(0.0..=1.0).contains(&u) {
        return Err(CoreError::invalid("err", format!("the scaled mean must lie in [0, 1]; got {u}")));
    }
    if u >= 1.0 || !tail_bound_below(u, 1.0, n, k, alpha, true)? {
        return Ok(1.0);
    }
    let (mut lo, mut hi) = (u, 1.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if !tail_bound_below(u, mid, n, k, alpha, true)? {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-13 {
            break;
        }
    }
    Ok(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn spec_reference_values() {
        let cases = [
            (0.3, 0.5, 44, 2, [0.163618, 0.163618, 0.181854, 0.599505]),
            (0.4, 0.5, 44, 2, [0.642119, 0.642119, 0.711466, 0.888653]),
            (0.3, 0.5, 44, 1, [0.0267707, 0.0267707, 0.0307558, 0.149718]),
            (0.2, 0.3, 100, 3, [0.427775, 0.427775, 0.495142, 0.807288]),
            (0.05, 0.2, 1000, 2, [1.11588e-21, 3.98594e-21, 1.11588e-21, 3.31135e-09]),
            (0.45, 0.5, 1000, 2, [0.0384992, 0.0817423, 0.0384992, 0.523722]),
        ];
        for (x, y, n, k, want) in cases {
            let (b, b1, b2, b3) = tail_bound_parts(x, y, n, k).unwrap();
            assert!(close(b, want[0], 1e-5) && close(b1, want[1], 1e-5) && close(b2, want[2], 1e-5), "{x} {y} {n} {k}: {b} {b1} {b2}");
            assert!(close(b3, want[3], 1e-3), "b3 {b3} vs {}", want[3]);
        }
    }

    #[test]
    fn properties() {
        assert_eq!(tail_bound(0.6, 0.5, 44, 2).unwrap(), 1.0);
        let mut prev = 0.0;
        for i in 0..50 {
            let b = tail_bound(i as f64 / 100.0, 0.5, 44, 2).unwrap();
            assert!(b >= prev - 1e-12);
            prev = b;
        }
        assert!(tail_bound(0.0, 0.3, 44, 2).unwrap() <= 0.7f64.powi(22) + 1e-15);
        assert!(tail_bound(0.3, 0.5, 44, 0).is_err());
    }

    #[test]
    fn lazy_comparison_agrees_with_the_bound() {
        for &(x, y, n, k) in &[(0.3, 0.5, 44usize, 2usize), (0.1, 0.4, 20, 1), (0.45, 0.5, 1000, 2), (0.6, 0.5, 44, 2)] {
            let b = tail_bound(x, y, n, k).unwrap();
            for level in [b * 0.999, b, b * 1.001] {
                assert_eq!(tail_bound_below(x, y, n, k, level, false).unwrap(), b <= level);
                assert_eq!(tail_bound_below(x, y, n, k, level, true).unwrap(), b < level);
            }
        }
    }

    #[test]
    fn huge_n_is_an_error_not_a_panic_or_an_abort() {
        // 2^63 domains: the term count overflows any allocation (was a capacity-overflow panic);
        // 10^12 domains: 2.4 TB of terms (was an allocation-failure abort)
        for n in [1usize << 63, 1_000_000_000_000, usize::MAX] {
            let e = tail_bound_parts(0.3, 0.5, n, 1).unwrap_err();
            assert_eq!(e.python_class(), "ResourceError");
            let msg = e.to_string();
            assert!(msg.contains(&format!("`n` = {n} (with k = 1)")) && msg.contains("Bentkus"), "{msg}");
            // a level below every bound reaches Bentkus's term: the same error
            assert!(tail_bound_below(0.3, 0.5, n, 1, -1.0, false).is_err());
            // where Hoeffding's bound decides, no terms are needed: answered, no panic
            assert!(tail_bound_below(0.3, 0.5, n, 1, 0.05, false).unwrap());
            let _ = quantile_ci_ranks(100, n, 1, 0.5, 0.1);
        }
        // huge n with x = 0 or x >= y needs one term or none: still answered
        assert!(tail_bound_parts(0.0, 0.5, 1 << 62, 1).is_ok());
        assert_eq!(tail_bound_parts(1.0, 0.5, 1 << 62, 1).unwrap().0, 1.0);
        assert!(log_binom_cdf(i64::MAX, u64::MAX, 0.5).unwrap_err().to_string().contains("`n`"));
        let _ = mean_upper(0.3, 1 << 63, 1, 0.05);
    }

    #[test]
    fn table_size_is_bounded() {
        assert!(quantile_ci_ranks(0, 44, 2, 0.5, 0.1).unwrap_err().to_string().contains("`N`"));
        assert!(quantile_ci_ranks(usize::MAX, 44, 2, 0.5, 0.1).is_err());
        assert!(quantile_ci_ranks(MAX_TABLE_SIZE + 1, 44, 2, 0.5, 0.1).is_err());
        assert!(quantile_ci_ranks(1, 44, 2, 0.5, 0.1).is_ok());
    }

    #[test]
    fn ranks_match_spec() {
        // N = 1892, n = 44, median, α = 0.1 per side: (521, 1372) for k = 2, (646, 1247) for k = 1.
        assert_eq!(quantile_ci_ranks(1892, 44, 2, 0.5, 0.1).unwrap(), (521, 1372));
        assert_eq!(quantile_ci_ranks(1892, 44, 1, 0.5, 0.1).unwrap(), (646, 1247));
    }
}
