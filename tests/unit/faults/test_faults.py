"""Fault specs, dm tables, the ack-port record of errors and the fault verdicts: no VM."""

import pytest

from tests.cli_run import run_cli
from plugpull.check.verdict import Observation, Verdict
from plugpull.errors import UsageError
from plugpull.faults.faultspec import FaultSpecError, parse_fault
from plugpull.faults.table import fault_table, linear, swap
from plugpull.faults.told import Told
from plugpull.faults.verdict import gave_up, judge
from plugpull.testbed.fs import filesystem
from plugpull.testbed.workloads import workload

DISK = "/dev/sda"


@pytest.mark.parametrize("text, kind, trigger, window", [
    ("error-writes", "error-writes", None, None),
    ("drop-writes@acks:5", "drop-writes", "acks:5", None),
    ("error-writes@acks:5+10", "error-writes", "acks:5", 10.0),
    ("corrupt-reads@writes:200+0.5", "corrupt-reads", "writes:200", 0.5),
    ("flaky:2:1@time:3", "flaky", "time:3", None),
    ("drop-writes+4", "drop-writes", None, 4.0),
])
def test_a_good_spec_parses_and_prints_back(text, kind, trigger, window):
    spec = parse_fault(text)
    assert (spec.kind, str(spec.trigger) if spec.trigger else None, spec.window) == (kind, trigger, window)
    assert parse_fault(str(spec)) == spec


@pytest.mark.parametrize("text, field", [
    ("error-write", "kind"),
    ("", "kind"),
    ("error-writes:3", "kind"),
    ("flaky:2", "kind"),
    ("flaky:x:1", "up"),
    ("flaky:2:0", "down"),
    ("error-writes@acks:0", "trigger"),
    ("error-writes@bytes:4", "trigger"),
    ("error-writes@end", "trigger"),
    ("error-writes@acks:2+0", "window"),
    ("error-writes@acks:2+soon", "window"),
    ("error-writes@acks:2+inf", "window"),
    ("error-writes,seed=3", "seed"),
    ("corrupt-writes,seed=-1", "seed"),
    ("corrupt-writes,size=3", "option"),
])
def test_a_bad_spec_names_its_field_in_one_line(text, field):
    with pytest.raises(FaultSpecError) as e:
        parse_fault(text)
    assert e.value.field == field
    assert isinstance(e.value, UsageError)
    assert f": {field}: " in str(e.value) and "\n" not in str(e.value)


def test_the_corrupted_byte_follows_the_seed():
    a, b = parse_fault("corrupt-writes,seed=1"), parse_fault("corrupt-writes,seed=2")
    assert a.corrupt_byte == parse_fault("corrupt-writes,seed=1").corrupt_byte
    assert a.corrupt_byte != b.corrupt_byte
    nth, value = a.corrupt_byte
    assert 1 <= nth <= 512 and 0 <= value <= 255


def test_tables_name_the_flakey_features():
    assert linear(100, DISK) == "0 100 linear /dev/sda 0"
    assert fault_table(parse_fault("error-writes"), 100, DISK) == "0 100 flakey /dev/sda 0 0 1 1 error_writes"
    assert fault_table(parse_fault("drop-writes"), 100, DISK).endswith(" 1 drop_writes")
    assert fault_table(parse_fault("flaky:3:2"), 100, DISK) == "0 100 flakey /dev/sda 0 3 2"
    nth, value = parse_fault("corrupt-reads,seed=4").corrupt_byte
    assert fault_table(parse_fault("corrupt-reads,seed=4"), 100, DISK).endswith(
        f" 5 corrupt_bio_byte {nth} r {value} 0")
    assert " w " in fault_table(parse_fault("corrupt-writes"), 100, DISK)


def test_a_swap_suspends_without_freezing():
    assert swap("T").startswith("dmsetup suspend --nolockfs pp-fault && dmsetup load pp-fault --table 'T'")


def test_told_reads_acks_errors_and_wrong_reads_and_ignores_the_rest():
    told = Told()
    for line in ("ack 1", "error 2 fsync 5", "error 2 close 5", "wrong 2 data 0", "commit 4", "error x", "done 0"):
        told.add(line)
    assert told.acks == [1] and told.exit_code == 0 and told.wrong == ["2 data 0"]
    assert told.errno_counts("fsync") == {"EIO": 1} and told.errno_counts("write") == {}
    assert told.to_json()["errors"] == [[2, "fsync", "EIO"], [2, "close", "EIO"]]


def test_the_shutdown_is_told_apart_from_read_only():
    assert gave_up("XFS (dm-0): Filesystem has been shut down due to log error") == "shutdown"
    assert gave_up("EXT4-fs (dm-0): Remounting filesystem read-only") == "read-only"
    assert gave_up("", "ro,relatime") == "read-only"
    assert gave_up("nothing", "rw,relatime") == ""


W = workload("fsync-retry", size_kib=4)
EXT4 = filesystem("ext4")


def _obs(data: bytes | None, **kw) -> Observation:
    return Observation(0, 0, 0, files={} if data is None else {W.path: data}, **kw)


def _told(*lines: str) -> Told:
    told = Told()
    for line in lines:
        told.add(line)
    return told


