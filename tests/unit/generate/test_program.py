"""Generated workloads' programs: valid sh, and, run on the host's own filesystem (busybox's
applets, the host's xfs_io, pp-xattr compiled from images/src, sync a no-op), they leave
exactly the tree the model says; the checker's pp-tree reads that tree back as it is, and
the `gen:` workload judges it clean, or not when an owed file is gone."""

import os
import re
import shutil
import time
import subprocess
import tempfile
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from plugpull.generate.ops import refusal
from plugpull.generate.oracle import REMAPS
from plugpull.generate.program import program
from plugpull.generate.space import Space, workload_of
from plugpull.generate.tree import read_tree
from plugpull.check.checker import TREE
from plugpull.generate.workload import GeneratedWorkload, collected

ROOT = Path(__file__).resolve().parents[3]
APPLETS = ("mv", "ln", "touch", "unlink", "mkdir")


def test_a_program_is_valid_sh(tmp_path):
    for ident in (0, 412, 90995):
        script = tmp_path / "w.sh"
        script.write_text(program(Space(2).workload(ident)))
        assert subprocess.run(["sh", "-n", str(script)], capture_output=True).returncode == 0
    script.write_text(program(Space(2).workload(0)) + "if then fi\n")
    assert subprocess.run(["sh", "-n", str(script)], capture_output=True).returncode != 0


@pytest.fixture(scope="module")
def host_tools(tmp_path_factory):
    busybox, xfs_io, cc = shutil.which("busybox"), shutil.which("xfs_io"), shutil.which("cc")
    if not (busybox and xfs_io and cc):
        pytest.skip("needs busybox, xfs_io and cc on the host")
    bin_dir = tmp_path_factory.mktemp("bin")
    for applet in APPLETS:
        (bin_dir / applet).symlink_to(busybox)
    (bin_dir / "sync").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sync").chmod(0o755)
    for tool in ("pp-xattr", "pp-tree"):
        subprocess.run([cc, "-O2", "-Wall", "-o", str(bin_dir / tool), str(ROOT / f"images/src/{tool}.c")], check=True)
    return f"{bin_dir}:{os.environ['PATH']}"


