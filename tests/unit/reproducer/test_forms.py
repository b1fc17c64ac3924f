"""The reproducer's forms, without a guest: the form a finding calls for, read from its write
log (a write after the point's last flush or after the call returned: delay; no flush after
the point's writes: flushes; every write flushed, or a prefix state: flakey), an XFS state that
does not mount (log-hole); each form's scripts parse; the crafted XFS record the sh script
writes is the VM test's, at the place xfs_db gives; the flush count is read from the whole
disk's stat."""

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from plugpull.errors import UsageError
from plugpull.minimise.explain import xfs_layout, xfs_log_bytes
from plugpull.minimise.xfslog import XLOG_MAGIC
from plugpull.powerloss.writelog import LogWriter
from plugpull.reproducer import case_for
from plugpull.reproducer.delay import fstests_test as delay_test, script as delay_script
from plugpull.reproducer.flakey import fstests_test, script
from plugpull.reproducer.flushes import FLUSH_COUNT, fstests_test as flushes_test, script as flushes_script
from plugpull.reproducer.forms import Window, case_choice, state_choice, window_choice
from plugpull.reproducer.loghole import FAR, crafting, fstests_test as loghole_test, record_bytes, \
    script as loghole_script
from tests.unit.reproducer.test_reproducer import parses
from tests.unit.reproducer.test_reproducer_cli import run

ROOT = Path(__file__).resolve().parents[3]
W, F = (True, False), (False, True)  # a write, a flush, as a window holds them


@pytest.mark.parametrize("before, after, form", [
    ((W, F, W), (), "delay"),  # f2fs's first fsync: the node block logged after the flush
    ((W, F), (W,), "delay"),  # ... or after the call returned
    ((W,), (), "flushes"),  # f2fs strict: the rewritten block, no flush
    ((W, W), (W,), "flushes"),
    ((W, F, W, F), (), "flakey"),  # every write covered
    ((W, F), (), "flakey"),
])
def test_the_window_says_the_form(before, after, form):
    assert window_choice(Window(before, after), 1).form == form


def saved_state(where: Path, entries: list[str], acks: list[int], model: str = "drop-unflushed",
                verdict: str = "data-loss", fs: str = "f2fs", required: int = 2) -> Path:
    """A saved state of gen:seq1-000372 whose record's log holds `entries` ("w" a write, "f" a
    flush) and acks stamped at the positions `acks`."""
    record = where / "record"
    record.mkdir(parents=True)
    with LogWriter(where / "log") as log:
        for e in entries:
            log.write(8, b"x" * 512) if e == "w" else log.flush()
    with open(where / "log", "rb") as src, gzip.open(record / "write.log.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    (record / "record.json").write_text(json.dumps({"acks": [{"ident": i, "position": p} for i, p in
                                                             enumerate(acks)]}))
    state = where / "state"
    state.mkdir()
    (state / "state.json").write_text(json.dumps({"fs": fs, "workload": "gen:seq1-000372", "acks_required": required,
                                                  "model": model, "verdict": verdict, "record": "../record"}))
    return state


@pytest.mark.parametrize("entries, form", [("wwfwf" "wfw", "delay"), ("wwfwf" "w", "flushes"),
                                           ("wwfwf" "wfwf", "flakey")])
def test_a_saved_states_write_log_says_the_form(entries, form, tmp_path):
    state = saved_state(tmp_path, list(entries), [5, len(entries)])
    assert state_choice(state, 1).form == form


def test_a_prefix_state_or_an_unmountable_xfs_state_needs_no_log(tmp_path):
    assert state_choice(saved_state(tmp_path / "a", list("wf"), [2], model="prefix"), 1).form == "flakey"
    assert state_choice(saved_state(tmp_path / "b", list("wf"), [2], verdict="unmountable", fs="xfs"), 1).form == \
        "log-hole"


def test_the_case_of_the_xfs_log_hole_is_one(tmp_path):
    hole = ROOT / "suites/cases/finding-xfs-log-hole.toml"
    assert case_choice(hole).form == "log-hole"
    with pytest.raises(UsageError, match="not a case file that replays"):
        case_choice(ROOT / "suites/cases/finding-btrfs-rename-both-names.toml")
    (tmp_path / "cases").mkdir()
    shutil.copytree(ROOT / "suites/records", tmp_path / "records")
    clean = tmp_path / "cases" / "clean.toml"
    clean.write_text(hole.read_text().replace('verdicts = {barrier = "unmountable"}', 'verdicts = {barrier = "clean"}'))
    with pytest.raises(UsageError, match="no reproducer form"):
        case_choice(clean)


def test_the_command_says_the_form_it_chose(tmp_path, capsys):
    state = saved_state(tmp_path, list("wwfwfwfw"), [5, 8])
    code, out, err = run([str(state)], capsys)
    assert code == 0 and err.startswith("form: delay (point 1's last flush was issued with 1 of its writes")
    assert out == delay_script(case_for("gen:seq1-000372", "f2fs"))
    code, out, err = run([str(state), "--form", "flakey"], capsys)
    assert code == 0 and "form: flakey (asked for (--form))" in err and out == script(case_for("gen:seq1-000372",
                                                                                                 "f2fs"))