@pytest.mark.parametrize("data, lines, shutdown, verdict", [
    (W.content(2), ("ack 1", "ack 2"), "", Verdict.CLEAN),
    (W.content(1), ("ack 1", "error 2 fsync 5"), "", Verdict.ERROR_REPORTED),
    (W.content(1), ("ack 1", "error 2 fsync 5", "ack 3"), "", Verdict.SILENT_LOSS),
    (W.content(1), ("ack 1", "ack 2"), "", Verdict.SILENT_LOSS),
    (None, ("ack 1",), "", Verdict.SILENT_LOSS),
    (W.content(2), ("ack 1", "ack 2", "wrong 2 data 0"), "", Verdict.SILENT_LOSS),
    (W.content(1), ("ack 1", "error 2 fsync 5"), "read-only", Verdict.FS_SHUTDOWN),
])
def test_fault_verdicts(data, lines, shutdown, verdict):
    assert judge(EXT4, _obs(data), _told(*lines), W, shutdown).verdict == verdict


def test_the_worst_finding_wins_over_a_reported_error():
    told = _told("ack 1", "error 2 fsync 5")
    assert judge(EXT4, Observation(32, 0, mount_error="bad"), told, W, "").verdict == Verdict.UNMOUNTABLE
    assert judge(EXT4, _obs(W.content(1)), told, W, "", umount_rc=1).verdict == Verdict.FS_CORRUPT
    assert judge(EXT4, Observation(0, 4, 0, files={}), told, W, "").verdict == Verdict.FS_CORRUPT
    assert judge(EXT4, _obs(None, kernel_crash="Oops"), told, W, "").verdict == Verdict.KERNEL_CRASH
    assert judge(EXT4, Observation(0, 99, 0), told, W, "").verdict == Verdict.INFRA_ERROR


def test_the_fsync_retry_script_reports_and_retries():
    script = W.script("/mnt/test")
    assert "pp-io fsync 2 data" in script and "pp-io fsync 3 data && echo 'ack 3' >&4" in script
    assert script.index("drop_caches") < script.index("pp-io read 2") < script.index("pp-io dread 4")
    assert script.index("/tmp/pp-fault-on") < script.index("pp-io write 2") < script.index("/tmp/pp-fault-off")


def test_bad_input_exits_2_before_any_guest(capsys):
    for argv in (["--fault", "error-writes@acks:x"], ["--fault", "drop-writes", "--fs", "zfs"],
                 ["--fault", "drop-writes", "--param", "size=1"], ["--fault", "drop-writes", "--runs", "0"]):
        code, _, err = run_cli(["faults", *argv], capsys)  # argparse refuses --runs 0, in one line as well
        assert code == 2
        assert err.count("\n") == 1 and err.startswith("plugpull")


RUNS = [
    {"fs": "ext4", "fault": "error-writes@acks:1+3", "workload": "fsync-retry", "verdict": "silent-loss",
     "version_after": 1, "told": {"acks": [1, 3], "errors": [[2, "fsync", "EIO"], [3, "close", "EIO"]]},
     "corruption": "returned wrong data"},
    {"fs": "ext4", "fault": "error-writes@acks:1+3", "workload": "fsync-retry", "verdict": "error-reported",
     "version_after": 1, "told": {"acks": [1], "errors": [[2, "fsync", "EIO"], [3, "fsync", "EIO"]]}},
    {"fs": "xfs", "fault": "drop-writes", "workload": "fsync-retry", "verdict": "infra-error",
     "reason": "QEMU died", "told": {"errors": []}},
]


def test_the_faults_table_counts_verdicts_and_errnos():
    from plugpull.cli.faults import table

    header, rows = table(RUNS)
    ext4 = dict(zip(header, rows[0]))
    assert (ext4["runs"], ext4["silent-loss"], ext4["error-reported"], ext4["clean"]) == (2, 1, 1, 0)
    assert (ext4["fsync errno"], ext4["close errno"], ext4["write errno"]) == ("EIO:3", "EIO:1", "-")
    assert ext4["corruption"] == "returned-wrong-data:1"
    assert dict(zip(header, rows[1]))["corruption"] == "-"
    assert dict(zip(header, rows[1]))["infra-error"] == 1


def test_the_retry_table_says_what_each_run_saw():
    from plugpull.cli.faults import retry_table

    header, rows = retry_table(RUNS)
    assert len(rows) == 2  # the infra-error run has nothing to say
    assert rows[0][2:5] == ("EIO", "yes", "no") and rows[1][2:5] == ("EIO", "no", "no")


def test_acks_owed_at_a_moment_are_those_that_arrived_before_it():
    told = Told()
    for text, arrived in (("ack 1", 1.0), ("error 2 fsync 5", 1.5), ("ack 2", 2.0), ("ack 3", 3.0), ("ack 4", None)):
        told.add(text, arrived)
    assert told.acks_before(2.5) == [1, 2] and told.acks_before(1.0) == [] and told.acks_before(9.0) == [1, 2, 3]


def test_a_silent_loss_says_when_the_file_could_not_be_read():
    told = _told("ack 1", "ack 2")
    unreadable = judge(EXT4, _obs(None, collect_rc="1"), told, W, "")
    assert unreadable.verdict == Verdict.SILENT_LOSS and "unreadable" in unreadable.reason
    assert "unreadable" not in judge(EXT4, _obs(W.content(1), collect_rc="0"), told, W, "").reason
