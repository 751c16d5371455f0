//! Comparisons of two transfer-error tables (Andrews, Fudenberg, Lei, Liang & Wu 2025;
//! docs/methods/transfer.md §3–4, algorithms A6–A7): worst-case dominance over Γ (Definition 7,
//! exact through the step functions of both tables), everywhere dominance (A6) with the two-point
//! LP closed form (A7), and Γ-bounded everywhere dominance with its critical Γ*
//! (docs/methods/transfer.md §4.3, an extension).

use super::table::{check_gamma, check_tau_open, gamma_steps_from, starts, sweep_start, Ranked, SortedTable, SortedTail};
use crate::common::errors::{check, CoreError, CoreResult};
use crate::common::quantiles::{upper_rank, LEVEL_TOL};
use rayon::prelude::*;

/// Two tables compared must share the domains and the design (n and K).
fn check_same_design(t1: &SortedTable, t2: &SortedTable) -> CoreResult<()> {
    if t1.n != t2.n || t1.k != t2.k {
        return Err(CoreError::invalid("err2", "both tables must have the same domains and design"));
    }
    Ok(())
}

/// The checks of a comparison at many τ, in this order: the same design, Γ (when given), then
/// every τ in (0, 1].
fn check_pair(t1: &SortedTable, t2: &SortedTable, gamma: Option<f64>, taus: &[f64]) -> CoreResult<()> {
    check_same_design(t1, t2)?;
    if let Some(g) = gamma {
        check_gamma(g)?;
    }
    taus.iter().try_for_each(|&t| check_tau_open(t))
}

/// Worst-case dominance at τ over Γ ∈ [1, gamma_max] (Definition 7), exactly: ē₁(Γ) ≤ ē₂(Γ) is
/// checked at every breakpoint of both step functions (and at gamma_max). Returns (dominates,
/// Γ*) with Γ* the largest Γ up to which dominance holds (gamma_max if it always does, NaN if it
/// fails already at Γ = 1).
pub fn worst_case_dominance(t1: &SortedTable, t2: &SortedTable, tau: f64, gamma_max: f64) -> CoreResult<(bool, f64)> {
    check_same_design(t1, t2)?;
    let (g1, v1) = t1.gamma_steps(tau, gamma_max)?;
    let (g2, v2) = t2.gamma_steps(tau, gamma_max)?;
    Ok(merge_steps(&g1, &v1, &g2, &v2, gamma_max))
}

/// [`worst_case_dominance`] for each τ: each table read once up to the ranks where the τ start,
/// then the τ in parallel, each holding only its own two step functions.
pub fn worst_case_dominance_many(t1: &SortedTable, t2: &SortedTable, taus: &[f64], gamma_max: f64) -> CoreResult<Vec<(bool, f64)>> {
    check_same_design(t1, t2)?;
    check_gamma(gamma_max)?;
    for &tau in taus {
        check_tau_open(tau)?;
    }
    Ok(worst_case_sweeps(t1, t2, taus, gamma_max))
}

/// [`worst_case_dominance_many`] of two square matrices' r = 1 tables (row-major `n × n`,
/// `E[train, test]`, the diagonal ignored), each held only from the lowest rank a τ's sweep reads
/// ([`SortedTail`]: over the default τ ≥ 0.5, half of each table), built one after the other.
/// `Ok(None)` with the matrix (1 or 2) one of whose off-diagonal cells is not finite.
pub fn worst_case_dominance_matrices(m1: &[f64], m2: &[f64], n: usize, taus: &[f64], gamma_max: f64) -> CoreResult<Result<Vec<(bool, f64)>, usize>> {
    check_gamma(gamma_max)?;
    for &tau in taus {
        check_tau_open(tau)?;
    }
    let total = n.saturating_mul(n.saturating_sub(1));
    let first = taus.iter().map(|&tau| sweep_start(total, tau)).min().unwrap_or(total.max(1));
    let Some(t1) = SortedTail::from_matrix(m1, n, first)? else {
        return Ok(Err(1));
    };
    let Some(t2) = SortedTail::from_matrix(m2, n, first)? else {
        return Ok(Err(2));
    };
    Ok(Ok(worst_case_sweeps(&t1, &t2, taus, gamma_max)))
}

