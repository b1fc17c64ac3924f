"""The extents check (`reproducer.extents`): the blocks `fsync-extents` owes are read back with
xfs_io's fiemap in both styles, on the host's own filesystem (no crash: nothing is lost) and
from made-up fiemap output (a stub xfs_io) where an owed block is gone."""

import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from plugpull.generate.oracle import Owed
from plugpull.generate.tree import Blocks
from plugpull.reproducer import case_for
from plugpull.reproducer.checks import Check, checks, fact_check
from plugpull.reproducer.flakey import fstests_test, script
from plugpull.reproducer.fstests import golden, printing
from plugpull.reproducer.sh import checking
from tests.unit.reproducer.test_reproducer import SHIM, helpers_called, helpers_defined, host_tools, parses, \
    print_facts, run_ops  # noqa: F401 (host_tools: a fixture)

GENERIC_483 = "gen:seq1-000417"  # falloc-eof.keep-size A/foo, fsync A/foo: blocks {4, 5} owed
BTRFS_211 = "gen:seq5.eof-truncate-000206"  # the new file's preallocated blocks, the size moved into them
CHECK_483 = "check_extents A/foo extents file 'fsync-extents, point 1' 'blocks {4, 5}'"
FIEMAP_483 = "{where}/A/foo:\n\t0: [0..31]: 2048..2079\n\t1: [32..39]: 4096..4103\n"  # block 5 gone


def test_the_extents_past_the_end_are_checked():
    """generic/483's foo: the blocks fsync-extents owes are a check, no longer left out."""
    found = checks(case_for(GENERIC_483, "btrfs"))
    assert found.skipped == ()
    assert Check("A/foo", "extents", ("blocks {4, 5}",), "file", "fsync-extents, point 1") in found.facts
    assert found.needs_fiemap and not checks(case_for("gen:seq1-000253", "btrfs")).needs_fiemap


def test_the_script_checks_the_extents():
    case = case_for(GENERIC_483, "btrfs")
    text = script(case)
    assert CHECK_483 in text.splitlines() and "\nextents_of() {" in text and "Not checked" not in text
    test = fstests_test(case, "901")
    assert "_require_xfs_io_command fiemap" in test.splitlines()
    assert CHECK_483.replace("check_", "show_") in test.splitlines()
    assert "A/foo extents (if a file): cover blocks {4, 5}" in golden(case, "901").splitlines()


def test_a_script_without_extents_has_no_fiemap():
    case = case_for("gen:seq1-000253", "btrfs")
    assert "fiemap" not in script(case) and "fiemap" not in fstests_test(case, "901")


def test_an_extents_value_not_judged_owes_nothing():
    """judge.holds: a value None among the owed accepts any blocks, so no check is written."""
    owed = Owed("A/foo", "extents", frozenset({None, Blocks({4, 5})}), "fsync-extents", 1, frozenset())
    assert fact_check(owed, {}, xattrs=False) is None
    assert isinstance(fact_check(replace(owed, values=frozenset({Blocks({4})})), {}, xattrs=False), Check)


@pytest.mark.parametrize("ident", [GENERIC_483, BTRFS_211])
def test_the_extents_scripts_parse(ident, tmp_path):
    case = case_for(ident, "btrfs")
    shells = [s for s in ("dash", "busybox sh", "sh") if shutil.which(s.split()[0])]
    assert shells and all(parses(s, script(case), tmp_path) for s in shells)
    assert parses("bash", fstests_test(case, "901"), tmp_path)
    assert helpers_called(fstests_test(case, "901")) <= helpers_defined(SHIM / "common")


@pytest.fixture
def fiemap_here(host_tools, tmp_path):  # noqa: F811 (a fixture of a fixture)
    probe = tmp_path / "probe"
    probe.write_bytes(b"x" * 4096)
    if subprocess.run(["xfs_io", "-r", "-c", "fiemap", str(probe)], capture_output=True).returncode != 0:
        pytest.skip("the host's filesystem under the test's directory has no fiemap")
    probe.unlink()


