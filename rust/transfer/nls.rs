//! Nonlinear least squares for the economic models of the transfer application: the fits that
//! build transfer-error tables.
//!
//! * [`levenberg_marquardt`]: a bounded (projected, active-set) Levenberg–Marquardt with a
//!   forward-difference Jacobian. Non-finite residuals count as an infinite cost, so a trial step
//!   into a region where the model is undefined is simply rejected. It never panics; the outcome
//!   (converged or not, and why) is reported in [`LmFit`].
//! * The certainty-equivalent models of Andrews, Fudenberg, Lei, Liang & Wu (2025, Section 5.2;
//!   docs/methods/transfer.md §6.2): EU with CRRA (isoelastic) utility, EU with exponential (CARA)
//!   utility, and CPT with the Goldstein–Einhorn / Lattimore weighting function
//!   `w(p) = δp^γ / (δp^γ + (1−p)^γ)` and power value function (`z^α` for gains, `−(−z)^β` for
//!   losses), with any subset of (α, β, δ, γ) free (the others fixed).
//! * [`fit_subsets`]: the batch API used to build transfer-error tables. It fits one model per
//!   training subset (pooled least squares over the subset's domains, docs/methods/transfer.md
//!   §1.2) with several starting points, keeps the best, and evaluates the fitted rule's mean
//!   squared error on every domain. Subsets run in parallel (rayon).
//!
//! The damped Gauss–Newton steps are solved with `common::linalg::cholesky_solve`.

use crate::common::errors::{check, CoreError, CoreResult, Part};
use crate::common::linalg::{cholesky_factor, cholesky_solve};
use crate::common::numerics::CompensatedSum;
use rayon::prelude::*;

// ------------------------------------------------------------------------------------------------
// Models
// ------------------------------------------------------------------------------------------------

/// Model families. Full parameter vectors: `EuCrra` = [η], `EuCara` = [a], `Cpt` = [α, β, δ, γ].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Expected utility, CRRA: `v(z) = (z^{1−η} − 1)/(1−η)` (log for η = 1), odd-symmetric for losses.
    EuCrra,
    /// Expected utility, CARA (exponential): `u(z) = (1 − e^{−az})/a` (linear for a = 0).
    EuCara,
    /// CRRA as computed by the authors' replication code (chaofengwu/TransferPerf): a prize of
    /// exactly 0 enters the power mean as 1 (so `CE = (p·z1^ρ + 1 − p)^{1/ρ}` for `(z1, 0, p)`).
    /// This deviates from the paper's formula but reproduces the published EU matrices.
    EuCrraAuthors,
    /// Cumulative prospect theory (Section 5.2, eqs. 9–10).
    Cpt,
}

impl Family {
    /// Parse a family name (`"eu_crra"`, `"eu_cara"`, `"cpt"`).
    pub fn parse(name: &str) -> CoreResult<Self> {
        match name {
            "eu_crra" => Ok(Family::EuCrra),
            "eu_cara" => Ok(Family::EuCara),
            "eu_crra_authors" => Ok(Family::EuCrraAuthors),
            "cpt" => Ok(Family::Cpt),
            other => Err(CoreError::invalid("family", format!("unknown model family {other:?}; use \"eu_crra\", \"eu_cara\", \"eu_crra_authors\" or \"cpt\""))),
        }
    }

    /// Length of the full parameter vector.
    pub fn n_params(self) -> usize {
        match self {
            Family::EuCrra | Family::EuCara | Family::EuCrraAuthors => 1,
            Family::Cpt => 4,
        }
    }
}

/// Certainty equivalent of the lottery paying `z1` with probability `p`, else `z2`
/// (the convention `|z1| >= |z2|` is not needed by these formulas).
#[inline]
pub fn predict_one(family: Family, theta: &[f64], z1: f64, z2: f64, p: f64) -> f64 {
    match family {
        Family::EuCrra => crra_ce(theta[0], z1, z2, p),
        Family::EuCrraAuthors => {
            // the replication code's convention: a zero prize counts as 1 (same sign as z1)
            let s = if z1 < 0.0 { -1.0 } else { 1.0 };
            let z2 = if z2 == 0.0 && z1 != 0.0 { s } else { z2 };
            crra_ce(theta[0], z1, z2, p)
        }
        Family::EuCara => cara_ce(theta[0], z1, z2, p),
        Family::Cpt => cpt_ce(theta[0], theta[1], theta[2], theta[3], z1, z2, p),
    }
}

/// CRRA certainty equivalent.
///
/// Same-sign lotteries (the paper's case): with `s` the common sign, `a = max(|z1|,|z2|)`,
/// `b = min(...)`, `ρ = 1 − η` and `L = ln(b/a) <= 0`, the CE is
/// `s·a·exp(log1p((1−q)·expm1(ρL)) / ρ)` where `q` is the probability of the larger prize. This is
/// the paper's `v⁻¹(p·v(z1) + (1−p)·v(z2))` written so that it is continuous through η = 1 (the
/// log case, `a^q b^{1−q}`) and has the right limits at a zero prize (CE = a·q^{1/ρ} for η < 1 and
/// 0 for η >= 1). Mixed lotteries (one gain, one loss), where the printed `v_η` is not monotone
/// (docs/methods/transfer.md §6.2), use the odd power utility `sign(z)|z|^ρ/ρ`, defined for η < 1 only (NaN otherwise).
#[inline]
pub fn crra_ce(eta: f64, z1: f64, z2: f64, p: f64) -> f64 {
    if p >= 1.0 {
        return z1;
    }
    if p <= 0.0 {
        return z2;
    }
    let rho = 1.0 - eta;
    if (z1 >= 0.0 && z2 >= 0.0) || (z1 <= 0.0 && z2 <= 0.0) {
        let s = if z1 < 0.0 || z2 < 0.0 { -1.0 } else { 1.0 };
        let (a1, a2) = (z1.abs(), z2.abs());
        let (a, b, q) = if a1 >= a2 { (a1, a2, p) } else { (a2, a1, 1.0 - p) };
        if a == 0.0 {
            return 0.0;
        }
        if b == a {
            return s * a;
        }
        let l = (b / a).ln(); // <= 0, -inf when b = 0
        if rho.abs() < 1e-12 {
            return s * a * ((1.0 - q) * l).exp();
        }
        let inner = ((1.0 - q) * (rho * l).exp_m1()).ln_1p() / rho;
        s * a * inner.exp()
    } else {
        if rho <= 0.0 {
            return f64::NAN;
        }
        let u = |z: f64| z.signum() * z.abs().powf(rho);
        let v = p * u(z1) + (1.0 - p) * u(z2);
        v.signum() * v.abs().powf(1.0 / rho)
    }
}