fn worst_case_sweeps<T: Ranked>(t1: &T, t2: &T, taus: &[f64], gamma_max: f64) -> Vec<(bool, f64)> {
    let (s1, s2) = (starts(t1, taus), starts(t2, taus));
    taus.par_iter()
        .zip(s1.par_iter().zip(s2.par_iter()))
        .map(|(&tau, (a, b))| {
            let (g1, v1) = gamma_steps_from(t1, tau, gamma_max, a);
            let (g2, v2) = gamma_steps_from(t2, tau, gamma_max, b);
            merge_steps(&g1, &v1, &g2, &v2, gamma_max)
        })
        .collect()
}

/// Compare two step functions Γ ↦ ē(Γ) at the union of their breakpoints (and gamma_max).
fn merge_steps(g1: &[f64], v1: &[f64], g2: &[f64], v2: &[f64], gamma_max: f64) -> (bool, f64) {
    let (mut i1, mut i2) = (0usize, 0usize);
    let mut prev = f64::NAN;
    loop {
        // next evaluation point: the smaller pending breakpoint, capped at gamma_max
        let p = g1[i1].min(g2[i2]).min(gamma_max);
        if v1[i1] > v2[i2] {
            return (false, prev);
        }
        if p >= gamma_max {
            return (true, gamma_max);
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

/// Everywhere-dominance variants (docs/methods/transfer.md §4.4).
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
///
/// The sweep over method 2's ranks j (the counts of both methods up to j and up to m(j), their
/// minimum, maximum and number of violations) is the same for every τ: one sweep serves a group
/// of τ, each checked at every j where its thresholds let a violation through (issue 37: 51 sweeps
/// were 51 passes over the tables). The τ are split into one group per thread.
pub fn everywhere_dominance(
    t1: &SortedTable, t2: &SortedTable, taus: &[f64], mode: EverywhereMode,
) -> CoreResult<Vec<Option<Witness>>> {
    check_pair(t1, t2, None, taus)?;
    if taus.is_empty() {
        return Ok(Vec::new());
    }
    let per = taus.len().div_ceil(rayon::current_num_threads().max(1));
    Ok(taus.par_chunks(per).flat_map_iter(|group| everywhere_group(t1, t2, group, mode)).collect())
}

/// One τ of a sweep: its thresholds, where it starts, and its answer once found.
struct Level {
    tau: f64,
    jstart: usize,
    need_a: f64,
    need_b: f64,
    open: bool,
    found: Option<Witness>,
}

/// [`everywhere_dominance`] for a group of τ, in one sweep.
fn everywhere_group(t1: &SortedTable, t2: &SortedTable, taus: &[f64], mode: EverywhereMode) -> Vec<Option<Witness>> {
    let (n, nn, kk) = (t1.n, t1.len(), t1.k as f64);
    let package = mode == EverywhereMode::TransferUq;
    let mut levels: Vec<Level> = taus
        .iter()
        .map(|&tau| {
            let tprime = tau - LEVEL_TOL;
            let jstart = match mode {
                EverywhereMode::Exact => 1,
                EverywhereMode::Paper => upper_rank(nn, tau).max(1),
                EverywhereMode::TransferUq => ((tau * nn as f64).ceil() as usize).max(1),
            };
            let need_b = if package { tau } else { tprime * kk }; // b-threshold in count units
            let need_a = if package { tau * kk } else { tprime * kk }; // a-threshold in count units
            Level { tau, jstart, need_a, need_b, open: true, found: None }
        })
        .collect();
    // outside transferUQ's mode need_a = need_b = τ'K rises with τ: at each j only the τ with
    // min1 < τ'K ≤ max2 can fail, a range of the τ in this order
    let mut order: Vec<usize> = (0..levels.len()).collect();
    order.sort_by(|&a, &b| levels[a].need_a.total_cmp(&levels[b].need_a));
    let needs: Vec<f64> = order.iter().map(|&i| levels[i].need_a).collect();
    let first_start = levels.iter().map(|l| l.jstart).min().unwrap_or(1);
    let mut open = levels.len();
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
        if j < first_start {
            continue;
        }
        // (m1 moves with the target only: where a τ starts later, it finds the same m1)
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
            break; // no f1 above f2_(j): nothing further can violate, for any τ
        }
        let range = if package {
            0..order.len()
        } else if nviol == 0 {
            0..0
        } else {
            let lo = needs.partition_point(|&x| x <= min1 as f64);
            lo..needs.partition_point(|&x| x <= max2 as f64).max(lo)
        };
        for &i in &order[range] {
            let level = &mut levels[i];
            if !level.open || j < level.jstart {
                continue;
            }
            if let Some(w) = everywhere_at(t1, j, m1, level, package, (&c1, &c2, min1, max2, nviol), (&mut g, &mut h)) {
                level.found = Some(w);
                level.open = false;
                open -= 1;
            }
        }
        if open == 0 {
            break;
        }
    }
    levels.into_iter().map(|l| l.found).collect()
}

/// The check of one τ at rank j of the sweep (A6): a violation's witness, or None.
fn everywhere_at(
    t1: &SortedTable, j: usize, m1: usize, level: &Level, package: bool,
    (c1, c2, min1, max2, nviol): (&[u32], &[u32], usize, u32, usize), (g, h): (&mut [f64], &mut [f64]),
) -> Option<Witness> {
    let (n, kk) = (t1.n, t1.k as f64);
    let (tau, need_a, need_b) = (level.tau, level.need_a, level.need_b);
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
            return None;
        }
        let mina = if quirk { (0..n).map(a_of).fold(f64::INFINITY, f64::min) } else { min1 as f64 };
        if mina / kk > tau {
            return None;
        }
        if (max2 as f64) < need_b {
            // lpSolve reports an infeasible LP with objective 0 <= tau: a "violation".
            return Some(Witness { j, m: m1 + 1, support: Vec::new() });
        }
    } else if (max2 as f64) < need_b || nviol == 0 || min1 as f64 >= need_a {
        return None;
    }
    for i in 0..n {
        g[i] = c2[i] as f64 - need_b;
        h[i] = need_a - a_of(i);
    }
    lp_violation(g, h, package).map(|support| Witness { j, m: m1 + 1, support })
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

