"""Workloads: what runs in the guest, what it promises, and how fast it went.

Each workload gives
- `steps(mnt)`: the timed guest commands of a throughput run (one phase each, unless the
  command reports its own phases: smallfiles, fio, bonnie++);
- `script(mnt, ack)`: the power-cut run, a busybox shell script that writes `ack ID` to fd 4
  (the ack port) only after what ID stands for is durable (fsync/sync returned);
- `lost(required, files)`: which of the owed acks a crash state broke, given the files the
  checker brought back (`collect`: "tar" = contents, "sums" = sha256 per file);
- `examine(required, files, committed)`: the state against the workload's `contract` (which
  acks are promises) and its `invariants` (what holds of every state): `Findings`;
- `collect` "script" (the user's `script:PATH` workload): the user's check script runs on the
  recovered filesystem and its `lost`/`inconsistent` lines are the oracle;
- optionally `payload()`: a read-only disk image the guest reads as /dev/vda (a tar to
  extract, a large file to copy), and `setup(mnt)`: untimed commands before the work.
Content is a pure function of the parameters and seed, so the host regenerates it.
"""

from plugpull.errors import UsageError
from plugpull.testbed.workloads.base import (ACK_PORT, DIR, PAYLOAD_DEV, Findings, GuestWorkload, Lost, TimedStep,
                                         content_line, repeated, sha256)
from plugpull.testbed.workloads.bench import (FIO_JOBS, BigCopy, Bonnie, Fio, SmallFiles, TreeCopy, TreeExtract,
                                          TreeRemove)
from plugpull.testbed.workloads.durable import AtomicReplace, FsyncAppend, FsyncFiles
from plugpull.testbed.workloads.faulty import FsyncRetry
from plugpull.testbed.workloads.params import check_params
from plugpull.testbed.workloads.script import PREFIX as SCRIPT_PREFIX, CheckScriptError, Script, read_script
from plugpull.testbed.workloads.sqlite import Sqlite

__all__ = ["ACK_PORT", "DIR", "PAYLOAD_DEV", "FIO_JOBS", "SCRIPT_PREFIX", "WORKLOADS", "AtomicReplace", "BigCopy",
           "Bonnie", "CheckScriptError", "Findings", "Fio", "FsyncAppend", "FsyncFiles", "FsyncRetry", "GuestWorkload",
           "Lost", "Script", "SmallFiles", "Sqlite", "TimedStep", "TreeCopy", "TreeExtract", "TreeRemove", "content_line",
           "read_script", "repeated", "sha256", "workload"]


WORKLOADS = {w.name: w for w in (FsyncFiles, FsyncAppend, AtomicReplace, TreeExtract, TreeRemove, TreeCopy, BigCopy,
                                 SmallFiles, Bonnie, Fio, Sqlite, FsyncRetry)}
# The user's own workload is named on the command line as script:PATH; its texts are its parameters.
USER_WORKLOADS = {Script.name: Script}


def workload(name: str, **params) -> GuestWorkload:
    try:
        cls = {**WORKLOADS, **USER_WORKLOADS}[name]
    except KeyError:
        raise UsageError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)} or {SCRIPT_PREFIX}PATH") from None
    check_params(name, cls, params)
    try:
        return cls(**params)
    except TypeError as e:
        raise UsageError(f"bad parameters for workload {name}: {e}") from None
