//! Prediction of decision-tree ensembles given as flat node arrays (scikit-learn's `tree_` layout),
//! bit-for-bit the numbers scikit-learn's single-job `predict` / `predict_proba` give.
//!
//! scikit-learn casts the rows to float32, walks each tree with `x[feature] <= threshold` (the
//! float32 value promoted to double), adds the leaf values tree by tree (tree 0 first) into a
//! float64 zero array and divides by the number of trees. Doing the same additions in the same
//! order gives identical floating-point results; rows are independent, so they run in parallel.
//! The block-out CV of a random forest (thousands of fits, each predicted on every other row)
//! spent up to a fifth of its time in scikit-learn's per-tree Python overhead here.

use crate::common::errors::{check, CoreError, CoreResult, Part};
use rayon::prelude::*;

/// Leaf marker of scikit-learn's `children_left` / `children_right`.
pub const LEAF: i64 = -1;

/// Trees as concatenated node arrays; tree `t` owns nodes `offsets[t]..offsets[t + 1]`, whose child
/// indices are local to the tree. `value` holds `n_out` numbers per node.
pub struct Forest<'a> {
    pub left: &'a [i64],
    pub right: &'a [i64],
    pub feature: &'a [i64],
    pub threshold: &'a [f64],
    pub value: &'a [f64],
    pub offsets: &'a [usize],
    pub n_out: usize,
}

