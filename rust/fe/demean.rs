//! Weighted within transformation over several fixed effects.
//!
//! Notation: `z` a column (length n), `w` the weights, `P_f` the W-orthogonal projection on the
//! dummies of fixed effect `f` (group means with weights `w`), `Q_f = I - P_f`, and `M` the
//! W-orthogonal projection on the complement of all the dummies together: the demeaned column is
//! `M z`. The symmetric sweep `T = Q_1 Q_2 … Q_k … Q_2 Q_1` is self-adjoint in the W-inner
//! product with `0 <= T <= I`, and `I - T` is positive definite on the span of the dummies and zero
//! on the range of `M`. So `y = z - M z` (the fitted fixed effects) is the solution, within the
//! span of the dummies, of `(I - T) y = (I - T) z`; conjugate gradient started at `y = 0` stays in
//! that span and finds it (Correia's reghdfe, `accel(cg) transform(symmetric_kaczmarz)`). The
//! iteration count grows with the square root of the condition number, where alternating
//! projections (fixest/pyfixest's MAP) grow with the condition number itself.
//!
//! With exactly two fixed effects the same Krylov iteration runs in coefficient space
//! ([`TwoWay`]): the fixed effect with more levels is eliminated exactly and conjugate gradient
//! solves the Schur complement for the other, preconditioned by its group weights. The residual
//! of that system, in the norm of the preconditioner, is the W-norm of the projection of the
//! current data residual on the second fixed effect's dummies (it is orthogonal to the first's);
//! it must reach `tol · ‖z‖_W`. An iteration is one pass over the rows (held by level as a CSR
//! matrix) instead of 2k passes plus vector updates of length n.
//!
//! Stopping rule (three or more fixed effects): the W-norm of the conjugate-gradient residual `(I - T)(z - y)` at most
//! `tol · ‖z‖_W`; the recursion's residual is re-checked against the true one at the end (and the
//! iteration restarted from there when they drift apart). Groups with zero total weight keep a
//! mean of 0 (rows of weight 0 carry no information).

use crate::common::errors::{check, CoreError, CoreResult, Part};
use rayon::prelude::*;

/// Fixed-effect codes: `codes[f][i]` is the level (in `0..n_groups[f]`) of row `i` in fixed
/// effect `f`.
#[derive(Debug)]
pub struct FixedEffects<'a> {
    codes: Vec<&'a [u32]>,
    n_groups: Vec<usize>,
    /// 1 / (total weight of each group), 0 for groups of zero weight.
    inv_weight: Vec<Vec<f64>>,
    n: usize,
}

impl<'a> FixedEffects<'a> {
    /// Check the codes and precompute the group weights. `weights` of `None` means all ones.
    pub fn new(codes: Vec<&'a [u32]>, n_groups: Vec<usize>, weights: Option<&[f64]>) -> CoreResult<Self> {
        if codes.is_empty() {
            return Err(CoreError::invalid("fe", "pass at least one fixed effect"));
        }
        check::same_len("fe", codes.len(), "n_groups", n_groups.len())?;
        let n = codes[0].len();
        if n == 0 {
            return Err(CoreError::Empty { arg: "fe".into() });
        }
        if let Some(w) = weights {
            check::weights("weights", w)?;
            check::same_len("weights", w.len(), "fe", n)?;
        }
        let mut inv_weight = Vec::with_capacity(codes.len());
        for (f, (c, &g)) in codes.iter().zip(&n_groups).enumerate() {
            check::same_len(&format!("fe[{f}]"), c.len(), "fe[0]", n)?;
            let mut gw = check::filled("n_groups", g, g, 0.0f64, "group weights")?;
            for (i, &code) in c.iter().enumerate() {
                let code = code as usize;
                if code >= g {
                    return Err(CoreError::invalid_at(
                        "fe",
                        vec![
                            Part::at("fixed effect", f),
                            Part::text(format!(" has code {code} at ")),
                            Part::at("row", i),
                            Part::text(format!(", but only {g} levels")),
                        ],
                    ));
                }
                gw[code] += weights.map_or(1.0, |w| w[i]);
            }
            inv_weight.push(gw.into_iter().map(|s| if s > 0.0 { 1.0 / s } else { 0.0 }).collect());
        }
        Ok(FixedEffects { codes, n_groups, inv_weight, n })
    }

