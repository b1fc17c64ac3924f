"""Every setting of a crash run and of a matrix cell, declared once.

A row of `SETTINGS` drives the CLI option of `plugpull crash` and `plugpull matrix`, the
case file's field (validated by a model built from the same rows) and the JSON key, which is
the field's name in `CrashSpec` and `Cell`. A value is checked where it enters, by the row's
kind; below the CLI and the case loader nothing looks a name up again (`CrashSpec.resolve`).
"""

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.crash.record import Trigger
from plugpull.errors import UsageError
from plugpull.files import InputPath
from plugpull.options import Once, given
from plugpull.guest.contract.config import Bus
from plugpull.kernels.build.buildspec import is_build, parse_build
from plugpull.kernels.naming import HOST, parse_debian
from plugpull.powerloss.cuts import EXHAUSTIVE_MAX, cut_points
from plugpull.powerloss.models import parse_model, parse_user_model
from plugpull.testbed.fs import FILESYSTEMS, MODES, filesystem
from plugpull.testbed.profiles import DEFAULT as DEFAULT_PROFILE, load_profiles
from plugpull.testbed.stack import LAYERS, Stack, check_lose_disk
from plugpull.generate.space import space_of
from plugpull.generate.workload import PREFIX as GEN_PREFIX
from plugpull.testbed.workloads import SCRIPT_PREFIX, WORKLOADS
from plugpull.values import COUNT_MAX, MIB_MAX, SEED_MAX, checked_whole, names, once_each, shown, whole

# A disk's volatile cache as it is: 32 MiB, destaged in any order. `reorder` (any subset of all
# unflushed writes) is harsher: on XFS it can drop a log write far behind the head, beyond the
# in-flight window log recovery expects, and so finds unmountable states even with barriers.
DEFAULT_MODEL = "cache:32:random"
RECORDED_BUSES = (str(Bus.AHCI), str(Bus.IDE))
# Each checker guest is a QEMU process with its own RAM that keeps a core busy under TCG.
MAX_WORKERS = 16
BATCH_MAX = 1000  # crash states per checker guest boot


@dataclass(frozen=True)
class Choice:
    """One of a closed set of names."""

    what: str
    known: Callable[[], Iterable[str]]
    annotation = str

    def check(self, value):
        known = list(self.known())
        if value not in known:
            raise ValueError(f"unknown {self.what} {shown(value)}; known: {', '.join(known)}")
        return value

    parse = check


@dataclass(frozen=True)
class FilesystemName(Choice):
    """A filesystem, or a profile of one (`ext4+fast_commit`, testbed/features.py)."""

    def check(self, value):
        try:
            filesystem(value)
        except UsageError as e:
            raise ValueError(str(e)) from None
        return value

    parse = check


@dataclass(frozen=True)
class WorkloadName(Choice):
    """A built-in workload, the user's own as script:PATH (the file is read, and refused if it
    is missing or unreadable, where the run is set up: `spec.load_user_scripts`), or a
    generated one as gen:ID (docs/generate.md)."""

    def check(self, value):
        if isinstance(value, str) and value.startswith(GEN_PREFIX):
            try:
                space_of(value[len(GEN_PREFIX):]).parse(value[len(GEN_PREFIX):])
            except UsageError as e:
                raise ValueError(str(e)) from None
            return value
        if isinstance(value, str) and value.startswith(SCRIPT_PREFIX):
            if not value[len(SCRIPT_PREFIX):].strip():
                raise ValueError(f"{SCRIPT_PREFIX} needs the script's path: {SCRIPT_PREFIX}PATH")
            return value
        try:
            return super().check(value)
        except ValueError as e:
            raise ValueError(f"{e}; or {SCRIPT_PREFIX}PATH, your own shell script; or {GEN_PREFIX}ID, "
                             "a generated one") from None

    parse = check


@dataclass(frozen=True)
class Text:
    """Any text, e.g. a path read later."""

    annotation = str

    def check(self, value):
        return value

    parse = check


@dataclass(frozen=True)
class Whole:
    """A whole number from `minimum` to `maximum`, by the one rule of `plugpull.values`."""

    minimum: int
    maximum: int = COUNT_MAX
    annotation = int

    def check(self, value):
        return checked_whole(value, self.minimum, self.maximum)

    def parse(self, text: str):
        return whole(text, self.minimum, self.maximum)


@dataclass(frozen=True)
class Spelled:
    """A text in a small language of its own (a model, a trigger, cut points), checked by
    the parser that reads it later."""

    reader: Callable[[str], object]
    annotation = str

    def check(self, value):
        try:
            self.reader(value)
        except UsageError as e:
            raise ValueError(str(e)) from None
        return value

    parse = check


