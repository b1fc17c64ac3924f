"""The user's own workload: a shell script run in the recording guest, and a check script run
in the checker guest on each recovered filesystem.

    plugpull crash --workload script:app.sh --check-script app-check.sh --mode nobarrier

Both scripts' contents (not their paths) are the workload's parameters, so a changed script
is a different run and a saved state replays without the files. The check script prints one
finding per line:

    lost ID REASON          the acknowledged operation ID did not survive (data-loss)
    inconsistent REASON     a state the application could never have been in (inconsistent)

Other lines are ignored; a line that starts with one of the two words but does not parse is
reported as malformed rather than dropped.
"""

from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import TEXT_MAX, read_input_text
from plugpull.testbed.workloads.base import ACK_PORT, Findings, Lost, GuestWorkload, shell_script

PREFIX = "script:"
OUTPUT = "check-script.out"  # the keys of the check script's "files"
ERRORS = "check-script.err"
STATUS = "check-script.rc"
ABSENT = "absent"  # the status when the work directory was not there to run the script in
CHECK_SECONDS = 120  # images/check.sh kills a check script after this long (SIGKILL: status 137)
KILLED = "137"
RELAY = "/tmp/pp-ack-relay"  # the FIFO the script's fd 4 and $PP_ACK name, relayed to the ack port


class CheckScriptError(UsageError):
    """The user's check script failed without a finding: the cause is the user's input."""


def read_script(path: Path, what: str) -> str:
    """The text of a user's script (`files.read_input_text`); UsageError (one line) if it is
    missing, not a regular file, unreadable, not text or empty."""
    text = read_input_text(path, what, TEXT_MAX)
    if not text.strip():
        raise UsageError(f"{what} {path}: empty")
    return text


@dataclass(frozen=True)
class CheckOutput:
    lost: list[Lost]
    broken: list[str]
    malformed: list[str]


def parse_check_output(text: str) -> CheckOutput:
    """`lost ID REASON` and `inconsistent REASON` lines; every other line is commentary."""
    lost, broken, malformed = [], [], []
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        if word == "lost":
            ident, _, reason = rest.partition(" ")
            if ident.lstrip("-").isdigit():
                lost.append(Lost(int(ident), reason.strip() or "reported lost by the check script"))
            else:
                malformed.append(line.strip())
        elif word == "inconsistent":
            if rest:
                broken.append(rest)
            else:
                malformed.append(line.strip())
    return CheckOutput(lost, broken, malformed)


def broken_invariants(files: dict) -> list[str]:
    """The `inconsistent` lines of a checked state: the invariants the check script says broke
    (the workload's part of an `inconsistent` verdict)."""
    return parse_check_output(_text(files, OUTPUT)).broken


def _text(files: dict, key: str) -> str:
    value = files.get(key, b"")
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class Script(GuestWorkload):
    """`text`: the workload script, run by busybox sh in the work directory with fd 4 open on
    the acks' way to the port (its path in $PP_ACK). `check`: the check script's text.

    Without a check script no ack could be checked, so one is required; a check script that
    prints nothing and exits 0 judges the states by recovery mount and fsck alone."""

    text: str
    check: str
    name = "script"
    collect = "script"
    user_supplied = True

    def __post_init__(self):
        if not self.text.strip():
            raise TypeError("the workload script is empty")
        if not self.check.strip():
            raise TypeError("the check script is empty")

    def script(self, mnt: str, ack: str = ACK_PORT, relay: str = RELAY) -> str:
        """The user's script with fd 4 on a FIFO that a `cat` relays to the ack port: the port
        takes one opener at a time, and a script that opens its acks again (`>> /dev/fd/4`,
        `>> $PP_ACK`) only opens the FIFO again (the guest's /dev has no /dev/fd of its own: it
        is made). At the end the relay is drained before the script's own status is returned."""
        start = ["[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd", f"rm -f {relay} && mkfifo {relay} || exit 1", f"cat {relay} > {ack} &", "pp_relay=$!",
                 "trap 'pp_rc=$?; exec 4>&-; wait $pp_relay; exit $pp_rc' EXIT"]
        return "\n".join(start) + "\n" + shell_script(mnt, relay, [f"export PP_ACK={relay} PP_ACK_FD=4", self.text])

    def lost(self, required: list[int], files: dict) -> list[Lost]:
        """The owed acks the check script reported lost (a `lost` line for an ack the state did
        not owe is ignored: the application may have lost what it never promised)."""
        status = _text(files, STATUS)
        if status == ABSENT:
            return [Lost(i, "the work directory is missing") for i in required]
        found = parse_check_output(_text(files, OUTPUT))
        if found.malformed:
            raise CheckScriptError(f"the check script printed a malformed line: {found.malformed[0]!r} "
                                   "(expected 'lost ID REASON' or 'inconsistent REASON')")
        if status not in ("", "0") and not (found.lost or found.broken):
            err = _text(files, ERRORS).strip().splitlines()
            if status == KILLED:
                err = [f"killed after {CHECK_SECONDS} s"]
            raise CheckScriptError(f"the check script exited {status} without a lost or inconsistent line"
                                   + (f": {err[-1][:200]}" if err else ""))
        owed = set(required)
        return [lost for lost in found.lost if lost.ack in owed]

    def examine(self, required: list[int], files: dict, committed: list[int] = ()) -> Findings:
        """The check script's `lost` lines for owed acks and its `inconsistent` lines."""
        return Findings(self.lost(required, files), broken_invariants(files))
