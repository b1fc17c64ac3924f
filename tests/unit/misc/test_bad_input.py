"""Bad input, tried as a user would: every probe exits with the code the README promises, says
in one line what is wrong, shows no traceback and leaves nothing behind. All of it is
refused before a guest boots: a probe that reaches a boot fails here."""

import gzip
import re
import json
import os
import stat
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import pytest

from tests.fake_backend import FakeBackend, Plan
from tests.cli_run import exit_code, files_under, run_cli
from plugpull import cli
from plugpull.check.verdict import Ack
from plugpull.crash.record import Record
from plugpull.crash.artifacts import load_record, saved_record
from plugpull.crash.crashrun import refuse_vacuous, replay, run_crash
from plugpull.crash.spec import CrashSpec
from plugpull.errors import LaunchError, NothingChecked, ToolMissing, UsageError
from plugpull.files import (NotReplaceable, a_case_file, a_path, a_state_dir, an_output, atomic_path, atomic_write,
                            check_output)
from plugpull.guest import rig as rig_mod
from plugpull.guest.qemu.accel import Decision
from plugpull.guest.contract.config import Accel
from plugpull.guest.image.build import GuestImage
from plugpull.guest.image.kernel import kernel_format
from plugpull.log import run_log
from plugpull.powerloss.writelog import LogWriter
from plugpull.minimise.culprits import load_cache
from plugpull.runs import caserun, matrix as matrix_mod
from plugpull.runs.faultcase import FAULT_SETTINGS
from plugpull.runs.settings import SETTINGS, Whole
from plugpull.testbed.workloads import Bonnie, FsyncFiles, Sqlite
from plugpull.testbed.workloads.script import Script
from plugpull.testbed.workloads.params import promised_acks
from plugpull.values import COUNT_MAX, whole

TMP = "{tmp}"


class Booted(BaseException):
    """Raised where a guest would boot: a BaseException, so no handler of plugpull's hides it."""


def _no_boot(*args, **kwargs):
    raise Booted("validation let this through to a guest boot")


# --- what the probes need on disk ---------------------------------------------------------

CASE = """title = "t"
[matrix]
fs = ["xfs"]
modes = ["barrier"]
workloads = ["fsync-files"]
"""


FAULTS_TABLE = '[faults]\nfs = ["ext4"]\nkinds = ["error-writes"]\ntrigger = "acks:1"\nworkloads = ["fsync-retry"]\n'


def _case(tail: str = "", top: str = "") -> Callable[[Path], None]:
    """A case file: CASE with `top` before its first table and `tail` after it."""
    return lambda tmp: (tmp / "case.toml").write_text(top + CASE + tail)


def _artifact(tmp: Path) -> None:
    """A saved state as `plugpull crash` writes it: states/s/state.json and the record."""
    record = tmp / "art" / "record"
    state = tmp / "art" / "states" / "s"
    record.mkdir(parents=True)
    state.mkdir(parents=True)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(record / "base.qcow2"), "64M"], check=True)
    with LogWriter(record / "write.log") as w:
        w.write(0, b"\1" * 4096)
        w.flush()
    with open(record / "write.log", "rb") as src, gzip.open(record / "write.log.gz", "wb") as dst:
        dst.write(src.read())
    (record / "write.log").unlink()
    (record / "record.json").write_text(json.dumps(
        {"fs": "xfs", "mode": "barrier", "workload": "fsync-files", "params": {"count": 3, "seed": 1},
         "acks": []}))
    (state / "state.json").write_text(json.dumps(
        {"fs": "xfs", "mode": "barrier", "workload": "fsync-files", "model": "reorder", "seed": 1, "cut": 1,
         "verdict": "data-loss", "digest": "0" * 64, "record": "../../record"}))


def _replay_case(record: str = "art/record", cut: int = 1, model: str = "reorder") -> Callable[[Path], None]:
    """A [replay] case beside a saved record (the artifact's)."""
    def setup(tmp: Path) -> None:
        _artifact(tmp)
        (tmp / "case.toml").write_text(f'title = "t"\n[replay]\nrecord = "{record}"\nmodel = "{model}"\ncut = {cut}\n')
    return setup


