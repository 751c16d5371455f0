//! Streaming block-out accumulation (docs/methods/ess.md §2.3, §11): the cross-fitted losses
//! ℓ_{b,i}, i ∉ I_b, of each block's fitted rule become the block test errors ê_b and the
//! observation-level sums Σ_{b≠b(i)} ℓ_{b,i}, for the plain loss and (when LLM losses are given)
//! the difference loss in the same pass. Memory is O(n + B) whatever the number of blocks.
//!
//! Determinism: blocks must be added in order b = 0, 1, 2, …; sums run in a fixed order that does
//! not depend on the thread count or on how the caller chunks the blocks. Observation sums are
//! built from plain partial sums over groups of [`ROW_GROUP`] consecutive blocks (aligned on the
//! absolute block index), folded into running sums with TwoSum error compensation; block sums
//! combine plain partial sums over fixed tiles of [`TILE`] observations with compensation. The
//! AVX2 builds of the inner loops, chosen at run time, give the same bits, and so does the pass
//! that reads four rows at once (each pending sum still receives the losses in row order): it
//! loads and stores the observation sums once per four rows instead of once per row.

use super::loss::LossKind;
use super::variance::{mean, sample_var, variance_pieces, Pieces};
use crate::common::errors::{check, CoreError, CoreResult, Part};
use crate::common::numerics::CompensatedSum;
use crate::common::parallel::PARALLEL_MIN_ITEMS;
use rayon::prelude::*;

/// Observations per tile (the unit of parallel work and of the block-sum partials).
pub const TILE: usize = 2048;
/// Consecutive blocks whose losses are summed plainly before a compensated fold.
pub const ROW_GROUP: usize = 32;

/// One tile's running sums of the difference loss (sum, compensation, pending), when LLM losses
/// were given.
type DTile<'a> = Option<(&'a mut [f64], &'a mut [f64], &'a mut [f64])>;

#[derive(Debug, Clone)]
struct ObsSums {
    sum: Vec<f64>,
    comp: Vec<f64>,
    pending: Vec<f64>,
}

impl ObsSums {
    fn new(n: usize) -> Self {
        Self { sum: vec![0.0; n], comp: vec![0.0; n], pending: vec![0.0; n] }
    }
}

/// Fold the pending plain partial sums into the running sums with Knuth's branch-free TwoSum
/// (the rounding error of every addition goes to `comp`), then clear them.
#[inline(always)]
fn fold_generic(sum: &mut [f64], comp: &mut [f64], pend: &mut [f64]) {
    for ((s, c), p) in sum.iter_mut().zip(comp.iter_mut()).zip(pend.iter_mut()) {
        let a = *s;
        let b = *p;
        let t = a + b;
        let bp = t - a;
        *c += (a - (t - bp)) + (b - bp);
        *s = t;
        *p = 0.0;
    }
}

fn fold(sum: &mut [f64], comp: &mut [f64], pend: &mut [f64]) {
    fold_generic(sum, comp, pend)
}

