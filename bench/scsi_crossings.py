"""Flushes the guest issued with writes in flight, per workload of a hunt (virtio-scsi).

    .venv/bin/python bench/scsi_crossings.py --seq 1 --fs f2fs --out NEW_DIR [other hunt options]

Runs `plugpull hunt` with the given options (one kernel; `--out` a directory that does not
exist yet) and QEMU's virtio-scsi trace events on the recording guest (`-trace EVENT -D
FILE`, added to its command line here, the files in OUT.trace/ beside the hunt's OUT; the
checker guests are not traced). The recorder is made to plug in a disk of its own for each
workload (`keep_disk` off: a hunt keeps one disk for many), so each disk the trace shows is one
workload, in the journal's order. Prints each workload that failed
or had a flush issued while one of its writes was in flight (plugpull.powerloss.scsiorder), then
how the two go together. A crossing is not a bug by itself: it matters when the write in
flight is one the flush was there to make durable (docs/findings/f2fs-first-fsync-report.md).

Exits 0 when the table was printed, 2 on bad input, 3 when the hunt failed or the trace does
not match its journal.
"""

import json
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import plugpull.guest.qemu.machine as machine_module
from plugpull.cli import main as plugpull_main
from plugpull.cli.common import print_table
from plugpull.hunt.record import Recorder
from plugpull.powerloss.scsiorder import TRACE_EVENTS, disk_flushes

COLUMNS = ("workload", "operations", "verdict", "flushes", "crossed (flush numbers)")


@contextmanager
def traced_recorder(trace_dir: Path):
    """Every recording guest started inside the block writes its trace to trace_dir/recorder-N.log,
    each workload on a disk plugged in for it alone."""
    plain_argv, plain_started, plain_init = machine_module.qemu_argv, Recorder._started, Recorder.__init__
    boots = []

    def one_disk_each(recorder, *args, **kwargs):
        plain_init(recorder, *args, **{**kwargs, "keep_disk": False})

    def with_trace(*args, **kwargs):
        events = [arg for event in TRACE_EVENTS for arg in ("-trace", event)]
        return plain_argv(*args, **kwargs) + ["-D", str(trace_dir / f"recorder-{len(boots)}.log"), *events]

    def started(recorder):
        if recorder._guest is not None:
            return plain_started(recorder)
        boots.append(None)
        machine_module.qemu_argv = with_trace
        try:
            return plain_started(recorder)
        finally:
            machine_module.qemu_argv = plain_argv

    Recorder._started, Recorder.__init__ = started, one_disk_each
    try:
        yield
    finally:
        Recorder._started, Recorder.__init__ = plain_started, plain_init


def out_option(args: list[str]) -> Path | None:
    for i, arg in enumerate(args):
        if arg == "--out" and i + 1 < len(args):
            return Path(args[i + 1])
        if arg.startswith("--out="):
            return Path(arg.partition("=")[2])
    return None


def disks_of(trace_dir: Path) -> list:
    disks = []
    for log in sorted(trace_dir.glob("recorder-*.log"), key=lambda p: int(p.stem.partition("-")[2])):
        with open(log) as lines:
            disks += [d for d in disk_flushes(lines) if d.busy]
    return disks


def report(out: Path, trace_dir: Path) -> int:
    lines = [json.loads(line) for line in open(out / "hunt.jsonl")]
    disks = disks_of(trace_dir)
    if len(disks) != len(lines):
        print(f"scsi_crossings: the trace has {len(disks)} disks, the journal {len(lines)} workloads", file=sys.stderr)
        return 3
    rows, together = [], Counter()
    for disk, line in zip(disks, lines):
        verdict = "failing" if line["failing"] else "clean"
        together[("crossed" if disk.crossed else "no crossing", verdict)] += 1
        if disk.crossed or line["failing"]:
            rows.append((line["id"], line["ops"], verdict, len(disk.flushes), " ".join(map(str, disk.crossed)) or "-"))
    print_table(COLUMNS, rows)
    print_table(("flush crossed by a write", "workload", "count"), [(*key, n) for key, n in sorted(together.items())])
    return 0


def main(args: list[str]) -> int:
    out = out_option(args)
    if out is None or out.exists():
        print("scsi_crossings: give the hunt's --out, a directory that does not exist yet", file=sys.stderr)
        return 2
    trace_dir = out.with_name(out.name + ".trace")
    trace_dir.mkdir(parents=True, exist_ok=True)
    with traced_recorder(trace_dir):
        rc = plugpull_main(["hunt", *args])
    if rc not in (0, 1):
        return rc
    return report(out, trace_dir)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
