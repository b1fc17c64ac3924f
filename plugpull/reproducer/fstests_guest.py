"""Real fstests `./check` in a plugpull guest, in the root fstests_root.py builds.

The guest boots with four disks: the root image (a snapshot: the cached image is never
written), then TEST_DEV, SCRATCH_DEV and LOGWRITES_DEV, empty. The root is mounted, the
guest's /dev, /proc, /sys and its kernel's modules are bound into it, and each `check(test,
fstyp)` writes fstests' local.config for that filesystem and runs `./check TEST` chrooted.
Its result is read from what fstests leaves: a `.notrun` file (a `_require_*` guard said no,
with its reason), `Failures:` in check's output with the `.out.bad` beside the golden output
and check's own findings (a filesystem check, dmesg, the test's exit status), or `Passed all 1
tests`. Anything else is a harness failure (InfraError), never a verdict."""

import difflib
import re
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import InfraError
from plugpull.guest.contract.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import create_disk
from plugpull.paths import make_tempdir
from plugpull.reproducer.fstests_root import FSTESTS_IN_ROOT, holding

ROOT = "/fsroot"
DISK_MIB = 1024  # each of TEST_DEV, SCRATCH_DEV, LOGWRITES_DEV (sparse)
CHECK_TIMEOUT = 600.0
MEMORY_MIB = 1536
MKFS_FORCE = {"ext4": "-F", "xfs": "-f", "btrfs": "-f", "f2fs": "-f"}
# Loaded by the guest's own modprobe: the root's (kmod) cannot read the guest's module tree's
# index, and fstests' `_require_dm_target` asks `dmsetup targets` after its modprobe.
# What `check` prints of a failure it found itself, after the test's output matched or beside it.
CHECK_FINDING = re.compile(r"_check_\w+: [^\n]*|\[failed, exit status \d+\]|\[dumped core\]")
# The lines of a `.dmesg` fstests saved that say what was found.
DMESG_FINDING = re.compile(r"WARNING:|BUG:|BUG |Oops|corrupt|critical|error", re.IGNORECASE)
MODULES = "dm_flakey dm_delay dm_log_writes btrfs f2fs xfs ext4"
MOUNT_ROOT = f"""set -e
R={ROOT}
mkdir -p $R
mount -t ext4 "$(readlink -f /dev/pp-disk0)" $R
mount --bind /dev $R/dev
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mkdir -p $R/lib/modules/$(uname -r) $R/mnt/test $R/mnt/scratch
mount --bind /lib/modules/$(uname -r) $R/lib/modules/$(uname -r)
for m in {MODULES}; do modprobe $m 2>/dev/null || true; done
for n in 1 2 3; do readlink -f /dev/pp-disk$n; done
"""


@dataclass(frozen=True)
class CheckResult:
    test: str  # generic/900
    fstyp: str
    status: str  # pass, fail or notrun
    reason: str  # why it was not run, or the diff of its output against the golden one
    output: str  # check's own output
    seconds: float

    @property
    def diff_lines(self) -> list[str]:
        return self.reason.splitlines() if self.status == "fail" else []


def local_config(fstyp: str, devices: list[str]) -> str:
    """fstests' local.config. No udev runs in the guest: DM_DISABLE_UDEV has libdevmapper
    make the /dev/mapper nodes itself, where it would wait for udev to make them."""
    test_dev, scratch_dev, logwrites_dev = devices
    return "".join(f"export {k}={v}\n" for k, v in (
        ("FSTYP", fstyp), ("TEST_DEV", test_dev), ("TEST_DIR", "/mnt/test"),
        ("SCRATCH_DEV", scratch_dev), ("SCRATCH_MNT", "/mnt/scratch"),
        ("LOGWRITES_DEV", logwrites_dev), ("DM_DISABLE_UDEV", "1")))


def check_findings(output: str, dmesg: str | None) -> list[str]:
    """What `check` itself found wrong (a filesystem check, dmesg, the exit status, a core),
    with the first lines of the saved dmesg that say what it was."""
    found = CHECK_FINDING.findall(output)
    if dmesg:
        found += [line.strip() for line in dmesg.splitlines() if DMESG_FINDING.search(line)][:3]
    return found