/// Losses of one contiguous run added to the pending sums; returns their sum (4 fixed lanes).
#[inline(always)]
fn run_plain<F: Fn(f64, f64) -> f64>(f: F, p: &[f64], y: &[f64], pend: &mut [f64]) -> f64 {
    let m = p.len().min(y.len()).min(pend.len());
    let (p, y, pend) = (&p[..m], &y[..m], &mut pend[..m]);
    let mut lanes = [0.0f64; 4];
    let mut pc = p.chunks_exact(4);
    let mut yc = y.chunks_exact(4);
    let mut dc = pend.chunks_exact_mut(4);
    for ((pp, yy), dd) in (&mut pc).zip(&mut yc).zip(&mut dc) {
        let l = [f(pp[0], yy[0]), f(pp[1], yy[1]), f(pp[2], yy[2]), f(pp[3], yy[3])];
        for j in 0..4 {
            dd[j] += l[j];
            lanes[j] += l[j];
        }
    }
    let mut tail = 0.0;
    for ((&pp, &yy), dd) in pc.remainder().iter().zip(yc.remainder()).zip(dc.into_remainder()) {
        let l = f(pp, yy);
        *dd += l;
        tail += l;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

/// As [`run_plain`] for the plain and the difference loss together.
#[inline(always)]
fn run_diff<F: Fn(f64, f64) -> f64>(f: F, p: &[f64], y: &[f64], ll: &[f64], pend: &mut [f64], dpend: &mut [f64]) -> (f64, f64) {
    let m = p.len().min(y.len()).min(ll.len()).min(pend.len()).min(dpend.len());
    let (p, y, ll, pend, dpend) = (&p[..m], &y[..m], &ll[..m], &mut pend[..m], &mut dpend[..m]);
    let mut lanes = [0.0f64; 4];
    let mut dlanes = [0.0f64; 4];
    let mut pc = p.chunks_exact(4);
    let mut yc = y.chunks_exact(4);
    let mut lc = ll.chunks_exact(4);
    let mut ac = pend.chunks_exact_mut(4);
    let mut bc = dpend.chunks_exact_mut(4);
    for ((((pp, yy), lq), aa), bb) in (&mut pc).zip(&mut yc).zip(&mut lc).zip(&mut ac).zip(&mut bc) {
        let l = [f(pp[0], yy[0]), f(pp[1], yy[1]), f(pp[2], yy[2]), f(pp[3], yy[3])];
        for j in 0..4 {
            let d = l[j] - lq[j];
            aa[j] += l[j];
            bb[j] += d;
            lanes[j] += l[j];
            dlanes[j] += d;
        }
    }
    let (mut tail, mut dtail) = (0.0, 0.0);
    for ((((&pp, &yy), &lq), aa), bb) in pc.remainder().iter().zip(yc.remainder()).zip(lc.remainder())
        .zip(ac.into_remainder()).zip(bc.into_remainder())
    {
        let l = f(pp, yy);
        let d = l - lq;
        *aa += l;
        *bb += d;
        tail += l;
        dtail += d;
    }
    ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail, (dlanes[0] + dlanes[1]) + (dlanes[2] + dlanes[3]) + dtail)
}

/// [`run_plain`] for four consecutive rows over the same run of observations: y and the pending
/// sums are loaded and stored once for the four rows instead of once per row. Each pending sum
/// receives the four losses in row order and each row's lanes are summed as in [`run_plain`], so
/// the bits equal four [`run_plain`] calls.
#[inline(always)]
fn run_rows4<F: Fn(f64, f64) -> f64>(f: F, p: [&[f64]; 4], y: &[f64], pend: &mut [f64]) -> [f64; 4] {
    let m = y.len().min(pend.len()).min(p[0].len()).min(p[1].len()).min(p[2].len()).min(p[3].len());
    let (p0, p1, p2, p3) = (&p[0][..m], &p[1][..m], &p[2][..m], &p[3][..m]);
    let (y, pend) = (&y[..m], &mut pend[..m]);
    let q = m - m % 4;
    let mut lanes = [[0.0f64; 4]; 4];
    let rows = p0[..q].chunks_exact(4).zip(p1[..q].chunks_exact(4)).zip(p2[..q].chunks_exact(4)).zip(p3[..q].chunks_exact(4));
    for ((((a, b), c), d), (yy, dd)) in rows.zip(y[..q].chunks_exact(4).zip(pend[..q].chunks_exact_mut(4))) {
        for j in 0..4 {
            let l = [f(a[j], yy[j]), f(b[j], yy[j]), f(c[j], yy[j]), f(d[j], yy[j])];
            dd[j] = (((dd[j] + l[0]) + l[1]) + l[2]) + l[3];
            for r in 0..4 {
                lanes[r][j] += l[r];
            }
        }
    }
    let mut tail = [0.0f64; 4];
    for i in q..m {
        let l = [f(p0[i], y[i]), f(p1[i], y[i]), f(p2[i], y[i]), f(p3[i], y[i])];
        pend[i] = (((pend[i] + l[0]) + l[1]) + l[2]) + l[3];
        for r in 0..4 {
            tail[r] += l[r];
        }
    }
    std::array::from_fn(|r| (lanes[r][0] + lanes[r][1]) + (lanes[r][2] + lanes[r][3]) + tail[r])
}

/// [`run_diff`] for four consecutive rows, as [`run_rows4`] is [`run_plain`] (same bits as four
/// [`run_diff`] calls).
#[inline(always)]
fn run_rows4_diff<F: Fn(f64, f64) -> f64>(
    f: F, p: [&[f64]; 4], y: &[f64], ll: &[f64], pend: &mut [f64], dpend: &mut [f64],
) -> ([f64; 4], [f64; 4]) {
    let m = y.len().min(ll.len()).min(pend.len()).min(dpend.len());
    let m = m.min(p[0].len()).min(p[1].len()).min(p[2].len()).min(p[3].len());
    let (p0, p1, p2, p3) = (&p[0][..m], &p[1][..m], &p[2][..m], &p[3][..m]);
    let (y, ll, pend, dpend) = (&y[..m], &ll[..m], &mut pend[..m], &mut dpend[..m]);
    let q = m - m % 4;
    let mut lanes = [[0.0f64; 4]; 4];
    let mut dlanes = [[0.0f64; 4]; 4];
    let rows = p0[..q].chunks_exact(4).zip(p1[..q].chunks_exact(4)).zip(p2[..q].chunks_exact(4)).zip(p3[..q].chunks_exact(4));
    let obs = y[..q].chunks_exact(4).zip(ll[..q].chunks_exact(4)).zip(pend[..q].chunks_exact_mut(4)).zip(dpend[..q].chunks_exact_mut(4));
    for ((((a, b), c), d), (((yy, lq), aa), bb)) in rows.zip(obs) {
        for j in 0..4 {
            let l = [f(a[j], yy[j]), f(b[j], yy[j]), f(c[j], yy[j]), f(d[j], yy[j])];
            let e = [l[0] - lq[j], l[1] - lq[j], l[2] - lq[j], l[3] - lq[j]];
            aa[j] = (((aa[j] + l[0]) + l[1]) + l[2]) + l[3];
            bb[j] = (((bb[j] + e[0]) + e[1]) + e[2]) + e[3];
            for r in 0..4 {
                lanes[r][j] += l[r];
                dlanes[r][j] += e[r];
            }
        }
    }
    let (mut tail, mut dtail) = ([0.0f64; 4], [0.0f64; 4]);
    for i in q..m {
        let l = [f(p0[i], y[i]), f(p1[i], y[i]), f(p2[i], y[i]), f(p3[i], y[i])];
        let e = [l[0] - ll[i], l[1] - ll[i], l[2] - ll[i], l[3] - ll[i]];
        pend[i] = (((pend[i] + l[0]) + l[1]) + l[2]) + l[3];
        dpend[i] = (((dpend[i] + e[0]) + e[1]) + e[2]) + e[3];
        for r in 0..4 {
            tail[r] += l[r];
            dtail[r] += e[r];
        }
    }
    (
        std::array::from_fn(|r| (lanes[r][0] + lanes[r][1]) + (lanes[r][2] + lanes[r][3]) + tail[r]),
        std::array::from_fn(|r| (dlanes[r][0] + dlanes[r][1]) + (dlanes[r][2] + dlanes[r][3]) + dtail[r]),
    )
}

macro_rules! with_loss {
    ($kind:expr, $f:ident => $body:expr) => {
        match $kind {
            LossKind::Squared | LossKind::Brier => {
                let $f = |p: f64, y: f64| (p - y) * (p - y);
                $body
            }
            LossKind::Absolute => {
                let $f = |p: f64, y: f64| (p - y).abs();
                $body
            }
            LossKind::ZeroOne => {
                let $f = |p: f64, y: f64| if p != y { 1.0 } else { 0.0 };
                $body
            }
            LossKind::Log { eps } => {
                let $f = move |p: f64, y: f64| LossKind::Log { eps }.eval(p, y);
                $body
            }
            LossKind::Precomputed => {
                let $f = |p: f64, _y: f64| p;
                $body
            }
        }
    };
}

#[inline(always)]
fn plain_generic(kind: LossKind, p: &[f64], y: &[f64], pend: &mut [f64]) -> f64 {
    with_loss!(kind, f => run_plain(f, p, y, pend))
}

#[inline(always)]
fn diff_generic(kind: LossKind, p: &[f64], y: &[f64], ll: &[f64], pend: &mut [f64], dpend: &mut [f64]) -> (f64, f64) {
    with_loss!(kind, f => run_diff(f, p, y, ll, pend, dpend))
}

#[inline(always)]
fn rows4_generic(kind: LossKind, p: [&[f64]; 4], y: &[f64], pend: &mut [f64]) -> [f64; 4] {
    with_loss!(kind, f => run_rows4(f, p, y, pend))
}

#[inline(always)]
fn rows4_diff_generic(kind: LossKind, p: [&[f64]; 4], y: &[f64], ll: &[f64], pend: &mut [f64], dpend: &mut [f64]) -> ([f64; 4], [f64; 4]) {
    with_loss!(kind, f => run_rows4_diff(f, p, y, ll, pend, dpend))
}

// AVX2 builds of the same kernels, chosen at run time. They give bit-identical results: the
// per-lane operation order is fixed in the source, Rust never reassociates floating-point
// operations and never contracts a * b + c into an FMA, so only the vector width changes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn plain_avx2(kind: LossKind, p: &[f64], y: &[f64], pend: &mut [f64]) -> f64 {
    plain_generic(kind, p, y, pend)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn diff_avx2(kind: LossKind, p: &[f64], y: &[f64], ll: &[f64], pend: &mut [f64], dpend: &mut [f64]) -> (f64, f64) {
    diff_generic(kind, p, y, ll, pend, dpend)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows4_avx2(kind: LossKind, p: [&[f64]; 4], y: &[f64], pend: &mut [f64]) -> [f64; 4] {
    rows4_generic(kind, p, y, pend)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows4_diff_avx2(kind: LossKind, p: [&[f64]; 4], y: &[f64], ll: &[f64], pend: &mut [f64], dpend: &mut [f64]) -> ([f64; 4], [f64; 4]) {
    rows4_diff_generic(kind, p, y, ll, pend, dpend)
}

/// Whether the AVX2 kernels are used (x86-64 with AVX2, unless LLMSURROGATE_NO_AVX2 is set).
pub fn uses_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVX2.get_or_init(|| std::env::var_os("LLMSURROGATE_NO_AVX2").is_none() && std::arch::is_x86_feature_detected!("avx2"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn dispatch_plain(kind: LossKind, p: &[f64], y: &[f64], pend: &mut [f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if uses_avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time).
        return unsafe { plain_avx2(kind, p, y, pend) };
    }
    plain_generic(kind, p, y, pend)
}

fn dispatch_diff(kind: LossKind, p: &[f64], y: &[f64], ll: &[f64], pend: &mut [f64], dpend: &mut [f64]) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    if uses_avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time).
        return unsafe { diff_avx2(kind, p, y, ll, pend, dpend) };
    }
    diff_generic(kind, p, y, ll, pend, dpend)
}

fn dispatch_rows4(kind: LossKind, p: [&[f64]; 4], y: &[f64], pend: &mut [f64]) -> [f64; 4] {
    #[cfg(target_arch = "x86_64")]
    if uses_avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time).
        return unsafe { rows4_avx2(kind, p, y, pend) };
    }
    rows4_generic(kind, p, y, pend)
}

