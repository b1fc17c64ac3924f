"""The workloads' guest scripts run here under the host's busybox: what they write must be
exactly what the oracle expects, and each ack must come after its data."""

import shutil
import subprocess

import pytest

from plugpull.errors import UsageError
from plugpull.testbed.workloads.base import Findings
from plugpull.testbed.workloads import (AtomicReplace, FsyncAppend, FsyncFiles, SmallFiles, Sqlite, TreeCopy, TreeExtract,
                                    TreeRemove, workload)

BUSYBOX = shutil.which("busybox")
SQLITE3 = shutil.which("sqlite3")
needs_busybox = pytest.mark.skipif(BUSYBOX is None, reason="busybox-static is not installed (make deps)")
needs_sqlite3 = pytest.mark.skipif(SQLITE3 is None, reason="the sqlite3 CLI is not installed")


def run_script(wl, tmp_path):
    (tmp_path / "pp").mkdir()
    ack = tmp_path / "acks"
    script = tmp_path / "wl.sh"
    script.write_text(wl.script(str(tmp_path), ack=str(ack)))
    env = {"PATH": f"{tmp_path / 'bin'}"}
    (tmp_path / "bin").mkdir()
    for applet in ("yes", "head", "sync", "echo", "sh", "cat", "mv"):
        (tmp_path / "bin" / applet).symlink_to(BUSYBOX)
    if SQLITE3:
        (tmp_path / "bin" / "sqlite3").symlink_to(SQLITE3)
    if wl.setup(str(tmp_path)):
        subprocess.run([BUSYBOX, "sh", "-c", wl.setup(str(tmp_path))], check=True, env=env, timeout=60)
    subprocess.run([BUSYBOX, "sh", str(script)], check=True, env=env, timeout=60)
    files = {str(p.relative_to(tmp_path)): p.read_bytes() for p in (tmp_path / "pp").iterdir()}
    return files, ack.read_text().split("\n")


@needs_busybox
def test_fsync_files_script_writes_what_the_oracle_expects(tmp_path):
    wl = FsyncFiles(count=12, seed=7)
    files, acks = run_script(wl, tmp_path)
    assert acks[:-1] == [f"ack {i}" for i in range(1, 13)]
    assert wl.lost(list(range(1, 13)), files) == []
    assert {len(files[wl.path(i)]) for i in range(1, 13)} == {wl.size(i) for i in range(1, 13)}


@needs_busybox
def test_fsync_append_script_writes_what_the_oracle_expects(tmp_path):
    wl = FsyncAppend(count=9, seed=3)
    files, acks = run_script(wl, tmp_path)
    assert acks[:-1] == [f"ack {i}" for i in range(1, 10)]
    assert len(files[wl.path]) == 9 * wl.record_size
    assert wl.lost(list(range(1, 10)), files) == []


@needs_busybox
@needs_sqlite3
@pytest.mark.parametrize("synchronous", ["full", "normal"])
def test_sqlite_script_acks_each_commit_on_one_connection(tmp_path, synchronous):
    wl = Sqlite(transactions=7, synchronous=synchronous, checkpoint=3)
    files, acks = run_script(wl, tmp_path)
    if synchronous == "full":
        assert acks[:-1] == [f"ack {i}" for i in range(1, 8)]
    else:
        assert acks[:-1] == ["commit 1", "commit 2", "commit 3", "ack 3", "commit 4", "commit 5", "commit 6",
                             "ack 6", "commit 7"]
    assert wl.examine([3, 6] if synchronous == "normal" else list(range(1, 8)), files, list(range(1, 8))) == Findings()
    assert wl.script("/m").count("sqlite3 ") == 1
    [step] = wl.steps("/m")
    assert ".shell" not in step.command and step.command.count("COMMIT;") == 7


@needs_busybox
def test_atomic_replace_script_ends_with_the_last_version(tmp_path):
    wl = AtomicReplace(count=6, seed=4)
    files, acks = run_script(wl, tmp_path)
    assert acks[:-1] == [f"ack {i}" for i in range(1, 7)]
    assert files == {wl.target: wl.content(6)} and wl.examine(list(range(1, 7)), files) == Findings()


