"""No tracked file names an absolute path of a developer's machine (issue 34 §1).

A test, benchmark, script or Makefile that reads ``/work/...``, a home folder, the team's mirror of a
peer's repository or the ``shared/`` folder beside the developers' checkout passes on their machine and
fails (or silently skips) on every user's: ``make test`` then fails in strict mode on a fresh clone. A
peer's source is taken from an option or an environment variable whose help says where to get it
(``benchmarks/bench_transfer.py``'s ``--transferuq-src``, ``tests/fe/make_pyfixest_cases.py``'s
argument), and every reference a test needs lives in the repository (e.g. the lookahead templates,
quoted in ``docs/methods/lookahead.md``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", "target", "site", "dist", "node_modules", "__pycache__"}

# Absolute folders of a developer's machine (not /tmp, /usr or /dev, which examples use on purpose),
# the team's mirrors of peers' repositories, and the shared/ folder beside the checkout.
FORBIDDEN = [
    r"(?<![\w.~-])/(?:work|root|home|Users|mnt|scratch)/[\w.+-]",
    r"\.mirror/",
    r"(?:\.\./|(?<![\w/.-]))shared/(?:specs|papers|data)\b",
    r"\.\./shared\b",
]


def _tracked_files() -> list[Path]:
    """The files git tracks (a clone); without git (an unpacked sdist), every file but build outputs."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True)
        names = [n for n in out.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
        if names:
            return [REPO / n for n in names]
    except (OSError, subprocess.CalledProcessError):
        pass
    return [p for p in REPO.rglob("*") if p.is_file() and not (SKIP_DIRS | {".venv"}) & set(p.relative_to(REPO).parts)
            and not any(part.startswith(".venv") for part in p.relative_to(REPO).parts)]


def _findings(files: list[Path], patterns: list[str]) -> list[str]:
    rx = re.compile("|".join(f"(?:{p})" for p in patterns))
    found = []
    for path in files:
        if path == Path(__file__).resolve() or not path.is_file():
            continue
        try:
            text = path.read_bytes().decode("utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary data (gzipped CSVs, images): no paths to read there
        for lineno, line in enumerate(text.splitlines(), 1):
            if rx.search(line):
                name = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
                found.append(f"{name}:{lineno}: {line.strip()[:160]}")
    return found


def _machine_patterns() -> list[str]:
    """FORBIDDEN plus a file inside this checkout named by its absolute path (wherever the checkout is:
    a clone in /tmp/x must not flag an example's ``cd /tmp/x``, but ``/tmp/x/python/...`` is a path of
    this machine)."""
    extra = [re.escape(str(REPO)) + r"/[\w.]"]
    home = Path.home()
    if str(home) not in ("/", ""):
        extra.append(re.escape(str(home)) + r"/")
    return FORBIDDEN + extra


def test_no_tracked_file_names_a_path_of_this_machine():
    found = _findings(_tracked_files(), _machine_patterns())
    assert not found, ("tracked files name absolute paths outside the repository (take them from an option or "
                       "an environment variable, or put the reference into the repository):\n" + "\n".join(found))


def test_the_check_finds_the_paths_it_is_meant_to_find(tmp_path):
    """The patterns catch what the earlier defects looked like, and leave ordinary text alone."""
    bad = ['SPEC = Path(os.environ.get("LLMSURROGATE_SPECS", "/work/shared/specs")) / "lookahead.md"',
           "TRANSFERUQ_SRC ?= /work/.mirror/lihualei71+transferUQ/repo",
           'main(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/py-econometrics+pyfixest/repo")',
           'ROOT.parent / "shared" / "data"  # ../shared/data', "see shared/papers/ess-2025.pdf",
           "cache in /root/.cache/llmsurrogate", "open('/home/alice/data.csv')", f"{REPO}/python"]
    good = ["git clone . /tmp/x && cd /tmp/x", "/usr/bin/env python3", "/dev/null", "docs/methods/lookahead.md",
            "python/llmsurrogate/data/", "a shared/ folder", "https://github.com/lihualei71/transferUQ",
            "~/.cache/llmsurrogate/wheels", "llmsurrogate.shared_data", "$(HOME)/.cache/llmsurrogate/wheels"]
    for i, line in enumerate(bad + good):
        (tmp_path / f"f{i}.txt").write_text(line + "\n")
    found = _findings(sorted(tmp_path.iterdir(), key=lambda p: int(p.stem[1:])), _machine_patterns())
    assert len(found) == len(bad), found
    assert all(line in "\n".join(found) for line in (b.strip()[:160] for b in bad))