def stub_xfs_io(where: Path, stubs: Path, body: str) -> dict:
    """The environment of a check of the tree at `where` that finds `body` as xfs_io."""
    stubs.mkdir(exist_ok=True)
    (stubs / "xfs_io").write_text(f"#!/bin/sh\n{body}\n")
    (stubs / "xfs_io").chmod(0o755)
    return {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "mnt": str(where)}


def made_up_fiemap(where: Path, stubs: Path, output: str) -> dict:
    """As stub_xfs_io, xfs_io printing `output` (its fiemap of A/foo)."""
    stubs.mkdir(exist_ok=True)
    (stubs / "fiemap.out").write_text(output.format(where=where))
    return stub_xfs_io(where, stubs, f"cat {stubs / 'fiemap.out'}")


def run_checks(case, env: dict) -> subprocess.CompletedProcess:
    prelude = 'failed=0\ndie() { echo "ERROR: $*" >&2; exit 3; }\n'
    return subprocess.run(["dash", "-c", prelude + checking(case), "sh"], env=env, capture_output=True, text=True)


@pytest.mark.parametrize("ident", [GENERIC_483, BTRFS_211])
@pytest.mark.parametrize("fs", ["ext4", "btrfs"])
def test_a_tree_that_keeps_its_blocks_passes(fiemap_here, ident, fs, tmp_path):
    case = case_for(ident, fs)
    run_ops(case, tmp_path)
    done = run_checks(case, {**os.environ, "mnt": str(tmp_path)})
    assert (done.returncode, done.stdout) == (0, "PASS\n"), done.stderr


def test_an_owed_block_missing_fails(host_tools, tmp_path):  # noqa: F811
    case = case_for(GENERIC_483, "btrfs")
    (tmp_path / "mnt").mkdir()
    run_ops(case, tmp_path / "mnt")
    done = run_checks(case, made_up_fiemap(tmp_path / "mnt", tmp_path / "bin", FIEMAP_483))
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == "FAIL: A/foo: extents is blocks {0, 1, 2, 3, 4}, owed blocks {4, 5} " \
                                          "(fsync-extents, point 1)"
    every = FIEMAP_483.replace("[32..39]", "[32..47]")
    assert run_checks(case, made_up_fiemap(tmp_path / "mnt", tmp_path / "bin", every)).stdout == "PASS\n"


def test_a_fiemap_that_fails_is_no_verdict(host_tools, tmp_path):  # noqa: F811
    case = case_for(GENERIC_483, "btrfs")
    (tmp_path / "mnt").mkdir()
    run_ops(case, tmp_path / "mnt")
    done = run_checks(case, stub_xfs_io(tmp_path / "mnt", tmp_path / "bin", "echo 'not supported' >&2; exit 1"))
    assert done.returncode == 3 and "ERROR: xfs_io fiemap of A/foo failed" in done.stderr


def test_the_fstests_form_prints_its_golden_output_with_extents(fiemap_here, tmp_path):
    case = case_for(BTRFS_211, "xfs")
    assert print_facts(case, tmp_path) == golden(case, "999")


def test_the_fstests_form_shows_a_lost_block(host_tools, tmp_path):  # noqa: F811
    case = case_for(GENERIC_483, "btrfs")
    (tmp_path / "mnt").mkdir()
    run_ops(case, tmp_path / "mnt")
    env = {**made_up_fiemap(tmp_path / "mnt", tmp_path / "bin", FIEMAP_483), "SCRATCH_MNT": str(tmp_path / "mnt"),
           "XFS_IO_PROG": "xfs_io"}
    out = subprocess.run(["bash", "-c", printing(case)], env=env, capture_output=True, text=True).stdout
    assert "A/foo extents (if a file): blocks {0, 1, 2, 3, 4}, owed blocks {4, 5} (fsync-extents, point 1)" \
        in out.splitlines()
