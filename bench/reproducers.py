"""The live findings' reproducers (suites/reproducers/*.sh) run again and again in one guest.

    .venv/bin/python bench/reproducers.py [--kernel debian:7.3] [--runs 5] [--ext4] [--only NAME]...

One guest (a 512 MiB AHCI disk, write cache on) on the kernel given (the host's by default);
each script runs `--runs` times on the disk, each run making its filesystem anew; `--ext4` also
runs each generated workload's script on ext4 (where a correct filesystem PASSes; not the XFS
log hole, which has no workload); `--only` keeps the findings named (`btrfs-rename-both-names`). Prints each run's verdict and, per script, how many runs
FAILed, PASSed or gave no verdict. Exits 0 when every run gave a verdict, 2 on bad input, 3
otherwise.
"""

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from plugpull.errors import InfraError, PlugpullError, UsageError
from plugpull.guest.contract.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.qemu.machine import create_disk
from plugpull.guest.rig import prepare_rig
from plugpull.kernels import kernel_option
from plugpull.reproducer.findings import LIVE
from plugpull.reproducer.inguest import DISK_MIB, run_on
from plugpull.reproducer.suite import sh_text


def scripts(ext4: bool, only=()) -> list[tuple[str, str]]:
    chosen = [live for live in LIVE if not only or live.name in only]
    out = [(f"{live.name}.sh", sh_text(live)) for live in chosen]
    if ext4:
        out += [(f"{live.name}.sh on ext4", sh_text(live, "ext4")) for live in chosen if live.fs]
    return out


def verdict(m, text: str, console: Path) -> str:
    try:
        outcome = run_on(m, text, console)
    except InfraError as e:
        return f"no verdict: {e}"
    return "PASS" if outcome.passed else outcome.lines[0]


def run(args) -> int:
    rig = prepare_rig(kernel=kernel_option(args.kernel, None))
    counts: dict[str, Counter] = {}
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
        console = Path(tmp) / "console.log"
        disk = DiskSpec(create_disk(Path(tmp) / "sda.img", DISK_MIB), Bus.AHCI, True)
        with rig.machine(MachineSpec(disks=(disk,), accel=rig.accel), console_log=console, name="reproducers") as m:
            for name, text in scripts(args.ext4, args.only):
                seen = counts.setdefault(name, Counter())
                for n in range(args.runs):
                    said = verdict(m, text, console)
                    seen["PASS" if said == "PASS" else "FAIL" if said.startswith("FAIL") else "none"] += 1
                    print(f"{name} run {n + 1}: {said}", flush=True)
    print(f"{rig.image.kernel_release}, {args.runs} runs each:")
    for name, seen in counts.items():
        print(f"  {name}: FAIL {seen['FAIL']}, PASS {seen['PASS']}, no verdict {seen['none']}")
    return 3 if any(seen["none"] for seen in counts.values()) else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kernel", help="host (the default), debian:VERSION or a kernel file")
    ap.add_argument("--ext4", action="store_true", help="also each workload's script on ext4")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="only this finding's script (repeatable): " + ", ".join(live.name for live in LIVE))
    args = ap.parse_args()
    try:
        unknown = sorted(set(args.only) - {live.name for live in LIVE})
        if unknown:
            raise UsageError(f"--only {unknown[0]}: not a live finding")
        if args.runs < 1:
            raise UsageError(f"--runs: at least 1, got {args.runs}")
        return run(args)
    except UsageError as e:
        print(f"reproducers: {e}", file=sys.stderr)
        return 2
    except PlugpullError as e:
        print(f"reproducers: harness failure: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