fn dispatch_rows4_diff(kind: LossKind, p: [&[f64]; 4], y: &[f64], ll: &[f64], pend: &mut [f64], dpend: &mut [f64]) -> ([f64; 4], [f64; 4]) {
    #[cfg(target_arch = "x86_64")]
    if uses_avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time).
        return unsafe { rows4_diff_avx2(kind, p, y, ll, pend, dpend) };
    }
    rows4_diff_generic(kind, p, y, ll, pend, dpend)
}

/// The finished accumulation for one training size.
#[derive(Debug, Clone)]
pub struct BlockOutResult {
    pub n_block: usize,
    pub blocks: usize,
    pub n_used: usize,
    /// Block test errors ê_b.
    pub e_b: Vec<f64>,
    /// L̄_i = Σ_{b≠b(i)} ℓ_{b,i} / (B − 1).
    pub lbar: Vec<f64>,
    pub plain: Pieces,
    /// Difference-loss versions (ℓ − ℓ^LLM), when LLM losses were given.
    pub diff_e_b: Option<Vec<f64>>,
    pub diff_lbar: Option<Vec<f64>>,
    pub diff: Option<Pieces>,
    /// Mean and sample variance of the LLM losses over the retained n_used observations.
    pub llm_mean: Option<f64>,
    pub llm_var: Option<f64>,
}

