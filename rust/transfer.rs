//! Inference on a transfer-error table (Andrews, Fudenberg, Lei, Liang & Wu, "The Transfer
//! Performance of Economic Models", 2025; `specs/transfer.md` §2–4, algorithms A2–A7).
//!
//! A table holds N errors, K per test domain, over n domains. [`SortedTable`] sorts the pooled
//! errors once (ties broken by input position, i.e. by (test, train) for our tables) and answers:
//!
//! * pooled forecast intervals [e̲_τ, ē_τ] = [f_(N+1−k), f_(k)], k = ⌈τN⌉ (A2, Prop. 1);
//! * weighted intervals with test-domain likelihood ratios w_d (A3, Theorem 1, eq. 7);
//! * worst-case upper bounds ē_τ(Γ) over w ∈ [Γ⁻¹, Γ]^n (A4, Theorem R.2, Corollary R.1), as a
//!   curve over j and as an exact step function of Γ (its breakpoints Γ*_j, spec §3.3);
//! * everywhere dominance between two tables (A6) with the two-point LP closed form (A7).
//!
//! Levels are compared with [`LEVEL_TOL`] on the probability scale, as in `quantiles.rs`.

use crate::common::errors::{check, CoreError, CoreResult};
use crate::common::numerics::compensated_cumsum;
use crate::common::quantiles::{upper_rank, LEVEL_TOL};
use rayon::prelude::*;

/// Pooled errors of one table, sorted ascending, with the test domain of each.
#[derive(Debug, Clone)]
pub struct SortedTable {
    /// f_(1) ≤ … ≤ f_(N).
    pub values: Vec<f64>,
    /// Test domain d^{(j)} of each sorted error.
    pub test: Vec<u32>,
    /// Number of domains.
    pub n: usize,
    /// Errors per test domain.
    pub k: usize,
}

/// Multiset of per-domain counts kept sorted under increments (the bucket trick of spec A4):
/// O(1) per increment, sorted order always available.
struct SortedCounts {
    count: Vec<u32>,
    /// `who[p]`: domain at sorted position p (counts ascending).
    who: Vec<u32>,
    /// `pos[d]`: sorted position of domain d.
    pos: Vec<usize>,
    /// `first[c]`: first sorted position holding count ≥ c (block start of count c).
    first: Vec<usize>,
}

impl SortedCounts {
    fn new(n: usize, kmax: usize) -> Self {
        let mut first = vec![n; kmax + 2];
        first[0] = 0;
        Self { count: vec![0; n], who: (0..n as u32).collect(), pos: (0..n).collect(), first }
    }

    fn increment(&mut self, d: usize) {
        let c = self.count[d] as usize;
        let q = self.first[c + 1] - 1; // last position of block c
        let p = self.pos[d];
        let other = self.who[q] as usize;
        self.who.swap(p, q);
        self.pos[d] = q;
        self.pos[other] = p;
        self.first[c + 1] -= 1;
        self.count[d] += 1;
    }

    fn min(&self) -> u32 {
        self.count[self.who[0] as usize]
    }

    /// Counts in ascending order.
    fn sorted(&self) -> impl Iterator<Item = u32> + '_ {
        self.who.iter().map(move |&d| self.count[d as usize])
    }
}

impl SortedTable {
    /// Validate (finite values, test ids in 0..n, every domain K times) and sort once.
    pub fn new(values: &[f64], test: &[i64], n: usize) -> CoreResult<Self> {
        check::finite("values", values)?;
        check::same_len("values", values.len(), "test", test.len())?;
        if n < 2 {
            return Err(CoreError::invalid("n", format!("need at least 2 domains; got {n}")));
        }
        let mut counts = vec![0usize; n];
        for (i, &t) in test.iter().enumerate() {
            if t < 0 || t as usize >= n {
                return Err(CoreError::invalid("test", format!("test-domain index {t} at position {i} is outside 0..{n}")));
            }
            counts[t as usize] += 1;
        }
        let k = values.len() / n;
        if k == 0 || values.len() % n != 0 || counts.iter().any(|&c| c != k) {
            return Err(CoreError::invalid("test", "every test domain must appear equally often (K times)"));
        }
        let mut order: Vec<u32> = (0..values.len() as u32).collect();
        let cmp = |a: &u32, b: &u32| values[*a as usize].total_cmp(&values[*b as usize]).then(a.cmp(b));
        if order.len() >= crate::common::parallel::PARALLEL_MIN_ITEMS {
            order.par_sort_unstable_by(cmp);
        } else {
            order.sort_unstable_by(cmp);
        }
        Ok(Self {
            values: order.iter().map(|&i| values[i as usize]).collect(),
            test: order.iter().map(|&i| test[i as usize] as u32).collect(),
            n,
            k,
        })
    }

