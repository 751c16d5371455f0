//! A transfer-error table sorted once, and what one table answers (Andrews, Fudenberg, Lei,
//! Liang & Wu, "The Transfer Performance of Economic Models", 2025; docs/methods/transfer.md
//! §2–3, algorithms A2–A4).
//!
//! A table holds N errors, K per test domain, over n domains. [`SortedTable`] sorts the pooled
//! errors once (ties broken by input position, i.e. by (test, train) for our tables) and answers:
//!
//! * pooled forecast intervals [e̲_τ, ē_τ] = [f_(N+1−k), f_(k)], k = ⌈τN⌉ (A2, Prop. 1);
//! * weighted intervals with test-domain likelihood ratios w_d (A3, Theorem 1, eq. 7);
//! * worst-case upper bounds ē_τ(Γ) over w ∈ [Γ⁻¹, Γ]^n (A4, Theorem R.2, Corollary R.1), as a
//!   curve over j and as an exact step function of Γ (its breakpoints Γ*_j,
//!   docs/methods/transfer.md §3.3).
//!
//! Levels are compared with [`LEVEL_TOL`] on the probability scale, as in `common/quantiles.rs`.

use crate::common::errors::{check, CoreError, CoreResult, Part};
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

/// Multiset of per-domain counts kept sorted under increments (the bucket trick of docs/methods/transfer.md A4):
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

/// An unsigned key that orders as [`f64::total_cmp`] orders the values (the sign bit flipped for
/// positive numbers, every bit for negative ones).
pub(super) fn total_order_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// Check a table's columns as [`SortedTable::new`] needs them (finite values, test ids in 0..n,
/// every domain K ≥ 1 times, n ≥ 2, at most `u32::MAX` errors) and return K. Every computation on
/// a table's columns checks them here, with the same errors.
pub fn check_table(values: &[f64], test: &[i64], n: usize) -> CoreResult<usize> {
    check::finite("values", values)?;
    check::same_len("values", values.len(), "test", test.len())?;
    if n < 2 {
        return Err(CoreError::invalid("n", format!("need at least 2 domains; got {n}")));
    }
    // every domain appears K >= 1 times, so n <= N: checked before the per-domain counts are
    // allocated (a huge n is an error, not an abort)
    if n > values.len() {
        return Err(CoreError::invalid(
            "n",
            format!("{n} domains need at least {n} errors (K >= 1 per test domain); the table has {}", values.len()),
        ));
    }
    // rows are indexed by u32 below
    if values.len() > u32::MAX as usize {
        return Err(CoreError::invalid("values", format!("at most {} errors per table; got {}", u32::MAX, values.len())));
    }
    let mut counts = vec![0usize; n];
    for (i, &t) in test.iter().enumerate() {
        if t < 0 || t as usize >= n {
            return Err(CoreError::invalid_at(
                "test",
                vec![
                    // `t` is the value at fault (a domain the caller passed), not a position
                    Part::text(format!("test-domain index {t} at ")), // position-scan: a value
                    Part::at("position", i),
                    Part::text(format!(" is outside 0..{n}")),
                ],
            ));
        }
        counts[t as usize] += 1;
    }
    let k = values.len() / n;
    if k == 0 || values.len() % n != 0 || counts.iter().any(|&c| c != k) {
        return Err(CoreError::invalid("test", "every test domain must appear equally often (K times)"));
    }
    Ok(k)
}

/// The value whose [`total_order_key`] is `key` (its inverse).
pub(super) fn from_order_key(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 { key & !(1 << 63) } else { !key })
}

/// Sort (order key, position) pairs as plain integers: the key orders as `f64::total_cmp` does,
/// and the position breaks ties.
fn sort_pairs(order: &mut [(u64, u32)]) {
    if order.len() >= crate::common::parallel::PARALLEL_MIN_ITEMS {
        order.par_sort_unstable();
    } else {
        order.sort_unstable();
    }
}