    /// Rows.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of fixed effects.
    pub fn k(&self) -> usize {
        self.codes.len()
    }

    /// `x <- Q_f x` (subtract the weighted group means of fixed effect `f`); `sums` is scratch of
    /// length at least `n_groups[f]`.
    fn annihilate(&self, f: usize, x: &mut [f64], w: Option<&[f64]>, sums: &mut [f64]) {
        let codes = self.codes[f];
        let sums = &mut sums[..self.n_groups[f]];
        sums.iter_mut().for_each(|s| *s = 0.0);
        match w {
            Some(w) => codes.iter().zip(x.iter()).zip(w).for_each(|((&c, &v), &wi)| sums[c as usize] += wi * v),
            None => codes.iter().zip(x.iter()).for_each(|(&c, &v)| sums[c as usize] += v),
        }
        sums.iter_mut().zip(&self.inv_weight[f]).for_each(|(s, &iw)| *s *= iw);
        x.iter_mut().zip(codes).for_each(|(v, &c)| *v -= sums[c as usize]);
    }

    /// The order of the symmetric sweep `Q_1 … Q_k … Q_1`: fixed effects 0..k then back to 0.
    fn sweep_order(&self) -> impl Iterator<Item = usize> + '_ {
        let k = self.k();
        (0..k).chain((0..k.saturating_sub(1)).rev())
    }

    /// `sums[g] = Σ_{i: code_f(i) = g} w_i x_i`.
    fn accumulate(&self, f: usize, x: &[f64], w: Option<&[f64]>, sums: &mut [f64]) {
        let codes = self.codes[f];
        sums.iter_mut().for_each(|s| *s = 0.0);
        match w {
            Some(w) => codes.iter().zip(x).zip(w).for_each(|((&c, &v), &wi)| sums[c as usize] += wi * v),
            None => codes.iter().zip(x).for_each(|(&c, &v)| sums[c as usize] += v),
        }
    }

    /// `out <- v - T v` with `T` the symmetric sweep, in 2k fused passes over the rows (each
    /// subtracts the means of one fixed effect and accumulates the sums of the next); returns
    /// `<v, out>_W`. `means` holds one scratch vector per fixed effect.
    fn apply_a(&self, v: &[f64], out: &mut [f64], w: Option<&[f64]>, means: &mut [Vec<f64>]) -> f64 {
        let order: Vec<usize> = self.sweep_order().collect();
        let steps = order.len();
        self.accumulate(order[0], v, w, &mut means[order[0]]);
        let mut dot = 0.0;
        for s in 0..steps {
            let f = order[s];
            {
                let m = &mut means[f];
                m.iter_mut().zip(&self.inv_weight[f]).for_each(|(a, &iw)| *a *= iw);
            }
            let codes = self.codes[f];
            if s + 1 < steps {
                let g = order[s + 1];
                let (mf, mg) = two_mut(means, f, g);
                mg.iter_mut().for_each(|a| *a = 0.0);
                let next = self.codes[g];
                match (s == 0, w) {
                    (true, None) => fused(v, out, codes, mf, next, mg),
                    (true, Some(w)) => fused_w(v, out, codes, mf, next, mg, w),
                    (false, None) => fused_inplace(out, codes, mf, next, mg),
                    (false, Some(w)) => fused_inplace_w(out, codes, mf, next, mg, w),
                }
            } else {
                let mf = &means[f];
                // the last step is never the first (k >= 2 here): it works in place
                for ((o, &x), &a) in out.iter_mut().zip(v).zip(codes) {
                    *o = x - (*o - mf[a as usize]);
                }
                dot = dot_w(v, out, w);
            }
        }
        dot
    }
}