/// CARA certainty equivalent `−(1/a)·ln(p e^{−a z1} + (1−p) e^{−a z2})`, computed with a shifted
/// log-sum-exp (no overflow for large prizes); for |a| < 1e-10 the second-order expansion
/// `EV − (a/2)·p(1−p)(z1−z2)²`.
#[inline]
pub fn cara_ce(a: f64, z1: f64, z2: f64, p: f64) -> f64 {
    if p >= 1.0 {
        return z1;
    }
    if p <= 0.0 {
        return z2;
    }
    if a.abs() < 1e-10 {
        let ev = p * z1 + (1.0 - p) * z2;
        return ev - 0.5 * a * p * (1.0 - p) * (z1 - z2) * (z1 - z2);
    }
    let (e1, e2) = (-a * z1, -a * z2);
    let m = e1.max(e2);
    let s = p * (e1 - m).exp() + (1.0 - p) * (e2 - m).exp();
    -(m + s.ln()) / a
}

/// CPT certainty equivalent (paper eqs. 9–10): `v⁻¹(w(p)v(z1) + (1−w(p))v(z2))`.
///
/// The direct powers lose about `ε/α` relative (1e-8 at α = 1e-8, the floor of the bounds), so
/// for α or β below 1e-3 it is computed as `U = 1 + (U − 1)` with `v(z) − 1 = expm1(α ln z)` for
/// gains (and `(−z)^β − 1 = expm1(β ln(−z))` on the loss side) and `U^{1/α} = exp(log1p(U − 1)/α)`,
/// which keeps full precision as α or β approach 0 (the direct form, ~40% cheaper, is exact to
/// ~1e-13 above 1e-3).
#[inline]
pub fn cpt_ce(alpha: f64, beta: f64, delta: f64, gamma: f64, z1: f64, z2: f64, p: f64) -> f64 {
    let pg = p.powf(gamma);
    let qg = (1.0 - p).powf(gamma);
    let w = delta * pg / (delta * pg + qg);
    if alpha >= 1e-3 && beta >= 1e-3 {
        let v = |z: f64| if z >= 0.0 { z.powf(alpha) } else { -(-z).powf(beta) };
        let u = w * v(z1) + (1.0 - w) * v(z2);
        return if u >= 0.0 { u.powf(1.0 / alpha) } else { -(-u).powf(1.0 / beta) };
    }
    // v(z) − 1 (gain branch of the result) and −v(z) − 1 (loss branch)
    let gain_m1 = |z: f64| if z > 0.0 { (alpha * z.ln()).exp_m1() } else if z == 0.0 { -1.0 } else { -(-z).powf(beta) - 1.0 };
    let loss_m1 = |z: f64| if z < 0.0 { (beta * (-z).ln()).exp_m1() } else if z == 0.0 { -1.0 } else { -z.powf(alpha) - 1.0 };
    let um1 = w * gain_m1(z1) + (1.0 - w) * gain_m1(z2);
    if um1 >= -1.0 {
        (um1.ln_1p() / alpha).exp()
    } else {
        let nm1 = w * loss_m1(z1) + (1.0 - w) * loss_m1(z2);
        -(nm1.ln_1p() / beta).exp()
    }
}

// ------------------------------------------------------------------------------------------------
// Levenberg–Marquardt
// ------------------------------------------------------------------------------------------------

/// Stopping rules.
#[derive(Debug, Clone, Copy)]
pub struct LmOptions {
    /// Maximum number of iterations (accepted or rejected steps).
    pub max_iter: usize,
    /// Stop when an accepted step lowers the cost by less than `ftol` relative.
    pub ftol: f64,
    /// Stop when the step is below `xtol · (|x| + xtol)`.
    pub xtol: f64,
    /// Stop when the projected gradient's max-norm is below `gtol` (relative to the cost).
    pub gtol: f64,
}

impl Default for LmOptions {
    fn default() -> Self {
        LmOptions { max_iter: 500, ftol: 1e-15, xtol: 1e-12, gtol: 1e-12 }
    }
}

/// Outcome of one minimisation.
#[derive(Debug, Clone, PartialEq)]
pub struct LmFit {
    /// The minimiser (free parameters only).
    pub x: Vec<f64>,
    /// `Σ r_i²` at `x` (infinite if the model was undefined everywhere tried).
    pub sse: f64,
    /// Iterations used.
    pub iterations: usize,
    /// Whether a convergence test (not the iteration cap) stopped it.
    pub converged: bool,
    /// Which test stopped it.
    pub status: &'static str,
}

fn sse_of(r: &[f64]) -> f64 {
    let mut s = 0.0;
    for &v in r {
        s += v * v;
    }
    if s.is_finite() {
        s
    } else {
        f64::INFINITY
    }
}

