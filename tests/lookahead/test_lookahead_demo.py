"""The lookahead demo (docs/methods/lookahead.md §8.3): the simulated panel has the paper's size and
its planted bias is found; LAP of a tiny trained model is higher on the texts it was trained on."""

from __future__ import annotations

import os

import numpy as np
import pytest
from click.testing import CliRunner

from llmsurrogate.lookahead import demo

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def test_simulated_panel_has_the_papers_size_and_a_clean_post_cutoff_period():
    p = demo.simulate_panel(seed=3)
    assert len(p) == 91_361 and p["firm"].nunique() == 1_587 and p["date"].nunique() == 3_000
    oos = p[p["period"] == "out-of-sample"]
    ins = p[p["period"] == "in-sample"]
    assert len(oos) == 9_942 and len(ins) == 91_361 - 9_942
    assert ins["date"].max() < oos["date"].min()  # the out-of-sample rows come after the cutoff
    assert set(p["llm_a"].unique()) == {-1.0, 0.0, 1.0}
    # LAP in Table I's units (x 10^4): mean 0.073, SD 0.027
    assert p["lap_a"].mean() == pytest.approx(0.073, abs=0.001) and p["lap_a"].std() == pytest.approx(0.027, abs=0.001)
    # before the cutoff LAP tracks how accurate the signal is (contamination); after it, not at all
    def accuracy_gap(frame):
        hi = frame["lap_b"] > frame["lap_b"].median()
        hit = np.sign(frame["llm_b"]) == np.sign(frame["ret"])
        return hit[hi & (frame["llm_b"] != 0)].mean() - hit[~hi & (frame["llm_b"] != 0)].mean()
    assert accuracy_gap(ins) > 0.005
    assert abs(accuracy_gap(oos)) < 0.02


def test_panel_test_finds_the_planted_bias_and_not_after_the_cutoff():
    b = demo.panel_test(seed=1, n_boot=300)
    t2, ins, oos, boot = b["table2"], b["is"], b["oos"], b["bootstrap"]
    assert t2.nobs == 91_361 and ins.nobs == 91_361 - 9_942 and oos.nobs == 9_942
    assert t2.estimate > 0 and t2.p_greater < 1e-6
    assert ins.estimate > 0 and ins.p_greater < 1e-6 and ins.standardized
    assert abs(oos.statistic) < 3  # no contamination after the cutoff
    # Figure III: the in-sample estimate lies beyond the bootstrap distribution of the out-of-sample one
    assert boot.reference == ins.estimate and boot.reps == 300
    assert float(boot.quantile(0.95)) < ins.estimate and boot.p_value < 0.05
    assert boot.p_value == np.mean(boot.draws >= ins.estimate)
    assert "llm_b:lap_b" in b["table5_text"] and "9,942" in b["table5_text"]


def test_write_demo_without_the_model_part(tmp_path):
    lines = []
    written = demo.write_demo(tmp_path, n_boot=100, lap_part=False, echo=lines.append)
    assert written == ["lookahead_demo_tables.txt", "lookahead_demo_test.json", "lookahead_demo_bootstrap.json",
                       "lookahead_demo_bootstrap.png"]
    text = (tmp_path / "lookahead_demo_tables.txt").read_text()
    assert "Table II" in text and "Table V" in text and "91,361 headlines, 1,587 firms, 3,000 dates" in text
    assert "100 pairs-bootstrap replications" in text and "fewer than the paper's 10,000" in text
    from llmsurrogate.lookahead import LookaheadBootstrap

    boot = LookaheadBootstrap.load(tmp_path / "lookahead_demo_bootstrap.json")
    assert boot.reps == 100 and boot.nobs == 9_942
    assert (tmp_path / "lookahead_demo_bootstrap.png").read_bytes()[:4] == b"\x89PNG"


pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_lap_of_a_tiny_model_is_higher_on_the_texts_it_was_trained_on():
    a = demo.lap_seen_unseen(n_texts=24, steps=60, seed=2)
    s = a["summary"].set_index("set")
    assert list(s["texts"]) == [24, 24]
    assert s.loc["seen in training", "mean_lap"] > s.loc["never seen", "mean_lap"]
    assert a["auc"] > 0.75
    tab = a["table"]
    seen = tab[tab["set"] == "seen in training"]["lap"].to_numpy()
    assert s.loc["seen in training", "mean_lap"] == pytest.approx(seen.mean())
    assert len(set(tab["text"])) == 48  # seen and unseen headlines are distinct


@pytest.mark.slow
def test_demo_command_runs_the_lookahead_demo_alone(tmp_path):
    from llmsurrogate.cli import cli

    res = CliRunner().invoke(cli, ["demo", "lookahead", "--out", str(tmp_path)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "seen > unseen" in res.output and "10,000 pairs-bootstrap replications" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "lookahead_demo_bootstrap.json", "lookahead_demo_bootstrap.png", "lookahead_demo_lap.csv",
        "lookahead_demo_tables.txt", "lookahead_demo_test.json", "run.json"]
    bad = CliRunner().invoke(cli, ["demo", "nonsense", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "nonsense" in bad.output


def test_demo_names_of_the_command_line_are_the_runners():
    from llmsurrogate.cli.demo import _DEMO_NAMES
    from llmsurrogate.demo import DEMOS

    assert tuple(DEMOS) == _DEMO_NAMES and DEMOS["lookahead"] == "llmsurrogate.lookahead.demo"
