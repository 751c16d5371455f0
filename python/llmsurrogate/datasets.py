"""Real data sets bundled with llmsurrogate.

* :func:`load_certainty_equivalents` -- lottery certainty equivalents from 44 subject pools
  (the domains of Andrews, Fudenberg, Lei, Liang & Wu, "The Transfer Performance of Economic
  Models", 2025, Section 5.1). Source: the paper's replication repository
  (chaofengwu/TransferPerf, data/PPP_normalized_44), MIT License, Copyright (c) 2024 chaofengwu.
* :func:`load_transfer_errors` -- the application's published 44×44 transfer-error matrices
  (R package transferUQ, data CertaintyEquivalents; MIT License, Copyright (c) Lihua Lei).
* :func:`load_acs_income_rows`, :func:`load_acs_codebook`, :func:`load_acs_golden_prompt` -- ten
  real ACS 2018 PUMS rows for the ACSIncome task, ACS code-to-text tables from the 2019 PUMS data
  dictionary (US Census, public domain) and folktexts' golden prompt for row 1
  (socialfoundations/folktexts, MIT License, Copyright (c) 2024 Social Foundations of
  Computation, at MPI-IS).
* :func:`load_nhanes` -- 8,591 people of NHANES 2009-2010 with their survey weights, strata and
  PSUs, and whether their total cholesterol was 240 mg/dl or more (US National Center for Health
  Statistics, public domain; the extract of R package survey, data ``nhanes``). The ten ACS rows
  above carry no person weight (``PWGTP``): folktexts' fixture kept only the task's columns.

The full attribution text ships as ``llmsurrogate/data/ATTRIBUTION.md`` (see :func:`attribution`).

Examples
--------
>>> from llmsurrogate import datasets
>>> ce = datasets.load_certainty_equivalents()
>>> ce["domain_id"].nunique(), len(ce)
(44, 121120)
>>> datasets.load_transfer_errors("RF").shape
(44, 44)
"""

from __future__ import annotations

import functools
import gzip
import io
from importlib import resources

import numpy as np
import pandas as pd

from ._validation import check_choice
from .exceptions import InvalidArgumentError

__all__ = [
    "attribution",
    "certainty_equivalent_domains",
    "load_certainty_equivalents",
    "transfer_error_models",
    "load_transfer_errors",
    "load_acs_income_rows",
    "acs_codebook_variables",
    "load_acs_codebook",
    "load_acs_golden_prompt",
    "load_nhanes",
]

CE_COLUMNS = ["domain_id", "domain", "subject", "z1", "z2", "p1", "ce"]


def _data_dir():
    return resources.files("llmsurrogate") / "data"


def attribution() -> str:
    """Sources and licences of the bundled data.

    Examples
    --------
    >>> attribution().splitlines()[0]
    '# Data for llmsurrogate'
    """
    return (_data_dir() / "ATTRIBUTION.md").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _ce_index():
    with (_data_dir() / "certainty_equivalents_44" / "index.csv").open("rb") as fh:
        return pd.read_csv(fh)


def certainty_equivalent_domains():
    """The 44 subject pools in the paper's Table 4 order.

    Columns: ``domain_id`` (1-44), ``label`` (study, and country for l'Haridon & Vieider 2019),
    ``country``, ``gains_only`` (1 if the study used gains-only lotteries), ``n_obs``,
    ``original_file`` (file name in the replication repository).

    Examples
    --------
    >>> certainty_equivalent_domains().loc[0, "label"]
    'Abdellaoui, Klibanoff & Placido (2015)'
    """
    return _ce_index().drop(columns=["file"]).copy()


def _read_gz_csv(path):
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as fh:
        return pd.read_csv(io.StringIO(fh.read()))