/// The values of sorted pairs, written over the pairs' own memory (Rust collects a `Vec`'s
/// `into_iter().map()` in place when the new items are no larger) and shrunk to fit: the sorted
/// table never holds its pairs and its values at once (8 bytes an error less at its peak).
fn into_values(order: Vec<(u64, u32)>) -> Vec<f64> {
    let mut values: Vec<f64> = order.into_iter().map(|(key, _)| from_order_key(key)).collect();
    values.shrink_to_fit();
    values
}

impl SortedTable {
    /// The r = 1 table of the square matrix `E[train, test]` (row-major `n × n`, the diagonal
    /// ignored), sorted as [`SortedTable::new`] sorts the table's errors in the table's order (by
    /// test domain, then training domain): the same table, read straight from the matrix, its
    /// values and test domains taken from the sorted pairs (no copy of the errors in the table's
    /// order, no lookups). `None` when an off-diagonal cell is not finite (the caller names it).
    pub fn from_matrix(matrix: &[f64], n: usize) -> CoreResult<Option<Self>> {
        if n < 2 || matrix.len() != n * n {
            return Err(CoreError::invalid("matrix", format!("need a square matrix of at least 2 x 2; got {} cells for n = {n}", matrix.len())));
        }
        let k = n - 1;
        if n * k > u32::MAX as usize {
            return Err(CoreError::invalid("matrix", format!("at most {} errors per table; got {}", u32::MAX, n * k)));
        }
        let mut order: Vec<(u64, u32)> = vec![(0, 0); n * k];
        // row i (training domain) in the matrix's order; each cell's position in the table's order
        // is test * (n - 1) + (the training domain's rank among the other n - 1)
        let finite = order.par_chunks_mut(k).zip(matrix.par_chunks(n)).enumerate().all(|(i, (dst, row))| {
            for (slot, (j, &v)) in dst.iter_mut().zip(row.iter().enumerate().filter(|&(j, _)| j != i)) {
                let pos = j * k + if i < j { i } else { i - 1 };
                *slot = (total_order_key(v), pos as u32);
            }
            row.iter().enumerate().all(|(j, v)| j == i || v.is_finite())
        });
        if !finite {
            return Ok(None);
        }
        sort_pairs(&mut order);
        let test = order.par_iter().map(|&(_, pos)| pos / k as u32).collect();
        Ok(Some(Self { values: into_values(order), test, n, k }))
    }

