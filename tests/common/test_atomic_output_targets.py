"""Outputs never replace device files (issue 22, item 1).

The atomic writer renamed its temporary file over whatever the output path was: ``--out
/dev/full`` exited 0 and left a regular file in the device's place (as root, ``--out /dev/null``
would have replaced the system's ``/dev/null``). Now a character device or a FIFO is written to
directly, a write error such as ``/dev/full``'s is an error, and a folder, block device or socket
is refused with a message naming the option.

The machine's own ``/dev/null`` and ``/dev/full`` are never touched: each test makes private
device nodes (``mknod``, the same major/minor numbers) in its temporary folder.
"""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from llmsurrogate import _atomic
from llmsurrogate.cli import cli
from llmsurrogate.datasets import load_transfer_errors
from llmsurrogate.exceptions import ComputationError, InvalidArgumentError


def _mknod(path: Path, kind: int, major: int, minor: int) -> Path:
    try:
        os.mknod(path, 0o666 | kind, os.makedev(major, minor))
    except PermissionError as err:
        pytest.skip(f"cannot make a private device node here (mknod: {err.strerror}; needs root or CAP_MKNOD)")
    return path


def null_device(path: Path) -> Path:
    """A private node of the null device (character 1, 3): writes vanish."""
    return _mknod(path, stat.S_IFCHR, 1, 3)


def full_device(path: Path) -> Path:
    """A private node of the full device (character 1, 7): every write fails with ENOSPC."""
    return _mknod(path, stat.S_IFCHR, 1, 7)


def block_device(path: Path) -> Path:
    """A private block-device node (loop0, 7, 0); never opened."""
    return _mknod(path, stat.S_IFBLK, 7, 0)


class FifoReader:
    """A FIFO at ``path`` and a thread that reads it to the end."""

    def __init__(self, path: Path):
        self.path = path
        os.mkfifo(path)
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path, "rb") as fh:
            self.data = fh.read()

    def result(self, timeout: float = 60.0) -> bytes:
        self.thread.join(timeout)
        if self.thread.is_alive():  # nobody opened it for writing: release the reader
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            self.thread.join(5)
            raise AssertionError(f"nothing was written into the FIFO {self.path}")
        return self.data


def unix_socket(folder: Path) -> tuple[Path, socket.socket]:
    path = folder / "sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return path, sock


def assert_char_device(path: Path) -> None:
    assert stat.S_ISCHR(os.lstat(path).st_mode), f"{path} is no longer a character device"


@pytest.fixture
def short_tmp():
    """A folder with a short path (a Unix socket's path must be under 108 bytes)."""
    with tempfile.TemporaryDirectory(prefix="lls", dir="/tmp") as d:
        yield Path(d)


# ------------------------------------------------------------------------------------------------
# The writer functions
# ------------------------------------------------------------------------------------------------
FRAME = pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]})


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    return fig


