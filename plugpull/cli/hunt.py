"""`plugpull hunt --seq 1|2|3 (or --shape NAME) --fs FS [--kernel host,debian:6.12] [--cluster ADDR]`: generated
workloads crashed at each persistence point, judged by the model oracle on each kernel, here or
in chunks on a cluster's workers; resumable, within a time budget, failing workloads kept."""

import argparse
import logging
import re
from pathlib import Path

from plugpull.cli.common import EXIT_FOUND, EXIT_INFRA, EXIT_OK, add_guest_options, checked_output, kernel_list, \
    lock_writable, whole_option
from plugpull.cli.cluster import add_cluster_option, cluster_target
from plugpull.cli.generate import add_setup_option, add_space_options, check_sample, names_option, \
    space_of_options
from plugpull.check.fsckchoice import FsckChoice, fsck_choice
from plugpull.errors import UsageError
from plugpull.files import an_output
from plugpull.log import run_log
from plugpull.diskspace import space_is_fatal
from plugpull.testbed.fs import FILESYSTEMS, MODES, filesystem
from plugpull.values import COUNT_MAX, SEED_MAX, shown

log = logging.getLogger(__name__)

BUDGET = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smh])")  # ASCII digits only, as everywhere
UNIT = {"s": 1, "m": 60, "h": 3600}
BUDGET_MAX_S = 7 * 86400
BUDGET_MIN_S = 30
CHUNK_MAX = 256


def budget(text: str) -> float:
    """An argparse `type`: a time such as 90s, 60m or 1.5h, in seconds, from 30 s to 7 days.
    A budget only stops chunks from starting, and the first starts once the hunt's disk is
    formatted (a few seconds): a smaller budget could be spent before it and judge nothing,
    so it is refused rather than run."""
    m = BUDGET.fullmatch(text.strip()) if len(text) < 20 else None
    seconds = float(m.group(1)) * UNIT[m.group(2)] if m else 0
    if not BUDGET_MIN_S <= seconds <= BUDGET_MAX_S:
        raise argparse.ArgumentTypeError(f"expected a time such as 90s, 60m or 2h (from {BUDGET_MIN_S}s to 7 days), "
                                         f"not {shown(text)}")
    return seconds


def add_parsers(sub) -> None:
    h = sub.add_parser("hunt", help="generated workloads, crashed at each persistence point, judged by the oracle")
    add_guest_options(h)
    add_space_options(h, True, "core operations per workload: 1, 2 or 3")
    h.add_argument("--ops", type=names_option, help="only workloads whose operations and persistence points are "
                   "all of these (as plugpull generate --ops)")
    add_setup_option(h, "(default synced; a hunt goes on with the setup it started with, or is refused)")
    h.add_argument("--sample", type=whole_option(1, COUNT_MAX), metavar="K", help="K workloads drawn at random "
                   "(by --seed) instead of every one")
    h.add_argument("--seed", type=whole_option(0, SEED_MAX), default=1, help="the sample's and the models' seed "
                   "(default 1)")
    h.add_argument("--fs", default="ext4", type=fs_option, help="filesystem under test (default ext4), or one "
                   "with feature options: ext4+fast_commit (plugpull doctor lists them)")
    h.add_argument("--mode", default="barrier", choices=list(MODES), help="barrier / write-cache mode (default barrier)")
    h.add_argument("--budget", type=budget, help="stop starting workloads after this long (90s, 60m, 2h); "
                   "the same command goes on later")
    h.add_argument("--disk-mib", type=whole_option(64, 4096), help="the disk's size (default: 64 MiB, "
                   "xfs 300, btrfs 128)")
    h.add_argument("--chunk", type=whole_option(1, CHUNK_MAX), default=16, help="workloads recorded, then "
                   "checked together (default 16)")
    h.add_argument("--out", type=an_output, help="the hunt's directory; the same one goes on from where a "
                   "stopped hunt was (default results/hunt-SEQ-FS-MODE...)")
    h.add_argument("--fsck", type=fsck_option, default=FsckChoice(), metavar="always|failing|every:N",
                   help="the states the host's fsck reads: every one (default), only those the mount or the "
                   "oracle judged not clean, or one distinct state in N and those (docs/hunt.md: what each misses)")
    h.add_argument("--fail-on-unsafe", action="store_true", help="exit 1 if any workload has a state that is "
                   "not clean")
    add_cluster_option(h)
    h.set_defaults(func=cmd_hunt)


