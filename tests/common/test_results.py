"""The shared result machinery: summaries, tidy frames, JSON round trips, plots."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from llmsurrogate.transfer import IntervalTable
from llmsurrogate.transfer.demo import run_demo
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.results import Result, Summary, TableResult


def make_table():
    return TableResult(
        title="Example",
        table=pd.DataFrame({"term": ["a", "b"], "estimate": [1.5, np.inf], "n": [3, 4], "ok": [True, False]}),
        meta={"seed": 0, "levels": np.array([0.5, 0.95]), "note": None, "lower": -np.inf},
        notes=("first", "second"),
    )


def test_json_round_trip_keeps_values_types_and_infinities(tmp_path):
    res = make_table()
    text = res.to_json()
    json.loads(text)  # strict JSON: no bare Infinity/NaN
    assert "Infinity" not in text
    back = TableResult.from_json(text)
    assert back == res
    assert back.table["n"].dtype == np.int64 and back.table["ok"].dtype == bool
    assert back.table["estimate"].iloc[1] == np.inf
    assert back.meta["lower"] == -np.inf
    np.testing.assert_array_equal(back.meta["levels"], [0.5, 0.95])
    path = tmp_path / "res.json"
    res.to_json(path)
    assert Result.from_json(path) == res  # base class dispatches on the stored kind
    payload = res.to_dict()
    assert payload["kind"] == "TableResult" and payload["llmsurrogate_version"]


def test_equality_detects_changes():
    a, b = make_table(), make_table()
    assert a == b
    c = TableResult(title="Example", table=a.table.assign(estimate=[1.5, 2.0]), meta=a.meta, notes=a.notes)
    assert a != c


def test_summary_text_and_html():
    res = make_table()
    text = str(res.summary())
    assert text.splitlines()[0] == "Example" and "seed" in text and "Note: first" in text
    assert repr(res) == text
    html = res._repr_html_()
    assert "<table" in html and "Example" in html
    s = Summary("T", facts={"x": 0.123456789})
    assert "0.1235" in s.as_text()


def test_tidy_and_to_frame_are_copies():
    res = make_table()
    frame = res.tidy()
    frame.loc[0, "estimate"] = -1.0
    assert res.table.loc[0, "estimate"] == 1.5
    assert res.to_frame().equals(res.table)


def test_bad_payloads():
    with pytest.raises(InvalidArgumentError, match="not a saved llmsurrogate result"):
        Result.from_dict({"a": 1})
    with pytest.raises(InvalidArgumentError, match="unknown result kind"):
        Result.from_dict({"kind": "Nope", "fields": {}})
    with pytest.raises(InvalidArgumentError, match="neither JSON text nor an existing file"):
        Result.from_json("/no/such/file.json")
    with pytest.raises(InvalidArgumentError, match="not a IntervalTable"):
        IntervalTable.from_json(make_table().to_json())
    with pytest.raises(NotImplementedError, match="no plot"):
        make_table().plot()


def test_demo_result_round_trips_and_plots(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    res = run_demo()
    back = Result.from_json(res.to_json())
    assert isinstance(back, IntervalTable) and back == res
    fig = res.plot()
    assert len(fig.axes) == 3
    fig.savefig(tmp_path / "demo.png")
    assert (tmp_path / "demo.png").stat().st_size > 10_000


def test_base_load_reads_any_saved_result_in_a_fresh_process(tmp_path):
    """``Result.load`` finds the class of a saved result even when its capability was never imported."""
    import subprocess
    import sys

    import numpy as np
    import pandas as pd

    from llmsurrogate import ess

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"y": rng.normal(size=200)})
    df["llm"] = 0.1
    res = ess.equivalent_sample_size(df, "y", "llm", algorithm="mean", grid=[1, 2, 5], seed=1)
    path = res.save(tmp_path / "ess.json")
    code = ("from llmsurrogate.results import Result; r = Result.load(%r); "
            "print(type(r).__name__, r.lower_bound)" % str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["EssResult", str(res.lower_bound)]
    assert type(res).load(path) == res
