"""`plugpull minimise ARTIFACT` (or `minimize`): a failing crash state to its culprit writes."""

import json
import shutil

from plugpull.cli.common import (EXIT_FOUND, EXIT_OK, add_guest_options, checked_output, guest_backend,
                                 kernel_source, whole_option)
from plugpull.cli.crash import saved_fs
from plugpull.errors import UsageError
from plugpull.files import a_state_dir, an_output, check_input, read_regular_text
from plugpull.runs.settings import MAX_WORKERS


def add_parsers(sub) -> None:
    m = sub.add_parser("minimise", aliases=["minimize"],
                       help="find the culprit writes of a saved failing crash state (delta debugging)")
    add_guest_options(m)
    m.add_argument("dir", type=a_state_dir, help="a saved state directory (results/.../states/NAME)")
    m.add_argument("--out", type=an_output, help="the minimised artifact (default: DIR/minimised)")
    m.add_argument("--workers", type=whole_option(0, MAX_WORKERS), default=0,
                   help="checker guests at once (default: one per core, at most 2)")
    m.add_argument("--batch", type=whole_option(1, 64), default=8, help="candidate states judged per round trip")
    m.add_argument("--no-explain", action="store_true", help="do not read the culprits' meaning from the image")
    m.set_defaults(func=cmd_minimise)


def _minimised(path) -> bool:
    """Whether `path` holds an earlier minimised artifact, which a new one may replace."""
    try:
        return "minimised" in json.loads(read_regular_text(path / "state.json"))
    except (OSError, ValueError, TypeError):
        return False


def cmd_minimise(args) -> int:
    from plugpull.guest.rig import prepare_rig
    from plugpull.minimise.artifact import write_artifact
    from plugpull.minimise.culprits import NotMinimisable, loaded, minimise
    from plugpull.minimise.explain import meanings as explained
    from plugpull.paths import make_tempdir

    check_input(args.dir / "state.json", "")  # a FIFO is said as one
    if not (args.dir / "state.json").is_file():
        raise UsageError(f"{args.dir} is not a saved crash state (no state.json)")
    checked_output(args.out or args.dir / "minimised", "--out", parent_must_exist=False, directory=True)
    if args.out is not None and args.out.exists() and not _minimised(args.out):
        raise UsageError(f"--out {args.out} exists and is not a minimised state: give a new name")
    kernel, backend = kernel_source(args, [saved_fs(args.dir)]), guest_backend(args)
    scratch = make_tempdir("minimise")
    try:
        loaded(args.dir, scratch / "check")
        rig = prepare_rig(args.accel, kernel, backend)
        try:
            found = minimise(args.dir, rig, scratch, workers=args.workers, batch=args.batch)
        except NotMinimisable as e:
            print(f"not minimised: {e}")
            return EXIT_FOUND
        meanings = {} if args.no_explain else explained(found, scratch)
        dest = write_artifact(found, args.out or args.dir / "minimised", scratch, meanings)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print((dest / "summary.txt").read_text(), end="")
    return EXIT_OK