/// Streaming accumulator for block-out CV at one training size N.
#[derive(Debug, Clone)]
pub struct BlockOutAccumulator {
    y: Vec<f64>,
    llm_loss: Option<Vec<f64>>,
    kind: LossKind,
    n_block: usize,
    blocks: usize,
    next_block: usize,
    e_sum: Vec<f64>,
    d_sum: Vec<f64>,
    obs: ObsSums,
    dobs: Option<ObsSums>,
    poisoned: bool,
}

impl BlockOutAccumulator {
    /// `y` and `llm_loss` are the permuted data (full length; the remainder beyond B·N is dropped).
    pub fn new(y: &[f64], n_block: usize, kind: LossKind, llm_loss: Option<&[f64]>) -> CoreResult<Self> {
        check::finite("y", y)?;
        if n_block == 0 {
            return Err(CoreError::invalid("n_train", "training size N must be >= 1"));
        }
        let blocks = y.len() / n_block;
        if blocks < 2 {
            return Err(CoreError::invalid(
                "n_train",
                format!("N = {n_block} leaves {blocks} block(s) of n = {}; block-out CV needs N <= n/2", y.len()),
            ));
        }
        let n = blocks * n_block;
        if let Some(l) = llm_loss {
            check::same_len("llm_loss", l.len(), "y", y.len())?;
            check::finite("llm_loss", l)?;
        }
        Ok(Self {
            y: y[..n].to_vec(),
            llm_loss: llm_loss.map(|l| l[..n].to_vec()),
            kind,
            n_block,
            blocks,
            next_block: 0,
            e_sum: vec![0.0; blocks],
            d_sum: vec![0.0; blocks],
            obs: ObsSums::new(n),
            dobs: llm_loss.map(|_| ObsSums::new(n)),
            poisoned: false,
        })
    }

