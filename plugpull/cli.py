"""The `plugpull` command. Exit codes: 0 done, 1 a check found a problem, 2 bad input or a
missing tool (nothing was changed), 3 the harness failed (QEMU died, the guest hung)."""

import argparse
import shutil
import signal
import sys
import time
from pathlib import Path

from plugpull import __version__
from plugpull.guest.config import Accel, Bus, DiskSpec, MachineSpec
from plugpull.errors import InfraError, PlugpullError, ToolMissing, UsageError
from plugpull.guest.rig import prepare_rig
from plugpull.log import add_log_options, run_log, setup_logging

EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3


def on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError("expected on or off")
    return text == "on"


def kernel_source(args):
    from plugpull.guest.image import KernelSource
    if args.kernel is None:
        return None
    if args.modules is None:
        raise UsageError("--kernel needs --modules (the kernel's lib/modules/RELEASE tree)")
    for p in (args.kernel, args.modules):
        if not p.exists():
            raise UsageError(f"{p} does not exist")
    return KernelSource(args.kernel, args.modules)


def parse_params(items: list[str]) -> list[tuple[str, object]]:
    """NAME=VALUE pairs; values that read as integers become integers."""
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--param {item!r}: expected NAME=VALUE")
        out.append((name, int(value) if value.lstrip("-").isdigit() else value))
    return out


def add_guest_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accel", type=Accel, choices=list(Accel), default=Accel.AUTO)
    p.add_argument("--kernel", type=Path, help="boot this kernel (bzImage) instead of the host's")
    p.add_argument("--modules", type=Path, help="with --kernel: its lib/modules/RELEASE tree")
    add_log_options(p)