// The fused passes of `apply_a`: subtract the means `mf` of one fixed effect (codes `cf`) and
// accumulate the (weighted) sums `mg` of the next one (codes `cg`), specialised by weights and by
// whether the pass reads `v` or works in place, so that the inner loops carry no branches.
fn fused(v: &[f64], out: &mut [f64], cf: &[u32], mf: &[f64], cg: &[u32], mg: &mut [f64]) {
    for (((o, &x), &a), &b) in out.iter_mut().zip(v).zip(cf).zip(cg) {
        let t = x - mf[a as usize];
        *o = t;
        mg[b as usize] += t;
    }
}

fn fused_w(v: &[f64], out: &mut [f64], cf: &[u32], mf: &[f64], cg: &[u32], mg: &mut [f64], w: &[f64]) {
    for ((((o, &x), &a), &b), &wi) in out.iter_mut().zip(v).zip(cf).zip(cg).zip(w) {
        let t = x - mf[a as usize];
        *o = t;
        mg[b as usize] += wi * t;
    }
}

fn fused_inplace(out: &mut [f64], cf: &[u32], mf: &[f64], cg: &[u32], mg: &mut [f64]) {
    for ((o, &a), &b) in out.iter_mut().zip(cf).zip(cg) {
        let t = *o - mf[a as usize];
        *o = t;
        mg[b as usize] += t;
    }
}

fn fused_inplace_w(out: &mut [f64], cf: &[u32], mf: &[f64], cg: &[u32], mg: &mut [f64], w: &[f64]) {
    for (((o, &a), &b), &wi) in out.iter_mut().zip(cf).zip(cg).zip(w) {
        let t = *o - mf[a as usize];
        *o = t;
        mg[b as usize] += wi * t;
    }
}

/// Two distinct mutable elements of a slice of vectors (`a != b`).
fn two_mut(v: &mut [Vec<f64>], a: usize, b: usize) -> (&Vec<f64>, &mut Vec<f64>) {
    if a < b {
        let (lo, hi) = v.split_at_mut(b);
        (&lo[a], &mut hi[0])
    } else {
        let (lo, hi) = v.split_at_mut(a);
        (&hi[0], &mut lo[b])
    }
}

fn dot_w(a: &[f64], b: &[f64], w: Option<&[f64]>) -> f64 {
    match w {
        Some(w) => a.iter().zip(b).zip(w).map(|((x, y), wi)| wi * x * y).sum(),
        None => a.iter().zip(b).map(|(x, y)| x * y).sum(),
    }
}

/// Per column: the iterations used and the final relative residual.
#[derive(Debug, Clone, PartialEq)]
pub struct DemeanOutput {
    /// Demeaned columns, in the input layout (column `j` at `[j * n .. (j + 1) * n]`).
    pub values: Vec<f64>,
    /// Conjugate-gradient iterations per column (1 for a single fixed effect: an exact pass).
    pub iterations: Vec<usize>,
    /// Final `‖(I - T)(z - y)‖_W / ‖z‖_W` per column (0 for a single fixed effect).
    pub residual: Vec<f64>,
    /// Whether every column met the tolerance.
    pub converged: bool,
}

