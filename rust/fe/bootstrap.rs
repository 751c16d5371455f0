//! Pairs bootstrap of one coefficient of a fixed-effects OLS (docs/methods/lookahead.md §2.7,
//! §5.4), as integer resampling weights through the weighted demeaning.
//!
//! A resample with replacement is the original rows with multinomial counts as frequency
//! weights: the weighted fixed-effects OLS with these weights equals the OLS on the duplicated
//! rows, so no data are copied. Per replication: draw the counts, keep the rows of positive
//! count (rows of count 0 drop out, and fixed-effect levels left without rows have weight 0 and
//! drop out with them), demean the outcome and the regressors with the counts as weights
//! ([`super::demean`]), form the small normal equations and solve them with
//! [`cholesky_solve`]. Singletons are kept: a row alone in a fixed-effect level is fitted exactly
//! by its level and does not move the slope coefficients, so dropping singletons (fixest's and
//! `fe.feols`'s option) changes N and the small-sample corrections only, never the draws.
//!
//! **Random stream (the published convention).** Replication `b` (0-based) draws from
//! SplitMix64 (`common::rng`) started at [`replicate_seed`]`(seed, b)`, the `(b + 1)`-th output
//! of SplitMix64 seeded with `seed`: `mix(seed + 0x9E3779B97F4A7C15 · (b + 1))` (mod 2^64), `mix`
//! the generator's output function. Not the risk-score bootstrap's `seed ^ (0x9E37… · (b + 1))`
//! used directly as the state: SplitMix64 steps its state by the same constant, so with that rule
//! the streams of replications whose `seed ^ …` differ from `0x9E37… · (b + 1)` by the same
//! amount are one stream shifted by a few draws (for `seed = 0`, replication `b + 1` is
//! replication `b` shifted by one draw: nearly the same resample). Hashing the per-replication
//! start through `mix` puts the streams at unrelated points of the generator's period.
//! * `resample = obs`: n draws, each an index in `0..n` by Lemire's multiply-shift
//!   ([`SplitMix64::below_multiply_shift`]); the count of row i is how often i was drawn.
//! * block resampling over G blocks (e.g. dates or firms): G draws of a block index in `0..G`
//!   by the same rule; every row of block g gets the count of g. A block drawn twice counts
//!   twice under its own fixed-effect levels: with the block's own fixed effect (firm blocks and
//!   firm effects) that gives the same slopes as relabelling the copy as a new level, since both
//!   copies hold the same rows.
//!
//! Replications are independent of each other and of the thread count.
//!
//! A replication whose normal equations are (numerically) singular — a regressor collinear with
//! the others or absorbed by the fixed effects in that resample, judged as `fe.feols` does (a
//! Cholesky pivot below `collin_tol` times the column's raw weighted sum of squares) — or whose
//! demeaning misses the tolerance gives NaN, and is counted.

use super::demean::{demean, FixedEffects};
use crate::common::errors::{check, CoreError, CoreResult, Part};
use crate::common::linalg::{cholesky_factor, cholesky_solve};
use crate::common::rng::{stream_seed, SplitMix64};
use rayon::prelude::*;

/// The starting state of bootstrap replication `b`: [`stream_seed`]`(seed, b)`, the `(b + 1)`-th
/// output of SplitMix64 seeded with `seed` (shared with the risk-score bootstrap).
pub fn replicate_seed(seed: u64, b: usize) -> u64 {
    stream_seed(seed, b as u64)
}

/// How rows are resampled: single rows, or blocks (`codes[i]` in `0..n_blocks` is row i's block).
#[derive(Debug, Clone, Copy)]
pub enum Resample<'a> {
    Obs,
    Blocks { codes: &'a [u32], n_blocks: usize },
}

/// The resampling counts of replication `b` for `n` rows (see the module documentation).
pub fn replicate_counts(n: usize, resample: Resample, seed: u64, b: usize) -> CoreResult<Vec<f64>> {
    let mut rng = SplitMix64::new(replicate_seed(seed, b));
    let mut counts: Vec<f64> = check::filled("n", n, n, 0.0, "the resampling counts")?;
    match resample {
        Resample::Obs => {
            for _ in 0..n {
                counts[rng.below_multiply_shift(n)] += 1.0;
            }
        }
        Resample::Blocks { codes, n_blocks } => {
            let mut bc = vec![0.0f64; n_blocks];
            for _ in 0..n_blocks {
                bc[rng.below_multiply_shift(n_blocks)] += 1.0;
            }
            for (c, &g) in counts.iter_mut().zip(codes) {
                *c = bc[g as usize];
            }
        }
    }
    Ok(counts)
}