/// Γ-bounded everywhere dominance (docs/methods/transfer.md §4.3, an extension): does
/// ē₁^w ≤ ē₂^w hold for every w ∈ [1/Γ, Γ]^n? Returns `None` if so, else the ranks (j, m(j)) of a violation.
pub fn box_dominance_one(t1: &SortedTable, t2: &SortedTable, tau: f64, gamma: f64) -> Option<(usize, usize)> {
    box_sweep(t1, t2, tau, gamma, true)
}

/// Σ_i up(x_i) over x_i = sign·(c_i − need) (up(x) = Γx for x ≥ 0, x/Γ below) from the counts'
/// split at `need`: `high` counts ≥ need (or > need), summing to `high_sum`, of `total` domains
/// summing to `all_sum`. A few operations instead of a pass over the domains; within a tiny
/// fraction of `scale` of the pass's sum.
fn up_sum(high: usize, high_sum: u64, total: usize, all_sum: u64, need: f64, gamma: f64, above_positive: bool) -> f64 {
    let above = high_sum as f64 - need * high as f64; // Σ (c − need) over the high counts (≥ 0)
    let below = (all_sum - high_sum) as f64 - need * (total - high) as f64; // over the others (≤ 0)
    if above_positive {
        gamma * above + below / gamma
    } else {
        gamma * -above + -below / gamma
    }
}