@pytest.mark.parametrize("argv", [["gen:seq1-000051", "--fs", "f2fs", "--form", "flushes", "--point", "0"],
                                  ["gen:seq1-000051", "--fs", "btrfs", "--form", "log-hole"],
                                  [str(ROOT / "suites/cases/finding-btrfs-rename-both-names.toml")],
                                  [str(ROOT / "suites/cases/finding-xfs-log-hole.toml"), "--form", "delay"],
                                  [str(ROOT / "suites/cases/finding-xfs-log-hole.toml"), "--fs", "ext4"],
                                  [str(ROOT / "suites/cases/finding-xfs-log-hole.toml"), "--point", "1"]])
def test_a_form_the_finding_cannot_take_exits_2(argv, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err


def test_every_form_parses(tmp_path):
    shells = [s for s in ("dash", "busybox sh") if shutil.which(s.split()[0])]
    delay, strict = case_for("gen:seq1-000372", "f2fs"), case_for("gen:seq1-000051", "f2fs-strict")
    for text in (delay_script(delay), flushes_script(strict), loghole_script()):
        assert shells and all(parses(s, text, tmp_path) for s in shells)
    for text in (delay_test(delay, "901"), flushes_test(strict, "902"), loghole_test("903")):
        assert parses("bash", text, tmp_path)
    assert not parses("dash", loghole_script() + "fi\n", tmp_path)


def test_the_crafted_record_lands_where_the_vm_test_puts_it(tmp_path):
    if not shutil.which("mkfs.xfs") or not shutil.which("dash"):
        pytest.skip("needs mkfs.xfs, xfs_db and dash on the host")
    image = tmp_path / "xfs.img"
    with open(image, "wb") as f:
        f.truncate(1 << 30)
    body = f'die() {{ echo "$*"; exit 3; }}\ndev={image}\n{crafting()}\ncrafted {FAR}\n'
    done = subprocess.run(["dash", "-c", body], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    start, _ = xfs_log_bytes(xfs_layout(image))
    with open(image, "rb") as f:
        f.seek(start + FAR * 512 - 512)
        assert f.read(512) == bytes(512)  # nothing before it: the hole
        assert f.read(len(record_bytes(FAR))) == record_bytes(FAR)
    assert record_bytes(FAR) != record_bytes(FAR + 1)
    assert record_bytes(FAR)[:4] == XLOG_MAGIC.to_bytes(4, "big")  # the magic minimise reads records by


@pytest.mark.parametrize("fields, count", [(17, "9"), (11, "")])
def test_the_flush_count_is_the_16th_field(fields, count, tmp_path):
    (tmp_path / "stat").write_text(" ".join(str(n) for n in range(-6, fields - 6)) + "\n")
    done = subprocess.run(["dash", "-c", f'{FLUSH_COUNT}\nsys={tmp_path}\nflushes'], capture_output=True, text=True)
    assert done.stdout.strip() == count and done.returncode == (0 if count else 1)


def test_a_partitions_flushes_are_read_on_its_disk(tmp_path):
    """/sys/class/block/NAME of a partition is a directory inside its disk's."""
    disk = next((p for p in Path("/sys/class/block").iterdir() if any((p / d / "partition").exists()
                                                                   for d in os.listdir(p))), None)
    if disk is None:
        pytest.skip("no partitioned disk on this host")
    part = next(d for d in os.listdir(disk) if (disk / d / "partition").exists())
    done = subprocess.run(["dash", "-c", f"{FLUSH_COUNT}\ndisk_dir /dev/{part}; disk_dir /dev/{disk.name}"],
                          capture_output=True, text=True)
    assert done.stdout.split() == [str(disk.resolve())] * 2


@pytest.mark.parametrize(("returned", "refused"), [("0.00", True), ("now", False)])
def test_a_drop_later_than_the_delay_is_no_verdict(returned, refused):
    """The delay form's drop came after the writes held were let through: no PASS can be read."""
    from plugpull.reproducer.shell import late_drop
    if returned == "now":
        returned = Path("/proc/uptime").read_text().split()[0]
    lines = [f"returned={returned}", *late_drop('echo "late $late"; exit 3'), "echo in-time"]
    done = subprocess.run(["sh", "-c", "\n".join(lines)], capture_output=True, text=True)
    assert (done.returncode, done.stdout.startswith("late ")) == ((3, True) if refused else (0, False))
    if not refused:
        assert done.stdout == "in-time\n"


def test_the_delay_forms_check_the_drop_came_in_time():
    """Timed from the call's return to the moment writes stop reaching the disk: the flakey
    device suspended (sh), or the drop table in place (fstests), before the verdict."""
    case = case_for("gen:seq1-000372", "f2fs", 1)
    sh_marks = ("read -r returned", 'dmsetup suspend --nolockfs "$name" ||', 'if [ "$late" -ge 2000 ]',
                'dmsetup load "$name" --table "$drop"', "umount")
    fstests_marks = ("read -r returned", "_load_flakey_table $FLAKEY_DROP_WRITES", 'if [ "$late" -ge 2000 ]',
                     "_unmount_delay")
    for text, marks in ((delay_script(case), sh_marks), (delay_test(case, "900"), fstests_marks)):
        places = [text.index(m, text.index("read -r returned")) for m in marks]
        assert places == sorted(places)