@dataclass(frozen=True)
class Switch:
    """On when the option is given (a CLI flag without a value; true or false in a case file)."""

    annotation = bool

    def check(self, value):
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {shown(value)}")
        return value

    def parse(self, text: str):
        if text not in ("true", "false"):
            raise ValueError(f"expected true or false, got {shown(text)}")
        return text == "true"


@dataclass(frozen=True)
class Setting:
    """`key`: the field in CrashSpec/Cell and the JSON key. `defaults`: per command
    ("crash", "matrix") that has the option. `many`: commands where the option is a
    comma-separated list. `case`: the case file's "section.field", if it has one."""

    key: str
    kind: object
    help: str
    defaults: dict = field(default_factory=dict)
    many: tuple[str, ...] = ()
    case: str | None = None
    case_default: object = None
    option: str | None = None

    @property
    def flag(self) -> str:
        return self.option or "--" + self.key.replace("_", "-")

    def parse(self, text: str, command: str):
        """The CLI's text for `command` -> the value (a tuple for a list option)."""
        if command not in self.many:
            return self.kind.parse(text)
        return once_each(tuple(self.kind.parse(item) for item in names(text)), meaning(self.key))


def meaning(key: str):
    """What makes two values of a list setting the same: a model by what it means (`cache`
    is `cache:8:fifo`), anything else by its spelling."""
    return model_meaning if key in ("models", "power_loss") else str


def model_meaning(text: str) -> str:
    return str(parse_model(text))


def _cuts(text: str) -> None:
    """"" (the default) means `--states` seeded cuts and the kill point."""
    try:
        if text:
            cut_points([], text, 1)
    except ValueError as e:
        raise UsageError(str(e)) from None


def kernel_name(text: str) -> None:
    """A case file's kernel: `host`, `debian:VERSION` or `build:NAME` (a kernel file needs --modules:
    CLI only)."""
    if text != HOST:
        try:
            parse_build(text) if is_build(text) else parse_debian(text)
        except UsageError as e:  # said where the name stands: the option or the case's field
            raise UsageError(str(e).removeprefix("--kernel ")) from None


def _model(text: str) -> None:
    try:
        parse_user_model(text)
    except ValueError as e:
        raise UsageError(str(e)) from None


SETTINGS = (
    Setting("fs", FilesystemName("filesystem", lambda: FILESYSTEMS), "filesystem under test, or one with feature "
            "options (ext4+fast_commit; plugpull doctor lists them)",
            {"crash": "xfs", "matrix": "xfs,ext4"}, many=("matrix",), case="matrix.fs"),
    Setting("mode", Choice("mode", lambda: MODES), "barrier / write-cache mode",
            {"crash": "barrier", "matrix": "barrier,nobarrier,nocache"}, many=("matrix",), case="matrix.modes"),
    Setting("workload", WorkloadName("workload", lambda: WORKLOADS),
            f"what runs in the guest: a built-in workload or {SCRIPT_PREFIX}PATH, your own shell script",
            {"crash": "fsync-files", "matrix": "tree-extract,fsync-files"}, many=("matrix",),
            case="matrix.workloads"),
    Setting("check_script", Text(), f"with a {SCRIPT_PREFIX}PATH workload: the shell script that checks each "
            "recovered filesystem and prints 'lost ID REASON' and 'inconsistent REASON' lines",
            {"crash": "", "matrix": ""}, case="crash.check_script", case_default=""),
    Setting("models", Spelled(_model), "power-loss models, comma-separated: prefix, drop-unflushed, reorder, "
            "cache[:MiB[:fifo|elevator|random]], torn; +lying to ignore flushes",
            {"crash": "reorder", "matrix": DEFAULT_MODEL}, many=("crash", "matrix"), case="crash.models",
            case_default=(DEFAULT_MODEL,), option="--model"),
    Setting("states", Whole(1), "cuts per model, drawn at random with the kill point (without --budget)",
            {"crash": "30", "matrix": "20"}, case="crash.states", case_default=20),
    Setting("budget", Whole(0), "distinct crash states per run, drawn from every cut instead of --states: "
            "the kill point, the cuts just before and after flushes and acks, then the rest at random; "
            "cuts that share a state come free (0: no budget)", {"crash": "0"}, case="crash.budget", case_default=0),
    Setting("exhaustive", Switch(), f"every cut under every model (refused above {EXHAUSTIVE_MAX} "
            "cuts x models unless --budget caps it)", {"crash": "false"}),
    Setting("seed", Whole(0, SEED_MAX), "seed of the cut points and the models", {"crash": "1", "matrix": "1"},
            case="crash.seed", case_default=1),
    Setting("trigger", Spelled(Trigger.parse), "when to pull the plug: acks:N, writes:N, time:SECONDS or end",
            {"crash": "acks:30", "matrix": "end"}, case="crash.trigger", case_default="end"),
    Setting("cuts", Spelled(_cuts), "cut points instead of --states random ones: flushes, every:N (writes), "
            "random:N, end, or a comma-separated union", {"crash": ""}),
    Setting("stack", Spelled(Stack.parse), "layers between the filesystem and the recorded disks, from the "
            f"disks up, comma-separated: {', '.join(LAYERS)} (md-* first)", {"crash": ""}, case="crash.stack",
            case_default=""),
    Setting("lose_disk", Spelled(check_lose_disk), "after the cut, leave this member of the --stack's array "
            "out (0, 1, ... or random, seeded) and check each state on the array assembled degraded",
            {"crash": ""}, case="crash.lose_disk", case_default=""),
    Setting("bus", Choice("bus", lambda: RECORDED_BUSES), "the disk's controller: ahci (SATA) or ide",
            {"crash": "ahci", "matrix": "ahci"}, case="matrix.bus", case_default="ahci"),
    Setting("disk_mib", Whole(64, MIB_MAX), "size of the disk under test", {"crash": "512", "matrix": "512"},
            case="matrix.disk_mib", case_default=512),
    Setting("batch", Whole(0, BATCH_MAX), "crash states per checker guest boot (0: hot-plugged, one guest per worker "
            "for the whole run, restored from a saved one)", {"crash": "0"}),
    Setting("workers", Whole(0, MAX_WORKERS), "checker guests at once (default: one per core, at most 2)",
            {"crash": "0"}),
    Setting("profile", Choice("disk profile", load_profiles),
            "flush and write-through latency of the disk a throughput run stands for "
            "(vmconfig/disks.toml: host, hdd, ssd, laptop-5400, server-7200)", {"matrix": DEFAULT_PROFILE}, case="matrix.profile",
            case_default=DEFAULT_PROFILE, option="--disk-profile"),
    # The CLI's --kernel (every guest command has it) takes the matrix's list; in the results,
    # a cell's "kernel" is the release the name resolved to ("" for the host's).
    Setting("kernel", Spelled(kernel_name), "the guests' kernels: host, debian:VERSION, build:NAME", many=("matrix",),
            case="matrix.kernels", case_default=(HOST,)),
)