/// Minimise `Σ r_i(x)²` over the box `[lower, upper]` from `x0`.
///
/// `resid(x, out)` writes the `m` residuals. Projected Levenberg–Marquardt: variables at a bound
/// whose gradient points out of the box are held fixed for the step (active set), the damped
/// Gauss–Newton step (Marquardt scaling `λ·diag(JᵀJ)`) is solved on the rest, and the trial point
/// is projected onto the box. The Jacobian is by forward differences (stepping inward at an upper
/// bound).
pub fn levenberg_marquardt<F>(resid: F, m: usize, x0: &[f64], lower: &[f64], upper: &[f64], opts: &LmOptions) -> LmFit
where
    F: Fn(&[f64], &mut [f64]),
{
    let n = x0.len();
    let clamp = |x: &mut [f64]| {
        for i in 0..n {
            x[i] = x[i].max(lower[i]).min(upper[i]);
        }
    };
    let mut x = x0.to_vec();
    clamp(&mut x);
    let mut r = vec![0.0; m];
    resid(&x, &mut r);
    let mut sse = sse_of(&r);
    if !sse.is_finite() {
        return LmFit { x, sse: f64::INFINITY, iterations: 0, converged: false, status: "model undefined at the starting point" };
    }
    if m == 0 || n == 0 {
        return LmFit { x, sse, iterations: 0, converged: true, status: "nothing to fit" };
    }
    let mut jac = vec![0.0; m * n]; // column-major: jac[j*m + i]
    let mut r_trial = vec![0.0; m];
    let mut x_trial = vec![0.0; n];
    let mut lambda = 1e-3;
    let mut need_jac = true;
    let mut jtj = vec![0.0; n * n];
    let mut g = vec![0.0; n];
    let mut it = 0;
    while it < opts.max_iter {
        if need_jac {
            for j in 0..n {
                let h0 = 1.49e-8 * x[j].abs().max(1e-3);
                let mut h = h0;
                if x[j] + h > upper[j] {
                    h = -h0;
                }
                x_trial.copy_from_slice(&x);
                x_trial[j] += h;
                resid(&x_trial, &mut r_trial);
                let hh = x_trial[j] - x[j];
                let col = &mut jac[j * m..(j + 1) * m];
                for i in 0..m {
                    let d = (r_trial[i] - r[i]) / hh;
                    col[i] = if d.is_finite() { d } else { 0.0 };
                }
            }
            for a in 0..n {
                let ca = &jac[a * m..(a + 1) * m];
                let mut s = 0.0;
                for i in 0..m {
                    s += ca[i] * r[i];
                }
                g[a] = s;
                for b in 0..=a {
                    let cb = &jac[b * m..(b + 1) * m];
                    let mut t = 0.0;
                    for i in 0..m {
                        t += ca[i] * cb[i];
                    }
                    jtj[a * n + b] = t;
                    jtj[b * n + a] = t;
                }
            }
            need_jac = false;
        }
        // active set: at a bound with the descent direction (-g) pointing outward
        let free: Vec<usize> = (0..n)
            .filter(|&i| !((x[i] <= lower[i] && g[i] > 0.0) || (x[i] >= upper[i] && g[i] < 0.0)))
            .collect();
        let pg = free.iter().map(|&i| g[i].abs()).fold(0.0, f64::max);
        if free.is_empty() || pg <= opts.gtol * (sse + 1e-300).max(1e-300) {
            return LmFit { x, sse, iterations: it, converged: true, status: "projected gradient below gtol" };
        }
        let k = free.len();
        let mut a = vec![0.0; k * k];
        let mut b = vec![0.0; k];
        for (ia, &ga) in free.iter().enumerate() {
            b[ia] = -g[ga];
            for (ib, &gb) in free.iter().enumerate() {
                a[ia * k + ib] = jtj[ga * n + gb];
            }
            let d = jtj[ga * n + ga].max(1e-12);
            a[ia * k + ia] += lambda * d;
        }
        it += 1;
        let step = match cholesky_solve(&a, &b, k) {
            Some(s) if s.iter().all(|v| v.is_finite()) => s,
            _ => {
                lambda *= 10.0;
                if lambda > 1e16 {
                    return LmFit { x, sse, iterations: it, converged: false, status: "damping overflow (singular normal equations)" };
                }
                continue;
            }
        };
        x_trial.copy_from_slice(&x);
        for (ia, &ga) in free.iter().enumerate() {
            x_trial[ga] += step[ia];
        }
        clamp(&mut x_trial);
        let mut step_norm: f64 = 0.0;
        let mut x_norm: f64 = 0.0;
        for i in 0..n {
            step_norm = step_norm.max((x_trial[i] - x[i]).abs());
            x_norm = x_norm.max(x[i].abs());
        }
        resid(&x_trial, &mut r_trial);
        let sse_trial = sse_of(&r_trial);
        if sse_trial < sse {
            let rel = (sse - sse_trial) / sse.max(1e-300);
            x.copy_from_slice(&x_trial);
            std::mem::swap(&mut r, &mut r_trial);
            sse = sse_trial;
            lambda = (lambda / 3.0).max(1e-12);
            need_jac = true;
            if rel <= opts.ftol {
                return LmFit { x, sse, iterations: it, converged: true, status: "relative cost reduction below ftol" };
            }
            if step_norm <= opts.xtol * (x_norm + opts.xtol) {
                return LmFit { x, sse, iterations: it, converged: true, status: "step below xtol" };
            }
        } else {
            if step_norm <= opts.xtol * (x_norm + opts.xtol) && lambda > 1.0 {
                return LmFit { x, sse, iterations: it, converged: true, status: "step below xtol" };
            }
            lambda *= 4.0;
            if lambda > 1e16 {
                return LmFit { x, sse, iterations: it, converged: true, status: "no further decrease possible" };
            }
        }
    }
    LmFit { x, sse, iterations: it, converged: false, status: "iteration limit reached" }
}

// ------------------------------------------------------------------------------------------------
// Batch fitting over training subsets
// ------------------------------------------------------------------------------------------------

/// A model to fit: family, which full-vector entries are free, values of the fixed ones, bounds
/// and starting points for the free ones.
#[derive(Debug, Clone)]
pub struct ModelSpec {
    pub family: Family,
    /// Full parameter vector; free entries are overwritten by the fit.
    pub theta: Vec<f64>,
    /// Indices (into the full vector) of the free parameters.
    pub free: Vec<usize>,
    pub lower: Vec<f64>,
    pub upper: Vec<f64>,
    /// Starting points (each of length `free.len()`); the best fit over them is kept.
    pub starts: Vec<Vec<f64>>,
}

impl ModelSpec {
    /// Validate shapes and values.
    pub fn check(&self) -> CoreResult<()> {
        let p = self.family.n_params();
        if self.theta.len() != p {
            return Err(CoreError::invalid("theta", format!("needs {p} values for this model family; got {}", self.theta.len())));
        }
        check::finite("theta", &self.theta)?;
        let k = self.free.len();
        if self.free.iter().any(|&i| i >= p) {
            return Err(CoreError::invalid("free", format!("parameter indices must be below {p}")));
        }
        let mut sorted = self.free.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != k {
            return Err(CoreError::invalid("free", "repeats a parameter"));
        }
        check::same_len("lower", self.lower.len(), "free", k)?;
        check::same_len("upper", self.upper.len(), "free", k)?;
        for j in 0..k {
            if self.lower[j].is_nan() || self.upper[j].is_nan() || self.lower[j] > self.upper[j] {
                return Err(CoreError::invalid_at(
                    "lower",
                    vec![
                        Part::text("bounds of free "),
                        Part::at("parameter", j),
                        Part::text(format!(" are empty or NaN: [{}, {}]", self.lower[j], self.upper[j])),
                    ],
                ));
            }
        }
        if k > 0 && self.starts.is_empty() {
            return Err(CoreError::invalid("starts", "give at least one starting point"));
        }
        for (s, start) in self.starts.iter().enumerate() {
            check::same_len("starts[s]", start.len(), "free", k)?;
            if start.iter().any(|v| !v.is_finite()) {
                return Err(CoreError::invalid_at(
                    "starts",
                    vec![Part::text("starting "), Part::at("point", s), Part::text(" has a non-finite value")],
                ));
            }
        }
        Ok(())
    }
}