/// The sweep of [`box_dominance_one`]. With `prefilter`, a rank is ruled out without the O(n²)
/// check when a condition that check tests first clearly fails: Σ up(g) < 0 (no w in the box
/// with gᵀw ≥ 0) or φ(0) = Σ up(h) ≤ 0 (its minimum over μ is not positive), both kept from the
/// counts in O(1) per step (issue 37) and trusted only beyond a margin far above their rounding
/// error; otherwise the check runs as before, so every answer is the check's.
fn box_sweep(t1: &SortedTable, t2: &SortedTable, tau: f64, gamma: f64, prefilter: bool) -> Option<(usize, usize)> {
    let (n, nn, kk) = (t1.n, t1.len(), t1.k as f64);
    let need = (tau - LEVEL_TOL) * kk;
    let mut c1 = vec![0u32; n];
    let mut c2 = vec![0u32; n];
    let mut max2 = 0u32;
    let mut m1 = 0usize;
    let (mut g, mut h) = (vec![0.0f64; n], vec![0.0f64; n]);
    // g_i = c2_i − need ≥ 0 ⇔ c2_i ≥ need; h_i = need − c1_i ≥ 0 ⇔ c1_i ≤ need
    let (mut g_high, mut g_high_sum) = (0usize, 0u64); // domains with c2 ≥ need, and their c2 sum
    let (mut h_high, mut h_high_sum) = (n, 0u64); // domains with c1 ≤ need (all, at first), their c1 sum
    let margin = 1e-7 * (gamma + 1.0 / gamma) * (nn as f64 + need * n as f64 + 1.0);
    for j in 1..=nn {
        let d2 = t2.test[j - 1] as usize;
        c2[d2] += 1;
        max2 = max2.max(c2[d2]);
        if c2[d2] as f64 >= need {
            if (c2[d2] - 1) as f64 >= need {
                g_high_sum += 1;
            } else {
                g_high += 1;
                g_high_sum += c2[d2] as u64;
            }
        }
        let target = t2.values[j - 1];
        while m1 < nn && t1.values[m1] <= target {
            let d1 = t1.test[m1] as usize;
            c1[d1] += 1;
            if c1[d1] as f64 <= need {
                h_high_sum += 1;
            } else if (c1[d1] - 1) as f64 <= need {
                h_high -= 1;
                h_high_sum -= (c1[d1] - 1) as u64;
            }
            m1 += 1;
        }
        if m1 == nn {
            return None;
        }
        if (max2 as f64) < need {
            continue;
        }
        if prefilter
            && (up_sum(g_high, g_high_sum, n, j as u64, need, gamma, true) < -margin
                || up_sum(h_high, h_high_sum, n, m1 as u64, need, gamma, false) <= -margin)
        {
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

/// Γ-bounded everywhere dominance at each τ: one sweep per group of τ (one group per thread),
/// each τ answered as [`box_dominance_one`] answers it.
pub fn box_dominance(t1: &SortedTable, t2: &SortedTable, taus: &[f64], gamma: f64) -> CoreResult<Vec<bool>> {
    check_pair(t1, t2, Some(gamma), taus)?;
    let levels: Vec<(f64, f64)> = taus.iter().map(|&tau| (tau, gamma)).collect();
    Ok(in_groups(&levels, |group| box_group(t1, t2, group)))
}

/// `f` of consecutive groups of `items`, one group per thread, concatenated in order.
fn in_groups<T: Sync, R: Send>(items: &[T], f: impl Fn(&[T]) -> Vec<R> + Sync + Send) -> Vec<R> {
    if items.is_empty() {
        return Vec::new();
    }
    let per = items.len().div_ceil(rayon::current_num_threads().max(1));
    items.par_chunks(per).flat_map_iter(f).collect()
}

/// One (τ, Γ) of a grouped box sweep: its threshold and margin, and the split of both methods'
/// counts at its threshold (as [`box_sweep`] keeps them), from the rank where it can first fail.
struct BoxLevel {
    need: f64,
    gamma: f64,
    margin: f64,
    g_high: usize,
    g_high_sum: u64,
    h_high: usize,
    h_high_sum: u64,
    done: bool,
    dominates: bool,
}

/// [`box_sweep`] (with its prefilter) for each `(τ, Γ)` of `levels` in one pass over both tables:
/// whether method 1 Γ-box-dominates method 2 at each. The counts are the same for every level;
/// a level joins the sweep at the first rank where a violation can occur (the most frequent
/// test domain of method 2 reaches its threshold), its split of the counts then taken from the
/// counts and kept up as in [`box_sweep`], and leaves it with its answer: a violation found by
/// [`box_violation`], or none possible any more. The latter is the prefilter's φ(0) = Σ up(h) ≤
/// −margin: h_i = need − c1_i only falls as the sweep goes on, so φ(0) stays below 0 and every
/// later check would fail at φ(0). So each level's answer is [`box_sweep`]'s, and the pass does
/// per level only the work of the ranks where it is open (issue 37: 51 full sweeps of 10⁸
/// ranks took 83 s).
fn box_group(t1: &SortedTable, t2: &SortedTable, levels: &[(f64, f64)]) -> Vec<bool> {
    let (n, nn, kk) = (t1.n, t1.len(), t1.k as f64);
    let mut ls: Vec<BoxLevel> = levels
        .iter()
        .map(|&(tau, gamma)| {
            let need = (tau - LEVEL_TOL) * kk;
            BoxLevel {
                need,
                gamma,
                margin: 1e-7 * (gamma + 1.0 / gamma) * (nn as f64 + need * n as f64 + 1.0),
                g_high: 0,
                g_high_sum: 0,
                h_high: 0,
                h_high_sum: 0,
                done: false,
                dominates: true,
            }
        })
        .collect();
    let mut waiting: Vec<usize> = (0..ls.len()).collect();
    waiting.sort_by(|&a, &b| ls[b].need.total_cmp(&ls[a].need)); // the lowest threshold last
    let mut open: Vec<usize> = Vec::new();
    let mut c1 = vec![0u32; n];
    let mut c2 = vec![0u32; n];
    let mut max2 = 0u32;
    let mut m1 = 0usize;
    let mut moved1: Vec<(usize, u32)> = Vec::new();
    let (mut g, mut h) = (vec![0.0f64; n], vec![0.0f64; n]);
    for j in 1..=nn {
        let d2 = t2.test[j - 1] as usize;
        c2[d2] += 1;
        let now2 = c2[d2];
        max2 = max2.max(now2);
        let target = t2.values[j - 1];
        moved1.clear();
        while m1 < nn && t1.values[m1] <= target {
            let d1 = t1.test[m1] as usize;
            c1[d1] += 1;
            moved1.push((d1, c1[d1]));
            m1 += 1;
        }
        if m1 == nn {
            break;
        }
        for &i in &open {
            let l = &mut ls[i];
            if now2 as f64 >= l.need {
                if (now2 - 1) as f64 >= l.need {
                    l.g_high_sum += 1;
                } else {
                    l.g_high += 1;
                    l.g_high_sum += now2 as u64;
                }
            }
            for &(_, c) in &moved1 {
                if c as f64 <= l.need {
                    l.h_high_sum += 1;
                } else if (c - 1) as f64 <= l.need {
                    l.h_high -= 1;
                    l.h_high_sum -= (c - 1) as u64;
                }
            }
        }
        while let Some(&i) = waiting.last() {
            let l = &mut ls[i];
            if (max2 as f64) < l.need {
                break;
            }
            waiting.pop();
            (l.g_high, l.g_high_sum, l.h_high, l.h_high_sum) = (0, 0, 0, 0);
            for d in 0..n {
                if c2[d] as f64 >= l.need {
                    l.g_high += 1;
                    l.g_high_sum += c2[d] as u64;
                }
                if c1[d] as f64 <= l.need {
                    l.h_high += 1;
                    l.h_high_sum += c1[d] as u64;
                }
            }
            open.push(i);
        }
        for &i in &open {
            let l = &mut ls[i];
            if up_sum(l.h_high, l.h_high_sum, n, m1 as u64, l.need, l.gamma, false) <= -l.margin {
                l.done = true; // no violation at this rank or any later one
                continue;
            }
            if up_sum(l.g_high, l.g_high_sum, n, j as u64, l.need, l.gamma, true) < -l.margin {
                continue;
            }
            for d in 0..n {
                g[d] = c2[d] as f64 - l.need;
                h[d] = l.need - c1[d] as f64;
            }
            if box_violation(&g, &h, l.gamma) {
                l.done = true;
                l.dominates = false;
            }
        }
        open.retain(|&i| !ls[i].done);
        if open.is_empty() && waiting.is_empty() {
            break;
        }
    }
    ls.iter().map(|l| l.dominates).collect()
}

/// Critical Γ* of Γ-bounded everywhere dominance: the largest Γ ≤ gamma_max with dominance,
/// by bisection on log Γ (dominance is monotone in Γ, the boxes being nested). NaN if it fails at
/// Γ = 1, +∞ if it holds at gamma_max. The τ of a group are bisected in step, one grouped sweep
/// ([`box_group`]) per step for all those still open, each τ seeing the Γ it would see alone.
pub fn critical_gamma_box(t1: &SortedTable, t2: &SortedTable, taus: &[f64], gamma_max: f64) -> CoreResult<Vec<f64>> {
    check_pair(t1, t2, Some(gamma_max), taus)?;
    Ok(in_groups(taus, |group| critical_gamma_group(t1, t2, group, gamma_max)))
}

fn critical_gamma_group(t1: &SortedTable, t2: &SortedTable, taus: &[f64], gamma_max: f64) -> Vec<f64> {
    let dom = |open: &[usize], gamma: &dyn Fn(usize) -> f64| -> Vec<bool> {
        let levels: Vec<(f64, f64)> = open.iter().map(|&i| (taus[i], gamma(i))).collect();
        box_group(t1, t2, &levels)
    };
    let mut out = vec![f64::NAN; taus.len()];
    let all: Vec<usize> = (0..taus.len()).collect();
    let at_one = dom(&all, &|_| 1.0);
    let open: Vec<usize> = all.into_iter().filter(|&i| at_one[i]).collect();
    let at_max = dom(&open, &|_| gamma_max);
    let mut open: Vec<usize> = open.into_iter().zip(at_max).filter_map(|(i, ok)| if ok { out[i] = f64::INFINITY; None } else { Some(i) }).collect();
    let (mut lo, mut hi) = (vec![0.0f64; taus.len()], vec![gamma_max.ln(); taus.len()]);
    for _ in 0..60 {
        if open.is_empty() {
            break;
        }
        let mid: Vec<f64> = (0..taus.len()).map(|i| 0.5 * (lo[i] + hi[i])).collect();
        let ok = dom(&open, &|i| mid[i].exp());
        for (&i, ok) in open.iter().zip(ok) {
            if ok {
                lo[i] = mid[i];
            } else {
                hi[i] = mid[i];
            }
        }
        open.retain(|&i| hi[i] - lo[i] >= 1e-10);
    }
    for (i, o) in out.iter_mut().enumerate() {
        if o.is_nan() && at_one[i] {
            *o = lo[i].exp();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::table::tests::t1_table;

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
    fn one_sweep_for_many_tau_equals_one_sweep_per_tau() {
        // random tables with ties: every mode, the τ in any order, against each τ swept alone
        for seed in 1..6u64 {
            let mut rng = crate::common::rng::SplitMix64::new(seed);
            let (n, k) = (6 + seed as usize, 5 + seed as usize);
            let mut table = |shift: f64| {
                let test: Vec<i64> = (0..n * k).map(|i| (i % n) as i64).collect();
                let values: Vec<f64> = (0..n * k).map(|_| (rng.below_rejection(7) as f64) + shift).collect();
                SortedTable::new(&values, &test, n).unwrap()
            };
            let (t1, t2) = (table(0.0), table(0.5));
            let taus: Vec<f64> = vec![0.95, 0.5, 0.7, 1.0, 0.6, 0.8, 0.55, 0.9];
            for mode in [EverywhereMode::Exact, EverywhereMode::Paper, EverywhereMode::TransferUq] {
                for (a, b) in [(&t1, &t2), (&t2, &t1)] {
                    let all = everywhere_group(a, b, &taus, mode);
                    for (i, &tau) in taus.iter().enumerate() {
                        assert_eq!(all[i], everywhere_group(a, b, &[tau], mode).remove(0), "seed {seed} {mode:?} tau {tau}");
                    }
                    assert_eq!(everywhere_dominance(a, b, &taus, mode).unwrap(), all);
                }
            }
        }
    }

    #[test]
    fn tails_of_two_matrices_give_the_full_tables_answers() {
        // random matrices with many ties (and signed zeros), every first rank: the tail holds the
        // full table's ranks from `first` up, bit for bit, and the counts below them; worst-case
        // dominance from the tails equals that of the whole sorted tables, τ in any order
        for seed in 1..7u64 {
            let mut rng = crate::common::rng::SplitMix64::new(seed);
            let n = 3 + 2 * seed as usize;
            let mut matrix = |shift: f64| -> Vec<f64> {
                (0..n * n).map(|_| [0.0, -0.0, 1.0, 2.5, 3.0][rng.below_rejection(5) as usize] + shift * rng.below_rejection(2) as f64).collect()
            };
            let (m1, m2) = (matrix(0.5), matrix(0.25));
            let full = SortedTable::from_matrix(&m1, n).unwrap().unwrap();
            let nn = n * (n - 1);
            for first in 1..=nn {
                let tail = SortedTail::from_matrix(&m1, n, first).unwrap().unwrap();
                for j in first..=nn {
                    assert_eq!((tail.value_at(j).to_bits(), tail.test_at(j)), (full.value_at(j).to_bits(), full.test_at(j)), "seed {seed} first {first} j {j}");
                }
                let ends: Vec<usize> = (first..=nn).rev().collect();
                assert_eq!(tail.counts_before(&ends), full.counts_before(&ends), "seed {seed} first {first}");
            }
            let (f1, f2) = (full, SortedTable::from_matrix(&m2, n).unwrap().unwrap());
            for taus in [vec![0.95, 0.5, 0.7, 1.0, 0.6], vec![0.3, 0.999], vec![1e-9, 0.5]] {
                for gamma in [f64::INFINITY, 2.0, 1.0] {
                    let want = worst_case_dominance_many(&f1, &f2, &taus, gamma).unwrap();
                    let got = worst_case_dominance_matrices(&m1, &m2, n, &taus, gamma).unwrap().unwrap();
                    assert_eq!(format!("{got:?}"), format!("{want:?}"), "seed {seed} taus {taus:?} gamma {gamma}");
                }
            }
        }
        // one value everywhere: the threshold's ties split by position
        let m = vec![1.0; 36];
        let full = SortedTable::from_matrix(&m, 6).unwrap().unwrap();
        let tail = SortedTail::from_matrix(&m, 6, 17).unwrap().unwrap();
        assert!((17..=30).all(|j| tail.test_at(j) == full.test_at(j)));
        assert_eq!(tail.counts_before(&[17]), full.counts_before(&[17]));
        // a missing cell off the diagonal names its matrix; the diagonal is ignored
        let mut bad = vec![1.0; 9];
        bad[4] = f64::NAN;
        assert!(worst_case_dominance_matrices(&bad, &bad, 3, &[0.5], 2.0).unwrap().is_ok());
        bad[5] = f64::NAN;
        assert_eq!(worst_case_dominance_matrices(&m[..9], &bad, 3, &[0.5], 2.0).unwrap(), Err(2));
        assert_eq!(worst_case_dominance_matrices(&bad, &m[..9], 3, &[0.5], 2.0).unwrap(), Err(1));
        assert!(worst_case_dominance_matrices(&m[..9], &m[..9], 3, &[0.0], 2.0).is_err());
    }

    #[test]
    fn one_box_sweep_for_many_levels_equals_the_check_at_every_rank() {
        // random tables with ties; levels of mixed τ and Γ in one group, in any order: the grouped
        // sweep answers each as the sweep that runs the full check at every rank; the bisection of
        // all τ in step equals each τ bisected alone; both answers occur
        let mut seen = [0usize; 2];
        let mut finite = 0;
        for seed in 1..9u64 {
            let mut rng = crate::common::rng::SplitMix64::new(seed);
            let (n, k) = (4 + seed as usize, 3 + 2 * seed as usize);
            let mut table = |shift: f64, scale: f64| {
                let test: Vec<i64> = (0..n * k).map(|i| (i % n) as i64).collect();
                let values: Vec<f64> = (0..n * k).map(|_| scale * (rng.below_rejection(9) as f64) + shift).collect();
                SortedTable::new(&values, &test, n).unwrap()
            };
            let (t1, t2, t3) = (table(0.0, 1.0), table(0.4, 1.0), table(-1.0, 1.3));
            let levels: Vec<(f64, f64)> = [0.9, 0.5, 1.0, 0.6, 0.75, 0.55, 1e-9]
                .iter()
                .flat_map(|&tau| [5.0, 1.0, 2.0, 1.3].map(move |gamma| (tau, gamma)))
                .collect();
            for (a, b) in [(&t1, &t2), (&t2, &t1), (&t1, &t3), (&t3, &t2), (&t2, &t2)] {
                let got = box_group(a, b, &levels);
                for (&(tau, gamma), &dom) in levels.iter().zip(&got) {
                    assert_eq!(dom, box_sweep(a, b, tau, gamma, false).is_none(), "seed {seed} tau {tau} gamma {gamma}");
                    seen[dom as usize] += 1;
                }
                let taus = [0.9, 0.5, 1.0, 0.62, 0.75];
                let crit = critical_gamma_box(a, b, &taus, 50.0).unwrap();
                for (&tau, &c) in taus.iter().zip(&crit) {
                    let dom = |g: f64| box_dominance_one(a, b, tau, g).is_none();
                    let want = if !dom(1.0) {
                        f64::NAN
                    } else if dom(50.0) {
                        f64::INFINITY
                    } else {
                        let (mut lo, mut hi) = (0.0f64, 50.0f64.ln());
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
                    };
                    assert_eq!(c.to_bits(), want.to_bits(), "seed {seed} tau {tau}: {c} vs {want}");
                    finite += c.is_finite() as usize;
                }
            }
        }
        assert!(seen[0] > 20 && seen[1] > 20 && finite > 5, "{seen:?} {finite}");
    }

    #[test]
    fn the_box_sweeps_prefilter_changes_no_answer() {
        // random tables with ties, several τ and Γ: the sweep with its O(1) prefilter finds the
        // violation (or none) that the check at every rank finds
        for seed in 1..8u64 {
            let mut rng = crate::common::rng::SplitMix64::new(seed);
            let (n, k) = (5 + seed as usize, 4 + 2 * seed as usize);
            let mut table = |shift: f64| {
                let test: Vec<i64> = (0..n * k).map(|i| (i % n) as i64).collect();
                let values: Vec<f64> = (0..n * k).map(|_| (rng.below_rejection(9) as f64) + shift).collect();
                SortedTable::new(&values, &test, n).unwrap()
            };
            let (t1, t2) = (table(0.0), table(0.4));
            for (a, b) in [(&t1, &t2), (&t2, &t1)] {
                for tau in [0.5, 0.6, 0.75, 0.9, 1.0] {
                    for gamma in [1.0, 1.3, 2.0, 5.0] {
                        assert_eq!(box_sweep(a, b, tau, gamma, true), box_sweep(a, b, tau, gamma, false),
                                   "seed {seed} tau {tau} gamma {gamma}");
                    }
                }
            }
        }
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
}