/// The output of [`bootstrap_coef`].
#[derive(Debug, Clone, PartialEq)]
pub struct BootstrapOutput {
    /// The coefficient of interest per replication (NaN where it failed).
    pub draws: Vec<f64>,
    /// Replications whose normal equations were singular (a regressor collinear in the resample).
    pub n_singular: usize,
    /// Replications whose demeaning missed the tolerance.
    pub n_unconverged: usize,
}

/// Whether every Cholesky pivot of the `k × k` matrix `a` exceeds `tol` times the raw sum of
/// squares of its column (the collinearity rule of `fe.feols`).
fn pivots_ok(a: &[f64], raw_ss: &[f64], k: usize, tol: f64) -> bool {
    cholesky_factor(a, k, |i, pivot| pivot > tol * raw_ss[i] && raw_ss[i] > 0.0).is_some()
}

/// One replication with the given counts: the weighted fixed-effects OLS coefficient `coef`
/// (index among the regressors), or `Err(true)` when singular, `Err(false)` when unconverged.
#[allow(clippy::too_many_arguments)]
pub fn weighted_coef(x: &[f64], n: usize, codes: &[&[u32]], n_groups: &[usize], counts: &[f64], coef: usize,
                     tol: f64, maxiter: usize, collin_tol: f64) -> CoreResult<Result<f64, bool>> {
    let p = x.len() / n;
    let k = p - 1;
    let rows: Vec<usize> = (0..n).filter(|&i| counts[i] > 0.0).collect();
    let m = rows.len();
    let w: Vec<f64> = rows.iter().map(|&i| counts[i]).collect();
    let sub_codes: Vec<Vec<u32>> = codes.iter().map(|c| rows.iter().map(|&i| c[i]).collect()).collect();
    let mut xs = Vec::with_capacity(p * m);
    for j in 0..p {
        let col = &x[j * n..(j + 1) * n];
        xs.extend(rows.iter().map(|&i| col[i]));
    }
    let block = if codes.len() == 2 {
        two_way_block(&xs, m, &sub_codes[0], &sub_codes[1], n_groups[0], n_groups[1], &w, tol, maxiter)
    } else {
        None
    };
    let demeaned = if let Some(result) = block {
        match result {
            Some(v) => v,
            None => return Ok(Err(false)),
        }
    } else {
        let fe = FixedEffects::new(sub_codes.iter().map(|c| c.as_slice()).collect(), n_groups.to_vec(), Some(&w))?;
        let out = demean(&xs, &fe, Some(&w), tol, maxiter)?;
        if !out.converged {
            return Ok(Err(false));
        }
        out.values
    };
    let v = &demeaned;
    let mut a = vec![0.0; k * k];
    let mut bvec = vec![0.0; k];
    let mut raw_ss = vec![0.0; k];
    let yt = &v[0..m];
    for r in 0..k {
        let xr = &v[(r + 1) * m..(r + 2) * m];
        bvec[r] = xr.iter().zip(yt).zip(&w).map(|((a, b), c)| a * b * c).sum();
        raw_ss[r] = xs[(r + 1) * m..(r + 2) * m].iter().zip(&w).map(|(a, c)| a * a * c).sum();
        for c in 0..=r {
            let xc = &v[(c + 1) * m..(c + 2) * m];
            let s: f64 = xr.iter().zip(xc).zip(&w).map(|((a, b), c)| a * b * c).sum();
            a[r * k + c] = s;
            a[c * k + r] = s;
        }
    }
    if !pivots_ok(&a, &raw_ss, k, collin_tol) {
        return Ok(Err(true));
    }
    Ok(match cholesky_solve(&a, &bvec, k) {
        Some(beta) => Ok(beta[coef]),
        None => Err(true),
    })
}

