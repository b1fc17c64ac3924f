"""Flush-order fidelity: writes in flight across a flush, per filesystem and workload.

    .venv/bin/python bench/flush_fidelity.py [--fs xfs,ext4] [--mode barrier]
        [--workload fsync-files,fsync-append,tree-extract,sqlite] [--param tree-extract.files=2000]
    make bench-fidelity

Records each workload to its end, as `plugpull crash` does (AHCI disk, write cache on), with
QEMU's trace events for the disk's ATA commands enabled on the recording guest (`-trace EVENT
-D FILE`, added to its command line here), and counts the writes that the write log could
misplace against a flush: issued before the flush and still in flight when it was issued,
or issued while it was outstanding (plugpull.powerloss.flushorder). The traced flush and
write counts are shown beside the write log's as a cross-check.

Exits 0 when no write crossed a flush (the bound docs/flush-order.md states holds), 1 when some did,
2 on bad input, 3 when a recording failed.
"""

import argparse
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import plugpull.guest.qemu.machine as machine_module
from plugpull.cli.common import print_table
from plugpull.cli.matrix import matrix_params
from plugpull.crash.record import Trigger, record
from plugpull.errors import PlugpullError, UsageError
from plugpull.guest.contract.config import Accel
from plugpull.guest.rig import prepare_rig
from plugpull.powerloss.flushorder import TRACE_EVENTS, count_crossings
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.workloads import workload

DEFAULT_WORKLOADS = "fsync-files,fsync-append,tree-extract,sqlite"
DEFAULT_PARAMS = ("fsync-files.count=100", "tree-extract.files=2000")
COLUMNS = ("fs", "workload", "flushes", "(log)", "writes", "(log)", "max in flight",
           "across", "during", "share")


@contextmanager
def traced_guests(trace: Path):
    """Every guest booted inside the block writes the disk's ATA trace events to `trace`."""
    plain = machine_module.qemu_argv

    def with_trace(*args, **kwargs):
        events = [arg for event in TRACE_EVENTS for arg in ("-trace", event)]
        return plain(*args, **kwargs) + ["-D", str(trace), *events]

    machine_module.qemu_argv = with_trace
    try:
        yield
    finally:
        machine_module.qemu_argv = plain


def measure(fs_name: str, mode_name: str, wl, rig, scratch: Path) -> tuple:
    trace = scratch / "trace.log"
    with traced_guests(trace):
        rec = record(scratch / "record", BedSpec(filesystem(fs_name), mode(mode_name), wl), Trigger("end"), rig)
    with open(trace) as lines:
        counts = count_crossings(lines)
    logged = rec.meta["log"]
    return (fs_name, wl.name, counts.flushes, logged["flushes"], counts.writes, logged["writes"],
            counts.max_writes_in_flight, counts.crossing_writes, counts.issued_during_flush,
            f"{100 * counts.share:.2f}%"), counts.unordered


def run(args) -> int:
    names = args.workload.split(",")
    given = {p.partition("=")[0] for p in args.param}
    defaults = [p for p in DEFAULT_PARAMS if p.partition(".")[0] in names and p.partition("=")[0] not in given]
    params = matrix_params([*defaults, *args.param], names)
    loads = [workload(name, **params.get(name, {})) for name in names]
    systems = args.fs.split(",")
    for name in systems:
        filesystem(name)
    mode(args.mode)
    rig = prepare_rig(args.accel)
    rows, unordered = [], 0
    for fs_name in systems:
        for wl in loads:
            with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
                row, crossed = measure(fs_name, args.mode, wl, rig, Path(tmp))
            print(f"recorded {fs_name} / {wl.name}: {row[2]} flushes, {row[4]} writes, {crossed} across",
                  file=sys.stderr, flush=True)
            rows.append(row)
            unordered += crossed
    print(f"{args.mode} mode, AHCI disk, {rig.accel}; across = writes in flight when a flush was issued, "
          "during = writes issued while a flush was outstanding; (log) = the write log's own count")
    print_table(COLUMNS, rows)
    return 1 if unordered else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fs", default="xfs,ext4")
    ap.add_argument("--mode", default="barrier")
    ap.add_argument("--workload", default=DEFAULT_WORKLOADS)
    ap.add_argument("--param", action="append", default=[], help="WORKLOAD.KEY=VALUE, repeatable")
    ap.add_argument("--accel", type=Accel, choices=list(Accel), default=Accel.AUTO)
    args = ap.parse_args()
    try:
        return run(args)
    except UsageError as e:
        print(f"flush_fidelity: {e}", file=sys.stderr)
        return 2
    except PlugpullError as e:
        print(f"flush_fidelity: harness failure: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
