"""The cache's pruning (`plugpull kernels prune`): old entries go, recent ones, the newest of
each kind and what a running process holds stay; nothing outside the cache is touched."""

import fcntl
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from plugpull import cli
from plugpull.cli.kernels import cache_kinds
from plugpull.prune import DAY, Kind, held, prune, prune_kind, register

OLD = time.time() - 90 * DAY


def _age(path: Path, when: float = OLD) -> Path:
    for p in [*(path.rglob("*") if path.is_dir() else []), path]:
        os.utime(p, (when, when), follow_symlinks=False)
    return path


def _entry(folder: Path, name: str, old: bool = True, size: int = 4096) -> Path:
    entry = folder / name
    entry.mkdir(parents=True)
    (entry / "data").write_bytes(b"x" * size)
    return _age(entry) if old else entry


def _kind(name: str) -> Kind:
    return next(k for k in cache_kinds() if k.name == name)


def test_each_cache_registers_its_own_kind_once():
    """prune.py knows no cache's layout: every kind is registered by the module that keeps it,
    and a second kind of the same folder is refused."""
    import plugpull.prune
    names = [k.name for k in cache_kinds()]
    assert names == sorted(set(names)) and {"kernels/trees", "workdirs", "cluster/records", "bisect"} <= set(names)
    assert "Kind(\"" not in Path(plugpull.prune.__file__).read_text()
    with pytest.raises(ValueError, match="'payloads' registered twice"):
        register(Kind("payloads"))


def test_old_entries_go_and_recent_ones_stay(tmp_path):
    trees = tmp_path / "kernels" / "trees"
    old_a, old_b = _entry(trees, "a"), _age(_entry(trees, "b"), OLD + DAY)
    recent, newest = _entry(trees, "c", old=False), _entry(trees, "d", old=False)
    outcome = prune_kind(tmp_path, _kind("kernels/trees"), 30, dry_run=False)
    assert outcome.removed == [old_b, old_a] and not old_a.exists() and not old_b.exists()
    assert recent.exists() and newest.exists() and outcome.kept == 2
    assert outcome.freed >= 2 * 4096


def test_the_newest_of_a_kind_stays_however_old(tmp_path):
    trees = tmp_path / "kernels" / "trees"
    old_a, old_b = _entry(trees, "a"), _age(_entry(trees, "b"), OLD + DAY)
    outcome = prune_kind(tmp_path, _kind("kernels/trees"), 30, dry_run=False)
    assert outcome.removed == [old_a] and old_b.exists() and outcome.kept == 1


def test_dry_run_removes_nothing_and_says_what_would_go(tmp_path):
    trees = tmp_path / "kernels" / "trees"
    old, _ = _entry(trees, "a"), _entry(trees, "b", old=False)
    outcome = prune_kind(tmp_path, _kind("kernels/trees"), 30, dry_run=True)
    assert outcome.removed == [old] and old.exists()
    assert outcome.line(True).startswith("kernels/trees: would remove 1 (")


