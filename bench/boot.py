"""Boot-to-ready wall time: from starting QEMU to the guest agent's READY on its channel.

    .venv/bin/python bench/boot.py [--runs 5] [--bus ahci|ide]

Reports each run and the median. Run by hand or `make bench`; never asserted in tests.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from plugpull.guest.contract.config import Accel, Bus, DiskSpec, MachineSpec
from plugpull.guest.image.build import build_image
from plugpull.guest.qemu.machine import Machine, create_disk, resolve_accel


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bus", type=Bus, choices=list(Bus), default=Bus.AHCI)
    ap.add_argument("--accel", type=Accel, choices=list(Accel), default=Accel.AUTO)
    args = ap.parse_args()
    t0 = time.monotonic()
    image = build_image()
    image_s = time.monotonic() - t0
    decision = resolve_accel(args.accel, image)
    print(f"image {image.key}: {image.manifest['initramfs_bytes'] / 2**20:.0f} MiB initramfs, "
          f"ready in {image_s:.2f} s; accel {decision.accel} ({decision.reason})")
    times, round_trips = [], []
    with tempfile.TemporaryDirectory(prefix="plugpull-bench-") as tmp:
        disk = create_disk(Path(tmp) / "sda.img", 512)
        spec = MachineSpec(disks=(DiskSpec(disk, args.bus),))
        for i in range(args.runs):
            with Machine(spec, image, decision.accel) as m:
                times.append(m.boot_seconds)
                for _ in range(20):
                    t = time.monotonic()
                    m.run("true")
                    round_trips.append(time.monotonic() - t)
            print(f"run {i + 1}/{args.runs}: boot-to-ready {times[-1]:.2f} s", flush=True)
    print(f"boot-to-ready median of {args.runs}: {statistics.median(times):.2f} s "
          f"(min {min(times):.2f}, max {max(times):.2f})")
    print(f"command round trip median of {len(round_trips)}: {statistics.median(round_trips) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