    pub fn blocks(&self) -> usize {
        self.blocks
    }
    pub fn n_used(&self) -> usize {
        self.y.len()
    }
    pub fn next_block(&self) -> usize {
        self.next_block
    }

    /// Add the predictions of blocks `b0 .. b0 + rows` (row-major `preds`, `rows × width`). Each
    /// row holds the fitted rule's predictions either for all n_used observations (`width = n`;
    /// the block's own entries are ignored) or for the complement only (`width = n − N`, in
    /// observation order). Blocks must come in order: `b0` must equal [`Self::next_block`].
    pub fn add_blocks(&mut self, b0: usize, preds: &[f64], width: usize) -> CoreResult<()> {
        let n = self.y.len();
        let nb = self.n_block;
        if self.poisoned {
            return Err(CoreError::invalid("preds", "an earlier chunk held non-finite values; start a new accumulator"));
        }
        if b0 != self.next_block {
            // the package's own chunk numbers (llmsurrogate.ess._engine), never a user's input
            let msg = format!("blocks must be added in order; expected block {}, got {b0}", self.next_block); // position-scan: internal
            return Err(CoreError::invalid("b0", msg));
        }
        if width != n && width != n - nb {
            return Err(CoreError::invalid(
                "preds",
                format!("each row must hold {n} (all retained rows) or {} (complement) predictions; got {width}", n - nb),
            ));
        }
        if width == 0 || preds.len() % width != 0 {
            return Err(CoreError::invalid("preds", "prediction buffer is not a whole number of rows"));
        }
        let rows = preds.len() / width;
        if b0 + rows > self.blocks {
            return Err(CoreError::invalid_at(
                "preds",
                vec![Part::text(format!("{rows} rows from ")), Part::at("block", b0), Part::text(format!(" exceed the {} blocks", self.blocks))],
            ));
        }
        if rows == 0 {
            return Ok(());
        }
        // Validate finiteness where it is used (own-block entries of full rows are ignored). For
        // squared, absolute and Brier losses a non-finite prediction makes the block sum
        // non-finite, so the scan runs only then (below); other losses are scanned up front.
        let prescan = matches!(self.kind, LossKind::ZeroOne | LossKind::Log { .. } | LossKind::Precomputed);
        if prescan {
            self.scan_finite(b0, preds, width, rows)?;
        }
        self.add_blocks_unchecked(b0, preds, width, rows, !prescan)
    }

    fn scan_finite(&self, b0: usize, preds: &[f64], width: usize, rows: usize) -> CoreResult<()> {
        let n = self.y.len();
        let nb = self.n_block;
        for r in 0..rows {
            let b = b0 + r;
            let row = &preds[r * width..(r + 1) * width];
            for (j, &p) in row.iter().enumerate() {
                if !p.is_finite() {
                    let i = if width == n { j } else if j < b * nb { j } else { j + nb };
                    if width == n && i >= b * nb && i < (b + 1) * nb {
                        continue;
                    }
                    // the block is the package's own (llmsurrogate.ess._engine); the position is the data's
                    let arg = format!("predictions of block {b}"); // position-scan: internal
                    return Err(CoreError::NonFinite { arg, index: i, value: p });
                }
            }
        }
        Ok(())
    }