/// Demean one column in place; returns (iterations, relative residual, converged).
fn demean_column(fe: &FixedEffects, z: &mut [f64], w: Option<&[f64]>, tol: f64, maxiter: usize) -> (usize, f64, bool) {
    let n = z.len();
    if fe.k() == 1 {
        let mut sums = vec![0.0; fe.n_groups[0]];
        fe.annihilate(0, z, w, &mut sums);
        return (1, 0.0, true);
    }
    let mut means: Vec<Vec<f64>> = fe.n_groups.iter().map(|&g| vec![0.0; g]).collect();
    let scale = dot_w(z, z, w).sqrt();
    if scale == 0.0 || !scale.is_finite() {
        return (0, 0.0, scale == 0.0);
    }
    let target = tol * scale;
    let mut y = vec![0.0; n];
    let mut r = vec![0.0; n];
    let mut p = vec![0.0; n];
    let mut ap = vec![0.0; n];
    let mut resid = vec![0.0; n];
    let mut iters = 0usize;
    let mut rel = f64::INFINITY;
    // outer loop: restarts from the true residual when the recursion has drifted
    for _restart in 0..4 {
        // r = (I - T)(z - y)
        resid.iter_mut().zip(z.iter()).zip(&y).for_each(|((d, &zi), &yi)| *d = zi - yi);
        fe.apply_a(&resid, &mut r, w, &mut means);
        let mut rs = dot_w(&r, &r, w);
        rel = rs.sqrt() / scale;
        if rs.sqrt() <= target || iters >= maxiter {
            break;
        }
        p.copy_from_slice(&r);
        while iters < maxiter {
            iters += 1;
            let pap = fe.apply_a(&p, &mut ap, w, &mut means);
            if pap <= 0.0 || !pap.is_finite() {
                break;
            }
            let alpha = rs / pap;
            let mut rs_new = 0.0;
            match w {
                Some(w) => {
                    for i in 0..n {
                        y[i] += alpha * p[i];
                        r[i] -= alpha * ap[i];
                        rs_new += w[i] * r[i] * r[i];
                    }
                }
                None => {
                    for i in 0..n {
                        y[i] += alpha * p[i];
                        r[i] -= alpha * ap[i];
                        rs_new += r[i] * r[i];
                    }
                }
            }
            if rs_new.sqrt() <= target {
                break;
            }
            let beta = rs_new / rs;
            rs = rs_new;
            p.iter_mut().zip(&r).for_each(|(pi, &ri)| *pi = ri + beta * *pi);
        }
    }
    z.iter_mut().zip(&y).for_each(|(zi, &yi)| *zi -= yi);
    (iters, rel, rel <= tol)
}

/// Two fixed effects: conjugate gradient on the Schur complement of the normal equations after
/// the fixed effect with more levels (`a`) is eliminated exactly, preconditioned by the group
/// weights of the other (`b`). The Krylov space is the one of the symmetric sweep (same iteration
/// count), but an iteration costs one pass over the rows held as a CSR matrix by level of `a`
/// instead of 2k passes plus vector updates of length n.
struct TwoWay {
    a: usize,
    b: usize,
    row_start: Vec<usize>,
    col: Vec<u32>,
    wt: Vec<f64>,
    inv_da: Vec<f64>,
    db: Vec<f64>,
    inv_db: Vec<f64>,
}

/// The rows grouped by their level of `ca` (one of `ga` levels), in row order within a level:
/// `row_start` (length `ga + 1`) and, per grouped row, its level of `cb` and its weight `w(i)`. The
/// two-way solvers (the demeaning and the bootstrap) walk the `a`-levels through it.
pub(crate) fn csr_by_level(ca: &[u32], ga: usize, cb: &[u32], w: impl Fn(usize) -> f64)
                           -> (Vec<usize>, Vec<u32>, Vec<f64>) {
    let mut row_start = vec![0usize; ga + 1];
    for &c in ca {
        row_start[c as usize + 1] += 1;
    }
    for g in 0..ga {
        row_start[g + 1] += row_start[g];
    }
    let mut fill = row_start.clone();
    let n = ca.len();
    let mut col = vec![0u32; n];
    let mut wt = vec![0.0; n];
    for i in 0..n {
        let slot = &mut fill[ca[i] as usize];
        col[*slot] = cb[i];
        wt[*slot] = w(i);
        *slot += 1;
    }
    (row_start, col, wt)
}

impl TwoWay {
    fn new(fe: &FixedEffects, w: Option<&[f64]>) -> Self {
        let (a, b) = if fe.n_groups[0] >= fe.n_groups[1] { (0, 1) } else { (1, 0) };
        let (ca, cb) = (fe.codes[a], fe.codes[b]);
        let (row_start, col, wt) = csr_by_level(ca, fe.n_groups[a], cb, |i| w.map_or(1.0, |w| w[i]));
        let inv_db = fe.inv_weight[b].clone();
        let db = inv_db.iter().map(|&x| if x > 0.0 { 1.0 / x } else { 0.0 }).collect();
        TwoWay { a, b, row_start, col, wt, inv_da: fe.inv_weight[a].clone(), db, inv_db }
    }

