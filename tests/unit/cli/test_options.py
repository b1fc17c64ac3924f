"""Options that take one value, given once (plugpull.options), on every command's parser:
argparse would keep the last of two silently."""

import pytest

from plugpull import cli
from plugpull.cli.parser import Parser, given_paths, refuse_repeated_options
from plugpull.errors import UsageError
from plugpull.options import Once, given


def _parser() -> Parser:
    p = Parser(prog="t")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("c")
    c.add_argument("--port", type=int, default=8786)
    c.add_argument("--quiet", action="store_true")
    c.add_argument("--loud", action="store_false")
    c.add_argument("--mode", action="store_const", const="fast")
    c.add_argument("--param", action="append", default=[])
    c.add_argument("name", nargs="?")
    return p


def _parsed(argv: list[str]):
    p = _parser()
    args = p.parse_args(argv)
    refuse_repeated_options(p, args)
    return args


def test_each_kind_of_single_value_option_stores_as_argparse_does():
    args = _parsed(["c", "--port", "1", "--quiet", "--loud", "--mode"])
    assert (args.port, args.quiet, args.loud, args.mode) == (1, True, False, "fast")
    args = _parsed(["c"])
    assert (args.port, args.quiet, args.loud, args.mode, given(args)) == (8786, False, True, None, [])


@pytest.mark.parametrize("argv, option", [
    (["c", "--port", "1", "--port", "2"], "--port"),
    (["c", "--port=1", "--po", "1"], "--port"),  # an abbreviation is the same option
    (["c", "--quiet", "--quiet"], "--quiet"),
    (["c", "--loud", "--loud"], "--loud"),
    (["c", "--mode", "--mode"], "--mode"),
])
def test_a_single_value_option_given_twice_is_refused(argv, option):
    with pytest.raises(UsageError, match=f"^{option} is given twice: give it once$"):
        _parsed(argv)


def test_options_that_gather_and_words_after_the_end_of_options_are_not_repeats():
    args = _parsed(["c", "--param", "a", "--param", "b", "--port", "1", "--", "--port"])
    assert args.param == ["a", "b"] and args.name == "--port" and given(args) == ["port"]


def test_every_option_of_every_command_is_given_once_but_those_that_gather():
    p = cli.parser()
    kept = {a.dest for c in p.leaves().values() for a in c.declared if a.option_strings and not isinstance(a, Once)}
    assert kept == {"help", "verbose", "param", "patch", "fault"}  # -h, -vv, and the lists given by repeating
    args = p.parse_args(["worker", "--scheduler", "tcp://127.0.0.1:1", "--log-file", "a", "--log-file", "b"])
    with pytest.raises(UsageError, match="--log-file is given twice"):
        refuse_repeated_options(p, args)


def test_the_paths_given_are_read_from_the_declared_options(tmp_path):
    p = cli.parser()
    args = p.parse_args(["crash", "--json", str(tmp_path / "a.json"), "--log-file", str(tmp_path / "l")])
    assert [flag for flag, _ in given_paths(p, args)] == ["--log-file", "--json"]  # in the order declared