def test_a_running_build_leaves_the_builds_alone(tmp_path):
    builds = tmp_path / "kernels" / "builds"
    old, _ = _entry(builds / "entries", "k1"), _entry(builds / "entries", "k2", old=False)
    work = _entry(builds / "work", "debian-1")
    with open(work / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert held(work / ".lock")
        entries = prune_kind(tmp_path, _kind("kernels/builds/entries"), 30, dry_run=False)
        works = prune_kind(tmp_path, _kind("kernels/builds/work"), 0, dry_run=False)
    assert entries.busy and old.exists() and "left alone" in entries.line(False)
    assert works.removed == [] and work.exists()  # the newest, and held
    assert not held(work / ".lock")


def test_a_held_workspace_stays_an_unheld_old_one_goes(tmp_path):
    work = tmp_path / "kernels" / "builds" / "work"
    busy, idle, _ = _entry(work, "a"), _entry(work, "b"), _entry(work, "c", old=False)
    (idle / ".lock").touch()
    _age(idle)
    with open(busy / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        _age(busy)
        outcome = prune_kind(tmp_path, _kind("kernels/builds/work"), 30, dry_run=False)
    assert outcome.removed == [idle] and busy.exists()


def test_a_pruned_build_takes_its_log_and_names_with_it(tmp_path):
    builds = tmp_path / "kernels" / "builds"
    old, new = _entry(builds / "entries", "k1"), _entry(builds / "entries", "k2", old=False)
    (builds / "logs").mkdir()
    (builds / "logs" / "k1.log").write_text("log\n")
    (builds / "names").mkdir()
    os.symlink("../entries/k1", builds / "names" / "stock")
    os.symlink("../entries/k2", builds / "names" / "fixed")
    prune_kind(tmp_path, _kind("kernels/builds/entries"), 30, dry_run=False)
    assert not old.exists() and new.exists()
    assert not (builds / "logs" / "k1.log").exists()
    assert sorted(p.name for p in (builds / "names").iterdir()) == ["fixed"]


@pytest.mark.parametrize("linked", ["kernels/builds/logs", "kernels/builds/names"])
def test_a_companion_reached_through_a_link_stays_where_it_is(linked, tmp_path):
    """A build's log (or its name) under a companion folder that is a link to another directory
    is never removed there: every companion's way from the cache is checked, not only the kind's."""
    root, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    builds = root / "kernels" / "builds"
    old, new = _entry(builds / "entries", "k1"), _entry(builds / "entries", "k2", old=False)
    elsewhere.mkdir()
    (elsewhere / "k1.log").write_text("someone else's log\n")
    os.symlink("../entries/k1", elsewhere / "stock")
    (root / linked).symlink_to(elsewhere)
    outcome = prune_kind(root, _kind("kernels/builds/entries"), 30, dry_run=False)
    assert outcome.removed == [old] and not old.exists() and new.exists()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["k1.log", "stock"]
    assert (root / linked).is_symlink()


def test_an_entry_that_cannot_be_removed_is_said_and_the_rest_go(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path))
    trees = tmp_path / "kernels" / "trees"
    stuck, gone, _ = _entry(trees, "a"), _age(_entry(trees, "b"), OLD + DAY), _entry(trees, "c", old=False)
    real = shutil.rmtree

    def rmtree(path, *args, **kwargs):
        if Path(path) == stuck:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)
    monkeypatch.setattr(shutil, "rmtree", rmtree)
    assert cli.main(["kernels", "prune"]) == 0
    out, err = capsys.readouterr()
    assert stuck.exists() and not gone.exists()
    assert "kernels/trees: removed 1 (" in out and "kept 1, could not remove 1" in out
    assert err.strip() == f"plugpull: could not remove {stuck} (Permission denied); the rest went on"


def test_a_link_out_of_the_cache_is_never_followed(tmp_path):
    outside = tmp_path / "outside"
    precious = _entry(outside, "precious")
    root = tmp_path / "cache"
    trees = root / "kernels" / "trees"
    trees.mkdir(parents=True)
    os.symlink(precious, trees / "linked")
    _age(trees / "linked")
    _entry(trees, "newest", old=False)
    outcome = prune_kind(root, _kind("kernels/trees"), 30, dry_run=False)
    assert outcome.removed == [trees / "linked"] and not os.path.lexists(trees / "linked")
    assert (precious / "data").is_file()
    (root / "payloads").symlink_to(outside)  # a kind's folder that is a link: skipped
    assert prune_kind(root, _kind("payloads"), 0, dry_run=False).removed == []
    assert precious.exists()


def test_a_payload_goes_with_its_tar_and_a_workers_records_wait_for_it(tmp_path):
    payloads = tmp_path / "payloads"
    payloads.mkdir()
    for stem in ("tree-old", "tree-new"):
        (payloads / f"{stem}.tar").write_bytes(b"t" * 512)
        (payloads / f"{stem}.json").write_text("{}")
    _age(payloads / "tree-old.json"), _age(payloads / "tree-new.tar")
    outcome = prune_kind(tmp_path, _kind("payloads"), 30, dry_run=False)
    assert sorted(p.name for p in payloads.iterdir()) == ["tree-new.json", "tree-new.tar"]
    assert outcome.removed == [payloads / "tree-old.json"]
    records = tmp_path / "cluster" / "records"
    old, _ = _entry(records, "aa"), _entry(records, "bb", old=False)
    with open(tmp_path / "cluster" / ".plugpull-worker-1", "w") as marker:
        fcntl.flock(marker, fcntl.LOCK_EX)
        assert prune_kind(tmp_path, _kind("cluster/records"), 30, dry_run=False).busy
    assert old.exists()
    assert prune_kind(tmp_path, _kind("cluster/records"), 30, dry_run=False).removed == [old]


def test_listings_of_work_dirs_that_are_gone_are_removed(tmp_path):
    listings = tmp_path / "workdirs"
    listings.mkdir()
    alive = tmp_path / "out" / ".work-1"
    alive.mkdir(parents=True)
    (listings / "a.json").write_text(json.dumps({"work": str(alive)}))
    (listings / "b.json").write_text(json.dumps({"work": str(tmp_path / "gone")}))
    outcome = prune_kind(tmp_path, _kind("workdirs"), 30, dry_run=False)
    assert outcome.removed == [listings / "b.json"] and (listings / "a.json").exists()