    /// N.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Always false (a table has at least n ≥ 2 errors).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    fn at(&self, rank: usize) -> f64 {
        if rank == 0 {
            f64::NEG_INFINITY
        } else if rank > self.len() {
            f64::INFINITY
        } else {
            self.values[rank - 1]
        }
    }

    /// ē_τ = f_(⌈τN⌉) (−∞ at τ = 0).
    pub fn upper(&self, tau: f64) -> f64 {
        self.at(upper_rank(self.len(), tau))
    }

    /// e̲_τ = Q̲_{1−τ}(F_M) = f_(N+1−⌈τN⌉) (+∞ at τ = 0).
    pub fn lower(&self, tau: f64) -> f64 {
        let k = upper_rank(self.len(), tau);
        self.at(self.len() + 1 - k)
    }

    /// Weighted interval (e̲^ω_τ, ē^ω_τ) for each τ, with test-domain weights `w` (eq. 7).
    pub fn weighted(&self, w: &[f64], taus: &[f64]) -> CoreResult<(Vec<f64>, Vec<f64>)> {
        check::same_len("weights", w.len(), "domains", self.n)?;
        check::weights("weights", w)?;
        check::probability("tau", taus)?;
        let atoms: Vec<f64> = self.test.iter().map(|&d| w[d as usize]).collect();
        let c = compensated_cumsum(&atoms);
        let total = c[c.len() - 1];
        let nn = self.len();
        let mut lo = Vec::with_capacity(taus.len());
        let mut hi = Vec::with_capacity(taus.len());
        for &tau in taus {
            if tau <= 0.0 {
                lo.push(f64::INFINITY);
                hi.push(f64::NEG_INFINITY);
                continue;
            }
            let target = (tau - LEVEL_TOL) * total;
            let j = c.partition_point(|&x| x < target).min(nn - 1);
            hi.push(self.values[j]);
            // L = max{j : c_{j-1} <= (1 - τ) total}, c_0 = 0.
            let budget = (1.0 - tau + LEVEL_TOL) * total;
            let count = 1 + c[..nn - 1].partition_point(|&x| x <= budget);
            lo.push(self.values[count - 1]);
        }
        Ok((lo, hi))
    }

    /// p_j = Q_j(Γ)/K for j = 1..N (Corollary R.1): ē_τ(Γ) = f_(min{j : p_j ≥ τ}).
    /// O(N) for Γ ∈ {1, ∞}, O(N·n) otherwise.
    pub fn worst_case_p(&self, gamma: f64) -> CoreResult<Vec<f64>> {
        check_gamma(gamma)?;
        let (n, kk, nn) = (self.n as f64, self.k as f64, self.len());
        if gamma == 1.0 {
            return Ok((1..=nn).map(|j| j as f64 / n / kk).collect());
        }
        let mut sc = SortedCounts::new(self.n, self.k);
        let s = gamma * gamma - 1.0;
        let mut p = Vec::with_capacity(nn);
        for j in 1..=nn {
            sc.increment(self.test[j - 1] as usize);
            let q = if gamma.is_infinite() { sc.min() as f64 } else { q_j(&sc, j, s, self.n) };
            p.push(q / kk);
        }
        // Q_N = K exactly; clean rounding at the top.
        p[nn - 1] = 1.0;
        Ok(p)
    }

    /// The exact step function Γ ↦ ē_τ(Γ) on [1, gamma_max] (spec §3.3): breakpoints
    /// g_0 < g_1 < … and values v_i, with ē_τ(Γ) = v_i for Γ ∈ (g_{i−1}, g_i] (g_{−1} = 1, the
    /// first piece closed at 1). The last breakpoint is ≥ gamma_max (possibly +∞).
    pub fn gamma_steps(&self, tau: f64, gamma_max: f64) -> CoreResult<(Vec<f64>, Vec<f64>)> {
        check_tau_open(tau)?;
        check_gamma(gamma_max)?;
        let nn = self.len();
        let t = tau - LEVEL_TOL;
        let j0 = upper_rank(nn, tau).max(1);
        let mut sc = SortedCounts::new(self.n, self.k);
        for j in 1..j0 {
            sc.increment(self.test[j - 1] as usize);
        }
        let n = self.n as f64;
        let big_c_base = t * nn as f64; // τ'N
        let (mut gs, mut vs): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
        let mut best = 0.0f64; // running max of Γ*_j (Γ* ≥ 1 for j ≥ τ'N)
        for j in j0..=nn {
            sc.increment(self.test[j - 1] as usize);
            let g = gamma_star(&sc, j, (big_c_base - j as f64).min(0.0), n);
            if g > best {
                let v = self.values[j - 1];
                if vs.last() == Some(&v) {
                    *gs.last_mut().expect("non-empty") = g;
                } else {
                    gs.push(g);
                    vs.push(v);
                }
                best = g;
                if g >= gamma_max {
                    break;
                }
            }
        }
        Ok((gs, vs))
    }

    /// ē_τ(Γ) by the scan from ⌈τN⌉ (spec A4, one τ).
    pub fn worst_case_upper(&self, tau: f64, gamma: f64) -> CoreResult<f64> {
        let (gs, vs) = self.gamma_steps(tau, gamma)?;
        Ok(step_value(&gs, &vs, gamma))
    }
}