def _damaged(damage: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        _artifact(tmp)
        damage(tmp / "art")
    return setup


def _write(rel: str, data: bytes) -> Callable[[Path], None]:
    return lambda art: (art / rel).write_bytes(data)


def _remove(rel: str) -> Callable[[Path], None]:
    return lambda art: (art / rel).unlink()


def _state_without(key: str) -> Callable[[Path], None]:
    def damage(art: Path) -> None:
        path = art / "states" / "s" / "state.json"
        doc = json.loads(path.read_text())
        del doc[key]
        path.write_text(json.dumps(doc))
    return damage


def _state_with(**fields) -> Callable[[Path], None]:
    return _damaged(_json_with("states/s/state.json", fields))


def _record_with(**fields) -> Callable[[Path], None]:
    return _damaged(_json_with("record/record.json", fields))


def _json_with(rel: str, fields: dict) -> Callable[[Path], None]:
    def damage(art: Path) -> None:
        doc = json.loads((art / rel).read_text())
        (art / rel).write_text(json.dumps({**doc, **fields}))
    return damage


def _judged(doc) -> Callable[[Path], None]:
    """A minimise.json beside the artifact's state: `doc` as JSON, or text as it is."""
    text = doc if isinstance(doc, str) else json.dumps(doc)
    return _damaged(_write("states/s/minimise.json", text.encode()))


def _mkdir(rel: str) -> Callable[[Path], None]:
    return lambda tmp: (tmp / rel).mkdir(parents=True)


def _file(rel: str, data: bytes = b"") -> Callable[[Path], None]:
    return lambda tmp: (tmp / rel).write_bytes(data)


def _device(rel: str = "null") -> Callable[[Path], None]:
    """A character device of the test's own, made as /dev/null is (never the machine's: an
    atomic replace once turned the real one into a regular file)."""
    return lambda tmp: os.mknod(tmp / rel, stat.S_IFCHR | 0o666, os.makedev(1, 3))


def _fifo(rel: str = "fifo") -> Callable[[Path], None]:
    return lambda tmp: os.mkfifo(tmp / rel)


LONG = "x" * 300  # longer than any file name may be


# --- the probes ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Probe:
    """`argv` with {tmp} for the test's directory; `names`: what the one line must mention."""

    id: str
    argv: str
    code: int
    names: str
    setup: Callable[[Path], None] | None = None


PROBES = [
    # plugpull crash: every setting
    Probe("fs", "crash --fs btrfsx", 2, "btrfsx"),
    Probe("mode", "crash --mode writeback", 2, "writeback"),
    Probe("workload", "crash --workload fsync-fils", 2, "fsync-fils"),
    Probe("model", "crash --model rorder", 2, "rorder"),
    Probe("model-empty", "crash --model=", 2, "--model"),
    Probe("model-comma", "crash --model ,", 2, "--model"),
    Probe("model-cache-size", "crash --model cache:abc", 2, "cache:abc"),
    Probe("states-0", "crash --states 0", 2, "--states"),
    Probe("states-text", "crash --states many", 2, "many"),
    Probe("seed", "crash --seed -1", 2, "--seed"),
    Probe("cuts", "crash --cuts sometimes", 2, "sometimes"),
    Probe("trigger", "crash --trigger acks:0", 2, "acks:0"),
    Probe("trigger-kind", "crash --trigger soon", 2, "soon"),
    Probe("batch", "crash --batch -1", 2, "--batch"),
    Probe("workers-negative", "crash --workers -1", 2, "--workers"),
    Probe("workers-huge", "crash --workers 1000", 2, "--workers"),
    Probe("disk-mib", "crash --disk-mib 10", 2, "--disk-mib"),
    Probe("bus", "crash --bus scsi", 2, "scsi"),
    Probe("accel", "crash --accel hvf", 2, "hvf"),
    # workload parameters
    Probe("param-text", "crash --param count=abc", 2, "count"),
    Probe("param-negative", "crash --param count=-5", 2, "count"),
    Probe("param-zero", "crash --param count=0", 2, "count"),
    Probe("param-unknown", "crash --param files=5", 2, "files"),
    Probe("param-no-value", "crash --param count", 2, "count"),
    Probe("param-sqlite-journal", "crash --workload sqlite --param journal=truncate", 2, "journal"),
    Probe("param-tree-files", "crash --workload tree-extract --param files=0", 2, "files"),
    # where results go
    Probe("json-no-parent", "crash --json {tmp}/nowhere/out.json", 2, "nowhere"),
    Probe("json-is-dir", "crash --json {tmp}/json-dir", 2, "--json {tmp}/json-dir: a directory", _mkdir("json-dir")),
    Probe("out-is-file", "crash --out {tmp}/out-file", 2, "--out {tmp}/out-file: a regular file, not a directory",
          _file("out-file")),
    # --log-file: checked inside the error handling, nothing left behind when a command is refused
    Probe("log-file-dir", "doctor --log-file {tmp}/d", 2, "--log-file {tmp}/d: a directory", _mkdir("d")),
    Probe("log-file-parent-file", "doctor --log-file {tmp}/f/run.log", 2, "--log-file", _file("f")),
    Probe("log-file-proc", "doctor --log-file /proc/nowhere/run.log", 2, "--log-file /proc/nowhere/run.log: cannot write"),
    Probe("log-file-device", "report {tmp}/r.jsonl --log-file {tmp}/null", 2, "a character device", _device()),
    Probe("log-file-fifo", "doctor --log-file {tmp}/fifo", 2, "a FIFO, not a regular file", _fifo()),
    Probe("log-file-too-long", "doctor --log-file {tmp}/" + LONG, 2, "File name too long"),
    Probe("log-file-refused-run", "crash --json {tmp}/nowhere/x.json --log-file {tmp}/new/dir/run.log", 2, "nowhere"),
    # outputs: tried before the run, never a device, a FIFO, /proc or a name too long
    Probe("json-device", "crash --json {tmp}/null", 2, "--json {tmp}/null: a character device", _device()),
    Probe("json-fifo", "crash --json {tmp}/fifo", 2, "--json {tmp}/fifo: a FIFO", _fifo()),
    Probe("json-proc", "crash --json /proc/plugpull.json", 2, "--json /proc/plugpull.json: cannot write in /proc"),
    Probe("json-too-long", "crash --json {tmp}/" + LONG, 2, "--json {tmp}/x"),
    Probe("out-proc", "crash --out /proc/plugpull", 2, "--out /proc/plugpull: cannot write"),
    Probe("out-too-long", "crash --out {tmp}/" + LONG, 2, "File name too long"),
    Probe("out-device", "crash --out {tmp}/null", 2, "--out {tmp}/null: a character device, not a directory",
          _device()),
    Probe("matrix-results-proc", "matrix --results /proc/plugpull/r.jsonl", 2, "--results /proc/plugpull/r.jsonl"),
    Probe("matrix-results-device", "matrix --results {tmp}/null", 2, "--results {tmp}/null: a character device",
          _device()),
    Probe("matrix-results-too-long", "matrix --results {tmp}/" + LONG + "/r.jsonl", 2, "File name too long"),
    Probe("matrix-report-device", "matrix --report {tmp}/null", 2, "--report {tmp}/null", _device()),
    Probe("matrix-report-proc", "matrix --report /proc/plugpull", 2, "--report /proc/plugpull"),
    Probe("faults-json-device", "faults --fault error-writes --json {tmp}/null", 2, "--json {tmp}/null", _device()),
    Probe("faults-out-proc", "faults --fault error-writes --out /proc/plugpull", 2, "--out /proc/plugpull"),
    Probe("faults-results-proc", "faults --fault error-writes --results /proc/p/r.jsonl", 2, "--results /proc/p"),
    Probe("faults-report-fifo", "faults --fault error-writes --report {tmp}/fifo", 2, "--report {tmp}/fifo", _fifo()),
    Probe("reproduce-report-proc", "reproduce {tmp}/case.toml --report /proc/plugpull", 2, "--report", _case()),
    Probe("report-out-proc", "report {tmp}/r.jsonl --out /proc/plugpull", 2, "--out /proc/plugpull", _file("r.jsonl")),
    Probe("minimise-out-proc", "minimise {tmp}/art/states/s --out /proc/plugpull", 2, "--out /proc/plugpull",
          _artifact),
    # --kernel
    Probe("kernel-missing", "crash --kernel {tmp}/bz --modules {tmp}/m", 2, "bz", _mkdir("m")),
    Probe("kernel-no-modules", "crash --kernel {tmp}/bz", 2, "--modules", _file("bz", b"x" * 4096)),
    Probe("kernel-not-a-kernel", "crash --kernel {tmp}/bz --modules {tmp}/m", 2, "bz",
          lambda tmp: (_file("bz", b"not a kernel\n" * 400)(tmp), _mkdir("m")(tmp))),
    # plugpull matrix
    Probe("matrix-fs", "matrix --fs xfs,zfs", 2, "zfs"),
    Probe("matrix-mode-empty", "matrix --mode ,", 2, "--mode"),
    Probe("matrix-param-prefix", "matrix --param fsync-fles.count=5", 2, "fsync-fles"),
    Probe("matrix-param-not-run", "matrix --workload tree-extract --param fsync-files.count=5", 2, "fsync-files"),
    Probe("matrix-param-no-prefix", "matrix --param count=5", 2, "count"),
    Probe("matrix-param-range", "matrix --param fsync-files.count=-5", 2, "count"),
    Probe("matrix-profile", "matrix --disk-profile floppy", 2, "floppy"),
    Probe("matrix-results-dir", "matrix --results {tmp}/results-dir", 2, "--results {tmp}/results-dir: a directory",
          _mkdir("results-dir")),
    Probe("matrix-results-parent-file", "matrix --results {tmp}/plain-file/r.jsonl", 2,
          "--results {tmp}/plain-file/r.jsonl: {tmp}/plain-file is not a directory", _file("plain-file")),
    Probe("matrix-real-disk", "matrix --real-disk {tmp}/plain-file", 2,
          "--real-disk {tmp}/plain-file: not a block device", _file("plain-file")),
    # plugpull replay
    Probe("replay-missing", "replay {tmp}/nothing", 2, "nothing"),
    Probe("replay-no-state", "replay {tmp}/d", 2, "state.json", _mkdir("d")),
    Probe("replay-state-not-json", "replay {tmp}/art/states/s", 2, "state.json",
          _damaged(_write("states/s/state.json", b"{not json"))),
    Probe("replay-state-no-record", "replay {tmp}/art/states/s", 2, "record",
          _damaged(_state_without("record"))),
    Probe("replay-state-no-cut", "replay {tmp}/art/states/s", 2, "cut", _damaged(_state_without("cut"))),
    Probe("replay-gzip-corrupt", "replay {tmp}/art/states/s", 2, "write.log.gz",
          _damaged(_write("record/write.log.gz", b"\x1f\x8b\x08\0garbage"))),
    Probe("replay-log-missing", "replay {tmp}/art/states/s", 2, "write.log.gz",
          _damaged(_remove("record/write.log.gz"))),
    Probe("replay-log-not-a-log", "replay {tmp}/art/states/s", 2, "write.log.gz",
          _damaged(_write("record/write.log.gz", gzip.compress(b"not a log\n" * 400)))),
    Probe("replay-cut-beyond-log", "replay {tmp}/art/states/s", 2, "cut",
          _damaged(_write("record/write.log.gz", gzip.compress(b"\0" * 4096)))),
    Probe("replay-base-missing", "replay {tmp}/art/states/s", 2, "base.qcow2", _damaged(_remove("record/base.qcow2"))),
    Probe("replay-base-corrupt", "replay {tmp}/art/states/s", 2, "base.qcow2",
          _damaged(_write("record/base.qcow2", b"QFI\xfbgarbage"))),
    Probe("replay-record-missing", "replay {tmp}/art/states/s", 2, "record.json",
          _damaged(_remove("record/record.json"))),
    Probe("replay-record-not-json", "replay {tmp}/art/states/s", 2, "record.json",
          _damaged(_write("record/record.json", b"\x00\x01"))),
    # saved states, records and minimise.json: validated by a schema, the file and field named
    Probe("state-record-int", "replay {tmp}/art/states/s", 2, "state.json: record: Input should be a valid string",
          _state_with(record=5)),
    Probe("state-model-bogus", "replay {tmp}/art/states/s", 2, "state.json: model: unknown power-loss model 'bogus'",
          _state_with(model="bogus")),
    Probe("state-seed-text", "replay {tmp}/art/states/s", 2, "state.json: seed: Input should be a valid integer",
          _state_with(seed="one")),
    Probe("state-list", "replay {tmp}/art/states/s", 2, "state.json: not a saved crash state (a JSON list",
          _damaged(_write("states/s/state.json", b"[1, 2]"))),
    Probe("state-fs", "replay {tmp}/art/states/s", 2, "state.json: fs: unknown filesystem 'zfs'", _state_with(fs="zfs")),
    Probe("state-verdict", "replay {tmp}/art/states/s", 2, "state.json: verdict", _state_with(verdict=3)),
    Probe("state-cut-negative", "replay {tmp}/art/states/s", 2, "state.json: cut", _state_with(cut=-1)),
    Probe("state-seed-huge", "replay {tmp}/art/states/s", 2, "state.json: seed", _state_with(seed=2**40)),
    Probe("minimise-state-record-int", "minimise {tmp}/art/states/s", 2, "state.json: record", _state_with(record=5)),
    Probe("minimise-state-seed-text", "minimise {tmp}/art/states/s", 2, "state.json: seed", _state_with(seed="one")),
    Probe("record-params-int", "replay {tmp}/art/states/s", 2, "record.json: params", _record_with(params=5)),
    Probe("record-acks-text", "replay {tmp}/art/states/s", 2, "record.json: acks", _record_with(acks="x")),
    Probe("record-ack-field", "replay {tmp}/art/states/s", 2, "record.json: acks[0].ident",
          _record_with(acks=[{"ident": "x", "stamp": 1, "position": 1}])),
    Probe("record-workload-unknown", "replay {tmp}/art/states/s", 2, "record.json: workload, params: unknown workload",
          _record_with(workload="fsync-fils")),
    Probe("record-param-bad", "replay {tmp}/art/states/s", 2, "record.json: workload, params: bad parameters for "
          "workload fsync-files: count=0", _record_with(params={"count": 0})),
    Probe("record-stack", "replay {tmp}/art/states/s", 2, "record.json: stack", _record_with(stack="raid99")),
    Probe("minimise-judged-int", "minimise {tmp}/art/states/s", 2, "minimise.json: judged",
          _judged({"version": 1, "state": "0" * 64, "judged": 5})),
    Probe("minimise-judged-answer", "minimise {tmp}/art/states/s", 2, "minimise.json: judged.k.verdict",
          _judged({"version": 1, "state": "0" * 64, "judged": {"k": {"verdict": 1, "reason": ""}}})),
    Probe("minimise-judged-list", "minimise {tmp}/art/states/s", 2, "minimise.json: not the plans", _judged("[1]")),
    Probe("minimise-judged-not-json", "minimise {tmp}/art/states/s", 2, "minimise.json: not readable as JSON",
          _judged("{half")),
    Probe("replay-case-record-damaged", "reproduce {tmp}/case.toml", 2, "[replay] record: ",
          lambda tmp: (_replay_case()(tmp), _json_with("art/record/record.json", {"acks": 5})(tmp))),
    # plugpull reproduce: case files
    Probe("case-missing", "reproduce {tmp}/none.toml", 2, "none.toml"),
    Probe("case-dir", "reproduce {tmp}/case-dir", 2, "{tmp}/case-dir: a directory, not a case file",
          _mkdir("case-dir")),
    Probe("case-binary", "reproduce {tmp}/case.toml", 2, "case.toml", _file("case.toml", b"\x7fELF\x02\x01\x00\xff\xfe")),
    Probe("case-not-toml", "reproduce {tmp}/case.toml", 2, "case.toml", _case(top="title = \n")),
    Probe("case-crash-int", "reproduce {tmp}/case.toml", 2, "crash", _case(top="crash = 5\n")),
    Probe("case-models-int", "reproduce {tmp}/case.toml", 2, "models", _case("[crash]\nmodels = [3]\n")),
    Probe("case-trigger-int", "reproduce {tmp}/case.toml", 2, "trigger", _case("[crash]\ntrigger = 30\n")),
    Probe("case-workload-int", "reproduce {tmp}/case.toml", 2, "workload", _case(top="workload = 5\n")),
    Probe("case-workload-table-int", "reproduce {tmp}/case.toml", 2, "fsync-files",
          _case("[workload]\nfsync-files = 5\n")),
    Probe("case-param-text", "reproduce {tmp}/case.toml", 2, "count",
          _case("[workload.fsync-files]\ncount = \"abc\"\n")),
    Probe("case-param-negative", "reproduce {tmp}/case.toml", 2, "count",
          _case("[workload.fsync-files]\ncount = -5\n")),
    Probe("case-unknown-field", "reproduce {tmp}/case.toml", 2, "colour", _case(top="colour = 1\n")),
    Probe("case-mode", "reproduce {tmp}/case.toml", 2, "writeback",
          lambda tmp: (tmp / "case.toml").write_text(CASE.replace('"barrier"', '"writeback"'))),
    Probe("case-scale", "reproduce {tmp}/case.toml --scale 0", 2, "--scale", _case()),
    Probe("replay-case-no-record", "reproduce {tmp}/case.toml", 2, "nowhere: no such record directory",
          _replay_case(record="nowhere")),
    Probe("replay-case-cut", "reproduce {tmp}/case.toml", 2, "[replay] cut", _replay_case(cut=9)),
    Probe("replay-case-model", "reproduce {tmp}/case.toml", 2, "[replay] model", _replay_case(model="shuffle")),
    Probe("replay-case-seed-huge", "reproduce {tmp}/case.toml", 2, "[replay] seed: Input should be less than or equal "
          "to 4294967295", lambda tmp: (_replay_case()(tmp), _file("case.toml", (tmp / "case.toml").read_bytes()
                                                                   + b"seed = 99999999999\n")(tmp))),
    Probe("replay-case-culprits-twice", "reproduce {tmp}/case.toml", 2, "[replay] culprits: 1 is given twice",
          lambda tmp: (_replay_case()(tmp), _file("case.toml", (tmp / "case.toml").read_bytes()
                                                  + b'reference = "prefix"\nculprits = [1, 1]\n')(tmp))),
    Probe("replay-case-results", "reproduce {tmp}/case.toml --results {tmp}/r.jsonl", 2, "--results", _replay_case()),
    Probe("case-results-dir", "reproduce {tmp}/case.toml --results {tmp}/results-dir", 2,
          "--results {tmp}/results-dir: a directory", lambda tmp: (_case()(tmp), _mkdir("results-dir")(tmp))),
    # numbers: one rule (ASCII digits, a range) for every option, spelled value and parameter
    Probe("param-superscript", "crash --param count=²", 2, "count='²': expected a whole number from 1 to 1000000"),
    Probe("param-double-dash", "crash --param count=--5", 2, "count='--5': expected a whole number from 1"),
    Probe("param-caret", "crash --param count=10^23", 2, "count='10^23': expected a whole number from 1"),
    Probe("param-5000-digits", "crash --param count=" + "9" * 5000, 2, "(5002 characters): expected a whole number"),
    Probe("param-too-big", "crash --param count=100000000000000000000000", 2, "from 1 to 1000000"),
    Probe("param-seed-too-big", "crash --param seed=99999999999", 2, "seed=99999999999: expected a whole number "
          "from 0 to 4294967295"),
    Probe("param-twice", "crash --param count=1 --param count=2", 2, "count is given twice"),
    Probe("matrix-param-superscript", "matrix --param fsync-files.count=²", 2, "count='²'"),
    Probe("faults-param-superscript", "faults --fault error-writes --param size_kib=²", 2, "size_kib='²'"),
    Probe("states-huge", "crash --states 1000001", 2, "--states: expected a whole number from 1 to 1000000"),
    Probe("seed-huge", "crash --seed 4294967296", 2, "--seed: expected a whole number from 0 to 4294967295"),
    Probe("budget-5000-digits", "crash --budget " + "9" * 5000, 2, "--budget: expected a whole number from 0"),
    Probe("disk-mib-huge", "crash --disk-mib 999999999999", 2, "--disk-mib: expected a whole number from 64 to 1048576"),
    Probe("batch-huge", "crash --batch 1001", 2, "--batch: expected a whole number from 0 to 1000"),
    Probe("trigger-superscript", "crash --trigger acks:²", 2, "acks:N (N from 1 to 1000000000)"),
    Probe("trigger-5000-digits", "crash --trigger writes:" + "9" * 5000, 2, "--trigger"),
    Probe("trigger-time-inf", "crash --trigger time:inf", 2, "time:SECONDS (at most 86400)"),
    Probe("cuts-superscript", "crash --cuts every:²", 2, "after ':' expected a whole number from 1 to 1000000"),
    Probe("model-cache-0", "crash --model cache:0", 2, "expected a whole number from 1 to 1048576, got '0'"),
    Probe("model-cache-superscript", "crash --model cache:²", 2, "--model: cache size"),
    Probe("lose-disk-superscript", "crash --stack md-raid1 --lose-disk ²", 2, "member number from 0 to 63"),
    Probe("faults-runs-0", "faults --fault error-writes --runs 0", 2, "--runs: expected a whole number from 1 to 10000"),
    Probe("faults-cuts-huge", "faults --fault error-writes --power-loss prefix --cuts 1000001", 2, "--cuts: expected"),
    Probe("faults-seed-superscript", "faults --fault corrupt-writes,seed=²", 2, "seed"),
    Probe("faults-flaky-huge", "faults --fault flaky:" + "9" * 5000 + ":1", 2, "from 0 to 86400"),
    Probe("faults-window-inf", "faults --fault error-writes+inf", 2, "from 0 to 86400"),
    Probe("minimise-batch-0", "minimise {tmp}/x --batch 0", 2, "--batch: expected a whole number from 1 to 64"),
    Probe("shell-disk-mib", "shell --disk-mib 2000000", 2, "--disk-mib: expected a whole number from 64 to 1048576"),
    Probe("scale-superscript", "reproduce {tmp}/case.toml --scale ²", 2, "--scale: expected a number above 0"),
    Probe("case-param-too-big", "reproduce {tmp}/case.toml", 2, "[workload.fsync-files]: bad parameters",
          _case("[workload.fsync-files]\ncount = 100000000000000000000\n")),
    Probe("case-trigger-superscript", "reproduce {tmp}/case.toml", 2, "case.toml: [crash] trigger: bad trigger 'acks:²'",
          _case('[crash]\ntrigger = "acks:²"\n')),
    Probe("case-lose-disk-superscript", "reproduce {tmp}/case.toml", 2, "case.toml: [crash] lose_disk: '²': expected a "
          "member number from 0 to 63", _case('[crash]\nstack = "md-raid1"\nlose_disk = "²"\n')),
    Probe("case-fault-flaky-huge", "reproduce {tmp}/case.toml", 2, "case.toml: [faults] kinds[0]",
          lambda tmp: (tmp / "case.toml").write_text('title = "t"\n' + FAULTS_TABLE.replace(
              '"error-writes"', '"flaky:99999999999999999999:1"'))),
    Probe("replay-case-cut-negative", "reproduce {tmp}/case.toml", 2, "[replay] cut: Input should be greater than or "
          "equal to 0", _replay_case(cut=-1)),
    Probe("case-model-cache-0", "reproduce {tmp}/case.toml", 2, "[crash] models[0]",
          _case('[crash]\nmodels = ["cache:0"]\n')),
    # nothing vacuous: a run with nothing to do, an option that does nothing, a list with a value twice
    Probe("matrix-nothing-to-do", "matrix --no-throughput --no-crash", 2, "leave nothing to measure"),
    Probe("matrix-erase-alone", "matrix --erase-real-disk", 2, "--erase-real-disk consents to erasing --real-disk, "
          "and no --real-disk is given"),
    Probe("matrix-real-disk-unused", "matrix --real-disk {tmp}/null --erase-real-disk --no-throughput", 2,
          "--real-disk runs the throughput side, and --no-throughput drops it", _device()),
    Probe("faults-cuts-alone", "faults --fault error-writes --cuts 3", 2, "--cuts is for --power-loss"),
    Probe("model-twice", "crash --model reorder,reorder", 2, "argument --model: reorder is given twice"),
    Probe("model-same-meaning", "crash --model cache,cache:8:fifo", 2, "cache:8:fifo is given twice (the same as cache)"),
    Probe("matrix-fs-twice", "matrix --fs xfs,xfs", 2, "argument --fs: xfs is given twice"),
    Probe("matrix-mode-twice", "matrix --mode barrier,nocache,barrier", 2, "argument --mode: barrier is given twice"),
    Probe("matrix-workload-twice", "matrix --workload sqlite,sqlite", 2, "argument --workload: sqlite is given twice"),
    Probe("faults-fault-twice", "faults --fault error-writes --fault error-writes", 2,
          "bad --fault: error-writes is given twice"),
    Probe("faults-fault-same-meaning", "faults --fault corrupt-writes --fault corrupt-writes,seed=1", 2,
          "bad --fault: corrupt-writes,seed=1 is given twice"),
    Probe("faults-seed-twice", "faults --fault corrupt-writes,seed=1,seed=2", 2, "seed: given twice"),
    Probe("faults-fs-twice", "faults --fault error-writes --fs ext4,ext4", 2, "bad --fs: ext4 is given twice"),
    Probe("faults-power-loss-twice", "faults --fault error-writes --power-loss prefix,prefix", 2,
          "bad --power-loss: prefix is given twice"),
    Probe("case-models-twice", "reproduce {tmp}/case.toml", 2, "[crash] models: reorder is given twice",
          _case('[crash]\nmodels = ["reorder", "reorder"]\n')),
    Probe("case-modes-twice", "reproduce {tmp}/case.toml", 2, "[matrix] modes: barrier is given twice",
          lambda tmp: (tmp / "case.toml").write_text(CASE.replace('["barrier"]', '["barrier", "barrier"]'))),
    Probe("case-expect-infra-error", "reproduce {tmp}/case.toml", 2, "[expect] verdicts.barrier: unknown verdict "
          "'infra-error' (a harness failure, never a verdict)", _case('[expect]\nverdicts = {barrier = "infra-error"}\n')),
    Probe("case-expect-safe-and-unsafe", "reproduce {tmp}/case.toml", 2, "[expect] safe: barrier is in unsafe too",
          _case('[expect]\nunsafe = ["barrier"]\nsafe = ["barrier"]\n')),
    Probe("case-expect-safe-twice", "reproduce {tmp}/case.toml", 2, "[expect] safe[1]: barrier is given twice",
          _case('[expect]\nsafe = ["barrier", "barrier"]\n')),
    Probe("case-extlog-ext4", "reproduce {tmp}/case.toml", 2, "case.toml: [matrix] modes extlog is implemented for "
          "xfs only, not ext4 ([matrix] fs)", lambda tmp: (tmp / "case.toml").write_text(
              CASE.replace('"xfs"', '"ext4"').replace('"barrier"', '"extlog"'))),
    Probe("case-lose-disk-no-stack", "reproduce {tmp}/case.toml", 2, "case.toml: [crash] lose_disk 1: it takes a member "
          "out of a [crash] stack", _case('[crash]\nlose_disk = "1"\n')),
    Probe("case-faults-cuts-alone", "reproduce {tmp}/case.toml", 2, "case.toml: [faults] cuts: is for power_loss",
          lambda tmp: (tmp / "case.toml").write_text('title = "t"\n' + FAULTS_TABLE + "cuts = 3\n")),
    Probe("extlog-ext4", "crash --fs ext4 --mode extlog", 2, "--mode extlog is implemented for xfs only, not ext4"),
    Probe("extlog-btrfs-matrix", "matrix --fs xfs,btrfs --mode extlog", 2, "xfs only, not btrfs"),
    Probe("hosts-bad-uri", "crash --hosts bogus://x", 2, "bad --hosts 'bogus://x': expected a libvirt QEMU URI"),
    Probe("hosts-twice", "matrix --hosts qemu:///system,qemu:///system", 2, "--hosts names a host twice"),
    # values from closed sets and files read: one line, the known values, never a FIFO read
    Probe("accel-listed", "crash --accel hvf", 2, "argument --accel: expected one of auto, kvm, tcg, got 'hvf'"),
    Probe("write-cache", "shell --write-cache maybe", 2, "argument --write-cache: expected on or off, got 'maybe'"),
    Probe("case-fifo", "reproduce {tmp}/fifo", 2, "fifo: a FIFO, not a regular file", _fifo()),
    Probe("report-fifo", "report {tmp}/fifo", 2, "fifo: a FIFO, not a regular file", _fifo()),
    Probe("report-reference-device", "report {tmp}/r.jsonl --reference {tmp}/null", 2, "--reference {tmp}/null: a "
          "character device", lambda tmp: (_file("r.jsonl")(tmp), _device()(tmp))),
    Probe("minimise-judged-fifo", "minimise {tmp}/art/states/s", 2, "minimise.json: a FIFO, not a regular file",
          _damaged(lambda art: os.mkfifo(art / "states/s/minimise.json"))),
    Probe("kernel-fifo", "crash --kernel {tmp}/fifo --modules {tmp}/d", 2, "--kernel {tmp}/fifo: a FIFO",
          lambda tmp: (_fifo()(tmp), _mkdir("d")(tmp))),
    Probe("report-reference-missing", "report {tmp}/r.jsonl --reference {tmp}/none.jsonl", 2,
          "--reference {tmp}/none.jsonl: no such results file", _file("r.jsonl")),
    Probe("report-only-bad-lines", "report {tmp}/r.jsonl", 2, "holds no matrix cells or fault runs (is it written by "
          "`plugpull matrix` or `plugpull faults`?); 2 lines skipped, the first: {tmp}/r.jsonl:1: skipped, not valid JSON",
          _file("r.jsonl", b"{half\n[1]\n")),
    # plugpull report
    Probe("report-missing", "report {tmp}/none.jsonl", 2, "none.jsonl"),
    Probe("report-dir", "report {tmp}/results-dir", 2, "{tmp}/results-dir holds no matrix cells",
          _mkdir("results-dir")),
]


def run_probe(probe: Probe, tmp: Path) -> int:
    """Exit code of `plugpull ARGV`, in process, with boots forbidden."""
    return exit_code([a.replace(TMP, str(tmp)) for a in probe.argv.split()])


@pytest.fixture
def sandbox(own_workdir, monkeypatch):
    """A working directory and an image cache of the test's own, and no guest boots."""
    for module in (cli.crash, matrix_mod, caserun, cli.guests, rig_mod):
        monkeypatch.setattr(module, "prepare_rig", _no_boot)
    monkeypatch.setattr("plugpull.guest.image.build.build_image", _no_boot)
    return own_workdir


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.id)
def test_bad_input_is_refused_in_one_line(probe, sandbox, capsys):
    if probe.setup:
        probe.setup(sandbox)
    before = files_under(sandbox)
    code = run_probe(probe, sandbox)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == probe.code, err
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert probe.names.replace(TMP, str(sandbox)) in lines[0], err
    assert files_under(sandbox) == before, "the probe created files"
    assert not (sandbox.parent / "cache").exists()