def load_certainty_equivalents(domains=None, *, extra_columns: bool = False):
    """Lottery-level certainty equivalents from the 44 subject pools, in long format.

    Each row is one subject's reported certainty equivalent for a two-outcome lottery that pays
    ``z1`` with probability ``p1`` and ``z2`` otherwise (``|z1| > |z2|``), prizes in
    PPP-normalised US dollars.

    Parameters
    ----------
    domains : sequence of int, optional
        ``domain_id`` values (1-44, Table 4 order) to load; default all.
    extra_columns : bool
        Keep study-specific columns (``lottery``, ``country``, ``female``, ...), NaN where a study
        lacks them.

    Returns
    -------
    pandas.DataFrame
        Columns ``domain_id`` (int), ``domain`` (ordered categorical label), ``subject`` (the
        study's subject id, unique within a domain), ``z1``, ``z2``, ``p1``, ``ce`` (floats).

    Examples
    --------
    >>> load_certainty_equivalents(domains=[7]).shape
    (72, 7)
    """
    index = _ce_index()
    if domains is None:
        wanted = index
    else:
        ids = list(domains) if not isinstance(domains, int) else [domains]
        unknown = sorted(set(ids) - set(index["domain_id"]))
        if unknown:
            raise InvalidArgumentError(f"argument `domains`: unknown domain ids {unknown}; valid ids are 1 to 44")
        wanted = index[index["domain_id"].isin(ids)]
    frames = []
    for row in wanted.itertuples(index=False):
        df = _read_gz_csv(_data_dir() / "certainty_equivalents_44" / row.file)
        df = df.drop(columns=[c for c in df.columns if c.startswith("Unnamed")])
        df.insert(0, "domain", row.label)
        df.insert(0, "domain_id", row.domain_id)
        frames.append(df if extra_columns else df[CE_COLUMNS])
    out = pd.concat(frames, ignore_index=True)
    out["domain"] = pd.Categorical(out["domain"], categories=list(index["label"]), ordered=True)
    for c in ("z1", "z2", "p1", "ce"):
        out[c] = out[c].astype("float64")
    return out


@functools.lru_cache(maxsize=1)
def _transfer_files():
    names = sorted(p.name for p in (_data_dir() / "transfer_errors_44").iterdir() if p.name.endswith(".csv.gz"))
    out = {}
    for name in names:
        kind, model = name[: -len(".csv.gz")].split("_", 1)
        out[(kind, model)] = name
    return out


def transfer_error_models():
    """The published transfer-error matrices: one row per (``kind``, ``model``).

    ``kind`` is ``"unnormalized"`` (raw transfer error) or ``"normalized"`` (transfer shortfall:
    raw error over the best in-sample error on the test domain across models). Models: ``EU_iso``,
    ``EU_expo``, ``RF``, ``kernel_ridge_rbf`` and the CPT variants named by their free parameters
    (a = alpha, b = beta, d = delta, g = gamma).

    Examples
    --------
    >>> models = transfer_error_models()
    >>> list(models.columns), len(models)
    (['kind', 'model'], 36)
    >>> sorted(models.loc[models["kind"] == "unnormalized", "model"])[:3]
    ['EU_iso', 'RF', 'a']
    """
    return pd.DataFrame(sorted(_transfer_files()), columns=["kind", "model"])


def load_transfer_errors(model: str, kind: str = "unnormalized"):
    """One published 44×44 transfer-error matrix ``E[train, test]``.

    Entry ``[i, j]`` is the error of the model trained on domain ``i`` and evaluated on domain
    ``j``; the diagonal is the in-sample error; NaN marks a missing cell. The domain order is the
    transferUQ package's, which its authors did not document: it need not match
    :func:`certainty_equivalent_domains`.

    Examples
    --------
    >>> e = load_transfer_errors("abdg")
    >>> e.index.name, e.columns.name
    ('train', 'test')
    """
    check_choice(kind, "kind", ["unnormalized", "normalized"])
    files = _transfer_files()
    if (kind, model) not in files:
        models = sorted(m for k, m in files if k == kind)
        raise InvalidArgumentError(f"argument `model`: no {kind} matrix for {model!r}; available: {models}")
    with (_data_dir() / "transfer_errors_44" / files[(kind, model)]).open("rb") as raw:
        arr = np.loadtxt(gzip.open(raw, "rt"), delimiter=",", dtype=np.float64, ndmin=2)
    idx = pd.RangeIndex(arr.shape[0], name="train")
    cols = pd.RangeIndex(arr.shape[1], name="test")
    return pd.DataFrame(arr, index=idx, columns=cols)


def load_acs_income_rows():
    """Ten real ACS 2018 PUMS rows for the ACSIncome task (folktexts' test fixture).

    Columns: ``AGEP`` (age), ``COW`` (class of worker), ``SCHL`` (education), ``MAR`` (marital
    status), ``OCCP`` (occupation code), ``POBP`` (place of birth), ``RELP`` (relationship),
    ``WKHP`` (hours per week), ``SEX``, ``RAC1P`` (race) and the label ``PINCP>50000`` (0/1).

    Examples
    --------
    >>> rows = load_acs_income_rows()
    >>> rows.shape, int(rows.loc[1, "AGEP"])
    ((10, 11), 18)
    """
    with (_data_dir() / "acs_fixture" / "acs_income_10rows.csv").open("rb") as fh:
        return pd.read_csv(fh, index_col=0)