fn check_gamma(gamma: f64) -> CoreResult<()> {
    if gamma.is_nan() || gamma < 1.0 {
        return Err(CoreError::invalid("Gamma", format!("must be >= 1 (Inf allowed); got {gamma}")));
    }
    Ok(())
}

fn check_tau_open(tau: f64) -> CoreResult<()> {
    if !(tau > 0.0 && tau <= 1.0) {
        return Err(CoreError::invalid("tau", format!("must lie in (0, 1]; got {tau}")));
    }
    Ok(())
}

/// Q_j(Γ) = j/n + min_k s(P_k − k j/n)/(s k + n), s = Γ² − 1 (Theorem R.2), in count units.
fn q_j(sc: &SortedCounts, j: usize, s: f64, n: usize) -> f64 {
    let jn = j as f64 / n as f64;
    let mut pk = 0.0;
    let mut best = 0.0f64;
    for (k, c) in sc.sorted().enumerate() {
        pk += c as f64;
        let kk = (k + 1) as f64;
        let v = s * (pk - kk * jn) / (s * kk + n as f64);
        if v < best {
            best = v;
        }
    }
    jn + best
}

/// Γ*_j = sqrt(1 + min_{k : nP_k − kj − Ck < 0} nC/(nP_k − kj − Ck)), with C = τN − j ≤ 0
/// (spec §3.3, multiplied through by n). +∞ when no k qualifies.
fn gamma_star(sc: &SortedCounts, j: usize, big_c: f64, n: f64) -> f64 {
    let mut pk = 0.0;
    let mut s_star = f64::INFINITY;
    for (k, c) in sc.sorted().enumerate() {
        pk += c as f64;
        let kk = (k + 1) as f64;
        let den = n * pk - kk * j as f64 - big_c * kk;
        if den < 0.0 {
            let s = n * big_c / den;
            if s < s_star {
                s_star = s;
            }
        }
    }
    if s_star.is_infinite() {
        f64::INFINITY
    } else {
        (1.0 + s_star.max(0.0)).sqrt()
    }
}

/// Value of a step function from [`SortedTable::gamma_steps`] at Γ.
pub fn step_value(gs: &[f64], vs: &[f64], gamma: f64) -> f64 {
    let i = gs.partition_point(|&g| g < gamma).min(vs.len() - 1);
    vs[i]
}

