"""plugpull's errors.

    PlugpullError
     +-- UsageError        bad input from the user (CLI exit code 2)
     |    +-- KernelUnfit      the kernel chosen lacks a driver the guest cannot run without
     +-- NothingChecked    a run that could not test what it promised: no verdict (exit 3)
     +-- InfraError        the rig broke; never a filesystem verdict
          +-- ToolMissing      a host program or file plugpull needs is absent
          +-- DiskFull         the host has no space left where plugpull writes
          +-- ImageError       the guest image could not be built
          +-- LaunchError      QEMU did not start, or died before the guest was ready
          +-- GuestError       the guest stopped answering, or its channel broke
               +-- GuestTimeout
"""


class PlugpullError(Exception):
    """Base of every error plugpull raises on purpose."""


class UsageError(PlugpullError):
    pass


class KernelUnfit(UsageError):
    """The kernel to boot has, neither as a module nor built in, a driver the guest needs."""


class NothingChecked(PlugpullError):
    """The run went through, but nothing it checked could have failed: a recording with no
    ack of a workload that promises acks. Reported as such, never as clean states."""


class InfraError(PlugpullError):
    pass


class ToolMissing(InfraError):
    def __init__(self, tool: str, hint: str = ""):
        self.tool = tool
        self.hint = hint
        super().__init__(f"{tool} is missing" + (f": {hint}" if hint else ""))


class DiskFull(InfraError):
    """No space left (or not enough for what a run will need) on the host, at `path`."""

    def __init__(self, path, detail: str = ""):
        self.path = path
        super().__init__(f"no space left on {path}" + (f": {detail}" if detail else ""))


class ImageError(InfraError):
    pass


class LaunchError(InfraError):
    """QEMU failed to start or died early; carries what is needed to see why."""

    def __init__(self, message: str, argv=(), exitcode=None, output: str = ""):
        self.argv = list(argv)
        self.exitcode = exitcode
        self.output = output
        detail = f" (exit code {exitcode})" if exitcode is not None else ""
        tail = "\n".join(output.splitlines()[-20:])
        super().__init__(f"{message}{detail}" + (f"\n--- console/stderr tail ---\n{tail}" if tail else ""))


class GuestError(InfraError):
    pass


class GuestTimeout(GuestError):
    pass


def describe(error: BaseException) -> str:
    """One line for an error: an OSError names its path (`No space left on device: /x/y`)."""
    if isinstance(error, OSError) and error.strerror:
        paths = [str(p) for p in (error.filename, error.filename2) if p is not None]
        return error.strerror + (f": {' -> '.join(paths)}" if paths else "")
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
