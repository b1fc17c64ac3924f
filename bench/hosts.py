"""One libvirt host against two: the same recording's crash states checked on
`qemu:///system` alone, then spread over it and a second libvirtd on loopback TCP (started
here, stopped at the end), in one run. Verdicts and state digests must match.

    .venv/bin/python bench/hosts.py [--states 8] [--batch 2] [--remote]

With --remote, the second host is reached as if it were another machine (`guest.libvirt.remote`:
states uploaded as volumes, channels opened through libvirt).

Prints each run's checking time and the ratio; run by hand, never asserted in tests.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from plugpull.check.checker import Checker
from plugpull.crash.judge import judge, remove_states
from plugpull.crash.record import record
from plugpull.crash.crashrun import crash_jobs
from plugpull.crash.spec import CrashSpec
from plugpull.guest.backends import prepare_backend
from plugpull.guest.libvirt.instance import start_tcp_instance
from plugpull.guest.libvirt.machine import LibvirtBackend
from plugpull.guest.rig import Rig, prepare_rig
from plugpull.powerloss.writelog import iter_entries


def timed_check(rig: Rig, hosts, spec, plan, rec, entries, state_dir: Path, batch: int):
    checker = Checker(Rig(rig.image, rig.accel, rig.backend, tuple(hosts)), plan.fs, batch=batch, workers=1)
    started = time.monotonic()
    judged = judge(rec, crash_jobs(rec, entries, spec, plan.models), checker, plan.workload, spec.seed,
                   state_dir, entries)
    seconds = time.monotonic() - started
    results = [(str(j[0].verdict), j[2].digest()) for j in judged]
    remove_states([j[2] for j in judged])
    return seconds, results, checker.reached


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=8)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--remote", action="store_true", help="reach the second host through its connection only")
    args = ap.parse_args()
    spec = CrashSpec(fs="ext4", mode="nobarrier", workload="fsync-files", params=(("count", 16),),
                     models=("prefix",), states=args.states, seed=1, trigger="acks:12")
    plan = spec.resolve()
    system = prepare_backend("libvirt")
    second = start_tcp_instance()
    try:
        rig = prepare_rig(backend=system.backend)
        with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
            rec = record(Path(tmp) / "record", plan.recording_bed, plan.trigger, rig)
            entries = list(iter_entries(rec.log))
            one = timed_check(rig, [system.backend], spec, plan, rec, entries, Path(tmp) / "one", args.batch)
            hosts = [system.backend, LibvirtBackend(second.uri, second.qemu_pid_dir, remote=args.remote)]
            two = timed_check(rig, hosts, spec, plan, rec, entries, Path(tmp) / "two", args.batch)
    finally:
        second.stop()
        system.close()
    print(f"{len(one[1])} states, batch {args.batch}: one host {one[0]:.1f} s {one[2]}; "
          f"two hosts {two[0]:.1f} s {two[2]}; two/one = {two[0] / one[0]:.2f}")
    same = one[1] == two[1]
    print("verdicts and digests match" if same else "MISMATCH between one and two hosts")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