/// Worst-case dominance at τ over Γ ∈ [1, gamma_max] (Definition 7), exactly: ē₁(Γ) ≤ ē₂(Γ) is
/// checked at every breakpoint of both step functions (and at gamma_max). Returns (dominates,
/// Γ*) with Γ* the largest Γ up to which dominance holds (gamma_max if it always does, NaN if it
/// fails already at Γ = 1).
pub fn worst_case_dominance(t1: &SortedTable, t2: &SortedTable, tau: f64, gamma_max: f64) -> CoreResult<(bool, f64)> {
    if t1.n != t2.n || t1.k != t2.k {
        return Err(CoreError::invalid("err2", "both tables must have the same domains and design"));
    }
    let (g1, v1) = t1.gamma_steps(tau, gamma_max)?;
    let (g2, v2) = t2.gamma_steps(tau, gamma_max)?;
    let (mut i1, mut i2) = (0usize, 0usize);
    let mut prev = f64::NAN;
    loop {
        // next evaluation point: the smaller pending breakpoint, capped at gamma_max
        let p = g1[i1].min(g2[i2]).min(gamma_max);
        if v1[i1] > v2[i2] {
            return Ok((false, prev));
        }
        if p >= gamma_max {
            return Ok((true, gamma_max));
        }
        prev = p;
        if g1[i1] <= p && i1 + 1 < g1.len() {
            i1 += 1;
        }
        if g2[i2] <= p && i2 + 1 < g2.len() {
            i2 += 1;
        }
    }
}

/// Everywhere-dominance variants (spec §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EverywhereMode {
    /// No pruning, m(j) with strict '>', violation iff LP* < τ (closed simplex). Correct.
    Exact,
    /// Exact plus the paper's invalid pruning j ≥ ⌈τN⌉ (reproduces Table 2).
    Paper,
    /// transferUQ 0.1.0: pruning j ≥ ceiling(τN), m(j) with '≥', "dominates" as soon as no m(j)
    /// exists, Ψ1 at index 0 read as R's x[1:0] (the first element), LP constraint Ψ2ᵀv ≥ τ in
    /// count units (not τK), violation iff LP*/K ≤ τ.
    TransferUq,
}

/// A violation of everywhere dominance: the ranks and a weight vector (on the simplex) that
/// make ē₁^w > ē₂^w (up to the closed-simplex caveat).
#[derive(Debug, Clone, PartialEq)]
pub struct Witness {
    /// 1-based rank j in method 2's sorted errors.
    pub j: usize,
    /// 1-based rank m(j) in method 1's sorted errors.
    pub m: usize,
    /// Support of v: (domain, weight), at most two entries.
    pub support: Vec<(usize, f64)>,
}

/// Two-point LP closed form (A7): min aᵀv s.t. bᵀv ≥ τ, 𝟙ᵀv = 1, v ≥ 0. Returns the optimum
/// (+∞ if infeasible) and an optimal support of ≤ 2 coordinates. O(n²).
pub fn lp2_simplex(a: &[f64], b: &[f64], tau: f64) -> CoreResult<(f64, Vec<(usize, f64)>)> {
    check::same_len("a", a.len(), "b", b.len())?;
    check::finite("a", a)?;
    check::finite("b", b)?;
    let mut best = f64::INFINITY;
    let mut sup: Vec<(usize, f64)> = Vec::new();
    for i in 0..a.len() {
        if b[i] >= tau && a[i] < best {
            best = a[i];
            sup = vec![(i, 1.0)];
        }
    }
    for h in 0..a.len() {
        if b[h] <= tau {
            continue;
        }
        for l in 0..a.len() {
            if b[l] >= tau {
                continue;
            }
            let lam = (tau - b[l]) / (b[h] - b[l]);
            let v = lam * a[h] + (1.0 - lam) * a[l];
            if v < best {
                best = v;
                sup = vec![(h, lam), (l, 1.0 - lam)];
            }
        }
    }
    Ok((best, sup))
}

