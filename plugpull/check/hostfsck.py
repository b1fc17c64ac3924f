"""fsck on the host, of a crash state the checker guest has recovered and unmounted.

Under TCG the guest's `xfs_repair -n` costs about as much CPU as the recovery mount itself
(bench/check_options.py); the same program run natively costs a tenth of it. So on the hot
path the guest mounts, collects and unmounts, and the host's fsck reads the state through
QEMU (`Machine.exports`: the disk's node, the state file under its throwaway overlay, as
the guest left it). The guest image is built from the host's own packages, so it is the
same fsck either way; anything that goes wrong here sends the state back to the guest's
own fsck (`hotbatch`), never to a verdict.
"""

import shutil
import subprocess
from pathlib import Path

from plugpull.check.fsckchoice import NOT_RUN
from plugpull.errors import InfraError

COMMANDS = {  # as images/check.sh runs them in the guest, with the file flag where one is needed
    "xfs": ["xfs_repair", "-n", "-P", "-f"],
    "ext4": ["e2fsck", "-fn"], "ext3": ["e2fsck", "-fn"], "ext2": ["e2fsck", "-fn"],
    "btrfs": ["btrfs", "check", "--readonly"],
    "f2fs": ["fsck.f2fs", "--dry-run"],
}
# What fsck reads on its standard input: fsck.f2fs asks whether to restore lost files when it
# finds unreachable inodes, and with no answer exits 255 (a failure) instead of 4 (damage).
ANSWERS = {"f2fs": b"n\n"}
# xfs_repair says this of any image file (it asks the host filesystem, not a disk, for the
# sector size); the guest's run on a disk never prints it, so it is not the state's evidence.
FILE_NOTICE = (b"Cannot get host filesystem geometry.\n"
               b"Repair may fail if there is a sector size mismatch between\n"
               b"the image and the host filesystem.\n")


def command(mount_type: str, path: Path) -> list[str] | None:
    """The fsck command line for a state at `path`, or None if the host has no such fsck."""
    words = COMMANDS.get(mount_type)
    if words is None or shutil.which(words[0]) is None:
        return None
    return words + [str(path)]


def available(mount_type: str) -> bool:
    return command(mount_type, Path("state")) is not None


def run(mount_type: str, path: Path, timeout: float) -> tuple[int, bytes]:
    """fsck's exit status and output (stdout and stderr, as the guest's `>file 2>&1`).
    InfraError if it could not run or did not finish in `timeout` s."""
    argv = command(mount_type, path)
    if argv is None:
        raise InfraError(f"no fsck for {mount_type} on the host")
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              input=ANSWERS.get(mount_type, b""), timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InfraError(f"the host's fsck did not finish: {e}") from None
    return done.returncode, done.stdout.replace(FILE_NOTICE, b"")


def with_fsck(parts: dict[str, bytes], rc: int | str, output: bytes) -> dict[str, bytes]:
    """A state's files from `pp-check --many --no-fsck`, completed as the guest's fsck would have."""
    keys = parts["keys"] if parts["keys"].endswith(b"\n") or not parts["keys"] else parts["keys"] + b"\n"
    return {**parts, "keys": keys + f"fsck_rc={rc}\n".encode(), "fsck": output}


def not_run(parts: dict[str, bytes]) -> dict[str, bytes]:
    """A state's files from `pp-check --many --no-fsck`, marked as never read by fsck."""
    return with_fsck(parts, NOT_RUN, b"")
