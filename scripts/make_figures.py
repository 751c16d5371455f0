"""Draw the figures of the documentation (``docs/figures/``) with the package's own plot methods.

Run from the repository root: ``python scripts/make_figures.py [--out docs/figures] [NAME ...]``.
Each figure is what a user gets from the code the README and the getting-started pages show (the
demos' figures come from the demos' own ``write_demo``), so a change to a plot method shows here:

* ``transfer_application.png`` -- ``llmsurrogate demo transfer``: forecast intervals of EU, CPT
  and a random forest for a new subject pool, and their worst case over Γ (the README's figure);
* ``transfer_forecast_intervals.png`` -- ``forecast_intervals({...}).plot()`` of the README;
* ``transfer_worst_case.png`` -- ``worst_case_curve(rf, tau=[0.5, 0.9]).plot()`` of the README
  (one subject pool's error of 42,510 puts its y axis on a log scale);
* ``ess_demo.png`` -- ``llmsurrogate demo ess`` (~1 min);
* ``lookahead_bootstrap.png`` -- ``llmsurrogate demo lookahead`` (Figure III, simulated);
* ``risk_evaluation.png`` -- the README's risk study: a tiny model trained here (~2 min, cached
  with its scores under ``--work``), its verbalized risk scores on 1,000 synthetic census rows,
  ``evaluate(groups=sex).plot(kind="both")``: calibration and ROC, by sex;
* ``ppi_income_share.png`` -- the worked example of docs/getting-started/ppi.md: the same tiny
  model's scores on 3,000 census rows, 300 of them with a human answer, ``ppi.mean(...).plot()``
  (PPI++ beside the classical interval).

Figures are written with the Agg backend at 130 dpi, atomically.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from llmsurrogate._atomic import save_figure

ROOT = Path(__file__).resolve().parents[1]
DPI = 130


def _save(fig, out: Path, name: str) -> str:
    save_figure(fig, out / name, dpi=DPI)
    plt.close(fig)
    return name


def _from_demo(demo: str, png: str, out: Path, name: str) -> str:
    """Run one demo's ``write_demo`` into a scratch folder and keep its figure ``png``."""
    import importlib

    module = importlib.import_module(f"llmsurrogate.{demo}.demo")
    with tempfile.TemporaryDirectory() as tmp:
        module.write_demo(tmp, plot=True, echo=lambda text: None)
        shutil.copyfile(Path(tmp) / png, out / name)
    return name


def transfer_application(out: Path, work: Path) -> str:
    return _from_demo("transfer", "transfer_application.png", out, "transfer_application.png")


def _errors():
    from llmsurrogate import datasets

    return {m: datasets.load_transfer_errors(k) for m, k in (("EU", "EU_iso"), ("CPT", "abdg"), ("RF", "RF"))}


def transfer_forecast_intervals(out: Path, work: Path) -> str:
    from llmsurrogate import transfer as tr

    res = tr.forecast_intervals(_errors(), level=[0.8, 0.9, 0.95])
    return _save(res.plot(), out, "transfer_forecast_intervals.png")


def transfer_worst_case(out: Path, work: Path) -> str:
    from llmsurrogate import transfer as tr

    curve = tr.worst_case_curve(_errors()["RF"], tau=[0.5, 0.9])
    return _save(curve.plot(), out, "transfer_worst_case.png")


def ess_demo(out: Path, work: Path) -> str:
    return _from_demo("ess", "ess_demo.png", out, "ess_demo.png")


def lookahead_bootstrap(out: Path, work: Path) -> str:
    return _from_demo("lookahead", "lookahead_demo_bootstrap.png", out, "lookahead_bootstrap.png")


def _tiny_model(work: Path) -> str:
    from llmsurrogate import testing

    model = work / "tiny-gpt2"
    if not (model / "config.json").is_file():
        testing.train_tiny_model(model)
    return str(model)


def risk_evaluation(out: Path, work: Path) -> str:
    from llmsurrogate import risk, testing
    from llmsurrogate.llm import TransformersBackend

    census = testing.synthetic_census(1000, seed=1)
    scores = risk.risk_scores(census, testing.synthetic_income_task(), TransformersBackend(_tiny_model(work)),
                              method="numeric", cache=work / "llm-cache")
    ev = scores.evaluate(groups=census["SEX"].map({1: "male", 2: "female"}))
    return _save(ev.plot(kind="both"), out, "risk_evaluation.png")


def ppi_income_share(out: Path, work: Path) -> str:
    from llmsurrogate import ppi, risk, testing
    from llmsurrogate.llm import TransformersBackend

    census = testing.synthetic_census(3000, seed=7)
    scores = risk.risk_scores(census, testing.synthetic_income_task(), TransformersBackend(_tiny_model(work)),
                              method="numeric", cache=work / "llm-cache").table["score"]
    labelled = census.sample(300, random_state=1).index
    unlabelled = census.index.difference(labelled)
    tuned = ppi.mean(census.loc[labelled, "PINCP>50000"], scores[labelled], scores[unlabelled])
    return _save(tuned.plot(), out, "ppi_income_share.png")


FIGURES = {f.__name__: f for f in (transfer_application, transfer_forecast_intervals, transfer_worst_case, ess_demo,
                                   lookahead_bootstrap, risk_evaluation, ppi_income_share)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"figures to draw (default: all): {', '.join(FIGURES)}")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "figures", help="folder for the PNG files")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "llmsurrogate-figures",
                        help="folder for the tiny model and its LLM cache, kept between runs (default: %(default)s)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in FIGURES]
    if unknown:
        parser.error(f"unknown figure(s) {unknown}; choose from {', '.join(FIGURES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    for name in args.names or FIGURES:
        print(f"{name}: {args.out / FIGURES[name](args.out, args.work)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