def cmd_doctor(args) -> int:
    from plugpull.guest import image as image_mod
    from plugpull.guest.accel import kvm_device_usable
    from plugpull.guest.machine import cached_probe, qemu_version

    rows, missing = [], []

    def row(name, value, ok=True):
        rows.append((name, value, ok))
        if not ok:
            missing.append(name)

    row("plugpull", __version__)
    if shutil.which("qemu-system-x86_64"):
        row("qemu", qemu_version())
    else:
        row("qemu", "missing: install qemu-system-x86 (make deps)", False)
    try:
        kernel = kernel_source(args) or image_mod.host_kernel()
        row("guest kernel", f"{kernel.release} ({kernel.kernel})")
    except ToolMissing as e:
        kernel = None
        row("guest kernel", f"missing: {e.hint}", False)
    versions = image_mod.package_versions(["xfsprogs", "e2fsprogs", "btrfs-progs", "fio", "busybox-static"])
    for package in ("xfsprogs", "e2fsprogs", "btrfs-progs", "fio", "busybox-static"):
        if package in versions:
            row(package, versions[package])
        else:
            row(package, f"missing: install {package} (make deps)", False)
    device_ok, reason = kvm_device_usable()
    probe = cached_probe() if device_ok else None
    if not device_ok:
        row("kvm", f"unusable: {reason}; guests run under TCG")
    elif probe is None:
        row("kvm", "/dev/kvm answers; not probed yet (the first guest boot probes it)")
    else:
        verdict = "usable" if probe["ok"] else "unusable, guests run under TCG"
        row("kvm", f"{verdict}: probe {probe.get('detail', 'recorded no detail')}")
    cached = image_mod.cached_images()
    current = "unknown"
    if kernel is not None and not missing:
        try:
            plan = image_mod.plan_image(image_mod.Recipe.load(), kernel)
            key = image_mod.cache_key(image_mod.Recipe.load(), kernel, plan)
            built = any(p.parent.name == key for p in cached)
            current = f"{key} {'built' if built else 'not built yet (the first boot builds it)'}"
        except PlugpullError as e:
            row("image", f"cannot be built: {e}", False)
    row("image cache", f"{image_mod.cache_dir() / 'images'}: {len(cached)} image(s); current {current}")
    width = max(len(r[0]) for r in rows)
    for name, value, ok in rows:
        print(f"{name:<{width}}  {value}")
    if missing:
        print(f"\nmissing: {', '.join(missing)}. Run `make deps` (as root).", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def boot_spec(args, disk_dir: Path, interactive=False) -> MachineSpec:
    from plugpull.guest.machine import create_disk
    disks = [DiskSpec(create_disk(disk_dir / "sda.img", args.disk_mib), args.bus, args.write_cache)]
    return MachineSpec(disks=tuple(disks), accel=args.accel, interactive=interactive)


def cmd_shell(args) -> int:
    from plugpull.paths import make_tempdir

    rig = prepare_rig(args.accel, kernel_source(args))
    work = make_tempdir("shell")
    try:
        spec = boot_spec(args, work, interactive=True)
        print(f"booting {spec.test_id()} (disk {args.disk_mib} MiB, scratch) ...", file=sys.stderr)
        with rig.machine(spec) as m:
            print(f"ready in {m.boot_seconds:.1f} s under {m.accel}; the guest's shell follows", file=sys.stderr)
            m.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return EXIT_OK


def cmd_disks(args) -> int:
    """Boot one guest per bus and cache setting and show the disk as the guest sees it."""
    from plugpull.paths import make_tempdir

    started = time.monotonic()
    rig = prepare_rig(args.accel, kernel_source(args))
    print(f"image {rig.image.key} ({rig.image.kernel_release}) ready in {time.monotonic() - started:.1f} s",
          file=sys.stderr)
    header = ("bus", "qemu write-cache", "guest queue/write_cache", "hdparm -W", "accel", "boot s")
    rows = []
    combos = [(bus, wc) for bus in Bus for wc in (True, False)]
    work = make_tempdir("disks")
    try:
        for i, (bus, wc) in enumerate(combos, 1):
            print(f"[{i}/{len(combos)}] booting {bus}, write cache {'on' if wc else 'off'} ...", file=sys.stderr)
            args.bus, args.write_cache = bus, wc
            with rig.machine(boot_spec(args, work)) as m:
                queue = m.run("cat /sys/block/sda/queue/write_cache").check().text.strip()
                hd = m.run("hdparm -W /dev/sda").check().text
                hd_state = "on" if "(on)" in hd else "off" if "(off)" in hd else "?"
                rows.append((str(bus), "on" if wc else "off", queue, hd_state, str(m.accel), f"{m.boot_seconds:.1f}"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(header, rows)
    return EXIT_OK


def print_table(header, rows) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    for r in (header, *rows):
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())


def cmd_crash(args) -> int:
    from plugpull.lab.crash import run_crash, write_json
    from plugpull.lab.settings import settings_of
    from plugpull.lab.spec import CrashSpec
    from plugpull.lab.verdict import Verdict

    spec = CrashSpec(params=tuple(parse_params(args.param)),
                     **{s.key: getattr(args, s.key) for s in settings_of("crash")})
    spec.validate()
    out = args.out or Path("results") / f"crash-{args.fs}-{args.mode}-{time.strftime('%Y%m%d-%H%M%S')}"
    if args.json and args.json.exists() and args.json.is_dir():
        raise UsageError(f"--json {args.json} is a directory")
    with run_log(out / "crash.log"):
        rig = prepare_rig(args.accel, kernel_source(args))
        run = run_crash(spec, rig, out)
    rows = []
    for model in dict.fromkeys(s.model for s in run.states):
        states = [s for s in run.states if s.model == model]
        counts = {str(v): sum(s.verdict == str(v) for s in states) for v in Verdict}
        rows.append((args.fs, args.mode, model, len(states), *counts.values()))
    print_table(("fs", "mode", "model", "states", *(str(v) for v in Verdict)), rows)
    t = run.timing
    print(f"record {t.record_s:.1f} s, check {t.check_s:.1f} s "
          f"({t.states_per_minute:.0f} states/min, {rig.accel})")
    unsafe = [s for s in run.states if s.verdict not in ("clean", "infra-error")]
    if unsafe:
        print(f"artifacts of the {len(unsafe)} states that are not clean: {out / 'states'}")
    if args.json:
        write_json(args.json, run.to_json())
        print(f"results: {args.json}")
    if run.summary["infra-error"]:
        return EXIT_INFRA
    return EXIT_FOUND if unsafe and args.fail_on_unsafe else EXIT_OK


def cmd_replay(args) -> int:
    from plugpull.lab.crash import replay
    from plugpull.paths import make_tempdir

    if not (args.dir / "state.json").is_file():
        raise UsageError(f"{args.dir} is not a saved crash state (no state.json)")
    rig = prepare_rig(args.accel, kernel_source(args))
    scratch = make_tempdir("replay")
    try:
        r = replay(args.dir, rig, scratch)
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


def split_list(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


def finish_matrix(ran: list, results: Path, report_dir: Path | None) -> None:
    from plugpull.report import render_table, report
    from plugpull.results import read_cells

    paths = report(results, report_dir or results.parent / f"{results.stem}-report")
    print(render_table(read_cells(results)[0]))
    print(f"results: {results}")
    print(f"report:  {paths['html']}")
    errors = [r for r in ran if r.error]
    if errors:
        print(f"{len(errors)} cells failed in the harness (not verdicts); rerun to retry them", file=sys.stderr)


def checked_real_disk(device: str, erase: bool) -> str:
    """A block device the user let plugpull erase, and that nothing has mounted."""
    import stat

    path = Path(device)
    try:
        mode = path.stat().st_mode
    except OSError as e:
        raise UsageError(f"--real-disk {device}: {e.strerror}") from None
    if not stat.S_ISBLK(mode):
        raise UsageError(f"--real-disk {device}: not a block device")
    name = path.resolve().name
    mounted = [line.split()[0] for line in Path("/proc/mounts").read_text().splitlines()
               if Path(line.split()[0]).name.startswith(name)]
    if mounted:
        raise UsageError(f"--real-disk {device}: in use ({', '.join(mounted)} mounted)")
    if not erase:
        raise UsageError(f"--real-disk {device} is reformatted for every throughput run: "
                         "add --erase-real-disk to say that is fine")
    return str(path)


def cmd_matrix(args) -> int:
    from plugpull.lab.matrix import cells, run_matrix
    from plugpull.lab.settings import settings_of
    from plugpull.lab.spec import CrashSpec
    from plugpull.paths import make_tempdir

    params: dict = {}
    for name, value in parse_params(args.param):
        wl, dot, key = name.partition(".")
        if not dot:
            raise UsageError(f"--param {name}: expected WORKLOAD.NAME=VALUE, e.g. tree-extract.files=2000")
        params.setdefault(wl, {})[key] = value
    real_disk = checked_real_disk(args.real_disk, args.erase_real_disk) if args.real_disk else None
    per_cell = ("fs", "mode", "workload", "profile")
    base = CrashSpec(**{s.key: getattr(args, s.key) for s in settings_of("matrix") if s.key not in per_cell})
    todo = cells(base, args.fs, args.mode, args.workload, params, throughput=not args.no_throughput,
                 crash=not args.no_crash, overhead=args.overhead, profile=args.profile, real_disk=real_disk)
    for cell in todo:
        cell.validate()
    with run_log(args.results.with_suffix(".log")):
        rig = prepare_rig(args.accel, kernel_source(args))
        work = make_tempdir("matrix")
        try:
            ran = run_matrix(todo, args.results, rig, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    finish_matrix(ran, args.results, args.report)
    return EXIT_INFRA if any(r.error for r in ran) else EXIT_OK


def cmd_reproduce(args) -> int:
    from plugpull.lab.cases import expectation_failures, load_case
    from plugpull.lab.matrix import run_matrix
    from plugpull.paths import make_tempdir
    from plugpull.results import read_cells

    if not 0 < args.scale <= 1:
        raise UsageError("--scale must be in (0, 1]")
    case = load_case(args.case, args.scale)
    results = args.results or Path("results") / f"{args.case.stem}.jsonl"
    print(f"{case.title}\n  {case.source}\n  {len(case.cells)} cells, scale {args.scale:g}", file=sys.stderr)
    with run_log(results.with_suffix(".log")):
        rig = prepare_rig(args.accel, kernel_source(args))
        work = make_tempdir("reproduce")
        try:
            ran = run_matrix(list(case.cells), results, rig, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    finish_matrix(ran, results, args.report)
    done = {cell.key: cell for cell in read_cells(results)[0]}
    failures = expectation_failures(case, [done[c.key()] for c in case.cells if c.key() in done])
    for f in failures:
        print(f"not reproduced: {f}")
    if any(r.error for r in ran):
        return EXIT_INFRA
    return EXIT_FOUND if failures else EXIT_OK


def cmd_report(args) -> int:
    from plugpull.report import report_main
    return report_main(args.results, args.out)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="plugpull", description=__doc__.split("\n")[0])
    p.add_argument("--version", action="version", version=f"plugpull {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("doctor", help="versions, KVM, the image cache: is everything here?")
    add_guest_options(d)
    d.set_defaults(func=cmd_doctor)

    s = sub.add_parser("shell", help="boot a guest with a scratch disk and get its shell")
    add_guest_options(s)
    s.add_argument("--bus", type=Bus, choices=list(Bus), default=Bus.AHCI)
    s.add_argument("--write-cache", type=on_off, default=True, metavar="on|off")
    s.add_argument("--disk-mib", type=int, default=512)
    s.set_defaults(func=cmd_shell)

    k = sub.add_parser("disks", help="boot each bus/cache combination and show the guest's view")
    add_guest_options(k)
    k.add_argument("--disk-mib", type=int, default=512)
    k.set_defaults(func=cmd_disks)

    from plugpull.lab.settings import add_options
    c = sub.add_parser("crash", help="run a workload, pull the plug, check the crash states")
    add_guest_options(c)
    add_options(c, "crash")
    c.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a workload parameter, e.g. count=40 (fsync-files), files=2000 (tree-*)")
    c.add_argument("--json", type=Path, help="write the results here (atomically)")
    c.add_argument("--out", type=Path, help="directory for artifacts (default results/crash-...)")
    c.add_argument("--fail-on-unsafe", action="store_true", help="exit 1 if any state is not clean")
    c.set_defaults(func=cmd_crash)

    r = sub.add_parser("replay", help="rebuild a saved crash state, verify its hash, recheck it")
    add_guest_options(r)
    r.add_argument("dir", type=Path, help="a state directory (results/.../states/NAME)")
    r.set_defaults(func=cmd_replay)

    mx = sub.add_parser("matrix", help="filesystem x mode x workload: throughput and crash safety per cell")
    add_guest_options(mx)
    add_options(mx, "matrix")
    mx.add_argument("--param", action="append", default=[], metavar="WORKLOAD.NAME=VALUE",
                    help="e.g. tree-extract.files=2000")
    mx.add_argument("--real-disk", metavar="DEV",
                    help="run the throughput side on this block device, passed through (it is erased); "
                         "crash states stay modelled on the emulated disk")
    mx.add_argument("--erase-real-disk", action="store_true", help="consent to erasing --real-disk")
    mx.add_argument("--no-throughput", action="store_true")
    mx.add_argument("--no-crash", action="store_true")
    mx.add_argument("--overhead", action="store_true", help="also time the workload under the recorder")
    mx.add_argument("--results", type=Path, default=Path("results/matrix.jsonl"),
                    help="JSON lines, appended; cells already there are skipped")
    mx.add_argument("--report", type=Path, help="report directory (default: beside the results)")
    mx.set_defaults(func=cmd_matrix)

    rp = sub.add_parser("reproduce", help="run a case file (suites/cases/*.toml)")
    add_guest_options(rp)
    rp.add_argument("case", type=Path)
    rp.add_argument("--scale", type=float, default=1.0, help="shrink the workloads (0 < scale <= 1)")
    rp.add_argument("--results", type=Path, help="default results/CASE.jsonl")
    rp.add_argument("--report", type=Path)
    rp.set_defaults(func=cmd_reproduce)

    rr = sub.add_parser("report", help="table, plot and HTML page from matrix results")
    rr.add_argument("results", type=Path)
    rr.add_argument("--out", type=Path, help="report directory (default: beside the results)")
    add_log_options(rr)
    rr.set_defaults(func=cmd_report)
    return p


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    setup_logging(args)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `plugpull report ... | head` ends quietly
    for name in ("disk_mib", "batch", "states"):
        if getattr(args, name, 1) <= 0:
            print(f"plugpull: --{name.replace('_', '-')} must be positive", file=sys.stderr)
            return EXIT_USAGE
    try:
        return args.func(args)
    except (UsageError, ToolMissing) as e:
        print(f"plugpull: {e}", file=sys.stderr)
        return EXIT_USAGE
    except InfraError as e:
        print(f"plugpull: harness failure (not a filesystem verdict): {e}", file=sys.stderr)
        return EXIT_INFRA
    except KeyboardInterrupt:
        print("plugpull: interrupted", file=sys.stderr)
        return 130
