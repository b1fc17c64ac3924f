"""A pytest-testinfra backend that drives a plugpull guest through its command channel."""

from typing import Any

import testinfra.host
from testinfra.backend.base import BaseBackend, CommandResult


class GuestBackend(BaseBackend):
    NAME = "plugpull"

    def __init__(self, machine, **kwargs: Any):
        self.machine = machine
        super().__init__(machine.name, **kwargs)

    def get_pytest_id(self) -> str:
        return self.machine.name

    def get_encoding(self) -> str:
        return "utf-8"

    def run(self, command: str, *args: str, **kwargs: Any) -> CommandResult:
        cmd = self.get_command(command, *args)
        result = self.machine.run(cmd)
        return self.result(result.rc, self.encode(cmd), result.stdout, result.stderr)


def testinfra_host(machine) -> testinfra.host.Host:
    return testinfra.host.Host(GuestBackend(machine))
