"""Where a hunt's CPU goes, per distinct state, and the rate two cores allow at that cost.

    .venv/bin/python bench/hunt_cpu.py [--fs ext4,xfs,btrfs] [--sample 64] [--seed 1] [--ops a,b,...] [--table N] [--parts] [--both]

`--ops` keeps the workloads whose operations and points are all of those names (as `plugpull
hunt --ops`): the cost of one family against the same run without it.

A seq-2 hunt per filesystem, in this process, with a sampler that reads every 0.2 s the CPU
seconds (user + system, /proc/PID/stat) of each QEMU this process started: the recording
guest (seen holding a write log open, `*write.log`) and the checker guests.
The rest of the children's CPU (the host's fsck, mkfs, qemu-img; reaped, so counted by
getrusage) and plugpull's own (this process: building states, the oracle) are the other
parts. A QEMU's last 0.2 s before it exits are not seen by the sampler; they land in the
children's rest, so that part is an upper bound.

Prints per filesystem the CPU seconds per distinct state of each part, their sum, the cores
the hunt kept busy (CPU / wall), and the ceiling: the distinct states per minute this
machine's cores would give if every cycle went to the hunt at this cost. When the hunt's
rate is near that ceiling, no overlap of its steps can make it faster: only less CPU per
state can. CPU seconds do not depend much on what else runs (wall time does), so the
ceiling holds on a shared machine; the rate measured beside other work does not.

With `--parts`, each filesystem's run also says where the time goes part by part, per
distinct state (`hunt_parts`): the guests' commands and disk plugs with their counts (the
round trips), the recording guest's workload, the host's recording, materialising, slot
copies, fsck, judge and journal, and the checker guest's own clock around its mounts,
walks and unmounts.
With `--both`, each filesystem is hunted twice in a row, its recording disk plugged in and out
per workload (today's) and kept plugged in (new, `hunt.record`): on a shared machine the CPU
a state costs moves with what runs beside it, so two paths compare best one right after the
other.
Run by hand (`make bench-hunt-cpu`); never asserted in tests.
"""

import argparse
import os
import resource
import tempfile
import threading
import time
from contextlib import nullcontext
from pathlib import Path

from hunt_parts import Parts, table

from plugpull.cli.generate import space_of_options
from plugpull.guest.rig import prepare_rig
from plugpull.hunt.hunter import HuntSpec, hunt
from plugpull.hunt.journal import TABLE

TICK = os.sysconf("SC_CLK_TCK")
EVERY_S = 0.2
PATH_NAMES = {False: "today's", True: "new"}  # --both: the recording disk plugged in per workload, or kept


def records(pid: int) -> bool:
    """Whether the QEMU holds a workload's write log open: the recording guest, while it records."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}").endswith("write.log") for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def children(recorders: set[int]) -> dict[int, float]:
    """This process's child QEMUs: pid -> CPU seconds so far; adds to `recorders` those seen recording."""
    me, out = os.getpid(), {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) != me:
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read()
        except (OSError, IndexError, ValueError):
            continue
        if b"qemu-system" in argv.split(b"\0", 1)[0]:
            out[int(name)] = (int(fields[11]) + int(fields[12])) / TICK
            if int(name) not in recorders and records(int(name)):
                recorders.add(int(name))
    return out


class Sampler:
    """The last CPU seconds seen of each child QEMU, read every EVERY_S until stopped."""

    def __init__(self):
        self.seen: dict[int, float] = {}
        self.recorders: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.seen.update(children(self.recorders))
            self._stop.wait(EVERY_S)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def seconds(self, recording: bool) -> float:
        return sum(s for pid, s in self.seen.items() if (pid in self.recorders) == recording)


def cpu() -> tuple[float, float]:
    """CPU seconds of this process, and of its reaped children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def measured(rig, fs: str, sample: int, seed: int, out: Path, ops: tuple[str, ...] = (), parts: bool = False,
             keep_disk: bool = True, table: int | None = None) -> dict:
    own0, kids0 = cpu()
    spec = HuntSpec(2, fs, ops=ops, sample=sample, seed=seed, keep_disk=keep_disk, table=table or TABLE)
    with Sampler() as sampler, (Parts() if parts else nullcontext()) as split:
        run = hunt(spec, space_of_options(2, ops, table=table), [rig], out)
    own1, kids1 = cpu()
    recorder, checker = sampler.seconds(True), sampler.seconds(False)
    return {"distinct": run.distinct, "wall": run.wall_s, "workloads": run.new, "split": split,
            "failing": sorted(line["id"] for line in run.lines if line["failing"]),
            "parts": {"recording QEMU": recorder, "checker QEMUs": checker,
                      "fsck and tools": max(0.0, kids1 - kids0 - recorder - checker), "plugpull": own1 - own0}}


def report(fs: str, row: dict, cores: int) -> None:
    per = {name: s / max(row["distinct"], 1) for name, s in row["parts"].items()}
    total = sum(per.values())
    busy = sum(row["parts"].values()) / row["wall"] if row["wall"] else 0.0
    rate = row["distinct"] * 60 / row["wall"] if row["wall"] else 0.0
    ceiling = cores * 60 / total if total else 0.0
    print(f"{fs}: {row['workloads']} workloads, {row['distinct']} distinct states, {row['wall']:.0f} s; "
          f"CPU s per distinct state: " + ", ".join(f"{n} {s:.3f}" for n, s in per.items()) + f"; total {total:.3f}")
    print(f"{fs}: {rate:.0f} distinct states/min measured, {busy:.2f} cores busy; "
          f"ceiling on {cores} cores at this cost: {ceiling:.0f}/min")
    print(f"{fs}: failing workloads: {' '.join(row['failing']) or 'none'}")
    if row["split"] is not None:
        print("\n".join(table(fs, row["split"], row["distinct"], row["workloads"], row["parts"])))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fs", default="ext4,xfs,btrfs")
    p.add_argument("--sample", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ops", default="", help="only workloads of these operations and points (plugpull hunt --ops)")
    p.add_argument("--table", type=int, help="only the operations and points of the first N tables")
    p.add_argument("--parts", action="store_true", help="and where the time goes, part by part (hunt_parts)")
    p.add_argument("--both", action="store_true",
                   help="each filesystem hunted twice, one after the other: a recording disk plugged in per "
                        "workload (today's), then the kept one (new)")
    args = p.parse_args()
    ops = tuple(n for n in args.ops.split(",") if n)
    rig, cores = prepare_rig(), os.cpu_count() or 1
    rows = {}
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-hunt-cpu-") as tmp:
        for fs in args.fs.split(","):
            for kept in ((False, True) if args.both else (True,)):
                name = f"{fs} ({PATH_NAMES[kept]})" if args.both else fs
                print(f"{name}: hunting a seq-2 sample of {args.sample} ...", flush=True)
                rows[name] = measured(rig, fs, args.sample, args.seed, Path(tmp) / f"{fs}-{kept}", ops, args.parts,
                                      kept, args.table)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"seq 2 sample {args.sample} seed {args.seed}{' ops ' + ','.join(ops) if ops else ''}{f' tables 1-{args.table}' if args.table else ''}, barrier, {rig.accel}, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"load {load}")
    for fs, row in rows.items():
        report(fs, row, cores)


if __name__ == "__main__":
    main()
