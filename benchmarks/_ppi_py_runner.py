"""ppi_py 0.2.3 as a benchmark peer, in the interpreter that has it installed (``.venv-ppi``): a
worker that loads a case's arrays once and then runs one call per request, so that
``bench_ppi.py`` can interleave it call by call with ours (ours, ppi_py, ours, ...). It imports
nothing of llmsurrogate; llmsurrogate's interpreter imports nothing of ppi_py.

Protocol: one JSON object per line on stdin, one reply per line on stdout.

* ``{"cmd": "load", "case": name, "path": npz}`` -> ``{"ok": true, "version": ...}``
* ``{"cmd": "run", "case": name}`` -> ``{"ok": true, "s": seconds, "low": [...], "high": [...]}``
* ``{"cmd": "quit"}``
"""

import json
import sys
import time
import traceback


def main():
    import numpy as np
    import ppi_py
    from importlib.metadata import version

    data = {}
    calls = {
        "ols": lambda a: ppi_py.ppi_ols_ci(a["X"], a["y"], a["yhat"], a["X_u"], a["yhat_u"], alpha=0.05, lam=None),
        "logistic": lambda a: ppi_py.ppi_logistic_ci(a["X"], a["y"], a["yhat"], a["X_u"], a["yhat_u"], alpha=0.05,
                                                     lam=None),
    }
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["cmd"] == "quit":
                break
            if req["cmd"] == "load":
                with np.load(req["path"]) as z:
                    data[req["case"]] = {k: z[k] for k in z.files}
                reply = {"ok": True, "version": version("ppi-python")}
            else:
                arrays = data[req["case"]]
                kind = req["case"].split(":")[0]
                t = time.perf_counter()
                low, high = calls[kind](arrays)
                reply = {"ok": True, "s": time.perf_counter() - t, "low": np.ravel(low).tolist(),
                         "high": np.ravel(high).tolist()}
        except Exception:  # noqa: BLE001 - the parent reports it
            reply = {"ok": False, "error": traceback.format_exc()}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