def fs_option(text: str) -> str:
    """An argparse `type`: a filesystem, or a profile of one (`ext4+fast_commit`)."""
    try:
        filesystem(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def fsck_option(text: str) -> FsckChoice:
    """An argparse `type`: `--fsck always|failing|every:N`."""
    try:
        return fsck_choice(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def default_out(args, kernels: list) -> Path:
    """results/hunt-SEQ-FS-MODE[-OPS][-SAMPLE][-KERNELS] (hunt-shape-NAME-... for a shape): one
    kernel other than the host's by its release; several by their releases joined with +, the
    host's as `host`."""
    from plugpull.runs.matrix import kernel_tag

    parts = [f"hunt-shape-{args.shape}" if args.shape else f"hunt-seq{args.seq}", args.fs, args.mode]
    if args.ops:
        parts.append("+".join(args.ops))
    if args.setup not in (None, "synced"):
        parts.append(args.setup)
    if args.sample is not None:
        parts.append(f"sample{args.sample}-seed{args.seed}")
    if len(kernels) > 1:
        parts.append("+".join(kernel_tag(k) or "host" for k in kernels))
    elif kernels and kernels[0] is not None:
        parts.append(kernel_tag(kernels[0]))
    return Path("results") / "-".join(parts)


def cmd_hunt(args) -> int:
    from plugpull.guest.rig import prepare_rig
    from plugpull.hunt.journal import check_out
    from plugpull.hunt.lock import LOCK, hold
    from plugpull.hunt.hunter import HuntSpec, hunt

    target = cluster_target(args)
    if args.backend != "qemu" or args.connect is not None:
        raise UsageError(f"hunt records on its own QEMU: {'--backend libvirt' if args.backend != 'qemu' else '--connect'}"
                         " is not for it")
    if MODES[args.mode].external_log:
        raise UsageError(f"hunt records one disk: not --mode {args.mode}, whose log is on a second one")
    if args.disk_mib is not None:
        FILESYSTEMS[args.fs].check_size(args.disk_mib)
    if args.out is not None:
        _check_out(args.out)
    named = kernel_list(args, [args.fs])  # every name checked before any kernel is fetched
    one_name_each([(name, k.release if k is not None else None) for name, k in named])
    out = args.out or default_out(args, [k for _, k in named])
    _check_out(out)
    setup, table = args.setup or "synced", held_table(out)
    space = space_of_options(args.seq, args.ops, setup, table, shape=args.shape)
    check_sample(space, args.sample)
    spec = HuntSpec(space.seq, args.fs, args.mode, tuple(args.ops or ()), args.sample, args.seed, args.disk_mib,
                    args.budget, args.chunk, fsck=args.fsck, setup=setup, table=table, shape=space.shape)
    check_out(out, early_settings(spec, named, out))  # before any image or guest
    hunting = hunt
    if target is not None:
        from plugpull.cluster.hunt_coordinator import ClusterHunt
        hunting = ClusterHunt(*target)
        hunting.reach()  # after every other input is checked, before anything is made
    with hold(out), run_log(out / "hunt.log", besides=(LOCK,)), space_is_fatal(out):  # a refused hunt writes nothing
        rigs = [prepare_rig(args.accel, kernel) for _, kernel in named]  # on a cluster: the release and image key
        one_name_each([(name, rig.image.kernel_release) for (name, _), rig in zip(named, rigs)])
        run = hunting(spec, space, rigs, out)
    return _print_run(run, out, args.fail_on_unsafe)


def held_table(out: Path) -> int:
    """How many operation tables the hunt in `out` has (1: one started before the later
    operations, which goes on with the first table's alone; 2: one started before `rmdir`; 3:
    one started before the fourth table's fallocate, collapse and insert; 4: one started before
    the nested directory; 5: one started before the sixth table's eviction, reflink and copy; 6:
    one started before unlink-open; 7: one started before `again`), else the current count."""
    from plugpull.hunt.journal import LEGACY, TABLE, held_settings

    held = held_settings(out)
    if not held:
        return TABLE
    table = held.get("table", LEGACY["table"])
    known = isinstance(table, int) and not isinstance(table, bool) and 1 <= table <= TABLE
    return table if known else TABLE  # then check_out refuses it as a hunt of other settings


def one_name_each(named: list[tuple[str, str | None]]) -> None:
    """UsageError if two --kernel names are one kernel (`debian:6.12,debian:6.12.117-1`): the
    same release (None: the host's, not known yet)."""
    seen: dict[str, str] = {}
    for name, release in named:
        if release is not None and release in seen:
            raise UsageError(f"--kernel: {seen[release]} and {name} are one kernel ({release}): name it once")
        if release is not None:
            seen[release] = name


def early_settings(spec, named: list, out: Path) -> dict:
    """The hunt's settings as far as they are known before any image is made. The host
    kernel's release is not: where the hunt in `out` has the same other kernels at the same
    places, its kernel at the host's place stands in (the release is checked once the image
    is made); else `host`, as a refusal then shows it."""
    from plugpull.hunt.journal import held_settings, kernels_of

    there = kernels_of(held_settings(out))
    releases = [k.release if k is not None else None for _, k in named]
    same_others = len(there) == len(named) and all(r in (None, t) for r, t in zip(releases, there))
    return spec.settings(*(r if r is not None else there[i] if same_others else "host"
                           for i, r in enumerate(releases)))


def _check_out(out: Path) -> None:
    from plugpull.hunt.journal import check_out
    from plugpull.hunt.lock import LOCK

    checked_output(out, "--out", parent_must_exist=False, directory=True)
    check_out(out)
    lock_writable(out, LOCK)


def _print_run(run, out: Path, fail_on_unsafe: bool) -> int:
    from plugpull.hunt.summary import write_summary

    print(write_summary(run, out), end="")
    minutes = max(run.wall_s, 1e-9) / 60
    print(f"this run: {run.new} workloads, {run.states} states ({run.distinct} distinct) in "
          f"{run.wall_s:.0f} s: recording {run.record_s:.0f} s ({run.boots} guest boots) and checking "
          f"{run.check_s:.0f} s, side by side; {run.distinct / minutes:.0f} distinct states/min")
    t = run.timing
    if t.many_states:
        print(f"checker commands: {t.many_s:.1f} worker-s for {t.many_states} states; the host's fsck "
              f"{t.fsck_s:.1f} s of it for {t.fsck_states} ({t.share:.0%})")
    if run.stopped_by_budget:
        runs = " (a workload on a kernel each)" if "kernels" in run.settings else ""
        print(f"the budget is spent: {run.total - len(run.lines)} workloads to go{runs}; the same command goes on")
    for ident, why in run.infra[:5]:
        print(f"not judged (harness): {ident}: {why}")
    print(f"journal: {out / 'hunt.jsonl'}; summary: {out / 'summary.txt'}")
    if run.infra:
        return EXIT_INFRA
    return EXIT_FOUND if fail_on_unsafe and any(line["failing"] for line in run.lines) else EXIT_OK
