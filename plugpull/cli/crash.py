"""`plugpull crash` and `plugpull replay`: pull the plug, judge the states, recheck one."""

import logging
import shutil
import time
from pathlib import Path

from plugpull.cli.cluster import add_cluster_option, cluster_judging
from plugpull.cli.common import (EXIT_FOUND, EXIT_INFRA, EXIT_OK, add_guest_options, checked_output,
                                 guest_backend, kernel_source, parse_params, print_table)
from plugpull.errors import UsageError
from plugpull.files import a_state_dir, an_output, check_input
from plugpull.guest.rig import prepare_rig
from plugpull.log import run_log
from plugpull.runs.settings import add_options

log = logging.getLogger(__name__)


def add_parsers(sub) -> None:
    c = sub.add_parser("crash", help="run a workload, pull the plug, check the crash states")
    add_guest_options(c)
    add_options(c, "crash")
    c.add_argument("--json", type=an_output, help="write the results here (atomically)")
    c.add_argument("--out", type=an_output, help="directory for artifacts (default results/crash-...)")
    c.add_argument("--fail-on-unsafe", action="store_true", help="exit 1 if any state is not clean")
    add_hosts_option(c)
    add_cluster_option(c)
    c.set_defaults(func=cmd_crash)

    r = sub.add_parser("replay", help="rebuild a saved crash state, verify its hash, recheck it")
    add_guest_options(r)
    r.add_argument("dir", type=a_state_dir, help="a state directory (results/.../states/NAME)")
    r.set_defaults(func=cmd_replay)


def cmd_crash(args) -> int:
    from plugpull.crash.crashrun import run_crash
    from plugpull.crash.spec import CrashSpec, load_user_scripts
    from plugpull.runs.settings import refuse_unused_states, settings_of

    refuse_unused_states(args)
    judging = cluster_judging(args, reach=False)
    spec = load_user_scripts(CrashSpec(params=tuple(parse_params(args.param)),
                                       **{s.key: getattr(args, s.key) for s in settings_of("crash")}), Path("."))
    warn_unreachable_trigger(spec)
    out = args.out or Path("results") / f"crash-{args.fs}-{args.mode}-{time.strftime('%Y%m%d-%H%M%S')}"
    checked_output(out, "--out", parent_must_exist=False, directory=True)
    if args.json:
        checked_output(args.json, "--json")
    kernel, backend = kernel_source(args, [spec.fs]), guest_backend(args)
    hosts = checker_hosts(args.hosts)
    if judging:
        judging.reach()  # after every other input is checked
    fresh = not out.exists()
    try:
        with run_log(out / "crash.log"):
            rig = prepare_rig(args.accel, kernel, backend, hosts)
            run = run_crash(spec, rig, out, **({"judging": judging} if judging else {}))
    except BaseException:
        if fresh:
            drop_if_only_log(out)
        raise
    return _print_run(args, run, rig, out)


def add_hosts_option(p) -> None:
    p.add_argument("--hosts", metavar="URI[,URI...]", help="spread the checking of states over these libvirt "
                   "hosts; one not on this machine gets the states uploaded as volumes")


def checker_hosts(text: str | list | None, where: str = "--hosts") -> tuple:
    """The checker's hosts (--hosts, or a case file's [hosts] list), checked and connected
    before any guest boots; closed at exit."""
    import atexit
    from plugpull.guest.backends import prepare_hosts
    if not text:
        return ()
    prepared = prepare_hosts(text.split(",") if isinstance(text, str) else text, where)
    for p in prepared:
        atexit.register(p.close)
    return tuple(p.backend for p in prepared)


def warn_unreachable_trigger(spec) -> None:
    """Check the spec; say so when its trigger waits for more acks than the workload sends."""
    from plugpull.testbed.workloads.params import promised_acks

    plan = spec.resolve()
    if plan.trigger.kind != "acks":
        return
    promised = promised_acks(plan.workload)
    if promised < plan.trigger.value:
        log.warning(f"warning: --trigger {spec.trigger}: {spec.workload} sends only {promised} acks; "
                    "the plug is pulled when it ends")


def _print_run(args, run, rig, out: Path) -> int:
    from plugpull.check.verdict import POWER_CUT_VERDICTS
    from plugpull.crash.crashrun import recording_crashed
    from plugpull.files import atomic_write_json

    rows = []
    for model in dict.fromkeys(s.model for s in run.states):
        states = [s for s in run.states if s.model == model]
        counts = {str(v): sum(s.verdict == str(v) for s in states) for v in POWER_CUT_VERDICTS}
        rows.append((args.fs, args.mode, model, len(states), len({s.distinct for s in states}), *counts.values()))
    print_table(("fs", "mode", "model", "states", "distinct", *(str(v) for v in POWER_CUT_VERDICTS)), rows)
    t = run.timing
    print(f"record {t.record_s:.1f} s, check {t.check_s:.1f} s ({t.states_per_minute:.0f} states/min, "
          f"{t.distinct_per_minute or 0:.0f} distinct/min, {run.distinct or 0} distinct in all, {rig.accel})")
    unsafe = [s for s in run.states if s.verdict not in ("clean", "infra-error")]
    if any(s.artifact for s in unsafe):
        print(f"artifacts of the {len(unsafe)} states that are not clean: {out / 'states'}")
    if args.json:
        atomic_write_json(args.json, run.to_json())
        print(f"results: {args.json}")
    if recording_crashed(run):
        print(f"{run.states[0].reason}\n(console: {out / 'recording-console.log'})")
        return EXIT_FOUND
    if run.summary["infra-error"]:
        return EXIT_INFRA
    return EXIT_FOUND if unsafe and args.fail_on_unsafe else EXIT_OK


def drop_if_only_log(out: Path) -> None:
    """A failed run's out dir goes when it holds nothing but the run's log (the error was
    printed; `--log-file` keeps the log elsewhere)."""
    if out.is_dir() and {p.name for p in out.iterdir()} <= {"crash.log"}:
        shutil.rmtree(out, ignore_errors=True)


def saved_fs(state_dir: Path) -> str:
    """The filesystem (or profile) a saved state's state.json names, the file checked."""
    from plugpull.crash.saved import SavedState, read_saved, state_file
    return read_saved(state_file(state_dir), SavedState, "a saved crash state")["fs"]


def cmd_replay(args) -> int:
    from plugpull.crash.artifacts import load_state
    from plugpull.crash.crashrun import replay
    from plugpull.paths import make_tempdir

    check_input(args.dir / "state.json", "")  # a FIFO is said as one
    if not (args.dir / "state.json").is_file():
        raise UsageError(f"{args.dir} is not a saved crash state (no state.json)")
    kernel, backend = kernel_source(args, [saved_fs(args.dir)]), guest_backend(args)
    scratch = make_tempdir("replay")
    try:
        saved = load_state(args.dir, scratch)
        rig = prepare_rig(args.accel, kernel, backend)
        r = replay(args.dir, rig, scratch, saved)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    same_image = r["digest"] == r["digest_expected"]
    same_verdict = r["verdict"] == r["verdict_expected"]
    print(f"image   {r['digest']} ({'matches' if same_image else 'DIFFERS from ' + r['digest_expected']})")
    print(f"verdict {r['verdict']}: {r['reason']} "
          f"({'as recorded' if same_verdict else 'recorded: ' + r['verdict_expected']})")
    for lost in r["lost"][:10]:
        print(f"  lost ack {lost['ack']}: {lost['reason']}")
    return EXIT_OK if same_image and same_verdict else EXIT_FOUND
