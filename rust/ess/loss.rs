//! Per-observation losses ℓ(ŷ, y) of the ESS estimators (docs/methods/ess.md): the built-in
//! losses by name, and the losses of one prediction vector (the LLM rule's).

use crate::common::errors::{check, CoreError, CoreResult};

/// Per-observation losses ℓ(ŷ, y).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossKind {
    /// (ŷ − y)²
    Squared,
    /// |ŷ − y|
    Absolute,
    /// 1{ŷ ≠ y} (labels coded as numbers)
    ZeroOne,
    /// (p − y)², y ∈ {0, 1}
    Brier,
    /// −y log p − (1 − y) log(1 − p), p clipped to [eps, 1 − eps]
    Log { eps: f64 },
    /// The "prediction" is already the loss (custom losses computed by the caller).
    Precomputed,
}

impl LossKind {
    pub fn parse(name: &str, eps: f64) -> CoreResult<Self> {
        Ok(match name {
            "squared" => LossKind::Squared,
            "absolute" => LossKind::Absolute,
            "zero_one" => LossKind::ZeroOne,
            "brier" => LossKind::Brier,
            "log" => {
                if !(eps > 0.0 && eps < 0.5) {
                    return Err(CoreError::invalid("eps", format!("log-loss clipping must lie in (0, 0.5); got {eps}")));
                }
                LossKind::Log { eps }
            }
            "precomputed" => LossKind::Precomputed,
            other => {
                return Err(CoreError::invalid(
                    "loss",
                    format!("unknown loss {other:?}; use squared, absolute, zero_one, brier, log or precomputed"),
                ))
            }
        })
    }

    #[inline(always)]
    pub fn eval(self, pred: f64, y: f64) -> f64 {
        match self {
            LossKind::Squared | LossKind::Brier => {
                let d = pred - y;
                d * d
            }
            LossKind::Absolute => (pred - y).abs(),
            LossKind::ZeroOne => {
                if pred != y {
                    1.0
                } else {
                    0.0
                }
            }
            LossKind::Log { eps } => {
                let p = pred.clamp(eps, 1.0 - eps);
                -(y * p.ln() + (1.0 - y) * (1.0 - p).ln())
            }
            LossKind::Precomputed => pred,
        }
    }
}

/// Losses of one prediction vector against `y` (used for the LLM rule).
pub fn losses(kind: LossKind, pred: &[f64], y: &[f64]) -> CoreResult<Vec<f64>> {
    check::same_len("prediction", pred.len(), "y", y.len())?;
    check::finite("prediction", pred)?;
    Ok(pred.iter().zip(y).map(|(&p, &yy)| kind.eval(p, yy)).collect())
}