def test_fsync_files_oracle_catches_missing_and_wrong_files():
    wl = FsyncFiles(count=3, seed=1)
    files = {wl.path(1): wl.content(1), wl.path(2): wl.content(2)[:-1] + b"X"}
    lost = wl.lost([1, 2, 3], files)
    assert [(l.ack, "missing" in l.reason, "wrong" in l.reason) for l in lost] == [
        (2, False, True), (3, True, False)]
    assert wl.lost([], {}) == []


def test_fsync_append_oracle_requires_the_prefix():
    wl = FsyncAppend(count=4, seed=1)
    data = b"".join(wl.record(i) for i in range(1, 4))
    assert wl.lost([1, 2, 3], {wl.path: data}) == []
    assert [l.ack for l in wl.lost([1, 2, 3], {wl.path: data[: 2 * wl.record_size + 5]})] == [3]
    torn = data[:wl.record_size] + b"\0" * wl.record_size + data[2 * wl.record_size:]
    assert [l.ack for l in wl.lost([1, 2, 3], {wl.path: torn})] == [2]
    assert [l.ack for l in wl.lost([1], {})] == [1]


def test_content_depends_on_seed_and_id():
    a, b = FsyncFiles(seed=1), FsyncFiles(seed=2)
    assert a.content(1) != a.content(2) and a.content(1) != b.content(1)
    assert a.content(5) == FsyncFiles(seed=1).content(5)


def test_unknown_workload_and_bad_params_are_usage_errors():
    with pytest.raises(UsageError, match="unknown workload"):
        workload("nope")
    with pytest.raises(UsageError, match="bad parameters"):
        workload("fsync-files", colour="red")


def test_tree_oracles_want_the_whole_tree_after_an_extract_or_a_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path))
    for wl in (TreeExtract(files=30, seed=9), TreeCopy(files=30, seed=9)):
        manifest = wl.tree().manifest
        sums = {f"pp/{p}": digest for p, digest in manifest.items()}
        first = next(iter(manifest))
        assert wl.lost([1], sums) == [] and wl.lost([], {}) == []
        missing = wl.lost([1], {k: v for k, v in sums.items() if k != f"pp/{first}"})
        assert [(l.ack, "1 files of the tree missing, 0 with wrong" in l.reason) for l in missing] == [(1, True)]
        wrong = wl.lost([1], {**sums, f"pp/{first}": "0" * 64})
        assert [(l.ack, "0 files of the tree missing, 1 with wrong" in l.reason) for l in wrong] == [(1, True)]


def test_removal_oracles_report_files_that_came_back(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path))
    remove = TreeRemove(files=30, seed=9)
    back = {f"pp/{remove.tree().root}/a": "x", "pp/other": "y"}
    assert [(l.ack, l.reason.startswith("1 files of the removed tree are back")) for l in remove.lost([1], back)] == [
        (1, True)]
    assert remove.lost([], back) == [] and remove.lost([1], {"pp/other": "y"}) == []
    small = SmallFiles(count=5)
    assert [l.reason for l in small.lost([1], {"pp/sf/1": b"", "pp/sf/2": b""})] == [
        "2 deleted files are back (e.g. pp/sf/1)"]
    assert small.lost([], {"pp/sf/1": b""}) == [] and small.lost([1], {"pp/x": b""}) == []


def test_the_big_copys_file_is_made_a_mib_at_a_time_so_any_size_can_be_asked_for(tmp_path, monkeypatch):
    """randbytes refuses 256 MiB at once (seed 002 at scale 1 asks for exactly that)."""
    import hashlib
    from plugpull.testbed.workloads.bench import BigCopy, _digest
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert len(next(BigCopy(mib=4096).chunks())) == 1 << 20
    small = BigCopy(mib=3, seed=2)
    data = small.payload().read_bytes()
    assert len(data) == 3 << 20 and data != BigCopy(mib=3, seed=3).payload().read_bytes()
    assert _digest(small) == hashlib.sha256(data).hexdigest()
    assert small.lost([1], {"pp/big": _digest(small)}) == []
    assert small.lost([1], {"pp/big": hashlib.sha256(data[:-1]).hexdigest()}), "a short copy must be lost"