    fn add_blocks_unchecked(&mut self, b0: usize, preds: &[f64], width: usize, rows: usize, check_after: bool) -> CoreResult<()> {
        let n = self.y.len();
        let nb = self.n_block;
        let kind = self.kind;
        let y = &self.y;
        let llm = self.llm_loss.as_deref();
        let n_tiles = n.div_ceil(TILE);
        // Per (row, tile) plain partial sums for ê_b (plain, diff).
        let mut partial = vec![0.0f64; rows * n_tiles];
        let mut dpartial = vec![0.0f64; rows * n_tiles];
        let blocks_total = self.blocks;
        {
            let obs = &mut self.obs;
            let mut dobs = self.dobs.as_mut();
            let dsum_tiles: Vec<(&mut [f64], &mut [f64], &mut [f64])> = match dobs.as_mut() {
                Some(d) => d
                    .sum
                    .chunks_mut(TILE)
                    .zip(d.comp.chunks_mut(TILE))
                    .zip(d.pending.chunks_mut(TILE))
                    .map(|((a, b), c)| (a, b, c))
                    .collect(),
                None => Vec::new(),
            };
            let mut dtiles: Vec<Option<(&mut [f64], &mut [f64], &mut [f64])>> =
                dsum_tiles.into_iter().map(Some).collect();
            if dtiles.is_empty() {
                dtiles = (0..n_tiles).map(|_| None).collect();
            }
            let work: Vec<_> = obs
                .sum
                .chunks_mut(TILE)
                .zip(obs.comp.chunks_mut(TILE))
                .zip(obs.pending.chunks_mut(TILE))
                .zip(dtiles)
                .enumerate()
                .collect();
            let tile_pass = |(t, (((sum, comp), pend), dt)): (usize, (((&mut [f64], &mut [f64]), &mut [f64]), DTile<'_>))| {
                let start = t * TILE;
                let len = sum.len();
                let end = start + len;
                let mut ep = vec![0.0f64; rows];
                let mut dp = vec![0.0f64; rows];
                let mut dt = dt;
                // a row whose own block lies outside this tile reads the whole tile
                let clean = |r: usize| ((b0 + r) + 1) * nb <= start || (b0 + r) * nb >= end;
                let folds_after = |r: usize| (b0 + r + 1) % ROW_GROUP == 0 || b0 + r + 1 == blocks_total;
                let mut r = 0;
                while r < rows {
                    if r + 4 <= rows && (r..r + 4).all(clean) && !(r..r + 3).any(folds_after) {
                        // four rows in one pass: same bits as one row at a time (below)
                        let seg = |k: usize| {
                            let off = if width == n || (b0 + k) * nb >= end { 0 } else { nb };
                            &preds[k * width + start - off..k * width + end - off]
                        };
                        let segs = [seg(r), seg(r + 1), seg(r + 2), seg(r + 3)];
                        match (&mut dt, llm) {
                            (Some((_, _, dpend)), Some(ll)) => {
                                let (a, d) = dispatch_rows4_diff(kind, segs, &y[start..end], &ll[start..end], pend, dpend);
                                for k in 0..4 {
                                    ep[r + k] = 0.0 + a[k];
                                    dp[r + k] = 0.0 + d[k];
                                }
                            }
                            _ => {
                                let a = dispatch_rows4(kind, segs, &y[start..end], pend);
                                for k in 0..4 {
                                    ep[r + k] = 0.0 + a[k];
                                }
                            }
                        }
                        if folds_after(r + 3) {
                            fold(sum, comp, pend);
                            if let Some((dsum, dcomp, dpend)) = dt.as_mut() {
                                fold(dsum, dcomp, dpend);
                            }
                        }
                        r += 4;
                        continue;
                    }
                    let b = b0 + r;
                    let own_lo = b * nb;
                    let own_hi = own_lo + nb;
                    let row = &preds[r * width..(r + 1) * width];
                    let mut acc = 0.0f64;
                    let mut dacc = 0.0f64;
                    // two contiguous ranges of this tile outside the own block
                    let ranges = [(start, end.min(own_lo)), (start.max(own_hi), end)];
                    for &(lo, hi) in &ranges {
                        if lo >= hi {
                            continue;
                        }
                        let off = if width == n || lo < own_lo { 0 } else { nb };
                        let prow = &row[lo - off..hi - off];
                        let ys = &y[lo..hi];
                        let pd = &mut pend[lo - start..hi - start];
                        match (&mut dt, llm) {
                            (Some((_, _, dpend)), Some(ll)) => {
                                let dpd = &mut dpend[lo - start..hi - start];
                                let (a, d) = dispatch_diff(kind, prow, ys, &ll[lo..hi], pd, dpd);
                                acc += a;
                                dacc += d;
                            }
                            _ => {
                                acc += dispatch_plain(kind, prow, ys, pd);
                            }
                        }
                    }
                    ep[r] = acc;
                    dp[r] = dacc;
                    // fold pending sums at the end of each aligned group of blocks
                    if folds_after(r) {
                        fold(sum, comp, pend);
                        if let Some((dsum, dcomp, dpend)) = dt.as_mut() {
                            fold(dsum, dcomp, dpend);
                        }
                    }
                    r += 1;
                }
                (t, ep, dp)
            };
            // a small call runs on the caller's thread: parallel::install_for enters no pool below
            // PARALLEL_MIN_ITEMS, where rayon would hand the tiles to its global pool
            let results: Vec<(usize, Vec<f64>, Vec<f64>)> = if preds.len() < PARALLEL_MIN_ITEMS {
                work.into_iter().map(tile_pass).collect()
            } else {
                work.into_par_iter().map(tile_pass).collect()
            };
            for (t, ep, dp) in results {
                for r in 0..rows {
                    partial[r * n_tiles + t] = ep[r];
                    dpartial[r * n_tiles + t] = dp[r];
                }
            }
        }
        if check_after && partial.iter().chain(dpartial.iter()).any(|v| !v.is_finite()) {
            // the running sums now hold non-finite values: the accumulator cannot be used again
            self.poisoned = true;
            self.scan_finite(b0, preds, width, rows)?;
            return Err(CoreError::invalid("preds", "a loss overflowed to infinity; rescale the outcome and predictions"));
        }
        for r in 0..rows {
            let mut s = CompensatedSum::new();
            let mut d = CompensatedSum::new();
            for t in 0..n_tiles {
                s.add(partial[r * n_tiles + t]);
                d.add(dpartial[r * n_tiles + t]);
            }
            self.e_sum[b0 + r] = s.value();
            self.d_sum[b0 + r] = d.value();
        }
        self.next_block += rows;
        Ok(())
    }

    /// Finish: every block must have been added.
    pub fn finalize(&self) -> CoreResult<BlockOutResult> {
        if self.poisoned {
            return Err(CoreError::invalid("preds", "an earlier chunk held non-finite values; start a new accumulator"));
        }
        if self.next_block != self.blocks {
            return Err(CoreError::invalid(
                "blocks",
                format!("only {} of {} blocks were added before finalize", self.next_block, self.blocks),
            ));
        }
        let n = self.y.len();
        let nb = self.n_block;
        let t = (n - nb) as f64;
        let bm1 = (self.blocks - 1) as f64;
        let e_b: Vec<f64> = self.e_sum.iter().map(|s| s / t).collect();
        let lbar: Vec<f64> = (0..n).map(|i| (self.obs.sum[i] + self.obs.comp[i]) / bm1).collect();
        let plain = variance_pieces(&e_b, &lbar, nb)?;
        let (diff_e_b, diff_lbar, diff, llm_mean, llm_var) = match (&self.dobs, &self.llm_loss) {
            (Some(d), Some(ll)) => {
                let de: Vec<f64> = self.d_sum.iter().map(|s| s / t).collect();
                let dl: Vec<f64> = (0..n).map(|i| (d.sum[i] + d.comp[i]) / bm1).collect();
                let p = variance_pieces(&de, &dl, nb)?;
                (Some(de), Some(dl), Some(p), Some(mean(ll)), Some(sample_var(ll)))
            }
            _ => (None, None, None, None, None),
        };
        Ok(BlockOutResult {
            n_block: nb,
            blocks: self.blocks,
            n_used: n,
            e_b,
            lbar,
            plain,
            diff_e_b,
            diff_lbar,
            diff,
            llm_mean,
            llm_var,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::rng::SplitMix64;

    fn brute(y: &[f64], preds: &[Vec<f64>], nb: usize, llm: Option<&[f64]>) -> (Vec<f64>, Vec<f64>) {
        let b = y.len() / nb;
        let n = b * nb;
        let mut e = vec![0.0; b];
        let mut l = vec![0.0; n];
        for bb in 0..b {
            for i in 0..n {
                if i / nb == bb {
                    continue;
                }
                let mut v = (preds[bb][i] - y[i]).powi(2);
                if let Some(ll) = llm {
                    v -= ll[i];
                }
                e[bb] += v;
                l[i] += v;
            }
        }
        (e.iter().map(|s| s / (n - nb) as f64).collect(), l.iter().map(|s| s / (b - 1) as f64).collect())
    }

    fn data(n: usize, seed: u64) -> Vec<f64> {
        let mut r = SplitMix64::new(seed);
        (0..n).map(|_| (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64).collect()
    }

    #[test]
    fn accumulator_matches_brute_force_with_remainder_and_chunking() {
        let n = 61;
        let nb = 4;
        let y = data(n, 1);
        let llm: Vec<f64> = data(n, 2);
        let b = n / nb;
        let preds: Vec<Vec<f64>> = (0..b).map(|k| data(n, 10 + k as u64)).collect();
        let (e_ref, l_ref) = brute(&y, &preds, nb, None);
        let (de_ref, dl_ref) = brute(&y, &preds, nb, Some(&llm));
        for chunk in [1usize, 3, 7, 15] {
            let mut acc = BlockOutAccumulator::new(&y, nb, LossKind::Squared, Some(&llm)).unwrap();
            let mut b0 = 0;
            while b0 < b {
                let k = chunk.min(b - b0);
                // complement-only rows for odd chunks, full rows otherwise
                let full = chunk % 2 == 0;
                let mut buf = Vec::new();
                for r in 0..k {
                    let bb = b0 + r;
                    for i in 0..b * nb {
                        if full || i / nb != bb {
                            buf.push(preds[bb][i]);
                        }
                    }
                }
                let width = if full { b * nb } else { b * nb - nb };
                acc.add_blocks(b0, &buf, width).unwrap();
                b0 += k;
            }
            let res = acc.finalize().unwrap();
            for k in 0..b {
                assert!((res.e_b[k] - e_ref[k]).abs() < 1e-13);
                assert!((res.diff_e_b.as_ref().unwrap()[k] - de_ref[k]).abs() < 1e-13);
            }
            for i in 0..b * nb {
                assert!((res.lbar[i] - l_ref[i]).abs() < 1e-13);
                assert!((res.diff_lbar.as_ref().unwrap()[i] - dl_ref[i]).abs() < 1e-13);
            }
            // identity I1
            let m: f64 = res.lbar.iter().sum::<f64>() / (b * nb) as f64;
            assert!((m - res.plain.ecv).abs() < 1e-13);
        }
    }

    #[test]
    fn bits_do_not_depend_on_chunking_or_threads() {
        // several tiles, own blocks straddling tile edges, fold groups, full and complement rows:
        // the four-row pass and the one-row pass must give the same bits
        for &(n, nb) in &[(3 * TILE + 77, 1usize), (3 * TILE + 77, 37), (2 * TILE + 5, 600)] {
            let y = data(n, 5);
            let llm = data(n, 6);
            let b = n / nb;
            let m = b * nb;
            let preds: Vec<Vec<f64>> = (0..b).map(|k| data(m, 1000 + k as u64)).collect();
            let run = |chunk: usize, full: bool, threads: usize, with_llm: bool| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let ll = if with_llm { Some(&llm[..]) } else { None };
                let mut acc = BlockOutAccumulator::new(&y, nb, LossKind::Absolute, ll).unwrap();
                let mut b0 = 0;
                while b0 < b {
                    let k = chunk.min(b - b0);
                    let mut buf = Vec::new();
                    for bb in b0..b0 + k {
                        for i in 0..m {
                            if full || i / nb != bb {
                                buf.push(preds[bb][i]);
                            }
                        }
                    }
                    let width = if full { m } else { m - nb };
                    pool.install(|| acc.add_blocks(b0, &buf, width)).unwrap();
                    b0 += k;
                }
                acc.finalize().unwrap()
            };
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for with_llm in [true, false] {
                // plain-only accumulators take the four-row plain kernel, the others the difference one
                let one = run(1, true, 1, with_llm);
                for &(chunk, full, threads) in &[(b, true, 3), (7, false, 2), (64, true, 1), (5, false, 4)] {
                    let r = run(chunk, full, threads, with_llm);
                    assert_eq!(bits(&r.e_b), bits(&one.e_b), "n={n} nb={nb} chunk={chunk} llm={with_llm}");
                    assert_eq!(bits(&r.lbar), bits(&one.lbar), "n={n} nb={nb} chunk={chunk} llm={with_llm}");
                    if with_llm {
                        assert_eq!(bits(r.diff_e_b.as_ref().unwrap()), bits(one.diff_e_b.as_ref().unwrap()));
                        assert_eq!(bits(r.diff_lbar.as_ref().unwrap()), bits(one.diff_lbar.as_ref().unwrap()));
                    }
                }
            }
        }
    }

    #[test]
    fn out_of_order_blocks_and_short_finalize_are_errors() {
        let y = data(20, 3);
        let mut acc = BlockOutAccumulator::new(&y, 5, LossKind::Squared, None).unwrap();
        assert!(acc.add_blocks(1, &vec![0.0; 20], 20).is_err());
        assert!(acc.finalize().is_err());
        assert!(BlockOutAccumulator::new(&y, 11, LossKind::Squared, None).is_err());
        assert!(acc.add_blocks(0, &vec![0.0; 7], 7).is_err());
    }

    #[test]
    fn constant_learner_identities() {
        // learner ignores data and predicts 0: losses y^2; V_train = s_m^2/(B-1)^2, C = -s_m^2/(B-1)
        let n = 40;
        let nb = 4;
        let y = data(n, 9);
        let b = n / nb;
        let mut acc = BlockOutAccumulator::new(&y, nb, LossKind::Squared, None).unwrap();
        acc.add_blocks(0, &vec![0.0; b * n], n).unwrap();
        let r = acc.finalize().unwrap();
        let l: Vec<f64> = y.iter().map(|v| v * v).collect();
        let m: Vec<f64> = l.chunks(nb).map(mean).collect();
        let sm2 = sample_var(&m);
        assert!((r.plain.ecv - mean(&l)).abs() < 1e-14);
        assert!((r.plain.v_train - sm2 / ((b - 1) as f64).powi(2)).abs() < 1e-14);
        assert!((r.plain.cov + sm2 / (b - 1) as f64).abs() < 1e-14);
        assert!((r.plain.v_test - sample_var(&l)).abs() < 1e-14);
    }
}
