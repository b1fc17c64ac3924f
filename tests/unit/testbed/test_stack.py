"""--stack: layers parsed as table rows, refused before any guest boots (exit 2, one line),
and the checker assembling a state's stack before its recovery mount. No VM."""

from pathlib import Path

import pytest

from tests.cli_run import run_cli
from plugpull.check.checker import Checker
from plugpull.check.verdict import Verdict, classify
from plugpull.crash.spec import CrashSpec
from plugpull.errors import UsageError
from plugpull.guest.contract.channel import GuestResult, quote_command
from plugpull.powerloss.crashstate import CrashState
from plugpull.testbed.fs import filesystem
from plugpull.testbed.stack import Stack, top_of
from plugpull.testbed.workloads import workload


@pytest.mark.parametrize("text, layers, disks", [
    ("lvm", ("lvm",), 1), ("lvm,dm-crypt", ("lvm", "dm-crypt"), 1), ("md-raid1", ("md-raid1",), 2),
    ("md-raid1+lvm+dm-crypt", ("md-raid1", "lvm", "dm-crypt"), 2), ("md-raid5-ppl", ("md-raid5-ppl",), 3),
    ("md-raid5-journal,lvm", ("md-raid5-journal", "lvm"), 4),
])
def test_a_stack_is_its_layers_from_the_disks_up(text, layers, disks):
    stack = Stack.parse(text)
    assert stack.layers == layers and stack.disks == disks
    assert stack.command("open", ["sdb", "sdc"]) == f"pp-stack open {','.join(layers)} /dev/sdb /dev/sdc"


@pytest.mark.parametrize("text, message", [
    ("zfs", "unknown layer 'zfs'"), ("lvm,lvm", "lvm is given twice"),
    ("lvm,md-raid1", "md-raid1 sits on the disks"), ("lvm,,dm-crypt", "unknown layer ''"),
])
def test_bad_stacks_are_refused_by_name(text, message):
    with pytest.raises(UsageError, match=message):
        Stack.parse(text)


def test_no_stack_is_none_and_extlog_takes_none():
    assert Stack.parse("") is None and CrashSpec().resolve().stack is None
    with pytest.raises(UsageError, match="extlog"):
        CrashSpec(mode="extlog", stack="lvm").resolve()
    assert CrashSpec(stack="md-raid1").resolve().recording_bed.stack == Stack(("md-raid1",))


@pytest.mark.parametrize("argv", [["crash", "--stack", "zfs"], ["crash", "--stack", "dm-crypt,md-raid1"],
                                  ["crash", "--mode", "extlog", "--stack", "lvm"]])
def test_cli_refuses_a_bad_stack_with_exit_2_before_any_guest(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, said = run_cli(argv, capsys)
    assert rc == 2
    err = said.strip().splitlines()
    assert err and "stack" in err[-1]
    assert not any(tmp_path.iterdir()), "nothing created"


def test_the_top_device_is_read_from_pp_stack_and_its_absence_is_an_error():
    assert top_of("noise\ntop=dm-1\n") == "dm-1"
    with pytest.raises(ValueError):
        top_of("mdadm: started\n")


class StubGuest:
    """Answers pp-stack as told, pp-check with a clean report; keeps the commands it ran."""

    def __init__(self, opened: GuestResult, close_rc: int = 0):
        self.opened, self.close_rc, self.commands = opened, close_rc, []

    def run(self, command, *args, timeout=None):
        text = quote_command(command, *args)
        self.commands.append(text)
        if text.startswith(("pp-stack open", "pp-stack force-open")):
            return self.opened
        if text.startswith("pp-stack close"):
            return GuestResult(text, self.close_rc, b"", b"")
        return GuestResult(text, 0, b"mount_rc=0\ncollect_rc=skipped\numount_rc=0\nfsck_rc=0\n", b"")


def checker() -> Checker:
    return Checker(rig=None, fs=filesystem("xfs"), stack=Stack.parse("md-raid1,lvm"))


STATE = CrashState((Path("s.img"), Path("s2.img")))


def test_a_stack_that_does_not_assemble_is_unmountable_with_its_reason():
    guest = StubGuest(GuestResult("pp-stack open", 1, b"", b"pp-stack: mdadm --assemble: no superblock\n"))
    obs = checker().check_state(guest, ["sdb", "sdc"], STATE, "none")
    verdict = classify(filesystem("xfs"), obs, workload("fsync-files"), [])
    assert verdict.verdict is Verdict.UNMOUNTABLE
    assert "the stack did not assemble: pp-stack: mdadm --assemble: no superblock" in verdict.reason
    assert guest.commands[0] == "pp-stack open md-raid1,lvm /dev/sdb /dev/sdc"
    assert any(c.startswith("pp-stack close") for c in guest.commands), "what did come up is taken down"
    assert not any(c.startswith("pp-check") for c in guest.commands)


def test_a_pp_stack_that_names_no_top_device_is_unmountable_too():
    obs = checker().check_state(StubGuest(GuestResult("pp-stack open", 0, b"", b"")), ["sdb", "sdc"], STATE, "none")
    assert obs.mount_rc != 0 and "no top device" in obs.mount_error


def test_an_assembled_stack_is_checked_on_its_top_and_taken_down_after():
    guest = StubGuest(GuestResult("pp-stack open", 0, b"top=dm-1\n", b""))
    obs = checker().check_state(guest, ["sdb", "sdc"], STATE, "none")
    [check] = [c for c in guest.commands if c.startswith("pp-check")]
    assert check.startswith("pp-check xfs /dev/dm-1 pp none ''") and obs.mount_rc == 0 and obs.umount_rc == 0
    assert guest.commands[-1] == "pp-stack close md-raid1,lvm"


def test_a_stack_that_does_not_come_down_makes_the_guest_untrusted():
    guest = StubGuest(GuestResult("pp-stack open", 0, b"top=md0\n", b""), close_rc=1)
    assert checker().check_state(guest, ["sdb", "sdc"], STATE, "none").umount_rc == 1
