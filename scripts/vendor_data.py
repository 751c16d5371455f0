"""Copy the real data sets from the team's data folder into the package (python/llmsurrogate/data/).

A maintainer's tool (users never run it): ``python scripts/vendor_data.py DATA_FOLDER``, where
DATA_FOLDER holds the data sets as the team received them (certainty-equivalents-44,
transfer-errors-44, acs-fixture and their README.md). The package then carries the data, so a user's
clone and wheel need nothing else.
CSV files are gzipped; file names are turned into slugs; ``index.csv`` keeps the original file
names, the paper's Table 4 order, sources and observation counts. Attribution goes along in
``ATTRIBUTION.md``. Re-running gives byte-identical output (gzip mtime fixed at 0).
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEST = ROOT / "python" / "llmsurrogate" / "data"

# Andrews, Fudenberg, Lei, Liang & Wu (2025), Table 4: the 14 lab samples in paper order, mapped to
# the replication repository's file names (matched by title and observation count).
LAB_SAMPLES = [
    ("experiments on compound risk in relation t o simple risk and to ambiguity.csv",
     "Abdellaoui, Klibanoff & Placido (2015)", "France", True),
    ("decisions with compound lotteries.csv", "Fan, Budescu & Diecidue (2019)", "US", True),
    ("accommodating stake effects under prospect theory.csv", "Bouchouicha & Vieider (2017)", "UK", False),
    ("impatience and uncertainty.csv", "Sutter et al. (2013)", "Austria", True),
    ("Monetary incentives in the loss domain.csv", "Etchart-Vincent & l'Haridon (2011)", "France", False),
    ("rationality on the rise.csv", "Fehr-Duda et al. (2010)", "China", False),
    ("incentive effects on rist attitude in small probability prospects.csv",
     "Lefebvre, Vieider & Villeval (2010)", "France", True),
    ("ellsberg revisited.csv", "Halevy (2007)", "Canada", True),
    ("on the interaction of risk and time preferences.csv", "Anderhub et al. (2001)", "Israel", True),
    ("how do risk attitudes affect measured confidence.csv", "Murad, Sefton & Starmer (2016)", "UK", True),
    ("the empirical relationship between nonstandard economic behaviors.csv", "Dean & Ortoleva (2019)", "US", True),
    ("on the empirical validity of cumulative prospect theory.csv", "Bernheim & Sprenger (2020)", "US", True),
    ("ch03_data.csv", "Bruhin, Fehr-Duda & Epper (2010), study 1", "Switzerland", False),
    ("ch06_data.csv", "Bruhin, Fehr-Duda & Epper (2010), study 2", "Switzerland", False),
]


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def write_gz(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fin, open(dest, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fout:
            shutil.copyfileobj(fin, fout)


def main(source: Path) -> None:
    if DEST.exists():
        shutil.rmtree(DEST)
    DEST.mkdir(parents=True)
    shutil.copy(source / "README.md", DEST / "ATTRIBUTION.md")

    # certainty-equivalents-44
    src = source / "certainty-equivalents-44"
    rows = []
    entries = [(f, label, country, gains) for f, label, country, gains in LAB_SAMPLES]
    countries = sorted(p.name for p in src.glob("*_data_30countries.csv"))
    for f in countries:
        country = f.replace("_data_30countries.csv", "")
        entries.append((f, f"l'Haridon & Vieider (2019): {country}", country, False))
    assert len(entries) == 44, len(entries)
    for i, (fname, label, country, gains) in enumerate(entries, start=1):
        path = src / fname
        with open(path, newline="") as fh:
            n_obs = sum(1 for _ in csv.reader(fh)) - 1
        name = f"{i:02d}_{slug(Path(fname).stem)}"
        write_gz(path, DEST / "certainty_equivalents_44" / f"{name}.csv.gz")
        rows.append({"domain_id": i, "file": f"{name}.csv.gz", "label": label, "country": country,
                     "gains_only": int(gains), "n_obs": n_obs, "original_file": fname})
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (DEST / "certainty_equivalents_44" / "index.csv").write_text(buf.getvalue())

    # transfer-errors-44
    for path in sorted((source / "transfer-errors-44").glob("*.csv")):
        write_gz(path, DEST / "transfer_errors_44" / f"{path.name}.gz")

    # acs-fixture (small: copied as is)
    (DEST / "acs_fixture").mkdir()
    for path in sorted((source / "acs-fixture").iterdir()):
        shutil.copy(path, DEST / "acs_fixture" / path.name)
    print(f"wrote {sum(1 for p in DEST.rglob('*') if p.is_file())} files to {DEST}")


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python scripts/vendor_data.py DATA_FOLDER (the folder holding the data sets as received; "
                 "the package already carries them in python/llmsurrogate/data/)")
    main(Path(sys.argv[1]))