/// Lottery data sorted by domain: domain `d` occupies rows `offsets[d]..offsets[d+1]`.
#[derive(Debug, Clone, Copy)]
pub struct Lotteries<'a> {
    pub z1: &'a [f64],
    pub z2: &'a [f64],
    pub p: &'a [f64],
    pub y: &'a [f64],
    pub offsets: &'a [usize],
}

impl<'a> Lotteries<'a> {
    /// Validate lengths, finiteness, probabilities and offsets.
    pub fn check(&self) -> CoreResult<()> {
        let m = self.y.len();
        check::same_len("z1", self.z1.len(), "y", m)?;
        check::same_len("z2", self.z2.len(), "y", m)?;
        check::same_len("p", self.p.len(), "y", m)?;
        check::finite("z1", self.z1)?;
        check::finite("z2", self.z2)?;
        check::finite("y", self.y)?;
        check::probability("p", self.p)?;
        if self.offsets.len() < 2 || self.offsets[0] != 0 || *self.offsets.last().unwrap_or(&0) != m {
            return Err(CoreError::invalid("offsets", format!("must start at 0 and end at the number of rows ({m})")));
        }
        if let Some(d) = self.offsets.windows(2).position(|w| w[1] <= w[0]) {
            return Err(CoreError::invalid_at(
                "offsets",
                vec![Part::at("domain", d), Part::text(" has no rows; every domain needs at least one observation")],
            ));
        }
        Ok(())
    }

    pub fn n_domains(&self) -> usize {
        self.offsets.len() - 1
    }
}

/// Result of fitting one training subset.
#[derive(Debug, Clone, PartialEq)]
pub struct SubsetFit {
    /// Full parameter vector at the best fit.
    pub theta: Vec<f64>,
    /// Pooled training MSE (equals the sample-size-weighted mean of the per-domain MSEs).
    pub train_mse: f64,
    /// MSE of the fitted rule on every domain (training domains included: for r = 1 the
    /// training domain's entry is the in-sample error).
    pub mse: Vec<f64>,
    pub converged: bool,
    pub iterations: usize,
    pub status: &'static str,
}

/// The data grouped by distinct lottery within each domain. Because
/// `Σ_i (f(x_i) − y_i)² = Σ_u [n_u (f(x_u) − ȳ_u)² + Σ_{i∈u} (y_i − ȳ_u)²]`, least squares on the
/// distinct lotteries `u` with weights `n_u` and mean outcomes `ȳ_u` has the same objective up to
/// a constant (the within-lottery sum of squares), hence the same minimiser, and the same
/// per-domain MSEs. Experimental data repeat a few dozen lotteries over many subjects, so this
/// shrinks the fits by one to three orders of magnitude.
#[derive(Debug, Clone)]
pub struct Compressed {
    pub z1: Vec<f64>,
    pub z2: Vec<f64>,
    pub p: Vec<f64>,
    pub ybar: Vec<f64>,
    pub weight: Vec<f64>,
    pub sqrt_weight: Vec<f64>,
    /// Distinct lotteries of domain `d`: `offsets[d]..offsets[d+1]`.
    pub offsets: Vec<usize>,
    /// Within-lottery sum of squares of domain `d`.
    pub ss_within: Vec<f64>,
    /// Observations of domain `d`.
    pub count: Vec<usize>,
}

/// Group each domain's rows by distinct `(z1, z2, p)`.
pub fn compress(data: &Lotteries) -> Compressed {
    let n = data.n_domains();
    let mut c = Compressed {
        z1: vec![], z2: vec![], p: vec![], ybar: vec![], weight: vec![], sqrt_weight: vec![],
        offsets: vec![0], ss_within: Vec::with_capacity(n), count: Vec::with_capacity(n),
    };
    for d in 0..n {
        let (lo, hi) = (data.offsets[d], data.offsets[d + 1]);
        let mut idx: Vec<usize> = (lo..hi).collect();
        let key = |i: usize| (data.z1[i], data.z2[i], data.p[i]);
        idx.sort_by(|&a, &b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.total_cmp(&kb.0).then(ka.1.total_cmp(&kb.1)).then(ka.2.total_cmp(&kb.2))
        });
        let mut ss = CompensatedSum::new();
        let mut g = 0;
        while g < idx.len() {
            let mut e = g + 1;
            while e < idx.len() && key(idx[e]) == key(idx[g]) {
                e += 1;
            }
            let mut sum = CompensatedSum::new();
            for &i in &idx[g..e] {
                sum.add(data.y[i]);
            }
            let k = (e - g) as f64;
            let mean = sum.value() / k;
            for &i in &idx[g..e] {
                let dev = data.y[i] - mean;
                ss.add(dev * dev);
            }
            let (a, b, q) = key(idx[g]);
            c.z1.push(a);
            c.z2.push(b);
            c.p.push(q);
            c.ybar.push(mean);
            c.weight.push(k);
            c.sqrt_weight.push(k.sqrt());
            g = e;
        }
        c.offsets.push(c.z1.len());
        c.ss_within.push(ss.value());
        c.count.push(hi - lo);
    }
    c
}

/// Mean squared error of `theta` on domain `d`.
fn domain_mse(family: Family, theta: &[f64], c: &Compressed, d: usize) -> f64 {
    let mut s = CompensatedSum::new();
    for u in c.offsets[d]..c.offsets[d + 1] {
        let e = predict_one(family, theta, c.z1[u], c.z2[u], c.p[u]) - c.ybar[u];
        s.add(c.weight[u] * e * e);
    }
    s.add(c.ss_within[d]);
    s.value() / c.count[d] as f64
}