def test_the_atomic_replace_never_replaces_a_device_node_or_a_fifo(tmp_path):
    _device()(tmp_path)
    _fifo()(tmp_path)
    for name in ("null", "fifo"):
        with pytest.raises(NotReplaceable, match="not a regular file"):
            atomic_write(tmp_path / name, "data")
    assert stat.S_ISCHR(os.stat(tmp_path / "null").st_mode) and stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)
    with pytest.raises(NotReplaceable, match="not a directory"):
        with atomic_path(tmp_path / "null", directory=True):
            pass
    (tmp_path / "link").symlink_to(tmp_path / "null")
    with pytest.raises(NotReplaceable, match="a symbolic link to .*null"):
        atomic_write(tmp_path / "link", "data")
    with pytest.raises(UsageError, match="--json .*link: a symbolic link"):
        check_output(tmp_path / "link", "--json")
    assert (tmp_path / "link").is_symlink() and stat.S_ISCHR(os.stat(tmp_path / "null").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link", "null"], "a temporary was left behind"
    atomic_write(tmp_path / "file", "one")
    atomic_write(tmp_path / "file", "two")
    assert (tmp_path / "file").read_text() == "two"


def test_an_output_check_passes_a_new_name_and_a_regular_file_and_leaves_nothing(tmp_path):
    (tmp_path / "old.json").write_text("{}")
    assert check_output(tmp_path / "old.json", "--json") == tmp_path / "old.json"
    check_output(tmp_path / "new.json", "--json")
    check_output(tmp_path / "a" / "b" / "r.jsonl", "--results", parents=True)
    check_output(tmp_path / "out", "--out", directory=True, parents=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]
    with pytest.raises(UsageError, match="does not exist"):
        check_output(tmp_path / "a" / "r.jsonl", "--results")


# --- every number by one rule ------------------------------------------------------------------

BAD_NUMBERS = {"minus-one": "-1", "superscript": "\u00b2", "double-dash": "--5", "5000-digits": "9" * 5000}
POSITIONALS = {"replay": ["x"], "minimise": ["x"], "minimize": ["x"], "reproduce": ["x.toml"],
               "report": ["x.jsonl"], "faults": ["--fault", "error-writes"],
               "worker": ["--scheduler", "tcp://127.0.0.1:8786"], "hunt": ["--seq", "1"],
               "reproducer": ["gen:seq1-000253", "--fs", "xfs"],
               "bisect": ["x.sh", "--tree", "x", "--good", "a", "--bad", "b"], "kernels build": ["src:x"]}
RANGE = re.compile(r"from \d+ to \d+|above 0 and at most 1")


def numeric_options() -> list[tuple[str, str]]:
    """(command, option) for every option of every subcommand that takes a number, read from
    the parser: an int or float type, or one of plugpull's typed parsers marked numeric."""
    return [(command, action.option_strings[-1]) for command, p in cli.parser().leaves().items() for action in p._actions
            if action.option_strings and (action.type in (int, float) or getattr(action.type, "numeric", False))]


def _ids(pairs: list[tuple[str, str]]) -> list[str]:
    return [" ".join(pair) for pair in pairs]


def test_the_walk_finds_every_kind_of_numeric_option():
    found = set(numeric_options())
    assert {("crash", "--states"), ("crash", "--seed"), ("crash", "--workers"), ("matrix", "--disk-mib"),
            ("faults", "--runs"), ("faults", "--cuts"), ("minimise", "--batch"), ("shell", "--disk-mib"),
            ("reproduce", "--scale")} <= found
    assert ("crash", "--model") not in found and ("crash", "--json") not in found


@pytest.mark.parametrize("bad", BAD_NUMBERS.values(), ids=BAD_NUMBERS.keys())
@pytest.mark.parametrize("command, option", numeric_options(), ids=_ids(numeric_options()))
def test_every_numeric_option_refuses_a_bad_number_in_one_line(command, option, bad, sandbox, capsys):
    code = exit_code([*command.split(), f"{option}={bad}", *POSITIONALS.get(command, [])])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    [line] = err.strip().splitlines()
    assert f"argument {option}" in line and RANGE.search(line), line
    assert len(line) < 300, "a 5000-digit number is quoted cut short"
    assert list(sandbox.iterdir()) == []


def _whole_case_fields() -> list[tuple[str, str]]:
    """(section, field) of every case-file field that takes a whole number."""
    return [tuple(s.case.split(".")) for s in (*SETTINGS, *FAULT_SETTINGS) if s.case and isinstance(s.kind, Whole)]




@pytest.mark.parametrize("bad", ["-1", "100000000000000000000", '"\u00b2"', "1.5"])
@pytest.mark.parametrize("section, field", _whole_case_fields(), ids=_ids(_whole_case_fields()))
def test_every_numeric_case_field_refuses_a_bad_number(section, field, bad, sandbox, capsys):
    assert len(_whole_case_fields()) >= 7
    line = f"{field} = {bad}\n"
    body = {"matrix": CASE + line, "faults": 'title = "t"\n' + FAULTS_TABLE + line}.get(
        section, f"{CASE}[{section}]\n{line}")
    (sandbox / "case.toml").write_text(body)
    code = exit_code(["reproduce", str(sandbox / "case.toml")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    [line] = err.strip().splitlines()
    assert f"case.toml: [{section}] {field}" in line, line


@pytest.mark.parametrize("text, value", [("0", 0), ("1000000", 1000000), (" 7 ", 7)])
def test_the_one_number_rule_takes_ascii_digits_in_range(text, value):
    assert whole(text, 0, COUNT_MAX) == value


@pytest.mark.parametrize("text", ["-1", "\u00b2", "\u0663", "--5", "1_000", "+5", "1e3", "9" * 5000, "1000001", ""])
def test_the_one_number_rule_refuses_the_rest(text):
    with pytest.raises(ValueError, match="expected a whole number from 0 to 1000000"):
        whole(text, 0, COUNT_MAX)


def test_the_help_says_its_sentences_to_the_end(capsys):
    assert exit_code(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "2 bad input or a missing tool (nothing was changed)" in out and "never exit code 3." in out


def test_a_minimise_cache_of_another_state_is_set_aside_and_its_own_is_read(tmp_path):
    path = tmp_path / "minimise.json"
    answer = {"verdict": "data-loss", "reason": "r", "mount": "", "fsck": "", "lost": [1]}
    path.write_text(json.dumps({"version": 1, "state": "a" * 64, "judged": {"k": answer}}))
    assert load_cache(path, "a" * 64) == {"k": answer}
    assert load_cache(path, "b" * 64) == {}
    assert load_cache(tmp_path / "none.json", "a" * 64) == {}
    path.write_text(json.dumps({"version": 1, "state": "a" * 64, "judged": {"k": {**answer, "lost": "x"}}}))
    with pytest.raises(UsageError, match=r"minimise.json: judged.k.lost"):
        load_cache(path, "a" * 64)


def path_options(output: bool) -> list[tuple[str, str]]:
    """(command, option) for every option or argument of every subcommand that takes a path
    (`output`: a path plugpull writes), read from the parser."""
    kinds = (an_output,) if output else (a_path, a_state_dir, a_case_file, an_output)
    return [(command, (action.option_strings or [action.dest])[-1]) for command, p in cli.parser().leaves().items()
            for action in p._actions if action.type in kinds]


def test_the_walk_finds_every_kind_of_path_option():
    outputs, paths = set(path_options(True)), set(path_options(False))
    assert {("crash", "--json"), ("crash", "--out"), ("matrix", "--results"), ("matrix", "--report"),
            ("reproduce", "--report"), ("report", "--out"), ("faults", "--results"), ("minimise", "--out"),
            ("doctor", "--log-file"), ("faults", "--log-file")} <= outputs
    assert {("replay", "dir"), ("reproduce", "case"), ("crash", "--modules"), ("kernels build", "--config")} <= \
        paths - outputs
    assert {(command, "--tls-key") for command in ("crash", "matrix", "reproduce", "scheduler", "worker")} <= paths


@pytest.mark.parametrize("argv", [["crash", "--kernel", ""], ["crash", "--kernel", " "],
                                  ["matrix", "--kernel", ""], ["matrix", "--kernel", "host,,debian:6.12"]])
def test_an_empty_kernel_name_is_refused(argv, sandbox, capsys):
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    assert err.count("\n") == 1 and "--kernel" in err and ("empty" in err or "expected host" in err or "a space" in err)
    assert not any(Path().iterdir())


def _argv(command: str, option: str, value: str) -> list[str]:
    given = [value] if not option.startswith("-") else [f"{option}={value}"]
    rest = [] if not option.startswith("-") else POSITIONALS.get(command, [])
    return [*command.split(), *given, *rest]


@pytest.mark.parametrize("command, option", path_options(False), ids=_ids(path_options(False)))
def test_every_path_option_refuses_an_empty_path(command, option, sandbox, capsys):
    assert exit_code(_argv(command, option, "")) == 2
    err = capsys.readouterr().err
    [line] = err.strip().splitlines()
    assert f"argument {option}: expected a path, got ''" in line, line
    assert list(sandbox.iterdir()) == []


@pytest.mark.parametrize("setup, what", [(_device(), "a character device"), (_fifo("null"), "a FIFO")],
                         ids=["device", "fifo"])
@pytest.mark.parametrize("command, option", path_options(True), ids=_ids(path_options(True)))
def test_every_output_option_refuses_a_device_or_a_fifo_before_anything_runs(command, option, setup, what,
                                                                              sandbox, capsys):
    setup(sandbox)
    inputs = {"reproduce": ("case.toml", _case()), "report": ("r.jsonl", _file("r.jsonl")),
              "minimise": ("art/states/s", _artifact), "minimize": ("art/states/s", _artifact)}
    given, make = inputs.get(command, (None, None))
    if make:
        make(sandbox)
    before, mode = files_under(sandbox), os.stat(sandbox / "null").st_mode
    rest = [str(sandbox / given)] if given else POSITIONALS.get(command, [])
    assert exit_code([*command.split(), f"{option}={sandbox / 'null'}", *rest]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f"{option} {sandbox / 'null'}: {what}" in line, line
    assert os.stat(sandbox / "null").st_mode == mode and files_under(sandbox) == before


# --- what happens past the checks ------------------------------------------------------------

def _raising(error: BaseException):
    def command(*args):
        raise error
    return command


@pytest.mark.parametrize("error, line", [
    (OSError(28, "No space left on device", "/results/x/state.img"), "No space left on device: /results/x/state.img"),
    (ZeroDivisionError("division by zero"), "ZeroDivisionError: division by zero"),
    (NothingChecked("the recording holds none of the 40 acks"), "none of the 40 acks"),
])
def test_an_error_that_is_no_verdict_exits_3_in_one_line(error, line, monkeypatch, capsys):
    monkeypatch.setattr(cli.guests, "cmd_doctor", _raising(error))
    assert cli.main(["doctor"]) == 3
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()] and line in err and "Traceback" not in err


def test_with_v_the_unexpected_error_shows_its_traceback(monkeypatch, capsys):
    monkeypatch.setattr(cli.guests, "cmd_doctor", _raising(KeyError("state")))
    assert cli.main(["doctor", "-v"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].endswith("KeyError: 'state'")


@pytest.mark.parametrize("count, warned", [(10, True), (30, False)])
def test_a_trigger_beyond_the_workloads_acks_warns(count, warned, sandbox, capsys):
    with pytest.raises(Booted):
        cli.main(["crash", "--trigger", "acks:30", "--param", f"count={count}"])
    assert ("sends only 10 acks" in capsys.readouterr().err) is warned


def test_acks_promised_are_counted_from_the_power_cut_script():
    assert promised_acks(FsyncFiles(count=7)) == 7
    assert promised_acks(Sqlite(transactions=3)) == 3
    assert promised_acks(Bonnie()) == 0


@pytest.mark.parametrize("wl, acks, refused", [
    (FsyncFiles(count=3), [], True),
    (FsyncFiles(count=3), [Ack(1, 10, 2)], False),
    (Bonnie(), [], False),
])
def test_a_recording_without_acks_of_a_workload_that_sends_some_is_no_pass(wl, acks, refused, tmp_path):
    rec = Record(tmp_path, {}, acks)
    if refused:
        with pytest.raises(NothingChecked, match="no crash state could show data loss"):
            refuse_vacuous(rec, wl, "time:0.1")
    else:
        refuse_vacuous(rec, wl, "time:0.1")



def test_a_user_script_that_sent_no_ack_is_bad_input_with_the_reason(tmp_path):
    wl = Script(text="echo hello > f\n", check="exit 0\n")
    with pytest.raises(UsageError, match=r"the workload script sent no ack before the power cut \(end\): write a line "
                                         r"'ack ID' to fd 4"):
        refuse_vacuous(Record(tmp_path, {}, []), wl, "end")
    refuse_vacuous(Record(tmp_path, {}, [Ack(1, 10, 2)]), wl, "end")


@pytest.mark.parametrize("argv", [["crash"], ["matrix"], ["faults", "--fault", "error-writes"]], ids=lambda a: a[0])
def test_a_refusal_after_the_run_log_began_leaves_no_empty_results_dir(argv, sandbox, monkeypatch, capsys):
    monkeypatch.setattr(rig_mod, "prepare_rig", _raising(ToolMissing("qemu-img", "make deps")))
    monkeypatch.setattr(cli.crash, "prepare_rig", rig_mod.prepare_rig)
    monkeypatch.setattr(matrix_mod, "prepare_rig", rig_mod.prepare_rig)
    monkeypatch.setattr(caserun, "prepare_rig", rig_mod.prepare_rig)
    assert cli.main(argv) == 2
    assert "qemu-img is missing" in capsys.readouterr().err
    assert list(sandbox.iterdir()) == []


def test_a_run_log_beside_other_results_or_after_a_harness_failure_stays(tmp_path):
    (tmp_path / "r.jsonl").write_text("")
    with pytest.raises(UsageError):
        with run_log(tmp_path / "r.log"):
            raise UsageError("refused late")
    with pytest.raises(LaunchError):
        with run_log(tmp_path / "new" / "crash.log"):
            raise LaunchError("QEMU died")
    assert (tmp_path / "r.log").is_file() and (tmp_path / "new" / "crash.log").is_file()

def test_the_kernel_check_knows_a_bzimage_and_an_elf_vmlinux():
    bzimage = bytearray(4096)
    bzimage[0x202:0x206] = b"HdrS"
    assert kernel_format(bytes(bzimage)) == "bzimage"
    assert kernel_format(b"\x7fELF" + bytes(60)) == "elf"
    assert kernel_format(b"#!/bin/sh\n" * 100) is None
    assert kernel_format(b"") is None


def test_a_bzimage_passes_the_kernel_check(sandbox):
    bzimage = bytearray(4096)
    bzimage[0x202:0x206] = b"HdrS"
    (sandbox / "bz").write_bytes(bytes(bzimage))
    (sandbox / "m").mkdir()
    with pytest.raises(Booted):
        cli.main(["crash", "--kernel", str(sandbox / "bz"), "--modules", str(sandbox / "m")])


def _recording(where: Path, content: bytes) -> Record:
    where.mkdir(parents=True)
    (where / "base.img").write_bytes(bytes(1 << 20))
    with LogWriter(where / "write.log") as w:
        w.write(0, content * 512)
        w.flush()
    rec = Record(where, {"workload": "fsync-files", "params": {}}, [])
    rec.save()
    return rec


def test_runs_that_share_an_out_dir_keep_their_own_recordings(tmp_path):
    out = tmp_path / "out"
    first, second = _recording(tmp_path / "r1", b"\1" * 8), _recording(tmp_path / "r2", b"\2" * 8)
    a, b = saved_record(out, first), saved_record(out, second)
    assert a != b and a.name.startswith("record-") and b.name.startswith("record-")
    assert saved_record(out, first) == a
    assert load_record(b, tmp_path / "unpacked").log.read_bytes() == second.log.read_bytes()


@pytest.fixture
def new_image(tmp_path, monkeypatch):
    """A freshly built image in a cache directory of its own; no KVM probe."""
    where = tmp_path / "images" / "key"
    where.mkdir(parents=True)
    image = GuestImage("key", where / "kernel", where / "initramfs.cpio", "6.1", fresh=True)
    monkeypatch.setattr(rig_mod, "build_image", lambda kernel: image)
    monkeypatch.setattr(rig_mod, "resolve_accel", lambda accel, image: Decision(Accel.TCG, "test"))
    return image


def test_an_image_whose_first_boot_fails_leaves_the_cache(new_image):
    with pytest.raises(LaunchError):
        rig_mod.prepare_rig(Accel.TCG, None, FakeBackend([Plan(boots=False)]))
    assert not new_image.kernel.parent.exists()


def test_an_image_that_boots_stays_and_a_cached_one_is_not_booted_again(new_image, monkeypatch):
    backend = FakeBackend()
    rig_mod.prepare_rig(Accel.TCG, None, backend)
    assert new_image.kernel.parent.is_dir() and len(backend.guests) == 1
    monkeypatch.setattr(rig_mod, "build_image", lambda kernel: replace(new_image, fresh=False))
    rig_mod.prepare_rig(Accel.TCG, None, backend)
    assert len(backend.guests) == 1


def test_a_matrix_cell_that_checked_nothing_is_an_error_not_a_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix_mod, "measure_crash", _raising(NothingChecked("the recording holds no ack")))
    [cell] = matrix_mod.cells(CrashSpec(), ["xfs"], ["barrier"], ["fsync-files"], throughput=False)
    image = GuestImage("key", tmp_path / "kernel", tmp_path / "initramfs.cpio", "6.1")
    result = matrix_mod.run_cell(cell, rig_mod.Rig(image, Accel.TCG, FakeBackend()), tmp_path, tmp_path)
    assert result.crash is None and result.error.startswith("nothing checked")


@pytest.mark.vm
def test_a_state_of_a_run_that_reused_an_out_dir_replays_as_recorded(rig, tmp_path):
    """Two runs into one out dir: the second's artifacts rebuild from its own recording."""
    out = tmp_path / "out"
    runs = [run_crash(CrashSpec(mode="nobarrier", params=(("count", 8), ("seed", seed)), models=("drop-unflushed",),
                                states=3, trigger="acks:6", workers=1), rig, out) for seed in (1, 2)]
    saved = [s for s in runs[1].states if s.artifact]
    assert saved, "nobarrier lost nothing: no artifact to replay"
    assert len(list(out.glob("record-*"))) == 2
    r = replay(Path(saved[-1].artifact), rig, tmp_path / "replay")
    assert r["digest"] == r["digest_expected"]
    assert r["verdict"] == saved[-1].verdict