def acs_codebook_variables() -> list[str]:
    """Variables with a code-to-text table: ANC1P, HISP, LANP, OCCP, POBP, ST.

    Examples
    --------
    >>> acs_codebook_variables()
    ['ANC1P', 'HISP', 'LANP', 'OCCP', 'POBP', 'ST']
    """
    return sorted(p.name[:-4] for p in (_data_dir() / "acs_fixture").iterdir() if p.name.endswith(".txt")
                  and p.name != "expected_default_prompt.txt")


def load_acs_codebook(variable: str):
    """ACS code-to-text table for ``variable`` as a pandas Series (index: code string, as in the
    data dictionary, e.g. ``'0010'`` for OCCP).

    Examples
    --------
    >>> load_acs_codebook("ST")["01"]
    'Alabama/AL'
    """
    check_choice(variable, "variable", acs_codebook_variables())
    codes, labels = [], []
    text = (_data_dir() / "acs_fixture" / f"{variable}.txt").read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line.strip():
            continue
        code, _, label = line.partition(" .")
        codes.append(code.strip())
        labels.append(label.strip())
    return pd.Series(labels, index=pd.Index(codes, name="code"), name=variable)


def load_acs_golden_prompt() -> str:
    """folktexts' expected multiple-choice prompt for row 1 of :func:`load_acs_income_rows`.

    Examples
    --------
    >>> load_acs_golden_prompt().startswith("The following data corresponds to a survey respondent.")
    True
    """
    return (_data_dir() / "acs_fixture" / "expected_default_prompt.txt").read_text(encoding="utf-8")


NHANES_AGE_GROUPS = ["(0,19]", "(19,39]", "(39,59]", "(59,Inf]"]


def load_nhanes():
    """High cholesterol in NHANES 2009-2010: 8,591 people with their survey weights and design.

    The US National Health and Nutrition Examination Survey samples people in a stratified,
    clustered design with unequal probabilities: Hispanic people are 32% of these rows and 15% of
    the weighted total, people aged 19 or less 29% and 21%. An unweighted mean describes the
    sample, not the US population; the weights ``WTMEC2YR`` sum to the population the survey
    represents (about 277 million). The
    extract is R package survey's data ``nhanes`` (Thomas Lumley), unchanged but for ``agecat``
    written as text; NCHS data, public domain (see :func:`attribution`). An example that uses it
    with and without the weights: docs/methods/survey_weights.md.

    Returns
    -------
    pandas.DataFrame
        One row per examined person, in the extract's order. ``SDMVPSU`` (masked primary sampling
        unit, 1-3, nested in the stratum), ``SDMVSTRA`` (masked stratum, 75-89), ``WTMEC2YR``
        (two-year examination weight, float), ``HI_CHOL`` (1.0 if total cholesterol is 240 mg/dl
        or more, 0.0 if less, NaN for the 745 people without the laboratory result), ``race``
        (1 Hispanic, 2 non-Hispanic white, 3 non-Hispanic black, 4 other), ``agecat`` (ordered
        categorical: ``(0,19]``, ``(19,39]``, ``(39,59]``, ``(59,Inf]`` years) and ``RIAGENDR``
        (1 male, 2 female).

    Examples
    --------
    >>> import numpy as np
    >>> nh = load_nhanes()
    >>> nh.shape, int(nh["HI_CHOL"].isna().sum())
    ((8591, 7), 745)
    >>> lab = nh.dropna(subset=["HI_CHOL"])
    >>> round(float(lab["HI_CHOL"].mean()), 4)  # the sample's share
    0.1003
    >>> round(float(np.average(lab["HI_CHOL"], weights=lab["WTMEC2YR"])), 4)  # the population's
    0.1121
    """
    with (_data_dir() / "nhanes_cholesterol" / "nhanes.csv.gz").open("rb") as fh:
        out = pd.read_csv(fh, compression="gzip")
    for c in ("SDMVPSU", "SDMVSTRA", "race", "RIAGENDR"):
        out[c] = out[c].astype("int64")
    out["WTMEC2YR"] = out["WTMEC2YR"].astype("float64")
    out["HI_CHOL"] = out["HI_CHOL"].astype("float64")
    out["agecat"] = pd.Categorical(out["agecat"], categories=NHANES_AGE_GROUPS, ordered=True)
    return out
