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
        self.command_dest = "command"
        self.default_command: str | None = None
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
        self.commands, self.command_dest = sub.choices, kwargs.get("dest", self.command_dest)
        return sub

    def default_to(self, name: str) -> None:
        """A command line that names none of this parser's commands is parsed as `name`'s
        (`plugpull kernels debian:6.12` as `kernels fetch debian:6.12`); --help still shows
        this parser's own."""
        self.default_command = name

    def parse_known_args(self, args=None, namespace=None):
        if self.default_command is not None and args is not None:
            words = list(args)
            if not set(words) & {*self.commands, "-h", "--help"}:
                args = [self.default_command, *words]
        return super().parse_known_args(args, namespace)

    def leaves(self, words: tuple = ()) -> dict[str, "Parser"]:
        """Every command's parser by its words (`kernels build`), a command with commands of
        its own by theirs."""
        found = {}
        for name, parser in self.commands.items():
            found.update(parser.leaves((*words, name)) if parser.commands else {" ".join((*words, name)): parser})
        return found

    def command(self, args) -> "Parser":
        """The parser of the command `args` were parsed for; a command's own command's
        (`kernels build`) where it has them."""
        parser = self.commands[getattr(args, self.command_dest)]
        return parser.command(args) if parser.commands else parser


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