    /// Validate ([`check_table`]) and sort once.
    pub fn new(values: &[f64], test: &[i64], n: usize) -> CoreResult<Self> {
        let k = check_table(values, test, n)?;
        // (order key, position) pairs sorted as plain integers: the key orders as f64::total_cmp
        // does, and the position breaks ties, without a lookup into `values` per comparison
        let mut order: Vec<(u64, u32)> =
            values.par_iter().enumerate().map(|(i, &v)| (total_order_key(v), i as u32)).collect();
        sort_pairs(&mut order);
        let test = order.par_iter().map(|&(_, i)| test[i as usize] as u32).collect();
        Ok(Self { values: into_values(order), test, n, k })
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

    /// The exact step function Γ ↦ ē_τ(Γ) on [1, gamma_max] (docs/methods/transfer.md §3.3):
    /// breakpoints g_0 < g_1 < … and values v_i, with ē_τ(Γ) = v_i for Γ ∈ (g_{i−1}, g_i] (g_{−1} = 1, the
    /// first piece closed at 1). The last breakpoint is ≥ gamma_max (possibly +∞).
    pub fn gamma_steps(&self, tau: f64, gamma_max: f64) -> CoreResult<(Vec<f64>, Vec<f64>)> {
        check_tau_open(tau)?;
        check_gamma(gamma_max)?;
        let j0 = upper_rank(self.len(), tau).max(1);
        Ok(self.gamma_steps_from(tau, gamma_max, &self.counts_before(&[j0]).remove(0)))
    }

    /// [`SortedTable::gamma_steps`] for each τ, the table read once up to the ranks where the τ
    /// start and each τ swept from there (in parallel; docs/methods/transfer.md A4).
    pub fn gamma_steps_many(&self, taus: &[f64], gamma_max: f64) -> CoreResult<Vec<(Vec<f64>, Vec<f64>)>> {
        check_gamma(gamma_max)?;
        for &tau in taus {
            check_tau_open(tau)?;
        }
        let starts = self.starts(taus);
        Ok(taus.par_iter().zip(starts.par_iter()).map(|(&tau, counts)| self.gamma_steps_from(tau, gamma_max, counts)).collect())
    }

    /// The per-domain counts of the first ⌈τN⌉ − 1 sorted errors, for each τ (checked).
    pub(super) fn starts(&self, taus: &[f64]) -> Vec<Vec<u32>> {
        starts(self, taus)
    }

    /// The step function of one τ, from the counts of the first ⌈τN⌉ − 1 sorted errors.
    pub(super) fn gamma_steps_from(&self, tau: f64, gamma_max: f64, start: &[u32]) -> (Vec<f64>, Vec<f64>) {
        gamma_steps_from(self, tau, gamma_max, start)
    }

    /// ē_τ(Γ) by the scan from ⌈τN⌉ (docs/methods/transfer.md A4, one τ).
    pub fn worst_case_upper(&self, tau: f64, gamma: f64) -> CoreResult<f64> {
        let (gs, vs) = self.gamma_steps(tau, gamma)?;
        Ok(step_value(&gs, &vs, gamma))
    }
}

/// What a worst-case sweep reads of a sorted table (docs/methods/transfer.md A4): its size, and
/// from the ranks where the sweeps start up, each rank's error and test domain; below those ranks
/// only the per-domain counts. [`SortedTable`] holds every rank; [`SortedTail`] only the ranks
/// from the lowest start up.
pub(super) trait Ranked: Sync {
    /// N.
    fn total(&self) -> usize;
    /// n.
    fn domains(&self) -> usize;
    /// K.
    fn per_domain(&self) -> usize;
    /// f_(j), 1-based.
    fn value_at(&self, j: usize) -> f64;
    /// d^(j), 1-based.
    fn test_at(&self, j: usize) -> usize;
    /// The per-domain counts of the first `j − 1` sorted errors, for each `j` in `ends` (any
    /// order): one pass over the table up to the largest.
    fn counts_before(&self, ends: &[usize]) -> Vec<Vec<u32>>;
}

impl Ranked for SortedTable {
    fn total(&self) -> usize {
        self.len()
    }
    fn domains(&self) -> usize {
        self.n
    }
    fn per_domain(&self) -> usize {
        self.k
    }
    fn value_at(&self, j: usize) -> f64 {
        self.values[j - 1]
    }
    fn test_at(&self, j: usize) -> usize {
        self.test[j - 1] as usize
    }
    fn counts_before(&self, ends: &[usize]) -> Vec<Vec<u32>> {
        counts_from(vec![0u32; self.n], 1, ends, |j| self.test[j - 1] as usize)
    }
}

/// Per-domain counts before each of `ends`, from `counts` (those before rank `first`) and the
/// test domain of each rank from `first` up.
fn counts_from(mut counts: Vec<u32>, first: usize, ends: &[usize], test_at: impl Fn(usize) -> usize) -> Vec<Vec<u32>> {
    let mut order: Vec<usize> = (0..ends.len()).collect();
    order.sort_by_key(|&i| ends[i]);
    let mut out = vec![Vec::new(); ends.len()];
    let mut j = first;
    for i in order {
        while j < ends[i] {
            counts[test_at(j)] += 1;
            j += 1;
        }
        out[i] = counts.clone();
    }
    out
}

/// The first rank of the sweep at τ: ⌈τN⌉ (at least 1).
pub(super) fn sweep_start(total: usize, tau: f64) -> usize {
    upper_rank(total, tau).max(1)
}

/// The per-domain counts of the first ⌈τN⌉ − 1 sorted errors, for each τ (checked).
pub(super) fn starts<T: Ranked>(t: &T, taus: &[f64]) -> Vec<Vec<u32>> {
    let j0: Vec<usize> = taus.iter().map(|&tau| sweep_start(t.total(), tau)).collect();
    t.counts_before(&j0)
}

/// The step function Γ ↦ ē_τ(Γ) of one τ ([`SortedTable::gamma_steps`]), from the counts of the
/// first ⌈τN⌉ − 1 sorted errors.
pub(super) fn gamma_steps_from<T: Ranked>(t: &T, tau: f64, gamma_max: f64, start: &[u32]) -> (Vec<f64>, Vec<f64>) {
    let nn = t.total();
    let tl = tau - LEVEL_TOL;
    let j0 = sweep_start(nn, tau);
    let n = t.domains() as f64;
    let big_c_base = tl * nn as f64; // τ'N
    let mut sweep = GammaSweep::new(start, t.per_domain(), big_c_base);
    let (mut gs, mut vs): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut best = 0.0f64; // running max of Γ*_j (Γ* ≥ 1 for j ≥ τ'N)
    for j in j0..=nn {
        sweep.increment(t.test_at(j));
        let g = sweep.gamma_star(j, (big_c_base - j as f64).min(0.0), n);
        if g > best {
            let v = t.value_at(j);
            match gs.last_mut() {
                // same value as the last piece: that piece extends to g
                Some(last) if vs.last() == Some(&v) => *last = g,
                _ => {
                    gs.push(g);
                    vs.push(v);
                }
            }
            best = g;
            if g >= gamma_max {
                break;
            }
        }
    }
    (gs, vs)
}

/// The sorted errors of a square matrix's r = 1 table from rank `first` up (those a worst-case
/// sweep from ⌈τN⌉ ≥ `first` reads), with the per-domain counts of the ranks below: the same ranks
/// of the same order as [`SortedTable::from_matrix`] (by value under `f64::total_cmp`, ties by
/// position in the table), bit for bit, in 12 bytes for each rank held and 16 while it is built
/// (half the table over the default τ ≥ 0.5), instead of 12 and 20 for every rank
/// (docs/methods/transfer.md A5).
pub struct SortedTail {
    values: Vec<f64>,
    test: Vec<u32>,
    below: Vec<u32>,
    first: usize,
    /// Number of domains.
    pub n: usize,
    /// Errors per test domain.
    pub k: usize,
}

impl SortedTail {
    /// The ranks from `first` (clamped to 1..=N) up of `matrix`'s table (row-major `n × n`,
    /// `E[train, test]`, the diagonal ignored). The rank `first − 1` is found by selection (a copy
    /// of the errors, 8 bytes each, freed before the tail is built); the ranks above it are
    /// collected and sorted. `None` when an off-diagonal cell is not finite.
    pub fn from_matrix(matrix: &[f64], n: usize, first: usize) -> CoreResult<Option<Self>> {
        if n < 2 || matrix.len() != n * n {
            return Err(CoreError::invalid("matrix", format!("need a square matrix of at least 2 x 2; got {} cells for n = {n}", matrix.len())));
        }
        let k = n - 1;
        let nn = n * k;
        let first = first.clamp(1, nn);
        if first == 1 {
            return Ok(SortedTable::from_matrix(matrix, n)?.map(|t| Self { values: t.values, test: t.test, below: vec![0; n], first, n, k }));
        }
        let below_n = first - 1;
        let Some(v) = crate::transfer::matrix_order_statistics(matrix, n, &[below_n])? else {
            return Ok(None);
        };
        let kstar = total_order_key(v[0]);
        let pos_of = |i: usize, j: usize| (j * k + if i < j { i } else { i - 1 }) as u32;
        // per test domain (column): errors ordered below the threshold's key; the positions of
        // the threshold's ties; per training row: errors above
        let (mut below, mut ties) = matrix
            .par_chunks(n)
            .enumerate()
            .fold(
                || (vec![0u32; n], Vec::new()),
                |(mut counts, mut ties), (i, row)| {
                    for (j, &x) in row.iter().enumerate() {
                        if j == i {
                            continue;
                        }
                        let key = total_order_key(x);
                        if key < kstar {
                            counts[j] += 1;
                        } else if key == kstar {
                            ties.push(pos_of(i, j));
                        }
                    }
                    (counts, ties)
                },
            )
            .reduce(
                || (vec![0u32; n], Vec::new()),
                |(mut a, mut ta), (b, tb)| {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                    ta.extend(tb);
                    (a, ta)
                },
            );
        ties.sort_unstable();
        let less: usize = below.iter().map(|&c| c as usize).sum();
        let m = below_n - less; // ties below the threshold: 1..=ties.len()
        for &pos in &ties[..m] {
            below[pos as usize / k] += 1;
        }
        let pstar = ties[m - 1];
        drop(ties);
        let above = |i: usize, j: usize, x: f64| {
            let key = total_order_key(x);
            key > kstar || (key == kstar && pos_of(i, j) > pstar)
        };
        let per_row: Vec<usize> = matrix
            .par_chunks(n)
            .enumerate()
            .map(|(i, row)| row.iter().enumerate().filter(|&(j, &x)| j != i && above(i, j, x)).count())
            .collect();
        let mut order: Vec<(u64, u32)> = vec![(0, 0); nn - below_n];
        let mut slots: Vec<&mut [(u64, u32)]> = Vec::with_capacity(n);
        let mut rest = order.as_mut_slice();
        for &c in &per_row {
            let (head, tail) = rest.split_at_mut(c);
            slots.push(head);
            rest = tail;
        }
        slots.into_par_iter().zip(matrix.par_chunks(n)).enumerate().for_each(|(i, (dst, row))| {
            let cells = row.iter().enumerate().filter(|&(j, &x)| j != i && above(i, j, x));
            for (slot, (j, &x)) in dst.iter_mut().zip(cells) {
                *slot = (total_order_key(x), pos_of(i, j));
            }
        });
        sort_pairs(&mut order);
        let test = order.par_iter().map(|&(_, pos)| pos / k as u32).collect();
        Ok(Some(Self { values: into_values(order), test, below, first, n, k }))
    }
}

impl Ranked for SortedTail {
    fn total(&self) -> usize {
        self.n * self.k
    }
    fn domains(&self) -> usize {
        self.n
    }
    fn per_domain(&self) -> usize {
        self.k
    }
    fn value_at(&self, j: usize) -> f64 {
        self.values[j - self.first]
    }
    fn test_at(&self, j: usize) -> usize {
        self.test[j - self.first] as usize
    }
    fn counts_before(&self, ends: &[usize]) -> Vec<Vec<u32>> {
        debug_assert!(ends.iter().all(|&e| e >= self.first));
        counts_from(self.below.clone(), self.first, ends, |j| self.test[j - self.first] as usize)
    }
}

pub(super) fn check_gamma(gamma: f64) -> CoreResult<()> {
    if gamma.is_nan() || gamma < 1.0 {
        return Err(CoreError::invalid("Gamma", format!("must be >= 1 (Inf allowed); got {gamma}")));
    }
    Ok(())
}

pub(super) fn check_tau_open(tau: f64) -> CoreResult<()> {
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
/// (docs/methods/transfer.md §3.3, multiplied through by n). +∞ when no k qualifies.
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

/// The per-domain counts of a sweep over the sorted errors, kept so that Γ*_j
/// ([`gamma_star`]) costs O(1) per step instead of O(n) (issue 37; docs/methods/transfer.md A4).
///
/// For j ≥ τ'N, the denominator of Γ*_j is den_k = nP_k − kj − Ck = n·Σ_{i ≤ k} (c_(i) − θ) with
/// θ = τ'N/n, the same for every j: it falls while the k-th smallest count is below θ and rises
/// after, so its minimum, which gives Γ*_j, sits where the counts cross θ. Counts differ from θ
/// by at least 1 outside the counts ⌊θ⌋ and ⌈θ⌉, so every k whose den_k could be the smallest in
/// floating point lies in the window from the last count below ⌊θ⌋ to the last count ⌈θ⌉; the
/// sweep keeps how many counts are below the window (`below`) and their sum (`below_sum`), and
/// the number of domains at each count (`hist`). Within a block of equal counts den_k changes by
/// δ = n·c − τ'N per k, so its smallest value is at one end of the block; in floating point,
/// every k whose den_k is within rounding of that end's is a candidate too (when θ is within
/// rounding of an integer, δ is tiny and many are: δ ≈ 10⁻¹²N, as when τK is a whole number).
/// Each candidate's den_k is computed with the expression of [`gamma_star`], so Γ*_j is its value
/// bit for bit (tests compare the two on every step).
struct GammaSweep {
    count: Vec<u32>,
    /// hist[c]: the number of domains with count c.
    hist: Vec<u32>,
    /// ⌊θ⌋ and ⌈θ⌉ (the window's counts).
    lo: u32,
    hi: u32,
    /// The number of domains with count < lo, and the sum of their counts.
    below: usize,
    below_sum: u64,
    /// Twice the largest rounding error of a computed den_k (8 ε · 2nN): two den_k closer than
    /// this may swap their order in floating point.
    rounding: f64,
    /// The counts exceed what the closed form assumes exactly (n·N ≥ 2^50): the O(n) scan instead.
    scan: Option<SortedCounts>,
}

impl GammaSweep {
    fn new(start: &[u32], kmax: usize, big_c_base: f64) -> Self {
        let n = start.len();
        let theta = big_c_base / n as f64;
        let (lo, hi) = (theta.floor().max(0.0) as u32, theta.ceil().max(0.0) as u32);
        let mut hist = vec![0u32; kmax + 2];
        let (mut below, mut below_sum) = (0usize, 0u64);
        for &c in start {
            hist[c as usize] += 1;
            if c < lo {
                below += 1;
                below_sum += c as u64;
            }
        }
        let big_n = (n * kmax) as f64;
        let scan = (n as f64 * big_n >= (1u64 << 50) as f64).then(|| {
            let mut sc = SortedCounts::new(n, kmax);
            for (d, &c) in start.iter().enumerate() {
                for _ in 0..c {
                    sc.increment(d);
                }
            }
            sc
        });
        Self { count: start.to_vec(), hist, lo, hi, below, below_sum, rounding: 16.0 * f64::EPSILON * n as f64 * big_n, scan }
    }

    fn increment(&mut self, d: usize) {
        if let Some(sc) = self.scan.as_mut() {
            sc.increment(d);
            return;
        }
        let c = self.count[d];
        self.count[d] = c + 1;
        self.hist[c as usize] -= 1;
        self.hist[c as usize + 1] += 1;
        if c + 1 < self.lo {
            self.below_sum += 1;
        } else if c + 1 == self.lo {
            self.below -= 1;
            self.below_sum -= c as u64;
        }
    }

    /// Γ*_j, as [`gamma_star`] computes it from the sorted counts.
    fn gamma_star(&self, j: usize, big_c: f64, n: f64) -> f64 {
        if let Some(sc) = self.scan.as_ref() {
            return gamma_star(sc, j, big_c, n);
        }
        let mut s_star = f64::INFINITY;
        let mut consider = |k: usize, pk: u64| {
            if k >= 1 {
                let (pk, kk) = (pk as f64, k as f64);
                let den = n * pk - kk * j as f64 - big_c * kk;
                if den < 0.0 {
                    let s = n * big_c / den;
                    if s < s_star {
                        s_star = s;
                    }
                }
            }
        };
        let (mut k, mut pk) = (self.below, self.below_sum);
        consider(k, pk);
        let both = [self.lo, self.hi];
        for &c in &both[..if self.hi > self.lo { 2 } else { 1 }] {
            let m = self.hist.get(c as usize).copied().unwrap_or(0) as usize;
            if m == 0 {
                continue;
            }
            // den_{k+1} − den_k inside the block (exact up to one rounding of C): the smallest den
            // in floating point is within `reach` steps of the block's smaller end
            let delta = (n * c as f64 - j as f64) - big_c;
            let reach = if delta == 0.0 { m } else { ((self.rounding / delta.abs()).ceil() as usize).saturating_add(1).min(m) };
            let steps = if delta < 0.0 { (m - reach + 1)..=m } else { 1..=reach };
            for i in steps {
                consider(k + i, pk + (i as u64) * c as u64);
            }
            k += m;
            pk += m as u64 * c as u64;
        }
        if s_star.is_infinite() {
            f64::INFINITY
        } else {
            (1.0 + s_star.max(0.0)).sqrt()
        }
    }
}

/// Value of a step function from [`SortedTable::gamma_steps`] at Γ.
pub fn step_value(gs: &[f64], vs: &[f64], gamma: f64) -> f64 {
    let i = gs.partition_point(|&g| g < gamma).min(vs.len() - 1);
    vs[i]
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::transfer) fn t1_table() -> SortedTable {
        // E = [[·,1,2],[3,·,4],[5,6,·]] (row = train, col = test), grouped by test domain.
        SortedTable::new(&[3.0, 5.0, 1.0, 6.0, 2.0, 4.0], &[0, 0, 1, 1, 2, 2], 3).unwrap()
    }

    #[test]
    fn order_key_orders_as_total_cmp_and_ties_keep_input_order() {
        let xs = [3.5, -0.0, 0.0, -1e300, f64::MIN_POSITIVE, -2.5, 1e300, -f64::MIN_POSITIVE, 2.0, -0.0, 7.0];
        for a in xs {
            for b in xs {
                assert_eq!(total_order_key(a).cmp(&total_order_key(b)), a.total_cmp(&b), "{a} vs {b}");
            }
        }
        // ties (the two -0.0 and the two 2.0) keep their input order, above and below the parallel size
        for len in [2 * xs.len(), crate::common::parallel::PARALLEL_MIN_ITEMS + 6] {
            let values: Vec<f64> = (0..len).map(|i| xs[i % xs.len()]).collect();
            let test: Vec<i64> = (0..len).map(|i| (i % 2) as i64).collect();
            let t = SortedTable::new(&values, &test, 2).unwrap();
            let mut order: Vec<usize> = (0..len).collect();
            order.sort_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)));
            assert!(order.iter().zip(&t.values).all(|(&i, &v)| values[i].to_bits() == v.to_bits()));
            assert!(order.iter().zip(&t.test).all(|(&i, &d)| (i % 2) as u32 == d));
        }
    }

    #[test]
    fn a_matrix_sorts_as_its_table_does() {
        // ties (and signed zeros) across test domains break by the table's order, as when the
        // errors are given in that order; every value comes back bit for bit from its order key
        for n in [2usize, 3, 7, 300] {
            let m: Vec<f64> = (0..n * n).map(|c| [0.0, -0.0, 1.5, -2.0, 7.25][(c * 7919) % 5] + ((c % 3) as f64)).collect();
            let (mut values, mut test) = (Vec::new(), Vec::new());
            for j in 0..n {
                for i in (0..n).filter(|&i| i != j) {
                    values.push(m[i * n + j]);
                    test.push(j as i64);
                }
            }
            let want = SortedTable::new(&values, &test, n).unwrap();
            let got = SortedTable::from_matrix(&m, n).unwrap().unwrap();
            assert_eq!(got.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            assert_eq!((got.test, got.n, got.k), (want.test, want.n, want.k));
        }
        let mut m = vec![1.0; 9];
        m[4] = f64::NAN; // the diagonal is ignored
        assert!(SortedTable::from_matrix(&m, 3).unwrap().is_some());
        m[5] = f64::INFINITY;
        assert!(SortedTable::from_matrix(&m, 3).unwrap().is_none());
        assert!(SortedTable::from_matrix(&m, 2).is_err());
        for x in [0.0, -0.0, 1e-300, -f64::MAX, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(from_order_key(total_order_key(x)).to_bits(), x.to_bits());
        }
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

    /// A table of `n` domains with `k` errors each, their test domains shuffled (seeded), values
    /// `value(position)`.
    fn shuffled_table(n: usize, k: usize, seed: u64, value: impl Fn(usize) -> f64) -> SortedTable {
        let mut rng = crate::common::rng::SplitMix64::new(seed);
        let mut test: Vec<i64> = (0..n * k).map(|i| (i / k) as i64).collect();
        for i in (1..test.len()).rev() {
            test.swap(i, rng.below_rejection(i as u64 + 1) as usize);
        }
        let values: Vec<f64> = (0..n * k).map(value).collect();
        SortedTable::new(&values, &test, n).unwrap()
    }

    /// Γ*_j of the sweep against the O(n) scan over the sorted counts, bit for bit, at every rank
    /// `j` from ⌈τN⌉ where `check(j)`.
    fn assert_sweep_is_scan(t: &SortedTable, tau: f64, check: impl Fn(usize) -> bool) {
        let (n, nn) = (t.n, t.len());
        let big_c_base = (tau - LEVEL_TOL) * nn as f64;
        let j0 = upper_rank(nn, tau).max(1);
        let mut sweep = GammaSweep::new(&t.counts_before(&[j0]).remove(0), t.k, big_c_base);
        assert!(sweep.scan.is_none());
        let mut sc = SortedCounts::new(n, t.k);
        for j in 1..j0 {
            sc.increment(t.test[j - 1] as usize);
        }
        for j in j0..=nn {
            sweep.increment(t.test[j - 1] as usize);
            sc.increment(t.test[j - 1] as usize);
            if check(j) {
                let c = (big_c_base - j as f64).min(0.0);
                let (new, old) = (sweep.gamma_star(j, c, n as f64), gamma_star(&sc, j, c, n as f64));
                assert_eq!(new.to_bits(), old.to_bits(), "n={n} tau={tau} j={j}: {new} vs {old}");
            }
        }
    }

    #[test]
    fn the_sweep_gives_gamma_star_bit_for_bit() {
        // random tables with ties, and sizes where θ = τ'K is (within rounding of) an integer
        // (K = 100: every τ of the default grid), so that whole blocks are evaluated
        for (n, k, seed) in [(5usize, 4usize, 1u64), (101, 100, 2), (40, 39, 3), (11, 30, 4), (3, 2, 5)] {
            let t = shuffled_table(n, k, seed, |i| (i / 3) as f64); // sorted, with ties
            for tau in [0.5, 0.6, 0.75, 0.9, 0.95, 0.99, 1.0] {
                assert_sweep_is_scan(&t, tau, |_| true);
                let many = t.gamma_steps_many(&[tau, 0.5], 3.0).unwrap();
                assert_eq!(many[0], t.gamma_steps(tau, 3.0).unwrap());
            }
        }
    }

    #[test]
    fn the_sweep_evaluates_a_whole_block_when_its_dens_tie_within_rounding() {
        // n = 20,001 domains, K = 100, τ = 0.9: θ = τ'K lies 1e-10 below the integer 90, so each
        // domain at count 90 changes den_k by n·90 − τ'N ≈ 2e-6, below the rounding of den (~1e-5):
        // the smallest den_k in floating point can sit inside the block of count 90
        let t = shuffled_table(20_001, 100, 7, |i| i as f64);
        let j0 = upper_rank(t.len(), 0.9);
        assert_sweep_is_scan(&t, 0.9, |j| j % 97 == 0 || j < j0 + 50);
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
        // a huge n is refused before its per-domain counts are allocated (was an abort)
        for n in [3usize, 1 << 40, usize::MAX] {
            let e = SortedTable::new(&[1.0, 2.0], &[0, 1], n).unwrap_err();
            assert!(e.to_string().contains("`n`"), "{e}");
        }
        assert!(t1_table().worst_case_upper(0.6, 0.5).is_err());
    }
}
