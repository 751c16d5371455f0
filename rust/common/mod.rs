//! The common floor: infrastructure shared by every capability. Nothing here uses a capability
//! module (`ess`, `transfer`, `risk`, `lookahead`, `fe`, `ppi`, or any added later) or Python, so a new
//! capability builds on it alone; the test below reads the capability list from `lib.rs`.
//!
//! * [`errors`]: [`errors::CoreError`], the one error type of the crate (each variant names the
//!   argument at fault and its fix), and the input checks of [`errors::check`];
//! * [`parallel`]: thread counts from `n_jobs` (joblib's conventions) or
//!   `LLMSURROGATE_NUM_THREADS`, cached rayon pools, and [`parallel::install`] /
//!   [`parallel::install_for`], which every parallel kernel runs inside;
//! * [`numerics`]: compensated (Neumaier) sums and cumulative sums;
//! * [`linalg`]: [`linalg::cholesky_solve`], the linear solve of small symmetric
//!   positive-definite systems;
//! * [`rng`]: [`rng::SplitMix64`], the one pseudo-random generator, with its two documented ways of
//!   drawing an integer below a bound;
//! * [`quantiles`]: upper and lower empirical quantiles, weighted or not, with the level tolerance
//!   [`quantiles::LEVEL_TOL`] every capability compares levels with.

pub mod errors;
pub mod linalg;
pub mod numerics;
pub mod parallel;
pub mod quantiles;
pub mod rng;

#[cfg(test)]
mod tests {
    /// The files of `common/`, with their text; a file added to `common/` must be listed here (the
    /// test checks the list against the `pub mod` lines above).
    const FILES: [(&str, &str); 6] = [
        ("errors.rs", include_str!("errors.rs")),
        ("linalg.rs", include_str!("linalg.rs")),
        ("numerics.rs", include_str!("numerics.rs")),
        ("parallel.rs", include_str!("parallel.rs")),
        ("quantiles.rs", include_str!("quantiles.rs")),
        ("rng.rs", include_str!("rng.rs")),
    ];

    /// The names of the `pub mod` / `mod` lines of a module file (`#[cfg]`-gated ones included).
    fn declared_modules(text: &str) -> Vec<String> {
        text.lines()
            .map(str::trim)
            .filter_map(|l| l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod ")))
            .filter_map(|rest| rest.strip_suffix(';'))
            .map(str::to_string)
            .collect()
    }

    /// Every module of the crate above the floor: the capabilities and the bindings.
    fn upper_modules() -> Vec<String> {
        let mods: Vec<String> = declared_modules(include_str!("../lib.rs")).into_iter().filter(|m| m != "common").collect();
        for m in ["ess", "transfer", "risk", "lookahead", "fe", "ppi", "bindings"] {
            assert!(mods.iter().any(|x| x == m), "lib.rs declares no module {m}: {mods:?}");
        }
        mods
    }

    /// The module above the floor a code line names, if any: by path (`crate::fe`,
    /// `crate::lookahead::…`), in a grouped import (`use crate::{fe, …}`) or through `super::`
    /// (`super::super::risk`). Comments and whitespace are ignored.
    fn names_upper(line: &str, upper: &[String]) -> Option<String> {
        let code: String = line.split("//").next().unwrap_or("").chars().filter(|c| !c.is_whitespace()).collect();
        let ends = |rest: &str| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_');
        let grouped: Vec<&str> = match code.find("crate::{") {
            Some(i) => {
                let g = &code[i + 8..];
                g[..g.find('}').unwrap_or(g.len())].split(',').map(|n| n.split("::").next().unwrap_or("")).collect()
            }
            None => Vec::new(),
        };
        upper
            .iter()
            .find(|m| {
                let paths = [format!("crate::{m}"), format!("super::{m}"), format!("super::super::{m}")];
                paths.iter().any(|p| code.match_indices(p.as_str()).any(|(i, _)| ends(&code[i + p.len()..])))
                    || grouped.contains(&m.as_str())
            })
            .cloned()
    }

    /// The floor stands on its own: no code line of `common/` names a module above it, and none
    /// uses Python.
    #[test]
    fn common_uses_no_capability_module() {
        let listed: Vec<String> = FILES.iter().map(|(n, _)| n.trim_end_matches(".rs").to_string()).collect();
        let mut declared = declared_modules(include_str!("mod.rs"));
        declared.retain(|m| m != "tests");
        assert_eq!(listed, declared, "FILES must list every file of common/");
        let upper = upper_modules();
        for (name, text) in FILES {
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                if let Some(m) = names_upper(line, &upper) {
                    panic!("common/{name} uses crate::{m}: {line}");
                }
                for path in ["pyo3::", "numpy::"] {
                    assert!(!line.contains(path), "common/{name} uses {path}: {line}");
                }
            }
        }
    }

    /// The guard itself: each way of naming a capability is caught, the common modules are not.
    #[test]
    fn guard_catches_every_form() {
        let upper = upper_modules();
        for bad in ["use crate::fe;", "use crate::lookahead::min_k_reduce;", "use crate::{common::rng, fe::demean};", "let x = crate::risk::roc_auc(a, b);", "use super::super::transfer;", "use crate::bindings;"] {
            assert!(names_upper(bad, &upper).is_some(), "not caught: {bad}");
        }
        for ok in ["use crate::common::errors::CoreResult;", "use super::rng::SplitMix64;", "use crate::{common::numerics};", "let essential = 1; // crate::ess"] {
            assert!(names_upper(ok, &upper).is_none(), "false alarm: {ok}");
        }
    }
}