def result_of(test: str, fstyp: str, output: str, files: dict[str, str], seconds: float) -> CheckResult:
    """The result fstests left: `files` holds the test's `.notrun`, `.out.bad`, `.dmesg` and
    golden `.out` as far as they exist. A failure's reason is the diff against the golden
    output, then check's own findings; a test whose output matched fails by those alone (a
    filesystem left inconsistent, a warning in dmesg)."""
    if "notrun" in files:
        return CheckResult(test, fstyp, "notrun", files["notrun"].strip() or "(no reason)", output, seconds)
    if f"Failures: {test}" in output:
        found = check_findings(output, files.get("dmesg"))
        if "bad" not in files and not found:
            raise InfraError(f"{test} on {fstyp}: check says it failed, left no .out.bad and "
                             f"named no finding:\n{output[-2000:]}")
        diff = difflib.unified_diff(files.get("out", "").splitlines(), files.get("bad", "").splitlines(),
                                    f"{test}.out", f"{test}.out.bad", lineterm="") if "bad" in files else []
        return CheckResult(test, fstyp, "fail", "\n".join([*diff, *found]), output, seconds)
    if "Passed all 1 tests" in output:
        return CheckResult(test, fstyp, "pass", "", output, seconds)
    raise InfraError(f"{test} on {fstyp}: check gave no result:\n{output[-2000:]}")


class FstestsGuest:
    """A booted guest with the fstests root mounted; `check()` runs one test."""

    def __init__(self, machine, devices: list[str]):
        self.machine = machine
        self.devices = devices
        self.test_fs = ""

    def _make_test_fs(self, fstyp: str) -> None:
        """TEST_DEV made anew on a change of FSTYP: `check` mounts it before it would remake it."""
        if fstyp == self.test_fs:
            return
        got = self.machine.run("chroot %s mkfs -t %s %s %s 2>&1", ROOT, fstyp, MKFS_FORCE[fstyp], self.devices[0],
                               timeout=300)
        if got.rc != 0:
            raise InfraError(f"mkfs -t {fstyp} of TEST_DEV failed (exit {got.rc}): {got.text[-500:]}")
        self.test_fs = fstyp

    def _read(self, path: str) -> str | None:
        got = self.machine.run("cat %s 2>/dev/null", f"{ROOT}{path}", timeout=60)
        return got.text if got.rc == 0 else None

    def check(self, test: str, fstyp: str, timeout: float = CHECK_TIMEOUT) -> CheckResult:
        self._make_test_fs(fstyp)
        self.machine.write_file(f"{ROOT}{FSTESTS_IN_ROOT}/local.config", local_config(fstyp, self.devices))
        results = f"{FSTESTS_IN_ROOT}/results/{test}"
        self.machine.run("rm -f %s.*", f"{ROOT}{results}", timeout=60)
        start = time.monotonic()
        got = self.machine.run("chroot %s /bin/bash -c %s 2>&1", ROOT,
                               f"cd {FSTESTS_IN_ROOT} && ./check {test}", timeout=timeout)
        seconds = time.monotonic() - start
        files = {}
        for kind, path in (("notrun", f"{results}.notrun"), ("bad", f"{results}.out.bad"),
                           ("dmesg", f"{results}.dmesg"),
                           ("out", f"{FSTESTS_IN_ROOT}/tests/{test}.out")):
            if (text := self._read(path)) is not None:
                files[kind] = text
        return result_of(test, fstyp, got.text, files, seconds)


@contextmanager
def fstests_guest(rig, root_image: Path):
    """A guest of `rig` with `root_image` mounted as the fstests root, and its three disks."""
    work = make_tempdir("fstests-guest")
    try:
        disks = (DiskSpec(root_image, Bus.AHCI, True, snapshot=True),
                 *(DiskSpec(create_disk(work / f"{name}.img", DISK_MIB), Bus.AHCI, True)
                   for name in ("test", "scratch", "logwrites")))
        spec = MachineSpec(disks=disks, accel=rig.accel, memory_mib=MEMORY_MIB)
        with holding(root_image), rig.machine(spec, console_log=work / "console.log", name="fstests") as m:
            got = m.run(MOUNT_ROOT, timeout=120)
            devices = got.text.split()
            if got.rc != 0 or len(devices) != 3:
                raise InfraError(f"mounting the fstests root failed (exit {got.rc}): {got.text}{got.stderr!r}")
            yield FstestsGuest(m, devices)
    finally:
        shutil.rmtree(work, ignore_errors=True)