/// Is there v on the simplex with Σ v g ≥ 0 and Σ v h > 0 (≥ 0 when `weak`)? O(n). Returns the
/// support of such a v. This is "LP* < τ" for g = b − τ, h = τ − a.
fn lp_violation(g: &[f64], h: &[f64], weak: bool) -> Option<Vec<(usize, f64)>> {
    let pos = |x: f64| if weak { x >= 0.0 } else { x > 0.0 };
    let (mut alpha, mut ia) = (f64::NEG_INFINITY, usize::MAX);
    let (mut beta, mut ib) = (f64::NEG_INFINITY, usize::MAX);
    for i in 0..g.len() {
        if g[i] >= 0.0 {
            if pos(h[i]) {
                return Some(vec![(i, 1.0)]);
            }
            if g[i] > 0.0 {
                let r = h[i] / g[i];
                if r > alpha {
                    alpha = r;
                    ia = i;
                }
            }
        } else {
            let r = h[i] / (-g[i]);
            if r > beta {
                beta = r;
                ib = i;
            }
        }
    }
    if ia != usize::MAX && ib != usize::MAX && pos(alpha + beta) {
        let lam = -g[ib] / (g[ia] - g[ib]);
        return Some(vec![(ia, lam), (ib, 1.0 - lam)]);
    }
    None
}

/// Everywhere dominance of method 1 over method 2 at each τ (A6). Returns, per τ, `None` if
/// method 1 dominates, or a witness of the violation.
pub fn everywhere_dominance(
    t1: &SortedTable, t2: &SortedTable, taus: &[f64], mode: EverywhereMode,
) -> CoreResult<Vec<Option<Witness>>> {
    if t1.n != t2.n || t1.k != t2.k {
        return Err(CoreError::invalid("err2", "both tables must have the same domains and design"));
    }
    for &t in taus {
        check_tau_open(t)?;
    }
    Ok(taus.par_iter().map(|&tau| everywhere_one(t1, t2, tau, mode)).collect())
}

fn everywhere_one(t1: &SortedTable, t2: &SortedTable, tau: f64, mode: EverywhereMode) -> Option<Witness> {
    let (n, nn, kk) = (t1.n, t1.len(), t1.k as f64);
    let package = mode == EverywhereMode::TransferUq;
    let tprime = tau - LEVEL_TOL;
    let jstart = match mode {
        EverywhereMode::Exact => 1,
        EverywhereMode::Paper => upper_rank(nn, tau).max(1),
        EverywhereMode::TransferUq => ((tau * nn as f64).ceil() as usize).max(1),
    };
    let need_b = if package { tau } else { tprime * kk }; // b-threshold in count units
    let need_a = if package { tau * kk } else { tprime * kk }; // a-threshold in count units
    let mut c1 = vec![0u32; n];
    let mut c2 = vec![0u32; n];
    let mut hist1 = vec![0usize; t1.k + 2]; // hist1[c] = #domains with c1 == c
    hist1[0] = n;
    let mut min1 = 0usize;
    let mut max2 = 0u32;
    let mut nviol = 0usize; // #{i : c1_i < c2_i}
    let mut m1 = 0usize; // elements of method 1 consumed (= m(j) − 1)
    let mut g = vec![0.0f64; n];
    let mut h = vec![0.0f64; n];
    for j in 1..=nn {
        let d2 = t2.test[j - 1] as usize;
        if c1[d2] == c2[d2] {
            nviol += 1;
        }
        c2[d2] += 1;
        max2 = max2.max(c2[d2]);
        if j < jstart {
            continue;
        }
        let target = t2.values[j - 1];
        while m1 < nn && (if package { t1.values[m1] < target } else { t1.values[m1] <= target }) {
            let d1 = t1.test[m1] as usize;
            if c1[d1] + 1 == c2[d1] {
                nviol -= 1;
            }
            hist1[c1[d1] as usize] -= 1;
            c1[d1] += 1;
            hist1[c1[d1] as usize] += 1;
            while hist1[min1] == 0 {
                min1 += 1;
            }
            m1 += 1;
        }
        if m1 == nn {
            return None; // no f1 above f2_(j): nothing further can violate
        }
        // transferUQ reads Ψ1 at index 0 as x[1:0] = x[1]: the first element's domain only.
        let quirk = package && m1 == 0;
        let a_of = |i: usize| -> f64 {
            if quirk {
                if i == t1.test[0] as usize { 1.0 } else { 0.0 }
            } else {
                c1[i] as f64
            }
        };
        if package {
            let all_le = if quirk { (0..n).all(|i| c2[i] as f64 <= a_of(i)) } else { nviol == 0 };
            if all_le {
                continue;
            }
            let mina = if quirk { (0..n).map(a_of).fold(f64::INFINITY, f64::min) } else { min1 as f64 };
            if mina / kk > tau {
                continue;
            }
            if (max2 as f64) < need_b {
                // lpSolve reports an infeasible LP with objective 0 <= tau: a "violation".
                return Some(Witness { j, m: m1 + 1, support: Vec::new() });
            }
        } else {
            if (max2 as f64) < need_b || nviol == 0 || min1 as f64 >= need_a {
                continue;
            }
        }
        for i in 0..n {
            g[i] = c2[i] as f64 - need_b;
            h[i] = need_a - a_of(i);
        }
        if let Some(support) = lp_violation(&g, &h, package) {
            return Some(Witness { j, m: m1 + 1, support });
        }
    }
    None
}

