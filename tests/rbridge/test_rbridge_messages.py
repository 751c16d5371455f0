"""What the R package's users see of Python's warnings (issue 26, item 4): rbridge._call.r_warnings
and the log collector of r_call, on real numpy warnings, real loggers and the package's own
deprecation warning."""

from __future__ import annotations

import logging
import warnings

import numpy as np

from llmsurrogate._deprecation import warn_deprecated
from llmsurrogate.rbridge._call import _collect_logs, r_call, r_warnings


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return caught


def test_numpy_floating_point_warnings_in_r_words_once():
    def divide():
        np.array([0.0, 0.0]) / np.array([0.0, 0.0])
        np.array([0.0]) / np.array([0.0])
        np.array([1.0]) / np.array([0.0])

    out = r_warnings(_caught(divide))
    assert [w["class"] for w in out] == ["RuntimeWarning", "RuntimeWarning"]
    assert "gave NaN" in out[0]["message"] and "constant" in out[0]["message"]
    assert "division by zero gave Inf" in out[1]["message"]
    assert not any("encountered in" in w["message"] for w in out)


def test_library_deprecations_left_out_the_packages_own_kept():
    def warn():
        warnings.warn("`foo` is deprecated and will be removed in v5", FutureWarning)  # as transformers does
        warnings.warn("old API", DeprecationWarning)
        warn_deprecated("argument `reps` was renamed `n_boot`")

    out = r_warnings(_caught(warn))
    assert len(out) == 1 and "`n_boot`" in out[0]["message"] and out[0]["class"] == "FutureWarning"


def test_log_warnings_become_r_warnings_library_deprecation_logs_left_out():
    records: list = []
    # an earlier test may have quieted transformers' loggers (set_verbosity_error): the translation is
    # what is tested here, so its warnings are let through for the test and the level restored after
    hf = logging.getLogger("transformers")
    level = hf.level
    hf.setLevel(logging.WARNING)
    try:
        _log_some(records)
    finally:
        hf.setLevel(level)
    assert logging.getLogger("transformers").handlers != [] or logging.getLogger("transformers").propagate
    out = r_warnings([], records)
    assert out == [{"message": "6 of 6 prompts put little mass on the keys", "class": "LLMSurrogateWarning"},
                   {"message": "Setting `pad_token_id` to `eos_token_id`:NULL", "class": "transformers"}]


def _log_some(records):
    with _collect_logs(records):
        logging.getLogger("llmsurrogate.llm.scoring").warning("%d of %d prompts put little mass on the keys", 6, 6)
        logging.getLogger("transformers.modeling_utils").warning("`torch_dtype` is deprecated! Use `dtype` instead!")
        logging.getLogger("transformers.generation").warning("Setting `pad_token_id` to `eos_token_id`:None")
        logging.getLogger("llmsurrogate.llm.scoring").info("not a warning")


def test_r_call_returns_the_translated_warnings():
    # fe.feols on a constant outcome: numpy's 0/0 (R^2 of a constant outcome) reaches R once, in words
    frame = {"__rframe__": {"names": ["y", "x", "g"], "columns": [
        {"kind": "double", "values": [1.0] * 8, "na": []},
        {"kind": "double", "values": [0.1, 0.5, 0.2, 0.9, 0.3, 0.4, 0.8, 0.7], "na": []},
        {"kind": "integer", "values": [1, 1, 2, 2, 3, 3, 4, 4], "na": []}]}}
    out = r_call("fe.feols", "y ~ x | g", frame)
    msgs = [w["message"] for w in out["warnings"]]
    assert len(msgs) == 1 and "gave NaN" in msgs[0], msgs
