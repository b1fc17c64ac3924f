"""f2fs's first fsync after a checkpoint, recorded by the guest kernel's own dm-log-writes.

    .venv/bin/python bench/f2fs_first_fsync.py [--variant first|second|strict|overwrite|strict-overwrite]
        [--runs 20] [--kernel debian:7.3]

Each run, in one guest on a virtio-scsi controller (whose flushes are queued): a fresh 64 MiB
disk under dm-log-writes (its log on a second disk), mkfs.f2fs, then

    mkdir B; B/foo 16 KiB and B/zzz 4 KiB written; sync          # a checkpoint
    (second only: B/zzz rewritten, fsync B/zzz)                  # another node written first
    O_DIRECT write of 4 KiB at 16384 in B/foo; fsync B/foo       # the size becomes 20480
    dmsetup message ... mark fsynced                             # fsync has returned

dm-log-writes logs a flush after exactly the writes that had completed when the flush was
submitted; a write still in flight then is logged after it, and a completed write no flush
covered yet waits for the next one. So the writes logged before the mark are the least the
device must have kept when fsync returned. The host applies them to a zeroed image (plugpull's
write-log reader reads dm-log-writes' format), the guest mounts that image (f2fs's roll-forward
recovery) and prints B/foo's size and first byte: 20480 is what the fsync owed, 16384 the
setup's. `strict` mounts with fsync_mode=strict. `overwrite` rewrites B/foo's first 4 KiB with
0x61 and fdatasyncs instead of the O_DIRECT extension: its first byte 61 is what fdatasync
owed, 43 the setup's; `strict-overwrite` does so with fsync_mode=strict. docs/findings/f2fs-first-fsync-report.md says what this shows.

Exits 0 when every run gave a size, 2 on bad input, 3 when the guest or a run failed.
"""

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from plugpull.errors import InfraError, PlugpullError, UsageError
from plugpull.guest.contract.backend import await_disk_command
from plugpull.guest.contract.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import create_disk
from plugpull.guest.rig import prepare_rig
from plugpull.kernels import kernel_option
from plugpull.powerloss import writelog

VARIANTS = ("first", "second", "strict", "overwrite", "strict-overwrite")
DATA_MIB, LOG_MIB = 64, 256
MARK = b"fsynced"
SETUP = ('mkdir B && xfs_io -f -c "pwrite -q -S 0x43 0 16384" B/foo '
         '&& xfs_io -f -c "pwrite -q -S 0x44 0 4096" B/zzz && sync')
OTHER_FSYNC = 'xfs_io -c "pwrite -q -S 0x45 0 4096" B/zzz && sync B/zzz'
EXTEND = 'xfs_io -d -c "pwrite -q -S 0x61 16384 4096" B/foo && sync B/foo'
OVERWRITE = 'xfs_io -c "pwrite -q -S 0x61 0 4096" -c fdatasync B/foo'


def guest_steps(data: str, log: str, variant: str) -> str:
    """The guest's command for one run: each step must succeed."""
    options = "-o fsync_mode=strict " if variant.startswith("strict") else ""
    steps = [
        f'dmsetup create lw --table "0 $(blockdev --getsz {data}) log-writes {data} {log}"',
        "lw=/dev/$(dmsetup info -c --noheadings -o blkdevname lw)",
        "mkfs.f2fs -q -f $lw",
        f"mkdir -p /mnt/t && mount -t f2fs {options}$lw /mnt/t && cd /mnt/t",
        SETUP, *([OTHER_FSYNC] if variant == "second" else []),
        OVERWRITE if variant.endswith("overwrite") else EXTEND,
        f"dmsetup message lw 0 mark {MARK.decode()}",
        "cd / && umount /mnt/t && dmsetup remove lw",
    ]
    return " && ".join(steps) + " 2>&1"


def state_at_mark(log: Path, image: Path) -> int:
    """Write into `image` the writes logged before the mark; how many were logged after it."""
    entries = list(writelog.iter_entries(log))
    with open(log, "rb") as f:
        cut = next((e.index for e in entries if e.is_mark and writelog.read_data(f, e).rstrip(b"\0") == MARK), None)
        if cut is None:
            raise InfraError(f"no mark {MARK.decode()!r} in the dm-log-writes log {log}")
        with open(image, "wb") as out:
            out.truncate(DATA_MIB << 20)
            for e in entries[:cut]:
                if e.is_write:
                    out.seek(e.sector * writelog.SECTOR)
                    out.write(writelog.read_data(f, e))
    return sum(e.is_write for e in entries[cut:])


def file_after_recovery(m, image: Path) -> str:
    """B/foo's size and first byte once the guest mounted `image`."""
    disk = m.attach_disk(DiskSpec(image, Bus.SCSI, True, snapshot=True), wait=False)
    said = m.run(await_disk_command(disk.serial, "dev") + "mkdir -p /mnt/s && mount -t f2fs /dev/$dev /mnt/s "
                 "&& stat -c %s /mnt/s/B/foo && od -An -tx1 -N1 /mnt/s/B/foo; umount /mnt/s").text.split()
    m.detach_disk(disk)
    return f"{said[-2]} bytes, first byte {said[-1]}" if len(said) >= 2 else "not mounted"


def one_run(m, work: Path, variant: str) -> tuple[str, int]:
    """(B/foo in the state at the mark, writes logged after the mark)."""
    data, log = create_disk(work / "data.img", DATA_MIB), create_disk(work / "log.img", LOG_MIB)
    disks = [m.attach_disk(DiskSpec(path, Bus.SCSI, True, host_flush=False)) for path in (data, log)]
    result = m.run(guest_steps(f"/dev/{disks[0].device}", f"/dev/{disks[1].device}", variant), timeout=300)
    for disk in disks:
        m.detach_disk(disk)
    if result.rc != 0:
        raise InfraError(f"a run failed in the guest: {result.text.strip()[-300:]}")
    after = state_at_mark(log, work / "state.img")
    return file_after_recovery(m, work / "state.img"), after


def run(args) -> int:
    rig = prepare_rig(kernel=kernel_option(args.kernel, None))
    seen = Counter()
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp, \
            rig.machine(MachineSpec(scsi_controller=True), name="first-fsync") as m:
        m.run("modprobe dm_log_writes").check()
        for n in range(args.runs):
            found, after = one_run(m, Path(tmp), args.variant)
            seen[found] += 1
            print(f"run {n}: B/foo {found} at the mark; {after} writes logged after it", flush=True)
    print(f"{args.variant}, {rig.image.kernel_release}: " +
          "; ".join(f"{n} of {args.runs} runs {found}" for found, n in sorted(seen.items())))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=VARIANTS, default="first")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--kernel", help="host (the default), debian:VERSION or a kernel file")
    args = ap.parse_args()
    try:
        if args.runs < 1:
            raise UsageError(f"--runs: at least 1, got {args.runs}")
        return run(args)
    except UsageError as e:
        print(f"f2fs_first_fsync: {e}", file=sys.stderr)
        return 2
    except PlugpullError as e:
        print(f"f2fs_first_fsync: harness failure: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