/// Two fixed effects, all `p` columns at once: the coefficient-space conjugate gradient of
/// `demean.rs` (`TwoWay`: the fixed effect with more levels eliminated exactly, the Schur
/// complement of the other solved by conjugate gradient preconditioned by its group weights, the
/// same stopping rule: the preconditioned residual norm at most `tol · ‖x_j‖_W`, re-checked against
/// the true residual with restarts), run for the columns in lockstep so that each pass over the
/// rows (a CSR matrix by level) serves every column. Returns the demeaned columns in the input
/// layout, or `None` when a column misses the tolerance within `maxiter` iterations.
#[allow(clippy::too_many_arguments)]
fn two_way_block(xs: &[f64], m: usize, c0: &[u32], c1: &[u32], g0: usize, g1: usize, w: &[f64], tol: f64,
                 maxiter: usize) -> Option<Option<Vec<f64>>> {
    // the column count as a compile-time constant, so that the inner loops over columns unroll
    macro_rules! dispatch {
        ($($p:literal),*) => {
            match xs.len() / m {
                $($p => Some(two_way_block_p::<$p>(xs, m, c0, c1, g0, g1, w, tol, maxiter)),)*
                _ => None,
            }
        };
    }
    dispatch!(2, 3, 4, 5, 6, 7, 8, 9, 10)
}

