"""The host end of the guest channels, both carried by virtio-serial ports.

- `CommandChannel`: run a command in the guest, get exit code, stdout and stderr. The guest
  agent (images/agent.sh) answers each request with a header and the raw outputs.
- `LineStream`: lines a workload writes while it runs (the acks of durable operations). A
  reader thread stamps each line the moment it arrives, so the stamp (e.g. the write log's
  size) is taken as close as possible to the guest's write, then sends the line back: a
  workload that waits for its ack to come back (the generated programs do) has written
  nothing after the ack before its stamp, however late the reader thread ran.
"""

import base64
import queue
import shlex
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable

from plugpull.errors import GuestError, GuestTimeout


@dataclass(frozen=True)
class GuestResult:
    command: str
    rc: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        return self.stdout.decode(errors="replace")

    def check(self) -> "GuestResult":
        if self.rc != 0:
            raise GuestCommandFailed(self)
        return self


class GuestCommandFailed(Exception):
    """A guest command exited non-zero. Not an InfraError: the caller decides what it means."""

    def __init__(self, result: GuestResult):
        self.result = result
        err = result.stderr.decode(errors="replace").strip()
        super().__init__(f"guest command failed (rc={result.rc}): {result.command}\n{err}")


class _Reader:
    """Buffered reads from a socket with a deadline; EOF and timeouts raise GuestError."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self._buf = bytearray()

    def _fill(self, deadline: float | None) -> None:
        timeout = None if deadline is None else deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            raise GuestTimeout("the guest did not answer in time")
        self._sock.settimeout(timeout)
        try:
            chunk = self._sock.recv(1 << 16)
        except socket.timeout:
            raise GuestTimeout("the guest did not answer in time") from None
        except OSError as e:
            raise GuestError(f"guest channel broke: {e}") from None
        if not chunk:
            raise GuestError("guest channel closed (the VM is gone)")
        self._buf += chunk

    def line(self, deadline: float | None) -> bytes:
        while (i := self._buf.find(b"\n")) < 0:
            self._fill(deadline)
        out = bytes(self._buf[:i])
        del self._buf[: i + 1]
        return out

    def exactly(self, n: int, deadline: float | None) -> bytes:
        while len(self._buf) < n:
            self._fill(deadline)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out


class CommandChannel:
    def __init__(self, sock: socket.socket):
        self._sock = sock
        self._reader = _Reader(sock)
        self._next_id = 1
        self._lock = threading.Lock()
        self._broken: str | None = None
        self.guest_release: str | None = None

    def wait_ready(self, timeout: float) -> str:
        """Block until the agent announces itself; returns the guest's kernel release."""
        line = self._reader.line(time.monotonic() + timeout)
        words = line.decode(errors="replace").split()
        if not words or words[0] != "READY":
            raise GuestError(f"unexpected greeting from the guest: {line!r}")
        self.guest_release = words[1] if len(words) > 1 else ""
        return self.guest_release

    def run(self, command: str, timeout: float | None = 60.0) -> GuestResult:
        with self._lock:
            if self._broken:
                raise GuestError(f"guest channel unusable: {self._broken}")
            rid = self._next_id
            self._next_id += 1
            payload = base64.b64encode(command.encode()).decode()
            deadline = None if timeout is None else time.monotonic() + timeout
            try:
                self._sock.sendall(f"{rid} {payload}\n".encode())
                header = self._reader.line(deadline).decode().split()
                if len(header) != 4 or int(header[0]) != rid:
                    raise GuestError(f"garbled answer from the guest: {header!r}")
                rc, n_out, n_err = map(int, header[1:])
                out = self._reader.exactly(n_out, deadline)
                err = self._reader.exactly(n_err, deadline)
            except GuestError as e:
                self._broken = str(e)
                raise
            except OSError as e:
                self._broken = str(e)
                raise GuestError(f"guest channel broke: {e}") from None
            except BaseException:  # Ctrl-C mid-answer: what is left of it would answer the next command
                self._broken = "a command was interrupted before its answer was read"
                raise
            return GuestResult(command, rc, out, err)


def quote_command(command: str, *args) -> str:
    """`command % args` with each argument shell-quoted: arguments are never pasted raw."""
    return command % tuple(shlex.quote(str(a)) for a in args) if args else command


@dataclass(frozen=True)
class StampedLine:
    stamp: object
    arrived: float
    text: str


class LineStream:
    """Collects the lines written to a streaming port, each stamped on arrival."""

    def __init__(self, sock: socket.socket, stamp: Callable[[], object] = lambda: None):
        self._sock = sock
        self._stamp = stamp
        self._queue: "queue.Queue[StampedLine | None]" = queue.Queue()
        self.lines: list[StampedLine] = []
        self._thread = threading.Thread(target=self._pump, name="plugpull-linestream", daemon=True)
        self._thread.start()

    def set_stamp(self, stamp: Callable[[], object]) -> None:
        self._stamp = stamp

    def _pump(self) -> None:
        buf = bytearray()
        while True:
            try:
                chunk = self._sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self._queue.put(None)
                return
            buf += chunk
            while (i := buf.find(b"\n")) >= 0:
                line = StampedLine(self._stamp(), time.monotonic(), buf[:i].decode(errors="replace"))
                self._echo(bytes(buf[: i + 1]))
                del buf[: i + 1]
                self._queue.put(line)

    def _echo(self, line: bytes) -> None:
        """The line back to the guest, once stamped. Never blocks: a workload that does not
        read its port leaves the echoes unread, and once its buffers are full they are dropped."""
        try:
            self._sock.send(line, socket.MSG_DONTWAIT)
        except OSError:
            pass

    def get(self, timeout: float | None = None) -> StampedLine | None:
        """The next line, or None at the end of the stream; GuestTimeout if none came in time."""
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise GuestTimeout("no line on the stream in time") from None
        if item is not None:
            self.lines.append(item)
        return item

    def drain(self) -> list[StampedLine]:
        out = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return out
            if item is None:
                self._queue.put(None)
                return out
            self.lines.append(item)
            out.append(item)