def test_the_command_prunes_the_cache_it_is_given(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path))
    trees = tmp_path / "kernels" / "trees"
    old, _ = _entry(trees, "a", size=1 << 20), _entry(trees, "b", old=False)
    assert cli.main(["kernels", "prune", "--dry-run"]) == 0
    assert old.exists()
    out = capsys.readouterr().out
    assert "kernels/trees: would remove 1 (1.0 MiB), kept 1" in out
    assert cli.main(["kernels", "prune", "--days", "120"]) == 0
    assert old.exists()
    assert cli.main(["kernels", "prune"]) == 0
    assert not old.exists()
    assert len(capsys.readouterr().out.strip().splitlines()) == 2 * len(cache_kinds())


@pytest.mark.parametrize("argv, names", [
    (["kernels", "prune", "--days", "-1"], "--days"),
    (["kernels", "prune", "--days", "soon"], "--days"),
    (["kernels", "prune", "debian:6.12"], "debian:6.12"),
    (["kernels", "prune", "--patch", "x.patch"], "--patch"),
    (["kernels", "debian:6.12", "--dry-run"], "--dry-run"),
    (["kernels", "build", "debian:7.3", "--days", "3"], "--days"),
])
def test_bad_prune_input_is_one_line_and_exit_2(argv, names, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.patch").write_text("")
    code, _, said = run_cli(argv, capsys)
    err = said.strip().splitlines()
    assert code == 2 and len(err) == 1 and names in err[0], err
    assert not (tmp_path / "cache").exists()


def test_no_cache_yet_is_said(tmp_path):
    assert prune(tmp_path / "none", cache_kinds(), 30, dry_run=False) == []


def test_a_build_booted_by_name_is_marked_used(tmp_path):
    from plugpull.kernels.build import BuildStore
    store = BuildStore(tmp_path / "builds")
    entry = store.entry("k1")
    (entry / "lib" / "modules" / "6.1-x").mkdir(parents=True)
    (entry / "bzImage").write_bytes(b"k")
    (entry / "manifest.json").write_text(json.dumps({"release": "6.1-x"}))
    store.name("stock", "k1")
    _age(entry)
    store.find("stock")
    assert time.time() - (entry / "manifest.json").stat().st_mtime < DAY


def test_a_hard_linked_file_counts_its_share(tmp_path):
    from plugpull.prune import disk_bytes
    source, copy = _entry(tmp_path / "all", "source", size=1 << 20), tmp_path / "all" / "copy"
    copy.mkdir()
    os.link(source / "data", copy / "data")
    assert disk_bytes(copy) < disk_bytes(tmp_path / "all") / 2 + 8192


def test_old_bisect_clones_go_and_a_running_bisects_stays(tmp_path, monkeypatch, capsys):
    from plugpull.bisect import clone_for
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path))
    idle, busy, recent = (clone_for(tmp_path / "trees" / name).path.parent for name in ("idle", "busy", "recent"))
    for entry in (idle, busy, recent):
        (entry / "repo").mkdir(parents=True)
        (entry / "repo" / "objects").write_bytes(b"x" * 4096)
        (entry / ".lock").touch()
    _age(idle), _age(busy)
    with open(busy / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as `plugpull bisect` holds it while it runs in the clone
        _age(busy)
        assert cli.main(["kernels", "prune"]) == 0
    assert not idle.exists() and busy.exists() and recent.exists()
    assert "bisect: removed 1 (" in capsys.readouterr().out


def test_a_bisect_clone_taken_again_is_marked_used(tmp_path, monkeypatch):
    from plugpull.bisect.git import Clone
    from plugpull.prune import last_use
    entry = tmp_path / "bisect" / "linux-0123"
    (entry / "repo" / ".git").mkdir(parents=True)
    _age(entry)
    Clone(entry / "repo").ensure(tmp_path / "linux")
    assert last_use(entry) > time.time() - DAY


def test_a_fstests_root_in_use_stays_an_unused_old_one_goes(tmp_path):
    roots = tmp_path / "fstests-roots"
    busy, idle, _ = _entry(roots, "a"), _entry(roots, "b"), _entry(roots, "c", old=False)
    for entry in (busy, idle):
        (entry / "root.img").write_bytes(b"\0" * 4096)
        _age(entry)
    from plugpull.locks import shared as using
    with using(busy / ".lock"):
        _age(busy)
        outcome = prune_kind(tmp_path, _kind("fstests-roots"), 30, dry_run=False)
    assert outcome.removed == [idle] and busy.exists()


def test_a_bisect_clone_made_before_its_objects_were_kept_beside_it_is_taken_as_it_is(tmp_path, monkeypatch):
    """A clone of the old layout (`bisect/NAME/repo`) becomes `bisect/NAME/src`, not a new clone."""
    from plugpull.bisect import clone_for
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path))
    entry = clone_for(tmp_path / "linux").path.parent
    (entry / "repo" / ".git").mkdir(parents=True)
    (entry / "repo" / "kept").write_text("x")
    clone = clone_for(tmp_path / "linux")
    assert clone.path == entry / "src" and (clone.path / "kept").is_file() and not (entry / "repo").exists()