WRITERS = {
    "write_bytes": lambda p: _atomic.write_bytes(p, b"x" * 100_000),
    "write_text": lambda p: _atomic.write_text(p, "hello\n"),
    "write_frame": lambda p: _atomic.write_frame(p, FRAME),
    "save_figure": lambda p: _atomic.save_figure(_figure(), p, format="png"),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_null_device_is_written_not_replaced(tmp_path, writer):
    dev = null_device(tmp_path / "null")
    WRITERS[writer](dev)
    assert_char_device(dev)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temporary file left beside it


@pytest.mark.parametrize("writer", list(WRITERS))
def test_full_device_write_error_is_an_error(tmp_path, writer):
    dev = full_device(tmp_path / "full")
    with pytest.raises(ComputationError, match="No space left on device") as err:
        WRITERS[writer](dev)
    assert str(dev) in str(err.value)
    assert_char_device(dev)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


@pytest.mark.parametrize("writer", list(WRITERS))
def test_fifo_gets_the_whole_content(tmp_path, writer):
    reader = FifoReader(tmp_path / "fifo")
    WRITERS[writer](reader.path)
    got = reader.result()
    assert stat.S_ISFIFO(os.lstat(reader.path).st_mode)
    ref = tmp_path / "ref"
    WRITERS[writer](ref)
    if writer == "save_figure":
        assert got[:8] == b"\x89PNG\r\n\x1a\n" and len(got) > 1000
    else:
        assert got == ref.read_bytes()


def test_folder_block_device_and_socket_are_refused(tmp_path, short_tmp):
    folder = tmp_path / "a_folder"
    folder.mkdir()
    block = block_device(tmp_path / "block")
    sock_path, sock = unix_socket(short_tmp)
    try:
        for target, kind in [(folder, "folder"), (block, "block device"), (sock_path, "socket")]:
            for writer in WRITERS.values():
                with pytest.raises(InvalidArgumentError, match=f"{target}.* is a {kind}, not a file"):
                    writer(target)
            with pytest.raises(InvalidArgumentError, match=f"--out {target} is a {kind}, not a file"):
                _atomic.check_output_file(target)
            with pytest.raises(InvalidArgumentError, match=f"--cache {target} is a {kind}, not a file"):
                _atomic.check_output_dir(target.parent, files=[target.name], arg="--cache")
        assert folder.is_dir() and stat.S_ISBLK(os.lstat(block).st_mode) and stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    finally:
        sock.close()


def test_checks_accept_devices_without_writing_beside_them(tmp_path):
    dev = null_device(tmp_path / "null")
    assert _atomic.check_output_file(dev) == dev
    assert _atomic.check_output_dir(tmp_path, files=["null"]) == tmp_path
    assert _atomic.is_stream(dev) and not _atomic.is_stream(tmp_path) and not _atomic.is_stream(tmp_path / "new")
    assert_char_device(dev)


# ------------------------------------------------------------------------------------------------
# The command line: single-file --out and files inside an output folder
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("targets") / "m.csv"
    load_transfer_errors("abdg").iloc[:6, :6].to_csv(path)
    return path


def _invoke(args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _fails(res, *needles):
    assert res.exit_code == 1, res.output
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in res.stderr, res.stderr  # (progress lines may come first)
    for needle in needles:
        assert needle in errors[0], res.stderr


def test_transfer_intervals_out_null_device(tmp_path, matrix):
    dev = null_device(tmp_path / "null")
    res = _invoke(["transfer", "intervals", matrix, "--out", dev])
    assert res.exit_code == 0, res.output
    assert_char_device(dev)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no run record beside a device
    assert f"Wrote {dev}\n" in res.stdout


def test_transfer_intervals_out_full_device_fails(tmp_path, matrix):
    dev = full_device(tmp_path / "full")
    res = _invoke(["transfer", "intervals", matrix, "--out", dev])
    _fails(res, f"cannot write output {dev}", "No space left on device")
    assert_char_device(dev)


def test_transfer_intervals_out_fifo(tmp_path, matrix):
    reader = FifoReader(tmp_path / "fifo")
    res = _invoke(["transfer", "intervals", matrix, "--out", reader.path])
    assert res.exit_code == 0, res.output
    got = reader.result()
    ref = tmp_path / "ref.csv"
    assert _invoke(["transfer", "intervals", matrix, "--out", ref]).exit_code == 0
    assert got == ref.read_bytes()


def test_transfer_intervals_out_block_device_refused(tmp_path, matrix):
    block = block_device(tmp_path / "block")
    _fails(_invoke(["transfer", "intervals", matrix, "--out", block]), f"--out {block} is a block device")
    assert stat.S_ISBLK(os.lstat(block).st_mode)


def test_transfer_build_out_full_device_fails(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"domain": f"d{d}", "z1": rng.uniform(0, 10), "z2": rng.uniform(0, 10), "p1": rng.uniform(0.1, 0.9),
             "ce": rng.uniform(0, 10)} for d in range(3) for _ in range(8)]
    pd.DataFrame(rows).to_csv(tmp_path / "d.csv", index=False)
    dev = full_device(tmp_path / "full")
    _fails(_invoke(["transfer", "build", "--data", tmp_path / "d.csv", "--model", "eu", "--out", dev]),
           f"cannot write output {dev}", "No space left on device")
    assert_char_device(dev)
    assert not (tmp_path / "full.run.json").exists()


@pytest.fixture(scope="module")
def ess_data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("targets_ess") / "d.csv"
    rng = np.random.default_rng(1)
    x = rng.normal(size=60)
    pd.DataFrame({"x": x, "y": x + rng.normal(size=60), "llm": x}).to_csv(path, index=False)
    return path


def _ess(data, out):
    return _invoke(["ess", "--data", data, "--outcome", "y", "--prediction", "llm", "--algorithm", "mean",
                    "--grid", "5,10", "--no-plot", "--out", out])


def test_folder_output_files_that_are_devices_or_fifos(tmp_path, ess_data):
    ref = tmp_path / "ref"
    assert _ess(ess_data, ref).exit_code == 0
    out = tmp_path / "out"
    out.mkdir()
    null_device(out / "ess_summary.json")
    reader = FifoReader(out / "ess_table.csv")
    res = _ess(ess_data, out)
    assert res.exit_code == 0, res.output
    assert reader.result() == (ref / "ess_table.csv").read_bytes()
    assert_char_device(out / "ess_summary.json")
    assert stat.S_ISFIFO(os.lstat(out / "ess_table.csv").st_mode)
    assert (out / "run.json").is_file()


def test_folder_output_figure_on_a_null_device(tmp_path, ess_data):
    out = tmp_path / "out"
    out.mkdir()
    null_device(out / "ess_plot.png")
    res = _invoke(["ess", "--data", ess_data, "--outcome", "y", "--prediction", "llm", "--algorithm", "mean",
                   "--grid", "5,10", "--out", out])
    assert res.exit_code == 0, res.output
    assert_char_device(out / "ess_plot.png")
    assert not list(out.glob(".*.tmp"))


def test_folder_output_file_on_a_full_device_fails(tmp_path, ess_data):
    out = tmp_path / "out"
    out.mkdir()
    full_device(out / "ess_table.csv")
    _fails(_ess(ess_data, out), f"cannot write output {out / 'ess_table.csv'}", "No space left on device")
    assert_char_device(out / "ess_table.csv")


def test_folder_where_an_output_file_goes_is_refused_before_work(tmp_path, ess_data):
    out = tmp_path / "out"
    (out / "ess_summary.json").mkdir(parents=True)
    _fails(_ess(ess_data, out), f"--out {out / 'ess_summary.json'} is a folder")
    assert not (out / ".ess_cache").exists()  # refused before any work


def test_lookahead_lap_to_a_fifo_needs_a_cache_folder(tmp_path):
    """The default cache folder sits beside --out: never beside a device or FIFO."""
    pd.DataFrame({"text": ["a b c"]}).to_csv(tmp_path / "t.csv", index=False)
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    _fails(_invoke(["lookahead", "lap", "--model", tmp_path / "no-model", "--data", tmp_path / "t.csv",
                    "--text-column", "text", "--out", fifo]), "--cache")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "t.csv"]


def test_llm_cache_file_that_is_a_device_is_refused(tmp_path):
    """SQLite would fail with "disk I/O error" and leave a journal beside the device."""
    from llmsurrogate.llm.cache import Cache

    null_device(tmp_path / Cache.FILENAME)
    with pytest.raises(InvalidArgumentError, match="is not a regular file"):
        Cache(tmp_path)
    assert_char_device(tmp_path / Cache.FILENAME)
    assert sorted(p.name for p in tmp_path.iterdir()) == [Cache.FILENAME]