def run_on_host(workload, where: Path, path: str) -> list[str]:
    where.mkdir()
    acks = where.parent / f"{where.name}.acks"
    done = subprocess.run(["sh", "-c", f'exec 4>"$1"\n{program(workload)}', "sh", str(acks)], cwd=where,
                          env={**os.environ, "PATH": path}, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert done.returncode == 0, (workload.ident, done.stderr)
    return acks.read_text().split("\n")[:-1]


def without_ino(view):
    return {p: e.__class__(**{**e.__dict__, "ino": None}) for p, e in view.items()}


def without_extents(view):
    return {p: e.__class__(**{**e.__dict__, "extents": None}) for p, e in view.items()}


def links(view):
    groups = {}
    for p, e in view.items():
        groups.setdefault(e.ino, []).append(p)
    return sorted(sorted(g) for g in groups.values())


@cache
def host_refusals() -> frozenset:
    """What the host's temporary filesystem refuses (EOPNOTSUPP) of what a filesystem may
    refuse: reflink (and every other clone: `oracle.REMAPS`) on ext4 or tmpfs, none on xfs or
    btrfs; btrfs snapshots and quotas everywhere but on btrfs."""
    with tempfile.TemporaryDirectory() as d:
        Path(d, "s").write_bytes(b"x" * 4096)
        Path(d, "d").write_bytes(b"")
        said = subprocess.run(["xfs_io", "-c", f"reflink -q {d}/s", f"{d}/d"], capture_output=True, text=True)
        kind = subprocess.run(["stat", "-f", "-c", "%T", d], capture_output=True, text=True).stdout.strip()
    clones = REMAPS if "Operation not supported" in said.stderr else frozenset()
    return clones | (frozenset() if kind == "btrfs" else {"snapshot", "quota"})


def workloads_to_run():
    """Samples of each seq, as the host's filesystem runs them (what it refuses not done)."""
    for seq, k in ((1, 30), (2, 20), (3, 15)):
        space = Space(seq)
        for i in space.sample(k, seed=7):
            workload = space.workload(i)
            refused = {key for s in workload.steps if (key := refusal(s.op, host_refusals()))}
            yield replace(workload, refused=frozenset(refused))


def test_programs_leave_the_model_tree(host_tools, tmp_path):
    ran = 0
    for n, workload in enumerate(workloads_to_run()):
        acks = run_on_host(workload, tmp_path / f"w{n}", host_tools)
        assert acks == [f"ack {k}" for k in range(len(workload.points()) + 1)]
        real, model = read_tree(tmp_path / f"w{n}"), workload.trees[-1].view()
        assert without_ino(real) == without_ino(model), (workload.ident, workload.text())
        assert links(real) == links(model), workload.ident
        ran += 1
    assert ran == 30 + 20 + 15


def collect_on_host(where: Path, path: str) -> str:
    done = subprocess.run(["pp-tree"], cwd=where, env={**os.environ, "PATH": path},
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_collector_reads_the_tree_back(host_tools, tmp_path):
    for n, workload in enumerate(workloads_to_run()):
        if n % 4:
            continue
        run_on_host(workload, tmp_path / f"w{n}", host_tools)
        tree, strays = collected(collect_on_host(tmp_path / f"w{n}", host_tools))
        assert (without_extents(tree), strays) == (read_tree(tmp_path / f"w{n}"), [])
        assert all(e.extents is not None for e in tree.values() if e.kind == "file")  # read_tree reads none
    with pytest.raises(ValueError):
        collected("entry A/foo 81a4 1 1 1 -\n")  # a field short
    (tmp_path / "w0" / "stray").write_text("x")
    assert collected(collect_on_host(tmp_path / "w0", host_tools))[1] == ["stray"]


@pytest.mark.parametrize("fs", ["ext4", "posix"])
def test_a_generated_workload_judges_the_collected_tree(fs, host_tools, tmp_path):
    workload = workload_of("creat A/foo, fsync A/foo")
    run_on_host(workload, tmp_path / "w", host_tools)
    gen = GeneratedWorkload(workload.ident, fs)
    files = {TREE: collect_on_host(tmp_path / "w", host_tools).encode()}
    assert gen.examine([0, 1], files).lost == [] and gen.examine([0, 1], files).broken == []
    (tmp_path / "w" / "A" / "foo").unlink()
    files[TREE] = collect_on_host(tmp_path / "w", host_tools).encode()
    lost = gen.examine([0, 1], files).lost
    assert [x.ack for x in lost] == ([1] if fs == "ext4" else [])  # POSIX owes no name
    gone = [x.reason for x in gen.examine([0, 1], {}).lost]  # no work directory: each owed fact lost, by its rule
    if fs == "ext4":
        assert any("(sync-all, point 0)" in r for r in gone) and all(re.search(r"\([a-z-]+, point \d\)", r) for r in gone)
    else:
        assert gone == []  # POSIX owes nothing after a sync, and no name after an fsync
    (tmp_path / "w" / "B").mkdir()
    (tmp_path / "w" / "B" / "zz").write_text("x")
    files[TREE] = collect_on_host(tmp_path / "w", host_tools).encode()
    assert "B/zz is a name no point of the workload has" in gen.examine([0], files).broken


def test_the_crash_pipeline_judges_a_generated_workload(host_tools, tmp_path):
    """What the checker brings back for a gen: workload, classified as every state is."""
    from plugpull.check.verdict import Observation, Verdict, classify
    from plugpull.crash.judge import collect_for
    from plugpull.testbed.fs import filesystem
    workload = workload_of("rename.over A/bar A/foo, fsync A")
    gen = GeneratedWorkload(workload.ident, "ext4")
    assert collect_for(gen, [0, 1]) == "tree" and collect_for(gen, []) == "tree"
    run_on_host(workload, tmp_path / "w", host_tools)

    def verdict(required):
        out = collect_on_host(tmp_path / "w", host_tools)
        obs = Observation(mount_rc=0, fsck_rc=0, umount_rc=0, files={TREE: out.encode()})
        return classify(filesystem("ext4"), obs, gen, required).verdict

    assert verdict([0, 1]) == Verdict.CLEAN
    os.link(tmp_path / "w" / "A" / "foo", tmp_path / "w" / "A" / "bar")  # the rename half done
    assert verdict([0, 1]) == Verdict.INCONSISTENT
    (tmp_path / "w" / "A" / "bar").unlink()
    (tmp_path / "w" / "A" / "foo").unlink()  # the renamed file gone
    assert verdict([0]) == Verdict.DATA_LOSS and verdict([]) == Verdict.CLEAN


def test_the_program_waits_for_each_ack_to_come_back_stamped(host_tools, tmp_path):
    """The host stamps an ack late (here: 0.3 s after it came): the program must not have
    gone on to the next operation by then. Without the wait for the echo, `touch A/foo`
    runs long before the stamp of ack 0 is taken."""
    import socket
    from plugpull.guest.contract.channel import LineStream

    work = tmp_path / "w"
    work.mkdir()
    seen = []

    def late_stamp():
        time.sleep(0.3)
        seen.append(sorted(str(p.relative_to(work)) for p in work.rglob("*")))
        return len(seen)

    host, guest = socket.socketpair()
    stream = LineStream(host, late_stamp)
    workload = workload_of("creat A/foo, fsync A/foo")
    done = subprocess.run(["busybox", "sh", "-c", f"exec 4>&{guest.fileno()}\n{program(workload)}"], cwd=work,
                          env={**os.environ, "PATH": host_tools}, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, pass_fds=(guest.fileno(),), timeout=60)
    assert done.returncode == 0, done.stderr
    assert [stream.get(timeout=5).text for _ in range(2)] == ["ack 0", "ack 1"]
    assert "A/foo" not in seen[0] and "A" in seen[0], seen
    assert "A/foo" in seen[1]
    host.close()
    guest.close()


def test_the_host_sends_each_line_back_after_its_stamp_and_never_blocks_on_a_guest_that_does_not_read():
    import socket
    from plugpull.guest.contract.channel import LineStream

    host, guest = socket.socketpair()
    stamps = iter(range(1, 10**6))
    stream = LineStream(host, lambda: next(stamps))
    guest.sendall(b"ack 0\ncommit 1\n")
    assert [stream.get(timeout=5).stamp for _ in range(2)] == [1, 2]
    assert guest.recv(100) == b"ack 0\ncommit 1\n"
    lines = 20000  # far more than a socket holds unread: the echoes beyond it are dropped
    guest.sendall(b"".join(b"ack %d\n" % i for i in range(lines)))
    assert [stream.get(timeout=10).text for _ in range(lines)][-1] == f"ack {lines - 1}"
    host.close()
    guest.close()


def test_only_a_generated_program_opens_its_ack_port_to_read_the_echoes():
    """The user's script writes to a FIFO that a `cat` relays: opened for reading too, it would
    not wait for the relay, and acks written before the relay opened it would be lost."""
    from plugpull.generate.workload import generated_workload
    from plugpull.testbed.workloads.script import Script

    assert "\nexec 4<>/dev/plugpull-ack\n" in generated_workload("gen:seq1-000001", "ext4").script("/mnt")
    user = Script(text="echo 'ack 1' >&4\n", check="exit 0\n").script("/mnt", relay="/tmp/relay")
    assert "\nexec 4>/tmp/relay\n" in user and "4<>" not in user