#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
fn two_way_block_p<const P: usize>(xs: &[f64], m: usize, c0: &[u32], c1: &[u32], g0: usize, g1: usize, w: &[f64],
                                   tol: f64, maxiter: usize) -> Option<Vec<f64>> {
    let (ca, cb, ga, gb) = if g0 >= g1 { (c0, c1, g0, g1) } else { (c1, c0, g1, g0) };
    // CSR by level of a: the b level and weight of each row
    let (row_start, col, wt) = super::demean::csr_by_level(ca, ga, cb, |i| w[i]);
    let mut da = vec![0.0; ga];
    let mut db = vec![0.0; gb];
    for i in 0..m {
        da[ca[i] as usize] += w[i];
        db[cb[i] as usize] += w[i];
    }
    let inv = |d: &Vec<f64>| d.iter().map(|&x| if x > 0.0 { 1.0 / x } else { 0.0 }).collect::<Vec<f64>>();
    let (inv_da, inv_db) = (inv(&da), inv(&db));
    // group sums, one [f64; P] per level
    let mut ra = vec![[0.0f64; P]; ga];
    let mut rb = vec![[0.0f64; P]; gb];
    let mut scale = [0.0f64; P];
    for j in 0..P {
        let x = &xs[j * m..(j + 1) * m];
        for i in 0..m {
            let v = w[i] * x[i];
            ra[ca[i] as usize][j] += v;
            rb[cb[i] as usize][j] += v;
            scale[j] += v * x[i];
        }
    }
    let mut target = [0.0f64; P];
    for j in 0..P {
        scale[j] = scale[j].sqrt();
        target[j] = tol * scale[j];
    }
    // out <- S v = D_b v - D_ba D_a^-1 D_ab v, for all columns
    let schur = |v: &[[f64; P]], out: &mut [[f64; P]]| {
        for h in 0..gb {
            for j in 0..P {
                out[h][j] = db[h] * v[h][j];
            }
        }
        for g in 0..ga {
            let (lo, hi) = (row_start[g], row_start[g + 1]);
            let mut t = [0.0f64; P];
            for e in lo..hi {
                let (vc, we) = (&v[col[e] as usize], wt[e]);
                for j in 0..P {
                    t[j] += we * vc[j];
                }
            }
            let ia = inv_da[g];
            for j in 0..P {
                t[j] *= ia;
            }
            for e in lo..hi {
                let (oc, we) = (&mut out[col[e] as usize], wt[e]);
                for j in 0..P {
                    oc[j] -= we * t[j];
                }
            }
        }
    };
    // rhs = rb - D_ba D_a^-1 ra
    let mut rhs = rb;
    for g in 0..ga {
        for e in row_start[g]..row_start[g + 1] {
            let (c, we) = (col[e] as usize, wt[e] * inv_da[g]);
            for j in 0..P {
                rhs[c][j] -= we * ra[g][j];
            }
        }
    }
    let mut beta = vec![[0.0f64; P]; gb];
    let mut r = vec![[0.0f64; P]; gb];
    let mut z = vec![[0.0f64; P]; gb];
    let mut pv = vec![[0.0f64; P]; gb];
    let mut sp = vec![[0.0f64; P]; gb];
    let mut converged = [false; P];
    let mut iters = 0usize;
    for _restart in 0..4 {
        schur(&beta, &mut sp);
        let mut rz = [0.0f64; P];
        for h in 0..gb {
            for j in 0..P {
                r[h][j] = rhs[h][j] - sp[h][j];
                z[h][j] = inv_db[h] * r[h][j];
                rz[j] += r[h][j] * z[h][j];
            }
        }
        // active[j] = 1.0 while column j iterates, 0.0 once done (updates are multiplied by it)
        let mut active = [0.0f64; P];
        for j in 0..P {
            converged[j] = scale[j] == 0.0 || rz[j].max(0.0).sqrt() <= target[j];
            active[j] = if converged[j] { 0.0 } else { 1.0 };
        }
        if active.iter().all(|&a| a == 0.0) || iters >= maxiter {
            break;
        }
        for h in 0..gb {
            for j in 0..P {
                pv[h][j] = active[j] * z[h][j];
            }
        }
        while iters < maxiter && active.iter().any(|&a| a != 0.0) {
            iters += 1;
            schur(&pv, &mut sp);
            let mut psp = [0.0f64; P];
            for h in 0..gb {
                for j in 0..P {
                    psp[j] += pv[h][j] * sp[h][j];
                }
            }
            let mut alpha = [0.0f64; P];
            for j in 0..P {
                if active[j] != 0.0 {
                    if psp[j] <= 0.0 || !psp[j].is_finite() {
                        active[j] = 0.0; // breakdown: the restart re-checks the true residual
                    } else {
                        alpha[j] = rz[j] / psp[j];
                    }
                }
            }
            let mut rz_new = [0.0f64; P];
            for h in 0..gb {
                let ib = inv_db[h];
                for j in 0..P {
                    beta[h][j] += alpha[j] * pv[h][j];
                    r[h][j] -= alpha[j] * sp[h][j];
                    z[h][j] = ib * r[h][j];
                    rz_new[j] += r[h][j] * z[h][j];
                }
            }
            let mut ratio = [0.0f64; P];
            for j in 0..P {
                if active[j] != 0.0 {
                    if rz_new[j].max(0.0).sqrt() <= target[j] {
                        active[j] = 0.0;
                    } else {
                        ratio[j] = rz_new[j] / rz[j];
                        rz[j] = rz_new[j];
                    }
                }
            }
            for h in 0..gb {
                for j in 0..P {
                    pv[h][j] = active[j] * (z[h][j] + ratio[j] * pv[h][j]);
                }
            }
        }
    }
    if !converged.iter().all(|&c| c) {
        return None;
    }
    // alpha_a = D_a^-1 (ra - D_ab beta); x - alpha_a - beta
    let mut alpha_a = ra;
    for g in 0..ga {
        for e in row_start[g]..row_start[g + 1] {
            let (bc, we) = (&beta[col[e] as usize], wt[e]);
            for j in 0..P {
                alpha_a[g][j] -= we * bc[j];
            }
        }
        for j in 0..P {
            alpha_a[g][j] *= inv_da[g];
        }
    }
    let mut out = xs.to_vec();
    for j in 0..P {
        let o = &mut out[j * m..(j + 1) * m];
        for i in 0..m {
            o[i] -= alpha_a[ca[i] as usize][j] + beta[cb[i] as usize][j];
        }
    }
    Some(out)
}