/// Is there w ∈ [1/Γ, Γ]^n with gᵀw ≥ 0 and hᵀw > 0? By Lagrangian duality this holds iff
/// min_{μ ≥ 0} Σ_i max(c_i/Γ, Γ c_i) > 0 with c = h + μ g (convex piecewise linear in μ; the
/// minimum sits at μ = 0 or a kink μ_i = −h_i/g_i), and gᵀw ≥ 0 is feasible (Σ max(g/Γ, Γg) ≥ 0).
/// O(n²).
fn box_violation(g: &[f64], h: &[f64], gamma: f64) -> bool {
    let (lo, hi) = (1.0 / gamma, gamma);
    let up = |c: f64| if c >= 0.0 { hi * c } else { lo * c };
    if g.iter().map(|&x| up(x)).sum::<f64>() < 0.0 {
        return false;
    }
    let phi = |mu: f64| g.iter().zip(h).map(|(&gi, &hi_)| up(hi_ + mu * gi)).sum::<f64>();
    let mut best = phi(0.0);
    for i in 0..g.len() {
        if g[i] != 0.0 {
            let mu = -h[i] / g[i];
            if mu > 0.0 {
                best = best.min(phi(mu));
            }
        }
        if best <= 0.0 {
            return false;
        }
    }
    best > 0.0
}

/// Γ-bounded everywhere dominance (spec §4.3, an extension): does ē₁^w ≤ ē₂^w hold for every
/// w ∈ [1/Γ, Γ]^n? Returns `None` if so, else the ranks (j, m(j)) of a violation.
pub fn box_dominance_one(t1: &SortedTable, t2: &SortedTable, tau: f64, gamma: f64) -> Option<(usize, usize)> {
    let (n, nn, kk) = (t1.n, t1.len(), t1.k as f64);
    let need = (tau - LEVEL_TOL) * kk;
    let mut c1 = vec![0u32; n];
    let mut c2 = vec![0u32; n];
    let mut max2 = 0u32;
    let mut m1 = 0usize;
    let (mut g, mut h) = (vec![0.0f64; n], vec![0.0f64; n]);
    for j in 1..=nn {
        let d2 = t2.test[j - 1] as usize;
        c2[d2] += 1;
        max2 = max2.max(c2[d2]);
        let target = t2.values[j - 1];
        while m1 < nn && t1.values[m1] <= target {
            c1[t1.test[m1] as usize] += 1;
            m1 += 1;
        }
        if m1 == nn {
            return None;
        }
        if (max2 as f64) < need {
            continue;
        }
        for i in 0..n {
            g[i] = c2[i] as f64 - need;
            h[i] = need - c1[i] as f64;
        }
        if box_violation(&g, &h, gamma) {
            return Some((j, m1 + 1));
        }
    }
    None
}

/// Γ-bounded everywhere dominance at each τ (parallel over τ).
pub fn box_dominance(t1: &SortedTable, t2: &SortedTable, taus: &[f64], gamma: f64) -> CoreResult<Vec<bool>> {
    if t1.n != t2.n || t1.k != t2.k {
        return Err(CoreError::invalid("err2", "both tables must have the same domains and design"));
    }
    check_gamma(gamma)?;
    for &t in taus {
        check_tau_open(t)?;
    }
    Ok(taus.par_iter().map(|&tau| box_dominance_one(t1, t2, tau, gamma).is_none()).collect())
}

