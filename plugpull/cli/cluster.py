"""`plugpull scheduler` and `plugpull worker`: a Dask cluster that checks crash states
(`crash`, `matrix` and `reproduce` with `--cluster`), and the options they and `--cluster` share."""

import sys

from plugpull.cli.common import EXIT_OK, add_guest_options, checked_output, guest_backend, kernel_source, \
    whole_option
from plugpull.errors import UsageError
from plugpull.files import a_path


def add_parsers(sub) -> None:
    s = sub.add_parser("scheduler", help="run a Dask scheduler for --cluster (loopback unless TLS)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; "
                   "any other needs TLS)")
    s.add_argument("--port", type=whole_option(0, 65535), default=8786, help="port (default 8786; 0: any free one)")
    add_tls_options(s)
    s.set_defaults(func=cmd_scheduler)

    w = sub.add_parser("worker", help="run a Dask worker that checks crash states on its own checker guests "
                       "(QEMU, or this host's libvirt with --backend libvirt)")
    w.add_argument("--scheduler", required=True, metavar="tcp://HOST:PORT", help="the scheduler's address")
    w.add_argument("--workdir", type=a_path, help="its record cache and states (default: `cluster` in plugpull's cache)")
    add_guest_options(w)
    add_tls_options(w)
    w.set_defaults(func=cmd_worker)


def add_tls_options(p) -> None:
    p.add_argument("--tls-ca-file", type=a_path, help="TLS: the CA that signed every member's certificate")
    p.add_argument("--tls-cert", type=a_path, help="TLS: this member's certificate")
    p.add_argument("--tls-key", type=a_path, help="TLS: this member's private key")


def add_cluster_option(p) -> None:
    p.add_argument("--cluster", metavar="tcp://HOST:PORT", help="check the crash states on this Dask "
                   "scheduler's workers (`plugpull worker`); each gets a record once (hunt: each records and "
                   "judges whole chunks)")
    add_tls_options(p)


def tls_of(args):
    from plugpull.cluster.serve import security
    return security(args.tls_ca_file, args.tls_cert, args.tls_key)


def cluster_judging(args, reach: bool = True):
    """`--cluster`'s stand-in for the local judge, or None without it: crash, matrix and
    reproduce refuse the same options with it, then reach the scheduler once (`reach`; a
    command that has more to check first reaches it later, `judging.reach()`)."""
    target = cluster_target(args)
    if target is None:
        return None
    from plugpull.cluster.crash_coordinator import ClusterJudge
    judging = ClusterJudge(*target)
    if reach:
        judging.reach()
    return judging


def cluster_target(args) -> tuple | None:
    """`--cluster`'s address and TLS settings, checked with the options it refuses (a one-line
    UsageError), before anything is made or contacted; None without --cluster."""
    if args.cluster is None:
        if any((args.tls_ca_file, args.tls_cert, args.tls_key)):
            raise UsageError("the --tls-* options go with --cluster")
        return None
    from plugpull.cluster.reach import checked_address
    args.cluster = checked_address(args.cluster, "--cluster")
    if getattr(args, "hosts", None):
        raise UsageError("--cluster and --hosts: choose one")
    if getattr(args, "workers", 0):
        raise UsageError("--workers counts this machine's checker guests; with --cluster, each worker runs one")
    if args.backend != "qemu":
        raise UsageError("--cluster: each worker checks on the backend it was started with (plugpull worker "
                         f"--backend libvirt) and this machine records on QEMU: not with --backend {args.backend}")
    from plugpull.cluster.serve import check_reach
    sec = tls_of(args)
    check_reach(args.cluster, sec, "--cluster")
    return args.cluster, sec


def cmd_scheduler(args) -> int:
    from plugpull.cluster.serve import run_scheduler
    run_scheduler(args.host, args.port, tls_of(args), announce=_announce("scheduler"))
    return EXIT_OK


def cmd_worker(args) -> int:
    from plugpull.cluster.reach import checked_address, probe
    from plugpull.cluster.serve import check_reach, run_worker
    from plugpull.guest.rig import prepare_rig
    from plugpull.paths import cache_dir
    scheduler = checked_address(args.scheduler, "--scheduler")
    sec = tls_of(args)
    check_reach(scheduler, sec, "--scheduler")
    _check_local_libvirt(args)
    workdir = checked_output(args.workdir, "--workdir", parent_must_exist=False, directory=True) \
        if args.workdir else cache_dir() / "cluster"
    kernel, backend = kernel_source(args, ()), guest_backend(args)
    probe(scheduler, sec, "--scheduler")  # after the other inputs, before the guest image is made
    rig = prepare_rig(args.accel, kernel, backend)
    run_worker(scheduler, workdir, rig, sec, announce=_announce("worker"))
    return EXIT_OK


def _check_local_libvirt(args) -> None:
    """A worker's checker guests run on its own host: its QEMU, or the libvirt of this machine."""
    from plugpull.guest.backends import DEFAULT_URI, on_this_machine
    uri = args.connect or DEFAULT_URI
    if args.backend == "libvirt" and not on_this_machine(uri):
        raise UsageError(f"--connect {uri}: a worker runs its checker guests on this machine's libvirt; "
                         "start a worker on that host instead")


def _announce(what: str):
    def say(address: str) -> None:
        print(f"{what} at {address}", flush=True)
        sys.stdout.flush()
    return say
