"""Do two recordings build the same crash states? Generated workloads are recorded one after
the other in one recording guest (the hunt's `Recorder`, on copies of one formatted image);
the prefix state at each flush of each record is built and compared with the first
record's, 4 KiB block by block. Give ids that share their setup and first step, and one id
twice (the baseline: the same workload recorded again).

    .venv/bin/python bench/same_bytes.py --fs btrfs seq2-000620 seq2-000621 seq2-000620
    .venv/bin/python bench/same_bytes.py --fs ext4 --clock 1790000000 seq2-000620 seq2-000621

`--clock T` sets the recording guest's clock to T (seconds since the epoch) in the command
that mounts each workload's disk, before the mount. Prints per flush and record whether the
state is the same as the first record's, and the numbers of the blocks that differ; the
records are kept under `--keep` (a new directory) for debugfs, xfs_logprint or btrfs
inspect-internal. Run by hand; never asserted in tests (docs/hunt-results.md: states shared across
workloads).
"""

import argparse
import tempfile
from pathlib import Path

from plugpull.crash.record import Record
from plugpull.generate.workload import generated_workload
from plugpull.guest.rig import prepare_rig
from plugpull.hunt.record import Recorder, formatted
from plugpull.hunt.hunter import HuntSpec
from plugpull.powerloss.crashstate import content_digest, materialize
from plugpull.powerloss.models import plan
from plugpull.powerloss.writelog import iter_entries
from plugpull.testbed.fs import filesystem

BLOCK = 4096


class ClockedRecorder(Recorder):
    """The hunt's recorder, with the guest's clock set to `clock` before each mount."""

    clock: int | None = None

    def _start_command(self, serial: str, workload) -> str:
        command = super()._start_command(serial, workload)
        if self.clock is None:
            return command
        return command.replace(" && ", f" && date -s @{self.clock} >/dev/null && ", 1)


def record_all(fs_name: str, ids: list[str], where: Path, clock: int | None) -> list[Record]:
    spec, fs = HuntSpec(2, fs_name), filesystem(fs_name)
    base = formatted(fs, spec.recording_mode, spec.mib, where / "mkfs.img")
    recorder = ClockedRecorder(prepare_rig(), fs, spec.recording_mode, base, spec.mib)
    recorder.clock = clock
    with recorder:
        records = [recorder.record(generated_workload(f"gen:{ident}", fs_name), where / f"{n}-{ident}")
                   for n, ident in enumerate(ids)]
    if failed := [r for r in records if not isinstance(r, Record)]:
        raise SystemExit(f"not recorded: {failed[0]}")
    return records


def flush_states(rec: Record) -> list[Path]:
    """The prefix state just after each flush of the record's log."""
    entries = list(iter_entries(rec.log))
    cuts = [i + 1 for i, e in enumerate(entries) if e.is_flush]
    paths = []
    for n, cut in enumerate(cuts):
        path = rec.dir / f"flush{n}.img"
        materialize(rec.bases[0], rec.log, plan(entries, cut, "prefix", 1), path, digest=False)
        paths.append(path)
    return paths


def differing_blocks(a: Path, b: Path) -> list[int]:
    x, y = a.read_bytes(), b.read_bytes()
    return [at // BLOCK for at in range(0, max(len(x), len(y)), BLOCK) if x[at:at + BLOCK] != y[at:at + BLOCK]]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ids", nargs="+", help="generated workload ids (seq2-...)")
    p.add_argument("--fs", default="ext4", choices=("ext4", "xfs", "btrfs"))
    p.add_argument("--clock", type=int, help="the guest's clock before each mount, seconds since the epoch")
    p.add_argument("--keep", type=Path, help="a new directory to keep the records and states in")
    args = p.parse_args()
    if args.keep is not None and args.keep.exists():
        raise SystemExit(f"--keep {args.keep}: exists; give a new directory")
    with tempfile.TemporaryDirectory(prefix="plugpull-same-bytes-") as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        records = record_all(args.fs, args.ids, where, args.clock)
        states = [flush_states(rec) for rec in records]
        for n in range(min(map(len, states))):
            first = states[0][n]
            for ident, other in zip(args.ids[1:], (s[n] for s in states[1:])):
                same = content_digest(first) == content_digest(other)
                blocks = [] if same else differing_blocks(first, other)
                print(f"flush {n}: {args.ids[0]} and {ident}: " + ("the same" if same else
                      f"{len(blocks)} blocks differ: {' '.join(map(str, blocks[:16]))}"))


if __name__ == "__main__":
    main()
