"""The parser every `plugpull` command is made with. It keeps the actions it was given
(`declared`, from `add_argument`'s own answer), so that what the command line gave is read on
argparse's public API: an option given twice (`plugpull.options`) and the paths given."""

import argparse
from pathlib import Path

from plugpull.cli.common import EXIT_USAGE, no_blank_edges
from plugpull.files import InputPath, OutputPath
from plugpull.options import as_once, refuse_repeats
from plugpull.values import one_line


class Parser(argparse.ArgumentParser):
    """Bad options are said in one line, as every other bad input is; an option that takes
    one value is `options.Once`; a value with a space at an edge is refused (`no_blank_edges`).
    Its commands' parsers are Parsers too (`commands`)."""

    def __init__(self, *args, **kwargs):
        self.declared: list[argparse.Action] = []
        self.commands: dict[str, "Parser"] = {}
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")

    def add_argument(self, *names, **kwargs):
        optional = bool(names) and names[0][:1] in self.prefix_chars
        action = super().add_argument(*names, **(as_once(kwargs) if optional else kwargs))
        if action.nargs != 0:
            action.type = no_blank_edges(action.type)
        self.declared.append(action)
        return action

    def add_subparsers(self, **kwargs):
        sub = super().add_subparsers(**kwargs)
        self.commands = sub.choices
        return sub

    def command(self, args) -> "Parser":
        """The parser of the command `args` were parsed for."""
        return self.commands[args.command]


def refuse_repeated_options(p: Parser, args) -> None:
    """An option that takes one value, given twice, is refused (argparse would keep the last)."""
    refuse_repeats(p.command(args).declared, args)


def given_paths(p: Parser, args) -> list[tuple[str, Path]]:
    """Every path the command line gave (files.InputPath or OutputPath, or the paths an
    option's `type.paths` finds in a value that is not always one, as --kernel's), with the
    option or the argument's name that gave it, in the command's order; then the outputs the
    command derives from them (`args.derived_paths`, as reproducer's FILE.out)."""
    named = []
    for action in p.command(args).declared:
        values = getattr(args, action.dest, None)
        paths_in = getattr(action.type, "paths", lambda value: [value])
        for value in values if isinstance(values, list) else [values]:
            for path in paths_in(value) if value is not None else ():
                if isinstance(path, (InputPath, OutputPath)):
                    named.append(((action.option_strings or [action.metavar or action.dest.upper()])[-1], path))
    return named + getattr(args, "derived_paths", lambda args: [])(args)
