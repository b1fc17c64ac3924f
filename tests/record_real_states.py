"""Records the trees real kernels left in crash states of generated workloads, for
`tests/unit/generate/test_oracle_real_states.py`: the oracle, run again on each, must judge it as it did when
it was recorded (clean, or failing as a known finding does), so that a rule that owes more than
a filesystem gives, or one that owes less, fails a test that needs no guest.

    .venv/bin/python tests/record_real_states.py [--out tests/data/real-states.jsonl.gz]

It runs the hunts of HUNTS (barriers, the host's kernel, `--fsck failing`) and `crash` on the
workloads of BY_ID (ext4's renames over a file, and the known findings' own workloads, whose
failing states must stay failing), and keeps every tree the oracle was asked about once per (filesystem, workload,
acks owed, tree), with the verdict it gave. About 15 minutes here; rerun it after a change to
the generator's ids or trees (the test says when).
"""

import argparse
import gzip
import json
import tempfile
from pathlib import Path

from plugpull.check.checker import TREE
from plugpull.check.fsckchoice import fsck_choice
from plugpull.cli.generate import space_of_options
from plugpull.crash.crashrun import run_crash
from plugpull.crash.spec import CrashSpec
from plugpull.files import atomic_write
from plugpull.generate.workload import GeneratedWorkload
from plugpull.guest.rig import prepare_rig
from plugpull.hunt.hunter import HuntSpec, hunt

OUT = Path(__file__).parent / "data" / "real-states.jsonl.gz"
# (fs, seq, ops, sample): seq 1 for every operation; seq 2 at random; and the families whose
# rules are the finest (ext4's rename over a file, then a write)
HUNTS = (("ext4", 1, (), 100), ("xfs", 1, (), 100), ("btrfs", 1, (), 100),
         ("ext4", 2, (), 50), ("xfs", 2, (), 50), ("btrfs", 2, (), 50),
         ("ext4", 2, ("rename", "write", "fsync"), 60))
# (fs, workload, disk MiB), each run by `crash`: ext4's rename over a file with and without a
# write to it after the rename (what auto_da_alloc forces out, and what it does not), and the
# btrfs findings of docs/findings.md and docs/hunt-results.md, whose failing states must stay failing
BY_ID = (("ext4", "seq2-101917", 64), ("ext4", "seq3-28798802", 64), ("ext4", "seq3-28799706", 64),
         ("ext4", "seq3-28801514", 64), ("ext4", "seq3-28799254", 64), ("ext4", "seq3-28800158", 64),
         ("btrfs", "seq2-056383", 128), ("btrfs", "seq2-055855", 128),
         ("btrfs", "seq2-080435", 128), ("btrfs", "seq1-000253", 128))


class Recorder:
    """Every `examine` of a generated workload in this process: its tree and what it found."""

    def __init__(self):
        self.fs = ""
        self.seen: dict[tuple, dict] = {}
        self._examine = GeneratedWorkload.examine

    def install(self) -> None:
        recorder = self

        def examine(workload, required, files, committed=()):
            found = recorder._examine(workload, required, files, committed)
            text = files.get(TREE, b"")
            text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
            key = (recorder.fs, workload.ident, max(required, default=-1), text)
            recorder.seen.setdefault(key, {
                "fs": recorder.fs, "id": workload.ident, "profile": workload.profile, "required": sorted(required),
                "tree": text, "present": TREE in files, "clean": not found.lost and not found.broken})
            return found

        GeneratedWorkload.examine = examine


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args()
    rig, recorder = prepare_rig(), Recorder()
    recorder.install()
    with tempfile.TemporaryDirectory(prefix="plugpull-real-states-") as tmp:
        for n, (fs, seq, ops, sample) in enumerate(HUNTS):
            recorder.fs = fs
            spec = HuntSpec(seq, fs, ops=ops, sample=sample, seed=7, fsck=fsck_choice("failing"))
            hunt(spec, space_of_options(seq, ops), [rig], Path(tmp) / f"hunt-{n}")
            print(f"{fs} seq {seq} {','.join(ops) or 'all'}: {len(recorder.seen)} trees so far", flush=True)
        for fs, ident, mib in BY_ID:
            recorder.fs = fs
            spec = CrashSpec(fs=fs, mode="barrier", workload=f"gen:{ident}", trigger="end", cuts="flushes,end",
                             models=("prefix", "reorder", "drop-unflushed"), disk_mib=mib, seed=1)
            run_crash(spec, rig, Path(tmp) / f"crash-{ident}")
            print(f"{fs} {ident}: {len(recorder.seen)} trees so far", flush=True)
    lines = sorted(json.dumps(v, sort_keys=True) for v in recorder.seen.values())
    atomic_write(args.out, gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    print(f"{len(lines)} trees, {sum(json.loads(l)['clean'] for l in lines)} clean: {args.out}")


if __name__ == "__main__":
    main()