/// Critical Γ* of Γ-bounded everywhere dominance: the largest Γ ≤ gamma_max with dominance,
/// by bisection on log Γ (dominance is monotone in Γ, the boxes being nested). NaN if it fails at
/// Γ = 1, +∞ if it holds at gamma_max.
pub fn critical_gamma_box(t1: &SortedTable, t2: &SortedTable, taus: &[f64], gamma_max: f64) -> CoreResult<Vec<f64>> {
    if t1.n != t2.n || t1.k != t2.k {
        return Err(CoreError::invalid("err2", "both tables must have the same domains and design"));
    }
    check_gamma(gamma_max)?;
    for &t in taus {
        check_tau_open(t)?;
    }
    Ok(taus
        .par_iter()
        .map(|&tau| {
            let dom = |g: f64| box_dominance_one(t1, t2, tau, g).is_none();
            if !dom(1.0) {
                return f64::NAN;
            }
            if dom(gamma_max) {
                return f64::INFINITY;
            }
            let (mut lo, mut hi) = (0.0f64, gamma_max.ln());
            for _ in 0..60 {
                let mid = 0.5 * (lo + hi);
                if dom(mid.exp()) {
                    lo = mid;
                } else {
                    hi = mid;
                }
                if hi - lo < 1e-10 {
                    break;
                }
            }
            lo.exp()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t1_table() -> SortedTable {
        // E = [[·,1,2],[3,·,4],[5,6,·]] (row = train, col = test), grouped by test domain.
        SortedTable::new(&[3.0, 5.0, 1.0, 6.0, 2.0, 4.0], &[0, 0, 1, 1, 2, 2], 3).unwrap()
    }

    #[test]
    fn unweighted_known_answers() {
        let t = t1_table();
        for (tau, lo, hi) in [(0.7, 2.0, 5.0), (0.75, 2.0, 5.0), (0.8, 2.0, 5.0), (0.9, 1.0, 6.0), (1.0, 1.0, 6.0)] {
            assert_eq!((t.lower(tau), t.upper(tau)), (lo, hi), "tau {tau}");
        }
        assert_eq!((t.lower(0.5), t.upper(0.5)), (4.0, 3.0));
    }

    #[test]
    fn weighted_known_answers() {
        let t = t1_table();
        let (lo, hi) = t.weighted(&[1.0, 2.0, 1.0], &[0.7, 0.75, 0.76, 0.8]).unwrap();
        assert_eq!(lo, vec![2.0, 2.0, 1.0, 1.0]);
        assert_eq!(hi, vec![5.0, 5.0, 6.0, 6.0]);
        let (lo, hi) = t.weighted(&[3.0, 3.0, 3.0], &[0.7, 0.9]).unwrap();
        assert_eq!((lo, hi), (vec![2.0, 1.0], vec![5.0, 6.0]));
        assert!(t.weighted(&[1.0, -1.0, 1.0], &[0.7]).is_err());
        assert!(t.weighted(&[0.0, 0.0, 0.0], &[0.7]).is_err());
    }

    #[test]
    fn worst_case_known_answers() {
        let t = t1_table();
        assert_eq!(t.worst_case_upper(0.6, 2.0).unwrap(), 5.0);
        assert_eq!(t.worst_case_upper(0.8, 1.2).unwrap(), 6.0);
        assert_eq!(t.worst_case_upper(0.7, 2.0).unwrap(), 6.0);
        assert_eq!(t.worst_case_upper(0.6, f64::INFINITY).unwrap(), 6.0);
        assert_eq!(t.worst_case_upper(0.6, 1.0).unwrap(), t.upper(0.6));
        let p = t.worst_case_p(2.0).unwrap();
        assert!((p[3] * 2.0 - 10.0 / 9.0).abs() < 1e-12 && (p[4] * 2.0 - 4.0 / 3.0).abs() < 1e-12);
        assert_eq!(p[5], 1.0);
    }

    #[test]
    fn worst_case_dominance_merges_step_functions() {
        let t = t1_table();
        let shifted = SortedTable::new(&[3.1, 5.1, 1.1, 6.1, 2.1, 4.1], &[0, 0, 1, 1, 2, 2], 3).unwrap();
        assert_eq!(worst_case_dominance(&t, &shifted, 0.6, f64::INFINITY).unwrap(), (true, f64::INFINITY));
        let (ok, crit) = worst_case_dominance(&shifted, &t, 0.6, f64::INFINITY).unwrap();
        assert!(!ok && crit.is_nan());
    }

    #[test]
    fn box_dominance_limits() {
        let m2 = SortedTable::new(&[0.1, 0.2, 5.0, 6.0, 7.0, 8.0], &[0, 0, 1, 1, 2, 2], 3).unwrap();
        let m1 = SortedTable::new(&[3.0, 4.0, 4.9, 5.9, 6.9, 7.9], &[0, 0, 1, 1, 2, 2], 3).unwrap();
        // Γ = 1 is the plain comparison ē₁ ≤ ē₂ (7.9 ≤ 8 at τ = 0.9); a huge Γ finds the violation.
        assert_eq!(box_dominance(&m1, &m2, &[0.9], 1.0).unwrap(), vec![true]);
        assert_eq!(box_dominance(&m1, &m2, &[0.9], 1e6).unwrap(), vec![false]);
        let g = critical_gamma_box(&m1, &m2, &[0.9], 1e6).unwrap()[0];
        assert!(g > 1.0 && g.is_finite());
        assert_eq!(box_dominance(&m1, &m2, &[0.9], g * 0.999).unwrap(), vec![true]);
        assert_eq!(box_dominance(&m1, &m2, &[0.9], g * 1.001).unwrap(), vec![false]);
    }

    #[test]
    fn lp_closed_form() {
        let (v, s) = lp2_simplex(&[0.0, 1.0], &[0.2, 1.0], 0.6).unwrap();
        assert!((v - 0.5).abs() < 1e-15, "{v} {s:?}");
        assert!(lp2_simplex(&[0.0, 1.0], &[0.1, 0.2], 0.5).unwrap().0.is_infinite());
    }

    #[test]
    fn counterexample_of_section_4_4() {
        // M2 = [[·,5,7],[0.1,·,8],[0.2,6,·]], M1 = [[·,4.9,6.9],[3,·,7.9],[4,5.9,·]]; grouped by test.
        let m2 = SortedTable::new(&[0.1, 0.2, 5.0, 6.0, 7.0, 8.0], &[0, 0, 1, 1, 2, 2], 3).unwrap();
        let m1 = SortedTable::new(&[3.0, 4.0, 4.9, 5.9, 6.9, 7.9], &[0, 0, 1, 1, 2, 2], 3).unwrap();
        let taus = [0.55, 0.75, 0.9];
        let exact = everywhere_dominance(&m1, &m2, &taus, EverywhereMode::Exact).unwrap();
        for w in &exact {
            let w = w.as_ref().expect("violation");
            assert_eq!(w.j, 2);
            assert_eq!(w.support, vec![(0, 1.0)]);
        }
        let paper = everywhere_dominance(&m1, &m2, &taus, EverywhereMode::Paper).unwrap();
        assert!(paper.iter().all(Option::is_none));
        let pkg = everywhere_dominance(&m1, &m2, &taus, EverywhereMode::TransferUq).unwrap();
        assert!(pkg.iter().all(Option::is_none));
    }

    #[test]
    fn sorted_counts_stay_sorted() {
        let mut sc = SortedCounts::new(5, 10);
        let seq = [3usize, 1, 3, 4, 0, 3, 2, 1, 1, 4, 0, 2];
        for &d in &seq {
            sc.increment(d);
            let v: Vec<u32> = sc.sorted().collect();
            assert!(v.windows(2).all(|w| w[0] <= w[1]), "{v:?}");
            assert_eq!(sc.min(), *sc.count.iter().min().unwrap());
        }
    }

    #[test]
    fn bad_input() {
        assert!(SortedTable::new(&[1.0, f64::NAN], &[0, 1], 2).is_err());
        assert!(SortedTable::new(&[1.0, 2.0, 3.0], &[0, 1, 1], 2).is_err());
        assert!(SortedTable::new(&[1.0, 2.0], &[0, 2], 2).is_err());
        assert!(t1_table().worst_case_upper(0.6, 0.5).is_err());
    }
}