    /// `out <- S v = D_b v - D_ba D_a^-1 D_ab v`.
    fn schur(&self, v: &[f64], out: &mut [f64]) {
        out.iter_mut().zip(&self.db).zip(v).for_each(|((o, &d), &x)| *o = d * x);
        for (g, &ia) in self.inv_da.iter().enumerate() {
            let (lo, hi) = (self.row_start[g], self.row_start[g + 1]);
            let (cols, wts) = (&self.col[lo..hi], &self.wt[lo..hi]);
            let t: f64 = cols.iter().zip(wts).map(|(&c, &w)| w * v[c as usize]).sum::<f64>() * ia;
            cols.iter().zip(wts).for_each(|(&c, &w)| out[c as usize] -= w * t);
        }
    }

    /// `out <- rb - D_ba D_a^-1 ra` given the group sums `ra`, `rb`.
    fn rhs(&self, ra: &[f64], rb: &[f64], out: &mut [f64]) {
        out.copy_from_slice(rb);
        for (g, (&r, &ia)) in ra.iter().zip(&self.inv_da).enumerate() {
            let t = r * ia;
            for e in self.row_start[g]..self.row_start[g + 1] {
                out[self.col[e] as usize] -= self.wt[e] * t;
            }
        }
    }

    fn column(&self, fe: &FixedEffects, z: &mut [f64], w: Option<&[f64]>, tol: f64, maxiter: usize) -> (usize, f64, bool) {
        let scale = dot_w(z, z, w).sqrt();
        if scale == 0.0 || !scale.is_finite() {
            return (0, 0.0, scale == 0.0);
        }
        let target = tol * scale;
        let (gb, ga) = (self.db.len(), self.inv_da.len());
        let mut ra = vec![0.0; ga];
        let mut rb = vec![0.0; gb];
        fe.accumulate(self.a, z, w, &mut ra);
        fe.accumulate(self.b, z, w, &mut rb);
        let mut rhs = vec![0.0; gb];
        self.rhs(&ra, &rb, &mut rhs);
        let mut beta = vec![0.0; gb];
        let mut r = vec![0.0; gb];
        let mut zt = vec![0.0; gb];
        let mut p = vec![0.0; gb];
        let mut sp = vec![0.0; gb];
        let mut iters = 0usize;
        let mut rel = f64::INFINITY;
        for _restart in 0..4 {
            self.schur(&beta, &mut sp);
            r.iter_mut().zip(&rhs).zip(&sp).for_each(|((ri, &h), &s)| *ri = h - s);
            zt.iter_mut().zip(&r).zip(&self.inv_db).for_each(|((t, &ri), &m)| *t = m * ri);
            let mut rz: f64 = r.iter().zip(&zt).map(|(a, b)| a * b).sum();
            rel = rz.max(0.0).sqrt() / scale;
            if rz.max(0.0).sqrt() <= target || iters >= maxiter {
                break;
            }
            p.copy_from_slice(&zt);
            while iters < maxiter {
                iters += 1;
                self.schur(&p, &mut sp);
                let psp: f64 = p.iter().zip(&sp).map(|(a, b)| a * b).sum();
                if psp <= 0.0 || !psp.is_finite() {
                    break;
                }
                let alpha = rz / psp;
                let mut rz_new = 0.0;
                for j in 0..gb {
                    beta[j] += alpha * p[j];
                    r[j] -= alpha * sp[j];
                    zt[j] = self.inv_db[j] * r[j];
                    rz_new += r[j] * zt[j];
                }
                if rz_new.max(0.0).sqrt() <= target {
                    break;
                }
                let ratio = rz_new / rz;
                rz = rz_new;
                p.iter_mut().zip(&zt).for_each(|(pj, &t)| *pj = t + ratio * *pj);
            }
        }
        // the eliminated fixed effect given beta: alpha_a = D_a^-1 (ra - D_ab beta)
        let mut alpha_a = ra;
        for (g, (x, &ia)) in alpha_a.iter_mut().zip(&self.inv_da).enumerate() {
            let lo = self.row_start[g];
            let hi = self.row_start[g + 1];
            let s: f64 = (lo..hi).map(|e| self.wt[e] * beta[self.col[e] as usize]).sum();
            *x = (*x - s) * ia;
        }
        let (ca, cb) = (fe.codes[self.a], fe.codes[self.b]);
        for ((v, &x), &y) in z.iter_mut().zip(ca).zip(cb) {
            *v -= alpha_a[x as usize] + beta[y as usize];
        }
        (iters, rel, rel <= tol)
    }
}