/// `reps` bootstrap replications of the coefficient `coef` (index among the regressors) of the
/// fixed-effects OLS of column 0 of `x` on columns 1.. (column `j` at `x[j * n .. (j + 1) * n]`)
/// with the fixed effects `codes` (`n_groups` levels each), parallel over replications.
#[allow(clippy::too_many_arguments)]
pub fn bootstrap_coef(x: &[f64], codes: &[&[u32]], n_groups: &[usize], resample: Resample, coef: usize, reps: usize,
                      seed: u64, tol: f64, maxiter: usize, collin_tol: f64) -> CoreResult<BootstrapOutput> {
    if codes.is_empty() {
        return Err(CoreError::invalid("fe", "pass at least one fixed effect"));
    }
    let n = codes[0].len();
    if n == 0 {
        return Err(CoreError::Empty { arg: "x".into() });
    }
    if x.len() % n != 0 || x.len() / n < 2 {
        return Err(CoreError::invalid("x", format!("needs the outcome and at least one regressor as columns of {n} rows; got {} values", x.len())));
    }
    check::finite("x", x)?;
    let k = x.len() / n - 1;
    if coef >= k {
        return Err(CoreError::invalid_at(
            "coef",
            vec![Part::at("index", coef), Part::text(format!(" is out of range for {k} regressors"))],
        ));
    }
    if reps == 0 {
        return Err(CoreError::invalid("reps", "must be at least 1"));
    }
    // validates the codes once (levels in range)
    FixedEffects::new(codes.to_vec(), n_groups.to_vec(), None)?;
    if let Resample::Blocks { codes: bc, n_blocks } = resample {
        check::same_len("blocks", bc.len(), "x rows", n)?;
        if let Some(i) = bc.iter().position(|&g| g as usize >= n_blocks) {
            return Err(CoreError::invalid_at(
                "blocks",
                vec![
                    Part::text(format!("code {} at ", bc[i])),
                    Part::at("row", i),
                    Part::text(format!(", but only {n_blocks} blocks")),
                ],
            ));
        }
    }
    let mut draws: Vec<f64> = check::filled("reps", reps, reps, f64::NAN, "the bootstrap draws")?;
    let status: Vec<CoreResult<u8>> = draws
        .par_iter_mut()
        .enumerate()
        .map(|(b, d)| {
            let counts = replicate_counts(n, resample, seed, b)?;
            Ok(match weighted_coef(x, n, codes, n_groups, &counts, coef, tol, maxiter, collin_tol)? {
                Ok(v) => {
                    *d = v;
                    0
                }
                Err(true) => 1,
                Err(false) => 2,
            })
        })
        .collect();
    let mut n_singular = 0;
    let mut n_unconverged = 0;
    for s in status {
        match s? {
            1 => n_singular += 1,
            2 => n_unconverged += 1,
            _ => {}
        }
    }
    Ok(BootstrapOutput { draws, n_singular, n_unconverged })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(rng: &mut SplitMix64) -> f64 {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A small two-way panel: y = 0.5 x1 - 0.3 x2 + firm + date + noise.
    fn panel(n: usize, firms: usize, dates: usize, seed: u64) -> (Vec<f64>, Vec<u32>, Vec<u32>) {
        let mut rng = SplitMix64::new(seed);
        let firm: Vec<u32> = (0..n).map(|i| if i < firms { i as u32 } else { rng.below_multiply_shift(firms) as u32 }).collect();
        let date: Vec<u32> = (0..n).map(|i| if i < dates { i as u32 } else { rng.below_multiply_shift(dates) as u32 }).collect();
        let x1: Vec<f64> = (0..n).map(|_| uniform(&mut rng) * 2.0 - 1.0).collect();
        let x2: Vec<f64> = (0..n).map(|i| uniform(&mut rng) + 0.1 * firm[i] as f64).collect();
        let y: Vec<f64> = (0..n)
            .map(|i| 0.5 * x1[i] - 0.3 * x2[i] + 0.2 * firm[i] as f64 - 0.1 * date[i] as f64 + uniform(&mut rng) - 0.5)
            .collect();
        let mut x = y;
        x.extend(x1);
        x.extend(x2);
        (x, firm, date)
    }

    #[test]
    fn counts_follow_the_published_stream() {
        let c = replicate_counts(10, Resample::Obs, 42, 0).unwrap();
        let mut seeder = SplitMix64::new(42);
        let mut rng = SplitMix64::new(seeder.next_u64());
        let mut want = vec![0.0; 10];
        for _ in 0..10 {
            want[rng.below_multiply_shift(10)] += 1.0;
        }
        assert_eq!(c, want);
        assert_eq!(c.iter().sum::<f64>(), 10.0);
        let blocks = [0u32, 0, 1, 2, 2, 2];
        let c = replicate_counts(6, Resample::Blocks { codes: &blocks, n_blocks: 3 }, 7, 3).unwrap();
        assert_eq!(c[0], c[1]);
        assert_eq!(c[3], c[4]);
        assert_eq!(c[0] + c[2] + c[3], 3.0);
        // replication b + 1 is not replication b shifted (the flaw of seed ^ (C · (b + 1)) with
        // SplitMix64's own increment C), for seed 0 too
        let rng_b = |b| {
            let mut r = SplitMix64::new(replicate_seed(0, b));
            (0..64).map(|_| r.next_u64()).collect::<Vec<u64>>()
        };
        let (r0, r1) = (rng_b(0), rng_b(1));
        assert!(r0.iter().all(|v| !r1.contains(v)));
        assert_eq!(replicate_seed(7, 2), { let mut s = SplitMix64::new(7); s.next_u64(); s.next_u64(); s.next_u64() });
    }

    #[test]
    fn lockstep_two_way_equals_the_demeaning() {
        let (x, firm, date) = panel(500, 40, 13, 21);
        let n = firm.len();
        let counts = replicate_counts(n, Resample::Obs, 3, 0).unwrap();
        let w: Vec<f64> = counts.iter().map(|c| c + 0.5).collect();
        for (a, b, ga, gb) in [(&firm, &date, 40, 13), (&date, &firm, 13, 40)] {
            let got = two_way_block(&x, n, a, b, ga, gb, &w, 1e-13, 10_000).unwrap().unwrap();
            let fe = FixedEffects::new(vec![a.as_slice(), b.as_slice()], vec![ga, gb], Some(&w)).unwrap();
            let want = demean(&x, &fe, Some(&w), 1e-13, 10_000).unwrap().values;
            let err = got.iter().zip(&want).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
            assert!(err < 1e-10, "max error {err}");
        }
    }

    #[test]
    fn weights_equal_duplicated_rows() {
        let (x, firm, date) = panel(300, 20, 15, 9);
        let n = firm.len();
        let counts = replicate_counts(n, Resample::Obs, 5, 2).unwrap();
        let got = weighted_coef(&x, n, &[&firm, &date], &[20, 15], &counts, 0, 1e-13, 10_000, 1e-9).unwrap().unwrap();
        // duplicate the rows explicitly, unit weights
        let mut xd: Vec<Vec<f64>> = vec![Vec::new(); 3];
        let (mut fd, mut dd) = (Vec::new(), Vec::new());
        for i in 0..n {
            for _ in 0..counts[i] as usize {
                for j in 0..3 {
                    xd[j].push(x[j * n + i]);
                }
                fd.push(firm[i]);
                dd.push(date[i]);
            }
        }
        let nd = fd.len();
        let flat: Vec<f64> = xd.concat();
        let ones = vec![1.0; nd];
        let want = weighted_coef(&flat, nd, &[&fd, &dd], &[20, 15], &ones, 0, 1e-13, 10_000, 1e-9).unwrap().unwrap();
        assert!((got - want).abs() < 1e-10, "{got} vs {want}");
    }

    #[test]
    fn draws_do_not_depend_on_threads_and_flag_collinearity() {
        let (x, firm, date) = panel(400, 25, 12, 3);
        let run = |t| crate::common::parallel::install(Some(t), || {
            bootstrap_coef(&x, &[&firm, &date], &[25, 12], Resample::Obs, 1, 40, 11, 1e-12, 10_000, 1e-9)
        }).unwrap();
        let (a, b) = (run(1), run(3));
        assert_eq!(a, b);
        assert_eq!(a.n_singular, 0);
        assert!(a.draws.iter().all(|d| d.is_finite()));
        let blocks = Resample::Blocks { codes: &date, n_blocks: 12 };
        let c = bootstrap_coef(&x, &[&firm, &date], &[25, 12], blocks, 0, 10, 11, 1e-12, 10_000, 1e-9).unwrap();
        assert!(c.draws.iter().all(|d| d.is_finite()));
        // a regressor constant within firms is absorbed: every replication is singular
        let n = firm.len();
        let mut xc = x[..2 * n].to_vec();
        xc.extend(firm.iter().map(|&f| f as f64));
        let s = bootstrap_coef(&xc, &[&firm, &date], &[25, 12], Resample::Obs, 0, 5, 1, 1e-12, 10_000, 1e-9).unwrap();
        assert_eq!(s.n_singular, 5);
        assert!(s.draws.iter().all(|d| d.is_nan()));
        assert!(bootstrap_coef(&x, &[&firm, &date], &[25, 12], Resample::Obs, 2, 5, 1, 1e-12, 100, 1e-9).is_err());
        assert!(bootstrap_coef(&x, &[&firm, &date], &[25, 12], Resample::Obs, 0, 0, 1, 1e-12, 100, 1e-9).is_err());
    }
}