# The workload's own parameters: one --param per parameter, given as text and checked by the
# workload, which declares its parameters itself.
PARAM_OPTION = {
    "crash": ("NAME=VALUE", "a workload parameter, e.g. count=40 (fsync-files), files=2000 (tree-*)"),
    "matrix": ("WORKLOAD.NAME=VALUE", "a workload's parameter, e.g. tree-extract.files=2000"),
}


def settings_of(command: str) -> list[Setting]:
    return [s for s in SETTINGS if command in s.defaults]


def option_type(key: str, command: str):
    """An argparse `type` that reads the setting `key` as `command` takes it, checked by its kind."""
    setting = next(s for s in SETTINGS if s.key == key)

    def typed(text):
        try:
            return setting.parse(text, command)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    typed.numeric = isinstance(setting.kind, Whole)
    if key in READ_PATHS:
        typed.paths = READ_PATHS[key]
    return typed


def _script_paths(value) -> list[Path]:
    """The user's scripts a --workload value names (script:PATH, one or a list)."""
    values = value if isinstance(value, tuple) else (value,)
    return [InputPath(v[len(SCRIPT_PREFIX):]) for v in values
            if isinstance(v, str) and v.startswith(SCRIPT_PREFIX) and v[len(SCRIPT_PREFIX):].strip()]


# The settings whose values name files the command reads: each an input, checked against every
# output before the run (files.refuse_overlaps), as cli/parser.given_paths finds them.
READ_PATHS = {"workload": _script_paths, "check_script": lambda value: [InputPath(value)] if value else []}


def add_options(parser, command: str) -> None:
    """Add the command's options; each value is checked by its row's kind as it is parsed."""
    for s in settings_of(command):
        if isinstance(s.kind, Switch):
            parser.add_argument(s.flag, dest=s.key, action="store_true", help=s.help)
            continue
        typed = option_type(s.key, command)
        default = s.defaults[command]
        parser.add_argument(s.flag, dest=s.key, type=typed, default=typed(default) if default else "",
                            action=Once, metavar=s.key.upper(), help=f"{s.help} (default: {default or 'none'})")
    metavar, text = PARAM_OPTION[command]
    parser.add_argument("--param", action="append", default=[], metavar=metavar, help=text)


def refuse_unused_states(args) -> None:
    """`--states` draws random cuts; `--budget`, `--exhaustive` and `--cuts` choose the cuts
    instead, so a `--states` beside them would be ignored: refused."""
    if "states" not in given(args):
        return
    instead = [flag for flag, on in (("--budget", args.budget), ("--exhaustive", args.exhaustive),
                                     ("--cuts", args.cuts)) if on]
    if instead:
        raise UsageError(f"--states is not used with {instead[0]}, which chooses the cuts itself: give one of them")