/// Demean the `p` columns of `x` (column `j` at `x[j * n .. (j + 1) * n]`) over the fixed
/// effects, with optional weights, in parallel over columns (results do not depend on the thread
/// count). `tol` is the relative W-norm of the conjugate-gradient residual, `maxiter` the most
/// iterations per column.
pub fn demean(x: &[f64], fe: &FixedEffects, weights: Option<&[f64]>, tol: f64, maxiter: usize) -> CoreResult<DemeanOutput> {
    let n = fe.n();
    if x.len() % n != 0 {
        return Err(CoreError::invalid("x", format!("length {} is not a multiple of the {n} rows", x.len())));
    }
    check::finite("x", x)?;
    if !(tol > 0.0 && tol < 1.0) {
        return Err(CoreError::invalid("tol", format!("must lie in (0, 1); got {tol}")));
    }
    if maxiter == 0 {
        return Err(CoreError::invalid("maxiter", "must be at least 1"));
    }
    if let Some(w) = weights {
        check::same_len("weights", w.len(), "x rows", n)?;
    }
    let mut values = check::with_capacity::<f64>("x", x.len(), x.len(), "the demeaned columns")?;
    values.extend_from_slice(x);
    let stats: Vec<(usize, f64, bool)> = if fe.k() == 2 {
        let two = TwoWay::new(fe, weights);
        values.par_chunks_mut(n).map(|col| two.column(fe, col, weights, tol, maxiter)).collect()
    } else {
        values.par_chunks_mut(n).map(|col| demean_column(fe, col, weights, tol, maxiter)).collect()
    };
    Ok(DemeanOutput {
        values,
        iterations: stats.iter().map(|s| s.0).collect(),
        residual: stats.iter().map(|s| s.1).collect(),
        converged: stats.iter().all(|s| s.2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::linalg::cholesky_solve;
    use crate::common::rng::SplitMix64;

    fn uniform(rng: &mut SplitMix64) -> f64 {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Brute force: the weighted residual of z on the full dummy matrix (one reference level per
    /// extra fixed effect dropped), by normal equations with a ridge-free Cholesky solve.
    fn dummy_residual(z: &[f64], codes: &[Vec<u32>], groups: &[usize], w: &[f64]) -> Vec<f64> {
        let n = z.len();
        // columns: all levels of fe 0, levels 1.. of the others
        let mut cols: Vec<(usize, u32)> = (0..groups[0] as u32).map(|g| (0, g)).collect();
        for (f, &g) in groups.iter().enumerate().skip(1) {
            cols.extend((1..g as u32).map(|l| (f, l)));
        }
        let m = cols.len();
        let d = |i: usize, c: usize| -> f64 { if codes[cols[c].0][i] == cols[c].1 { 1.0 } else { 0.0 } };
        let mut a = vec![0.0; m * m];
        let mut b = vec![0.0; m];
        for i in 0..n {
            let active: Vec<usize> = (0..m).filter(|&c| d(i, c) == 1.0).collect();
            for &r in &active {
                b[r] += w[i] * z[i];
                for &c in &active {
                    a[r * m + c] += w[i];
                }
            }
        }
        let coef = cholesky_solve(&a, &b, m).expect("dummy system is positive definite");
        (0..n).map(|i| z[i] - (0..m).map(|c| d(i, c) * coef[c]).sum::<f64>()).collect()
    }

    fn panel(n: usize, groups: &[usize], seed: u64) -> (Vec<Vec<u32>>, Vec<f64>, Vec<f64>) {
        let mut rng = SplitMix64::new(seed);
        let mut codes: Vec<Vec<u32>> = groups.iter().map(|_| Vec::with_capacity(n)).collect();
        for i in 0..n {
            for (f, &g) in groups.iter().enumerate() {
                // every level appears (rows cycle through the levels first), the rest at random
                let c = if i < g { i as u32 } else { (uniform(&mut rng) * g as f64) as u32 };
                codes[f].push(c.min(g as u32 - 1));
            }
        }
        let z: Vec<f64> = (0..n).map(|_| uniform(&mut rng) * 4.0 - 2.0 + codes[0][0] as f64).collect();
        let w: Vec<f64> = (0..n).map(|_| 0.5 + uniform(&mut rng)).collect();
        (codes, z, w)
    }

    #[test]
    fn equals_dummy_variable_regression() {
        for (groups, weighted) in [(vec![7usize], false), (vec![6, 9], false), (vec![6, 9], true), (vec![5, 4, 8], true)] {
            let (codes, z, w) = panel(120, &groups, 11 + groups.len() as u64);
            let ones = vec![1.0; z.len()];
            let wref = if weighted { &w } else { &ones };
            let fe = FixedEffects::new(codes.iter().map(|c| c.as_slice()).collect(), groups.clone(), weighted.then_some(w.as_slice())).unwrap();
            let out = demean(&z, &fe, weighted.then_some(w.as_slice()), 1e-13, 10_000).unwrap();
            let want = dummy_residual(&z, &codes, &groups, wref);
            let err = out.values.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(err < 1e-10, "groups {groups:?} weighted {weighted}: max error {err}");
            assert!(out.converged);
        }
    }

    #[test]
    fn several_columns_are_independent_of_threads() {
        let groups = vec![10usize, 15];
        let (codes, z, w) = panel(300, &groups, 3);
        let mut x = z.clone();
        x.extend(z.iter().map(|v| v * v));
        let fe = FixedEffects::new(codes.iter().map(|c| c.as_slice()).collect(), groups, Some(&w)).unwrap();
        let a = crate::common::parallel::install(Some(1), || demean(&x, &fe, Some(&w), 1e-12, 1000)).unwrap();
        let b = crate::common::parallel::install(Some(3), || demean(&x, &fe, Some(&w), 1e-12, 1000)).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.iterations.len(), 2);
    }

    #[test]
    fn staggered_windows_converge() {
        // firm j active only on dates j .. j + 20: a long chain, the hard case for alternating projections
        let (firms, window) = (200usize, 20usize);
        let mut firm = Vec::new();
        let mut date = Vec::new();
        let mut rng = SplitMix64::new(5);
        for j in 0..firms {
            for t in j..j + window {
                firm.push(j as u32);
                date.push(t as u32);
            }
        }
        let n = firm.len();
        let z: Vec<f64> = (0..n).map(|i| date[i] as f64 * 0.01 + uniform(&mut rng)).collect();
        let groups = vec![firms, firms + window - 1];
        let fe = FixedEffects::new(vec![&firm, &date], groups.clone(), None).unwrap();
        let out = demean(&z, &fe, None, 1e-13, 10_000).unwrap();
        assert!(out.converged, "{:?}", out);
        let want = dummy_residual(&z, &[firm.clone(), date.clone()], &groups, &vec![1.0; n]);
        let err = out.values.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(err < 1e-8, "max error {err}, iterations {:?}", out.iterations);
    }

    #[test]
    fn zero_weight_groups_and_bad_input() {
        let firm = [0u32, 0, 1, 1, 2];
        let date = [0u32, 1, 0, 1, 1];
        let w = [1.0, 2.0, 1.0, 1.0, 0.0];
        let fe = FixedEffects::new(vec![&firm, &date], vec![3, 2], Some(&w)).unwrap();
        let out = demean(&[1.0, 2.0, 3.0, 5.0, 7.0], &fe, Some(&w), 1e-12, 100).unwrap();
        assert!(out.values.iter().all(|v| v.is_finite()));
        assert!(FixedEffects::new(vec![&firm], vec![2], None).unwrap_err().to_string().contains("code 2"));
        assert!(FixedEffects::new(vec![], vec![], None).is_err());
        assert!(demean(&[1.0, f64::NAN, 0.0, 0.0, 0.0], &fe, None, 1e-12, 10).is_err());
        assert!(demean(&[1.0; 5], &fe, None, 0.0, 10).unwrap_err().to_string().contains("tol"));
    }
}