impl Forest<'_> {
    /// Checks every index once, so the walk below can neither read out of bounds nor loop.
    pub fn validate(&self, n_features: usize) -> CoreResult<()> {
        let n = self.left.len();
        check::same_len("left", n, "right", self.right.len())?;
        check::same_len("left", n, "feature", self.feature.len())?;
        check::same_len("left", n, "threshold", self.threshold.len())?;
        if n > u32::MAX as usize {
            return Err(CoreError::invalid("left", "more than 2^32 nodes"));
        }
        if self.n_out == 0 {
            return Err(CoreError::invalid("value", "must hold at least one number per node"));
        }
        // n_out comes from an array's shape, which may be huge with no elements: no wrapping product
        let cells = n.checked_mul(self.n_out).ok_or_else(|| {
            CoreError::invalid("value", format!("{n} nodes x {} outputs overflows", self.n_out))
        })?;
        check::same_len("value", self.value.len(), "nodes x outputs", cells)?;
        if self.offsets.len() < 2 || self.offsets[0] != 0 || self.offsets[self.offsets.len() - 1] != n {
            return Err(CoreError::invalid("offsets", "must run from 0 to the number of nodes, one entry per tree plus one"));
        }
        // strictly increasing (so every offset lies in 0..=n) before any node is read
        if let Some(t) = self.offsets.windows(2).position(|w| w[1] <= w[0]) {
            return Err(CoreError::invalid_at(
                "offsets",
                vec![Part::at("tree", t), Part::text(" has no nodes (offsets must increase strictly)")],
            ));
        }
        for t in 0..self.offsets.len() - 1 {
            let (lo, hi) = (self.offsets[t], self.offsets[t + 1]);
            let size = (hi - lo) as i64;
            for j in lo..hi {
                let (l, r) = (self.left[j], self.right[j]);
                if l == LEAF {
                    if r != LEAF {
                        return Err(CoreError::invalid_at(
                            "right",
                            vec![Part::at("node", j - lo), Part::text(" of "), Part::at("tree", t), Part::text(" is half a leaf")],
                        ));
                    }
                    continue;
                }
                // scikit-learn numbers children after their parent: this also rules out cycles
                let local = (j - lo) as i64;
                if l <= local || r <= local || l >= size || r >= size {
                    return Err(CoreError::invalid_at(
                        "left",
                        vec![
                            Part::at("node", j - lo),
                            Part::text(" of "),
                            Part::at("tree", t),
                            Part::text(" has children outside the tree"),
                        ],
                    ));
                }
                let f = self.feature[j];
                if f < 0 || f as usize >= n_features {
                    // `f` is the value at fault (it may be negative), not a position
                    return Err(CoreError::invalid_at(
                        "feature",
                        vec![
                            Part::at("node", j - lo),
                            Part::text(" of "),
                            Part::at("tree", t),
                            Part::text(format!(" splits on feature {f}, but X has {n_features} columns")), // position-scan: a value
                        ],
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn trees(&self) -> usize {
        self.offsets.len() - 1
    }
}

#[derive(Clone, Copy)]
struct Node {
    threshold: f64,
    feature: u32,
    left: u32,
    right: u32,
}

/// Validated trees as records with global indices (leaves loop on themselves).
fn compact(forest: &Forest<'_>) -> Vec<Node> {
    let mut nodes = Vec::with_capacity(forest.left.len());
    for t in 0..forest.trees() {
        let base = forest.offsets[t];
        for j in base..forest.offsets[t + 1] {
            nodes.push(if forest.left[j] == LEAF {
                Node { threshold: f64::INFINITY, feature: 0, left: j as u32, right: j as u32 }
            } else {
                Node {
                    threshold: forest.threshold[j],
                    feature: forest.feature[j] as u32,
                    left: (base + forest.left[j] as usize) as u32,
                    right: (base + forest.right[j] as usize) as u32,
                }
            });
        }
    }
    nodes
}

/// Depth of each tree (edges on its longest root-to-leaf path); children follow their parents.
fn depths(forest: &Forest<'_>) -> Vec<usize> {
    (0..forest.trees())
        .map(|t| {
            let (lo, hi) = (forest.offsets[t], forest.offsets[t + 1]);
            let mut d = vec![0usize; hi - lo];
            let mut deepest = 0;
            for j in 0..hi - lo {
                if forest.left[lo + j] != LEAF {
                    for c in [forest.left[lo + j], forest.right[lo + j]] {
                        d[c as usize] = d[j] + 1;
                        deepest = deepest.max(d[j] + 1);
                    }
                }
            }
            deepest
        })
        .collect()
}

/// Mean over trees of the leaf values: `n_rows × n_out`, row-major. `x` is row-major float32.
pub fn predict_mean(forest: &Forest<'_>, x: &[f32], n_features: usize) -> CoreResult<Vec<f64>> {
    forest.validate(n_features)?;
    if n_features == 0 {
        return Err(CoreError::invalid("X", "must have at least one column"));
    }
    if x.len() % n_features != 0 {
        return Err(CoreError::invalid("X", "length is not a multiple of the number of columns"));
    }
    let rows = x.len() / n_features;
    let k = forest.n_out;
    if rows == 0 {
        return Ok(Vec::new());
    }
    let trees = forest.trees();
    // one 24-byte record per node with global child indices; a leaf points at itself, so a row
    // can take branch-free steps past its leaf and rows overlap in the CPU
    let nodes = compact(forest);
    let depth = depths(forest);
    let roots = &forest.offsets[..trees];
    // rows × outputs, allocated fallibly (both come from array shapes, the product from neither)
    let cells = rows.saturating_mul(k);
    let mut out: Vec<f64> = check::filled("X", format!("{rows} rows x {k} outputs"), cells, 0.0, "the predictions")?;
    // tree-major within a chunk of rows (about two chunks per thread): a tree's nodes stay in cache
    // while the whole chunk walks it; every output still receives its trees' values in tree order
    // (so the chunking does not change a bit); a chunk holds at most all rows
    const LANES: usize = 8;
    let chunk = rows.div_ceil(2 * rayon::current_num_threads()).max(256).min(rows);
    out.par_chunks_mut(chunk * k).zip(x.par_chunks(chunk * n_features)).for_each(|(acc, xs)| {
        for t in 0..trees {
            let (root, steps) = (roots[t], depth[t]);
            // groups of LANES rows step together, branch-free, until all of them sit on leaves
            for (ag, xg) in acc.chunks_mut(LANES * k).zip(xs.chunks(LANES * n_features)) {
                let m = xg.len() / n_features;
                let mut at = [root; LANES];
                for _ in 0..steps {
                    let mut moved = false;
                    for r in 0..m {
                        let nd = nodes[at[r]];
                        let x = xg[r * n_features + nd.feature as usize] as f64;
                        let next = if x <= nd.threshold { nd.left } else { nd.right } as usize;
                        moved |= next != at[r];
                        at[r] = next;
                    }
                    if !moved {
                        break;
                    }
                }
                for r in 0..m {
                    let v = &forest.value[at[r] * k..(at[r] + 1) * k];
                    let a = &mut ag[r * k..(r + 1) * k];
                    for c in 0..k {
                        a[c] += v[c];
                    }
                }
            }
        }
        let d = trees as f64;
        for a in acc.iter_mut() {
            *a /= d;
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two stumps on a 2-column input: tree 0 splits column 0 at 0.5, tree 1 column 1 at 0.25.
    fn stumps() -> (Vec<i64>, Vec<i64>, Vec<i64>, Vec<f64>, Vec<f64>, Vec<usize>) {
        let left = vec![1, LEAF, LEAF, 1, LEAF, LEAF];
        let right = vec![2, LEAF, LEAF, 2, LEAF, LEAF];
        let feature = vec![0, -2, -2, 1, -2, -2];
        let threshold = vec![0.5, -2.0, -2.0, 0.25, -2.0, -2.0];
        // two outputs per node (class fractions)
        let value = vec![0.5, 0.5, 1.0, 0.0, 0.0, 1.0, 0.5, 0.5, 0.2, 0.8, 0.7, 0.3];
        (left, right, feature, threshold, value, vec![0, 3, 6])
    }

    #[test]
    fn mean_of_leaf_values_in_tree_order() {
        let (l, r, f, th, v, o) = stumps();
        let forest = Forest { left: &l, right: &r, feature: &f, threshold: &th, value: &v, offsets: &o, n_out: 2 };
        // row 0: x0 = 0.5 (<= goes left), x1 = 0.3 (> 0.25 goes right)
        // row 1: x0 = 0.9 (right), x1 = 0.25 (left, equality)
        let x = [0.5f32, 0.3, 0.9, 0.25];
        let p = predict_mean(&forest, &x, 2).unwrap();
        let want = [(1.0 + 0.7) / 2.0, (0.0 + 0.3) / 2.0, (0.0 + 0.2) / 2.0, (1.0 + 0.8) / 2.0];
        assert_eq!(p, want);
    }

    #[test]
    fn float32_rows_compare_as_doubles() {
        // 0.1f32 is 0.100000001490116..., above the double threshold 0.1: goes right
        let l = vec![1, LEAF, LEAF];
        let r = vec![2, LEAF, LEAF];
        let (f, th, v, o) = (vec![0, -2, -2], vec![0.1, -2.0, -2.0], vec![0.0, 1.0, 2.0], vec![0, 3]);
        let forest = Forest { left: &l, right: &r, feature: &f, threshold: &th, value: &v, offsets: &o, n_out: 1 };
        assert_eq!(predict_mean(&forest, &[0.1f32], 1).unwrap(), vec![2.0]);
        assert_eq!(predict_mean(&forest, &[0.09f32], 1).unwrap(), vec![1.0]);
    }

    #[test]
    fn malformed_trees_are_errors_not_panics() {
        let (l, r, mut f, th, v, o) = stumps();
        f[3] = 7;
        let forest = Forest { left: &l, right: &r, feature: &f, threshold: &th, value: &v, offsets: &o, n_out: 2 };
        assert!(predict_mean(&forest, &[0.0f32, 0.0], 2).is_err());
        let (mut l, r, f, th, v, o) = stumps();
        l[0] = 0; // a self-loop
        let forest = Forest { left: &l, right: &r, feature: &f, threshold: &th, value: &v, offsets: &o, n_out: 2 };
        assert!(predict_mean(&forest, &[0.0f32, 0.0], 2).is_err());
        let (l, r, f, th, v, _) = stumps();
        let bad = vec![0, 3, 5];
        let forest = Forest { left: &l, right: &r, feature: &f, threshold: &th, value: &v, offsets: &bad, n_out: 2 };
        assert!(predict_mean(&forest, &[0.0f32, 0.0], 2).is_err());
        // an offset past the nodes in the middle (was an out-of-bounds index, a panic)
        let (l, r, f, th, v, _) = stumps();
        let bad = vec![0, 10, 6];
        let forest = Forest { left: &l, right: &r, feature: &f, threshold: &th, value: &v, offsets: &bad, n_out: 2 };
        assert!(predict_mean(&forest, &[0.0f32, 0.0], 2).unwrap_err().to_string().contains("offsets"));
        // n_out from an empty array of huge width: nodes x outputs wraps to 0 (was a panic)
        let forest = Forest { left: &l, right: &r, feature: &f, threshold: &th, value: &[], offsets: &[0, 3, 6], n_out: 1 << 62 };
        assert!(predict_mean(&forest, &[0.0f32, 0.0], 2).is_err());
        // no rows: an empty answer, whatever the width of X (was a zero chunk size, a panic)
        let (l, r, f, th, v, o) = stumps();
        let forest = Forest { left: &l, right: &r, feature: &f, threshold: &th, value: &v, offsets: &o, n_out: 2 };
        assert!(predict_mean(&forest, &[], 2).unwrap().is_empty());
        assert!(predict_mean(&forest, &[], 1 << 62).is_err() || predict_mean(&forest, &[], 1 << 62).unwrap().is_empty());
    }

    #[test]
    fn chunking_does_not_change_the_bits() {
        // 1000 rows walk the same two stumps whatever the chunk (rows < 256 and above)
        let (l, r, f, th, v, o) = stumps();
        let forest = Forest { left: &l, right: &r, feature: &f, threshold: &th, value: &v, offsets: &o, n_out: 2 };
        let x: Vec<f32> = (0..2000).map(|i| ((i * 37) % 100) as f32 / 100.0).collect();
        let all = predict_mean(&forest, &x, 2).unwrap();
        for rows in [1usize, 7, 255, 256, 257, 1000] {
            assert_eq!(predict_mean(&forest, &x[..2 * rows], 2).unwrap(), all[..2 * rows].to_vec());
        }
    }
}
