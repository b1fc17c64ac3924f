"""The libvirt backend against the direct QEMU one, in one run, and what an interrupted or
killed plugpull leaves behind on libvirt.

    .venv/bin/python bench/libvirt_backend.py [--states 12] [--fs xfs] [--skip-signals]

1. The same crash run (fsync-files, nobarrier, seeded cuts) on each backend, one after the
   other: the record and check times and the states checked per minute, and their ratio.
2. `plugpull crash --backend libvirt` started, interrupted (SIGINT) and killed (SIGKILL) once
   a domain of it runs: the plugpull domains still defined 20 s later (must be 0).
Run by hand; never asserted in tests.
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import libvirt

from plugpull.crash.crashrun import run_crash
from plugpull.crash.spec import CrashSpec
from plugpull.guest.backends import prepare_backend
from plugpull.guest.rig import prepare_rig

URI = "qemu:///system"


def domains() -> list[str]:
    conn = libvirt.open(URI)
    try:
        return [d.name() for d in conn.listAllDomains() if d.name().startswith("plugpull-")]
    finally:
        conn.close()


def compare(states: int, fs: str) -> None:
    spec = CrashSpec(fs=fs, mode="nobarrier", workload="fsync-files", params=(("count", 16),),
                     models=("drop-unflushed",), states=states, seed=1, trigger="acks:12", workers=1)
    rates = {}
    for name in ("qemu", "libvirt"):
        prepared = prepare_backend(name)
        try:
            rig = prepare_rig(backend=prepared.backend)
            with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as work:
                run = run_crash(spec, rig, Path(work) / "crash")
        finally:
            prepared.close()
        t = run.timing
        rates[name] = t.states_per_minute
        verdicts = sorted(s.verdict for s in run.states)
        print(f"{name:8} record {t.record_s:6.1f} s  check {t.check_s:6.1f} s  "
              f"{t.states_per_minute:6.1f} states/min  {len(run.states)} states {verdicts}")
    print(f"libvirt / qemu states per minute: {rates['libvirt'] / rates['qemu']:.2f}")


def left_after(signum: int) -> list[str]:
    out = Path(tempfile.mkdtemp(prefix="plugpull-bench-signal-"))
    proc = subprocess.Popen([sys.executable, "-m", "plugpull", "crash", "--backend", "libvirt", "--fs", "xfs",
                             "--states", "4", "--out", str(out / "run")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not domains() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
    running = domains()
    os.kill(proc.pid, signum)
    proc.wait()
    time.sleep(20)
    print(f"{signal.Signals(signum).name}: plugpull domains running before {len(running)}, "
          f"20 s after {len(domains())}")
    subprocess.run(["rm", "-rf", str(out)])
    return domains()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--states", type=int, default=12)
    p.add_argument("--fs", default="xfs")
    p.add_argument("--skip-signals", action="store_true")
    args = p.parse_args()
    compare(args.states, args.fs)
    if not args.skip_signals:
        prepared = prepare_backend("libvirt")
        try:
            for signum in (signal.SIGINT, signal.SIGKILL):
                left_after(signum)
        finally:
            prepared.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