/// Whether the Jacobian of `resid` at `x` (forward differences) has a (numerically) dependent
/// set of columns: a zero column, or a pivot of the Cholesky factor of the column-normalised
/// Gram matrix below 1e-6 (a direction in which the fit changes a million times less than along
/// the parameters themselves).
fn jacobian_rank_deficient<F>(resid: &F, m: usize, x: &[f64], lower: &[f64], upper: &[f64]) -> bool
where
    F: Fn(&[f64], &mut [f64]),
{
    let n = x.len();
    let mut r0 = vec![0.0; m];
    resid(x, &mut r0);
    let mut cols = vec![0.0; m * n];
    let mut xt = x.to_vec();
    let mut rt = vec![0.0; m];
    for j in 0..n {
        let h0 = 1.49e-8 * x[j].abs().max(1e-3);
        let h = if x[j] + h0 > upper[j] && x[j] - h0 >= lower[j] { -h0 } else { h0 };
        xt.copy_from_slice(x);
        xt[j] += h;
        resid(&xt, &mut rt);
        for i in 0..m {
            let d = (rt[i] - r0[i]) / h;
            cols[j * m + i] = if d.is_finite() { d } else { 0.0 };
        }
    }
    let norms: Vec<f64> = (0..n).map(|j| cols[j * m..(j + 1) * m].iter().map(|v| v * v).sum::<f64>().sqrt()).collect();
    let scale = norms.iter().cloned().fold(0.0, f64::max);
    if norms.iter().any(|&v| v <= 1e-12 * scale.max(1e-300)) {
        return true;
    }
    // Cholesky of the correlation matrix of the columns; a tiny pivot means dependence
    let mut a = vec![0.0; n * n];
    for p in 0..n {
        for q in 0..=p {
            let mut t = 0.0;
            for i in 0..m {
                t += cols[p * m + i] * cols[q * m + i];
            }
            a[p * n + q] = t / (norms[p] * norms[q]);
        }
    }
    // (the entries are correlations, so a pivot is finite unless NaN, which also counts as dependence)
    cholesky_factor(&a, n, |_, pivot| pivot > 1e-12).is_none()
}

/// The convention for parameters that the training data do not identify (see [`fit_rows`]):
/// each free parameter in turn is put at its default and, if that alone raises the objective,
/// the others are refitted from the current optimum; the restriction is kept when the training
/// objective (`sse + ss_within`) does not rise by more than 1e-13 relative. The refits only run
/// when the Jacobian at the optimum is rank deficient, so identified fits cost nothing extra.
fn restrict_unidentified<F>(resid: &F, m: usize, spec: &ModelSpec, ss_within: f64, best: &mut LmFit, opts: &LmOptions)
where
    F: Fn(&[f64], &mut [f64]),
{
    let k = spec.free.len();
    let tol = |sse: f64| (sse + ss_within) * (1.0 + 1e-13) - ss_within + 1e-300;
    let mut r = vec![0.0; m];
    // which parameters are fixed at their default so far; the rest may move in the refits
    let mut fixed = vec![false; k];
    let default = |j: usize| spec.theta[spec.free[j]].max(spec.lower[j]).min(spec.upper[j]);
    let mut refits: Option<bool> = None; // whether restricted refits are worth trying (rank check)
    for j in 0..k {
        let dj = default(j);
        if best.x[j] == dj {
            fixed[j] = true;
            continue;
        }
        let mut trial = best.x.clone();
        trial[j] = dj;
        resid(&trial, &mut r);
        let s = sse_of(&r);
        if s <= tol(best.sse) {
            best.x = trial;
            best.sse = best.sse.min(s);
            fixed[j] = true;
            continue;
        }
        // refit the parameters that are still free with this one at its default
        if !*refits.get_or_insert_with(|| jacobian_rank_deficient(resid, m, &best.x, &spec.lower, &spec.upper)) {
            continue;
        }
        let movable: Vec<usize> = (0..k).filter(|&i| i != j && !fixed[i]).collect();
        if movable.is_empty() {
            continue;
        }
        let base = trial.clone();
        let sub = |y: &[f64], out: &mut [f64]| {
            let mut x = base.clone();
            for (a, &i) in movable.iter().enumerate() {
                x[i] = y[a];
            }
            resid(&x, out);
        };
        let y0: Vec<f64> = movable.iter().map(|&i| best.x[i]).collect();
        let lo: Vec<f64> = movable.iter().map(|&i| spec.lower[i]).collect();
        let hi: Vec<f64> = movable.iter().map(|&i| spec.upper[i]).collect();
        let fit = levenberg_marquardt(&sub, m, &y0, &lo, &hi, opts);
        if fit.sse <= tol(best.sse) {
            for (a, &i) in movable.iter().enumerate() {
                trial[i] = fit.x[a];
            }
            best.x = trial;
            best.sse = best.sse.min(fit.sse);
            fixed[j] = true;
        }
    }
}

/// Fit `spec` by pooled least squares on the rows of the given domains; keep the best start.
pub fn fit_rows(spec: &ModelSpec, c: &Compressed, domains: &[usize], opts: &LmOptions) -> SubsetFit {
    let mut rows: Vec<(usize, usize)> = domains.iter().map(|&d| (c.offsets[d], c.offsets[d + 1])).collect();
    rows.sort_unstable();
    let m: usize = rows.iter().map(|(a, b)| b - a).sum();
    let n_obs: usize = domains.iter().map(|&d| c.count[d]).sum();
    let ss_within: f64 = domains.iter().map(|&d| c.ss_within[d]).sum();
    let family = spec.family;
    let resid = |x: &[f64], out: &mut [f64]| {
        let mut theta = spec.theta.clone();
        for (j, &i) in spec.free.iter().enumerate() {
            theta[i] = x[j];
        }
        let mut k = 0;
        for &(lo, hi) in &rows {
            for u in lo..hi {
                out[k] = c.sqrt_weight[u] * (predict_one(family, &theta, c.z1[u], c.z2[u], c.p[u]) - c.ybar[u]);
                k += 1;
            }
        }
    };
    let mut best: Option<LmFit> = None;
    let starts: Vec<Vec<f64>> = if spec.free.is_empty() { vec![vec![]] } else { spec.starts.clone() };
    for start in &starts {
        let fit = levenberg_marquardt(&resid, m, start, &spec.lower, &spec.upper, opts);
        let better = match &best {
            None => true,
            Some(b) => fit.sse < b.sse || (fit.sse == b.sse && fit.converged && !b.converged),
        };
        if better {
            best = Some(fit);
        }
    }
    // `ModelSpec::check` guarantees a start when a parameter is free (and `starts` holds the empty
    // one otherwise); without one the fit is reported as failed, not a panic
    let mut best = best.unwrap_or_else(|| LmFit {
        x: spec.free.iter().map(|&i| spec.theta[i]).collect(),
        sse: f64::INFINITY,
        iterations: 0,
        converged: false,
        status: "no starting point",
    });
    // Parameters the training data do not pin down (beta on gains-only data; gamma when every
    // training lottery has p = 1/2; alpha and delta jointly when a pool's lotteries all share one
    // probability and a zero second prize, so that only w(p)^(1/alpha) matters): any value on the
    // flat set is a least-squares solution, and where on it a local optimiser stops depends on the
    // starting point. Convention: report the most restricted model that attains the same minimum,
    // i.e. put free parameters at their defaults (the values they have in the restricted models),
    // one at a time in the order alpha, beta, delta, gamma, refitting the others, and keep each
    // restriction that leaves the training objective unchanged (relative 1e-13).
    if best.sse.is_finite() {
        restrict_unidentified(&resid, m, spec, ss_within, &mut best, opts);
    }
    let mut theta = spec.theta.clone();
    for (j, &i) in spec.free.iter().enumerate() {
        theta[i] = best.x[j];
    }
    let mse: Vec<f64> = (0..c.count.len()).map(|d| domain_mse(family, &theta, c, d)).collect();
    SubsetFit {
        theta,
        train_mse: if n_obs > 0 { (best.sse + ss_within) / n_obs as f64 } else { f64::NAN },
        mse,
        converged: best.converged && best.sse.is_finite(),
        iterations: best.iterations,
        status: best.status,
    }
}

