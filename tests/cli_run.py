"""The plugpull command run in process, as the tests drive it: its exit code, what it said, and
what a refused run must leave as it found it.

argparse refuses by raising SystemExit; plugpull's own refusals return their code. `exit_code`
and `run_cli` take either, so a test asserts the code and not which of the two said it;
`refused` insists on a returned 2, as the tests that use it always have."""

from pathlib import Path

from plugpull import cli


def exit_code(argv) -> int:
    """`plugpull ARGV`'s exit code, returned or raised; each argument given as its str."""
    try:
        return cli.main([str(a) for a in argv])
    except SystemExit as e:
        return e.code


def run_cli(argv, capsys) -> tuple[int, str, str]:
    """`plugpull ARGV`'s exit code, stdout and stderr."""
    code = exit_code(argv)
    out, err = capsys.readouterr()
    return code, out, err


def refused(argv, capsys, *words) -> str:
    """Asserts `plugpull ARGV` returned 2 with one line on stderr holding every word; that line."""
    __tracebackhide__ = True
    assert cli.main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(w in err for w in words), err
    return err


def files_under(root: Path) -> set[str]:
    """Every path below root, relative to it: compared before and after a run that must make nothing."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}
