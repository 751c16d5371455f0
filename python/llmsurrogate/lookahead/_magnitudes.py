"""Economic magnitudes of the lookahead test (docs/methods/lookahead.md §2.3, §4): the marginal
effect of the LLM signal at the mean LAP, the interaction per standard deviation of LAP and its
ratio to the signal's coefficient without the interaction (Table II column 1)."""

from __future__ import annotations

import math

from ..exceptions import InvalidArgumentError

__all__ = ["magnitudes"]


def finite_number(value, name: str, *, optional: bool = False) -> float | None:
    """``value`` as a finite float (``None`` passes when ``optional``); an error naming ``name``."""
    if value is None and optional:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        what = "a number or None" if optional else "a number"
        raise InvalidArgumentError(f"argument `{name}` must be {what}; got {value!r}") from None
    if not math.isfinite(out):
        raise InvalidArgumentError(f"argument `{name}` must be finite; got {value!r}")
    return out


def magnitudes(gamma: float, delta: float, lap_mean: float, lap_sd: float, *, gamma_baseline: float | None = None,
               signal_sd: float | None = None) -> dict[str, float]:
    """Magnitudes of the test regression ``y = gamma LLM + delta LLM x LAP + eta LAP + FE``.

    Returns a dict with

    * ``marginal_effect_at_mean``: ``gamma + delta * lap_mean``, the slope of the outcome in the
      signal at the mean LAP (Table II: 0.00117 + 2.866 x 0.073 = 0.210, the column-1 coefficient);
    * ``interaction_per_sd``: ``delta * lap_sd``, how much one SD more LAP raises the signal's
      slope (2.866 x 0.027 = 0.077);
    * with ``gamma_baseline`` (the signal's coefficient without LAP terms, column 1):
      ``ratio_to_baseline`` = ``delta * lap_sd / gamma_baseline`` (0.077 / 0.210 = 37%; not divided
      by the 1-SD signal effect, as the paper's text);
    * with ``gamma_baseline`` and ``signal_sd``: ``baseline_per_sd_signal`` = ``gamma_baseline *
      signal_sd`` (0.210 x 0.937 = 0.197).

    LAP in the units of the regression (x 10^4 for news, x 100 for CapEx; §1.7).

    Examples
    --------
    >>> m = magnitudes(0.00117, 2.866, 0.073, 0.027, gamma_baseline=0.210, signal_sd=0.937)   # Table II
    >>> {k: round(v, 3) for k, v in m.items()}
    {'marginal_effect_at_mean': 0.21, 'interaction_per_sd': 0.077, 'ratio_to_baseline': 0.368,
     'baseline_per_sd_signal': 0.197}
    """
    gamma, delta = finite_number(gamma, "gamma"), finite_number(delta, "delta")
    lap_mean, lap_sd = finite_number(lap_mean, "lap_mean"), finite_number(lap_sd, "lap_sd")
    if lap_sd <= 0:
        raise InvalidArgumentError(f"argument `lap_sd` must be > 0 (a standard deviation of 0: LAP does not vary, and "
                                   f"the interaction has no magnitude); got {lap_sd!r}")
    gb = finite_number(gamma_baseline, "gamma_baseline", optional=True)
    ssd = finite_number(signal_sd, "signal_sd", optional=True)
    if ssd is not None and ssd <= 0:
        raise InvalidArgumentError(f"argument `signal_sd` must be > 0 (a standard deviation of 0: the signal does not "
                                   f"vary); got {signal_sd!r}")
    out = {"marginal_effect_at_mean": gamma + delta * lap_mean, "interaction_per_sd": delta * lap_sd}
    if gb is not None:
        out["ratio_to_baseline"] = delta * lap_sd / gb if gb != 0 else float("nan")
        if ssd is not None:
            out["baseline_per_sd_signal"] = gb * ssd
    return out