/// Fit one model per training subset (`subsets` holds `n_subsets · r` domain indices, row-major),
/// in parallel over subsets. The caller runs this inside a sized pool (see
/// `common::parallel::install`).
pub fn fit_subsets(spec: &ModelSpec, data: &Lotteries, subsets: &[usize], r: usize, opts: &LmOptions) -> CoreResult<Vec<SubsetFit>> {
    spec.check()?;
    data.check()?;
    let n = data.n_domains();
    if r == 0 {
        return Err(CoreError::invalid("r", "each training subset needs at least one domain"));
    }
    if subsets.len() % r != 0 {
        return Err(CoreError::invalid("subsets", format!("length {} is not a multiple of r = {r}", subsets.len())));
    }
    if let Some(i) = subsets.iter().position(|&d| d >= n) {
        // the value is a domain's index too: R reads both 1-based
        return Err(CoreError::invalid_at(
            "subsets",
            vec![
                Part::at("entry", i),
                Part::text(" is "),
                Part::at("domain", subsets[i]),
                Part::text(format!(" but there are only {n} domains")),
            ],
        ));
    }
    if !(opts.max_iter > 0) {
        return Err(CoreError::invalid("max_iter", "must be at least 1"));
    }
    let c = compress(data);
    Ok(subsets.par_chunks(r).map(|doms| fit_rows(spec, &c, doms, opts)).collect())
}

