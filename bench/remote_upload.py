"""What a crash state costs to hand to a checker guest on a libvirt host: on this machine's
path (a hard link into the guest's directory and a qcow2 overlay over it, as `attach_disk`
does) against the remote path (an upload as a sparse volume over the connection, then its
deletion). The host is a second libvirtd on loopback TCP (`guest.libvirt.instance`), so the
upload crosses a real transport but no network.

    .venv/bin/python bench/remote_upload.py [--mib 512] [--data-mib 16] [--runs 5]

The state is a sparse file of --mib MiB holding --data-mib MiB of random data in 64 KiB
pieces spread over it. Reports each path's median and their ratio, measured in one run.
"""

import argparse
import os
import statistics
import time
from pathlib import Path

import libvirt

from plugpull.guest.qemu import hotplug
from plugpull.guest.libvirt.instance import start_tcp_instance
from plugpull.guest.libvirt.machine import Staging, qemu_identity
from plugpull.guest.libvirt.remote import VolumePool, qemu_label
from plugpull.paths import make_tempdir

PIECE = 64 << 10


def make_state(path: Path, mib: int, data_mib: int) -> None:
    pieces = data_mib * (1 << 20) // PIECE
    stride = (mib << 20) // max(1, pieces)
    with open(path, "wb") as f:
        f.truncate(mib << 20)
        for i in range(pieces):
            f.seek(i * stride)
            f.write(os.urandom(PIECE))


def local_once(state: Path) -> float:
    started = time.monotonic()
    staging = Staging(*qemu_identity())
    try:
        staged = staging.link(state)
        staging.own(hotplug.create_overlay(staged, staging.dir / "sda.qcow2"))
        return time.monotonic() - started
    finally:
        staging.remove()


def remote_once(pool: VolumePool, state: Path) -> float:
    started = time.monotonic()
    pool.upload(state, writable=True).delete(0)
    return time.monotonic() - started


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--data-mib", type=int, default=16)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    work = make_tempdir("bench-upload")
    state = work / "state.img"
    make_state(state, args.mib, args.data_mib)
    print(f"state: {args.mib} MiB, {os.stat(state).st_blocks * 512 / 2**20:.1f} MiB allocated")
    instance = start_tcp_instance()
    try:
        conn = libvirt.open(instance.uri)
        pool = VolumePool(conn, qemu_label(conn))
        try:
            local = [local_once(state) for _ in range(args.runs)]
            remote = [remote_once(pool, state) for _ in range(args.runs)]
        finally:
            pool.remove()
            conn.close()
    finally:
        instance.stop()
        state.unlink()
        work.rmdir()
    for name, times in (("local (link + overlay)", local), ("remote (sparse upload)", remote)):
        print(f"{name:24} " + " ".join(f"{t * 1000:.0f}" for t in times) + f" ms; median {statistics.median(times) * 1000:.0f} ms")
    print(f"remote / local: {statistics.median(remote) / statistics.median(local):.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