/// Predictions of the full parameter vector `theta` on many lotteries.
pub fn predict(family: Family, theta: &[f64], z1: &[f64], z2: &[f64], p: &[f64]) -> CoreResult<Vec<f64>> {
    check::same_len("theta", theta.len(), "family parameters", family.n_params())?;
    check::same_len("z2", z2.len(), "z1", z1.len())?;
    check::same_len("p", p.len(), "z1", z1.len())?;
    Ok(z1.iter().zip(z2).zip(p).map(|((&a, &b), &q)| predict_one(family, theta, a, b, q)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crra_spec() -> ModelSpec {
        ModelSpec {
            family: Family::EuCrra,
            theta: vec![0.5],
            free: vec![0],
            lower: vec![0.0],
            upper: vec![100.0],
            starts: vec![vec![0.2], vec![1.5]],
        }
    }

    #[test]
    fn crra_closed_forms_and_limits() {
        // (10, 0, 1/2): CE = 10 * 0.5^(1/rho)
        let eta = 0.3;
        assert!((crra_ce(eta, 10.0, 0.0, 0.5) - 10.0 * 0.5f64.powf(1.0 / 0.7)).abs() < 1e-12);
        // power mean form for positive prizes
        let (z1, z2, p, rho): (f64, f64, f64, f64) = (20.0, 10.0, 0.1, 0.6);
        let direct = (p * z1.powf(rho) + (1.0 - p) * z2.powf(rho)).powf(1.0 / rho);
        assert!((crra_ce(1.0 - rho, z1, z2, p) - direct).abs() < 1e-12);
        // log case is the geometric mean and the formula is continuous through eta = 1
        let geo = 20f64.powf(0.1) * 10f64.powf(0.9);
        assert!((crra_ce(1.0, 20.0, 10.0, 0.1) - geo).abs() < 1e-12);
        assert!((crra_ce(1.0 + 1e-9, 20.0, 10.0, 0.1) - geo).abs() < 1e-7);
        // eta > 1 with a zero prize: CE = 0
        assert_eq!(crra_ce(2.0, 10.0, 0.0, 0.7), 0.0);
        // losses mirror gains
        assert!((crra_ce(0.4, -20.0, -10.0, 0.3) + crra_ce(0.4, 20.0, 10.0, 0.3)).abs() < 1e-12);
        // risk neutral
        assert!((crra_ce(0.0, 20.0, 10.0, 0.3) - 13.0).abs() < 1e-12);
        // mixed lotteries: odd power for eta < 1, NaN otherwise
        assert!(crra_ce(0.5, 10.0, -5.0, 0.5).is_finite());
        assert!(crra_ce(1.5, 10.0, -5.0, 0.5).is_nan());
    }

    #[test]
    fn cara_and_cpt_closed_forms() {
        let (a, z1, z2, p): (f64, f64, f64, f64) = (0.05, 20.0, 10.0, 0.3);
        let direct = -(p * (-a * z1).exp() + (1.0 - p) * (-a * z2).exp()).ln() / a;
        assert!((cara_ce(a, z1, z2, p) - direct).abs() < 1e-12);
        assert!((cara_ce(0.0, z1, z2, p) - 13.0).abs() < 1e-12);
        assert!(cara_ce(5.0, 1e5, 1e4, 0.5).is_finite());
        // CPT with all parameters 1 is risk neutral
        assert!((cpt_ce(1.0, 1.0, 1.0, 1.0, 20.0, 10.0, 0.3) - 13.0).abs() < 1e-12);
        // gamma-only variant
        let g: f64 = 0.6;
        let w = 0.3f64.powf(g) / (0.3f64.powf(g) + 0.7f64.powf(g));
        assert!((cpt_ce(1.0, 1.0, 1.0, g, 20.0, 10.0, 0.3) - (w * 20.0 + (1.0 - w) * 10.0)).abs() < 1e-12);
        // losses use beta
        let v = -(0.5 * 10f64.powf(0.5));
        assert!((cpt_ce(0.7, 0.5, 1.0, 1.0, -10.0, 0.0, 0.5) - (-(-v).powf(2.0))).abs() < 1e-12);
    }

    #[test]
    fn stylized_example_t8() {
        // docs/methods/transfer.md T8: CRRA on (10, 0, 1/2; 3) gives eta = 0.42428, prediction 10.867 on (20, 10, 0.1)
        let (z1, z2, p, y) = ([10.0, 20.0], [0.0, 10.0], [0.5, 0.1], [3.0, 11.0]);
        let off = [0usize, 1, 2];
        let data = Lotteries { z1: &z1, z2: &z2, p: &p, y: &y, offsets: &off };
        let fits = fit_subsets(&crra_spec(), &data, &[0], 1, &LmOptions::default()).unwrap();
        let f = &fits[0];
        assert!(f.converged, "{}", f.status);
        let exact = 1.0 - (0.5f64).ln() / (0.3f64).ln();
        assert!((f.theta[0] - exact).abs() < 1e-8, "{} vs {exact}", f.theta[0]);
        assert!((f.theta[0] - 0.42428).abs() < 1e-4);
        assert!(f.mse[0] < 1e-16);
        assert!((f.mse[1] - 0.01764).abs() < 1e-4, "{}", f.mse[1]);
    }

    #[test]
    fn recovers_cpt_parameters_from_noiseless_data() {
        let truth = [0.8, 0.6, 0.9, 0.65];
        let mut z1 = vec![];
        let mut z2 = vec![];
        let mut p = vec![];
        for (i, &a) in [5.0, 10.0, 20.0, -10.0, -20.0, 40.0].iter().enumerate() {
            for &q in &[0.05, 0.25, 0.5, 0.75, 0.95] {
                z1.push(a);
                z2.push(if i % 2 == 0 { 0.0 } else { a / 4.0 });
                p.push(q);
            }
        }
        let y: Vec<f64> = (0..z1.len()).map(|i| cpt_ce(truth[0], truth[1], truth[2], truth[3], z1[i], z2[i], p[i])).collect();
        let off = [0usize, y.len()];
        let data = Lotteries { z1: &z1, z2: &z2, p: &p, y: &y, offsets: &off };
        let spec = ModelSpec {
            family: Family::Cpt,
            theta: vec![1.0; 4],
            free: vec![0, 1, 2, 3],
            lower: vec![1e-3, 1e-3, 1e-3, 1e-3],
            upper: vec![1.0, 1.0, 1e3, 1.0],
            starts: vec![vec![0.5, 0.5, 1.0, 0.5], vec![1.0, 1.0, 1.0, 1.0]],
        };
        let f = &fit_subsets(&spec, &data, &[0], 1, &LmOptions::default()).unwrap()[0];
        for k in 0..4 {
            assert!((f.theta[k] - truth[k]).abs() < 1e-6, "{:?}", f.theta);
        }
    }

    #[test]
    fn bounds_are_respected_and_active() {
        // data generated with gamma = 1 is fit with gamma <= 0.5: the optimum sits on the bound
        let z1 = [10.0, 10.0, 10.0];
        let z2 = [0.0, 0.0, 0.0];
        let p = [0.1, 0.5, 0.9];
        let y: Vec<f64> = p.iter().map(|q| 10.0 * q).collect();
        let off = [0usize, 3];
        let data = Lotteries { z1: &z1, z2: &z2, p: &p, y: &y, offsets: &off };
        let spec = ModelSpec { family: Family::Cpt, theta: vec![1.0; 4], free: vec![3], lower: vec![0.01], upper: vec![0.5], starts: vec![vec![0.2]] };
        let f = &fit_subsets(&spec, &data, &[0], 1, &LmOptions::default()).unwrap()[0];
        assert!(f.converged);
        assert_eq!(f.theta[3], 0.5);
    }

    #[test]
    fn unidentified_parameters_take_their_default() {
        // gains-only data: beta never enters, so it is reported at its default 1 from any start
        let z1 = [10.0, 20.0, 10.0, 40.0];
        let z2 = [0.0, 5.0, 2.0, 0.0];
        let p = [0.2, 0.5, 0.7, 0.9];
        let y: Vec<f64> = (0..4).map(|i| cpt_ce(0.7, 0.3, 1.0, 1.0, z1[i], z2[i], p[i])).collect();
        let off = [0usize, 4];
        let data = Lotteries { z1: &z1, z2: &z2, p: &p, y: &y, offsets: &off };
        let spec = ModelSpec { family: Family::Cpt, theta: vec![1.0; 4], free: vec![0, 1], lower: vec![1e-6; 2], upper: vec![1.0; 2], starts: vec![vec![0.4, 0.4]] };
        let f = &fit_subsets(&spec, &data, &[0], 1, &LmOptions::default()).unwrap()[0];
        assert!((f.theta[0] - 0.7).abs() < 1e-7, "{:?}", f.theta);
        assert_eq!(f.theta[1], 1.0);
    }

    #[test]
    fn cpt_is_accurate_for_tiny_alpha_and_beta() {
        // as alpha -> 0 the gain CE tends to the weighted geometric mean z1^w z2^(1-w); at alpha =
        // 1e-8 it differs from the limit by O(alpha), far below the 1e-8 error of the direct powers
        let (z1, z2, p): (f64, f64, f64) = (40.0, 10.0, 0.3);
        let w = 0.3f64.powf(0.5) / (0.3f64.powf(0.5) + 0.7f64.powf(0.5));
        let limit = z1.powf(w) * z2.powf(1.0 - w);
        let got = cpt_ce(1e-12, 1.0, 1.0, 0.5, z1, z2, p);
        assert!((got - limit).abs() <= 1e-10 * limit, "{got} vs {limit}");
        // same for losses with beta
        let got = cpt_ce(1.0, 1e-12, 1.0, 0.5, -z1, -z2, p);
        assert!((got + limit).abs() <= 1e-10 * limit, "{got} vs {}", -limit);
        // the two forms agree where they meet (alpha, beta = 1e-3)
        for &(z1, z2, p) in &[(40.0, 10.0, 0.3), (-40.0, -10.0, 0.3), (40.0, -10.0, 0.5), (10.0, 0.0, 0.1)] {
            let (lo, hi) = (cpt_ce(1e-3 * (1.0 - 1e-12), 1e-3, 1.0, 0.5, z1, z2, p), cpt_ce(1e-3, 1e-3, 1.0, 0.5, z1, z2, p));
            assert!((lo - hi).abs() <= 1e-11 * hi.abs().max(1.0), "{lo} vs {hi}");
        }
        // moderate parameters: the direct formula
        let (a, b, d, g) = (0.7, 0.6, 0.9, 0.65);
        for &(z1, z2, p) in &[(20.0, 5.0, 0.3), (-20.0, -5.0, 0.6), (20.0, -5.0, 0.5), (5.0, -20.0, 0.5), (10.0, 0.0, 0.1), (-10.0, 0.0, 0.9)] {
            let w = d * f64::powf(p, g) / (d * f64::powf(p, g) + f64::powf(1.0 - p, g));
            let v = |z: f64| if z >= 0.0 { z.powf(a) } else { -(-z).powf(b) };
            let u = w * v(z1) + (1.0 - w) * v(z2);
            let direct = if u >= 0.0 { u.powf(1.0 / a) } else { -(-u).powf(1.0 / b) };
            assert!((cpt_ce(a, b, d, g, z1, z2, p) - direct).abs() <= 1e-12 * direct.abs().max(1.0), "{z1} {z2} {p}");
        }
    }

    #[test]
    fn jointly_unidentified_parameters_give_the_most_restricted_fit() {
        // every lottery has p = 1/2 and z2 = 0: CE = w^(1/alpha) z1 with w = delta/(1+delta), so
        // (alpha, delta) are identified only through w^(1/alpha), and beta, gamma not at all.
        // From any start the fit is alpha = beta = gamma = 1 and w = the CE ratio.
        let z1 = [10.0, 20.0, 10.0, 20.0];
        let z2 = [0.0; 4];
        let p = [0.5; 4];
        let y: Vec<f64> = (0..4).map(|i| cpt_ce(0.6, 0.8, 0.7, 0.9, z1[i], z2[i], p[i]) + if i < 2 { 0.1 } else { -0.1 }).collect();
        let off = [0usize, 4];
        let data = Lotteries { z1: &z1, z2: &z2, p: &p, y: &y, offsets: &off };
        // least-squares w of the model CE = w z1: sum(z1 y) / sum(z1^2)
        let w_ls = (10.0 * (y[0] + y[2]) + 20.0 * (y[1] + y[3])) / (2.0 * (100.0 + 400.0));
        for start in [[0.05, 0.3, 20.0, 0.2], [0.5, 0.5, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0]] {
            let spec = ModelSpec { family: Family::Cpt, theta: vec![1.0; 4], free: vec![0, 1, 2, 3], lower: vec![1e-8; 4], upper: vec![1.0, 1.0, 1e6, 1.0], starts: vec![start.to_vec()] };
            let f = &fit_subsets(&spec, &data, &[0], 1, &LmOptions::default()).unwrap()[0];
            assert_eq!((f.theta[0], f.theta[1], f.theta[3]), (1.0, 1.0, 1.0), "{:?}", f.theta);
            let w = f.theta[2] / (1.0 + f.theta[2]);
            assert!((w - w_ls).abs() < 1e-9, "{w} vs {w_ls}");
            // the restricted fit attains the unrestricted minimum: the residual SSE of the w-only model
            let sse_ls: f64 = (0..4).map(|i| (w_ls * z1[i] - y[i]).powi(2)).sum();
            assert!((f.train_mse * 4.0 - sse_ls).abs() <= 1e-12 * sse_ls.max(1.0), "{} vs {sse_ls}", f.train_mse * 4.0);
        }
    }

    #[test]
    fn grouping_by_lottery_keeps_the_mses() {
        // 3 distinct lotteries repeated with different outcomes in two domains
        let z1 = [10.0, 10.0, 20.0, 10.0, 20.0, -5.0, -5.0, 10.0];
        let z2 = [0.0, 0.0, 5.0, 0.0, 5.0, 0.0, 0.0, 0.0];
        let p = [0.5, 0.5, 0.3, 0.5, 0.3, 0.2, 0.2, 0.5];
        let y = [3.0, 4.5, 8.0, 2.0, 9.5, -1.0, -2.5, 5.0];
        let off = [0usize, 5, 8];
        let data = Lotteries { z1: &z1, z2: &z2, p: &p, y: &y, offsets: &off };
        let c = compress(&data);
        assert_eq!(c.offsets, vec![0, 2, 4]);
        assert_eq!(c.count, vec![5, 3]);
        let theta = [0.8, 0.7, 1.1, 0.6];
        for d in 0..2 {
            let direct: f64 = (off[d]..off[d + 1])
                .map(|i| (cpt_ce(theta[0], theta[1], theta[2], theta[3], z1[i], z2[i], p[i]) - y[i]).powi(2))
                .sum::<f64>() / (off[d + 1] - off[d]) as f64;
            assert!((domain_mse(Family::Cpt, &theta, &c, d) - direct).abs() < 1e-12 * direct.max(1.0));
        }
    }

    #[test]
    fn authors_crra_counts_a_zero_prize_as_one() {
        let rho: f64 = 0.6;
        let want = (0.5 * 10f64.powf(rho) + 0.5).powf(1.0 / rho);
        assert!((predict_one(Family::EuCrraAuthors, &[1.0 - rho], 10.0, 0.0, 0.5) - want).abs() < 1e-12);
        assert!((predict_one(Family::EuCrraAuthors, &[1.0 - rho], -10.0, 0.0, 0.5) + want).abs() < 1e-12);
        // nonzero prizes: same as the paper's formula
        assert_eq!(predict_one(Family::EuCrraAuthors, &[0.3], 10.0, 2.0, 0.5), crra_ce(0.3, 10.0, 2.0, 0.5));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let data = Lotteries { z1: &[1.0], z2: &[0.0], p: &[0.5], y: &[0.4], offsets: &[0, 1] };
        let opts = LmOptions::default();
        assert!(fit_subsets(&crra_spec(), &data, &[1], 1, &opts).is_err());
        assert!(fit_subsets(&crra_spec(), &data, &[0], 0, &opts).is_err());
        let bad = Lotteries { p: &[1.5], ..data };
        assert!(fit_subsets(&crra_spec(), &bad, &[0], 1, &opts).is_err());
        let bad = Lotteries { offsets: &[0, 0, 1], ..data };
        assert!(fit_subsets(&crra_spec(), &bad, &[0], 1, &opts).unwrap_err().to_string().contains("no rows"));
        let mut spec = crra_spec();
        spec.lower = vec![2.0];
        spec.upper = vec![1.0];
        assert!(fit_subsets(&spec, &data, &[0], 1, &opts).is_err());
        // a start where the model is undefined is reported, not a panic
        let mixed = Lotteries { z1: &[10.0], z2: &[-5.0], p: &[0.5], y: &[1.0], offsets: &[0, 1] };
        let spec = ModelSpec { starts: vec![vec![1.5]], ..crra_spec() };
        let f = &fit_subsets(&spec, &mixed, &[0], 1, &opts).unwrap()[0];
        assert!(!f.converged);
    }
}
