"""Reaching a scheduler, with every wait bounded and said: an address is checked as text
first (a `UsageError`), then one connection is made and the scheduler's handshake read within
`CONNECT_TIMEOUT` seconds. Dask's own connect bounds the connection but not the handshake
read, so a listener that accepts and never answers held a client or a worker forever; here
the whole exchange is bounded. So is what is read: Dask takes the first 8 bytes a peer sends
as the size of a frame to allocate, and a port answering something else (an HTTP server)
asked it for exabytes; a `tcp://` scheduler's first bytes are read here first, and a size no
handshake has is said as "not a Dask scheduler".

    address = checked_address("tcp://127.0.0.1:8786", "--cluster")
    probe(address, security, "--cluster")      # SchedulerUnreachable within CONNECT_TIMEOUT s
"""

import asyncio
import re
import socket
import struct

from plugpull.errors import InfraError, UsageError
from plugpull.values import shown, whole

CONNECT_TIMEOUT = 10.0  # seconds to connect to a scheduler and read its handshake
FRAME_HEAD = 8  # Dask's frame header: the frames' size, a native unsigned 64-bit number
FRAME_MAX = 2**20  # a handshake is a few hundred bytes
SCHEMES = ("tcp", "tls")
ADDRESS = re.compile(r"(?P<scheme>[a-z]+)://(?P<host>\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):(?P<port>[^\s/]*)")


class SchedulerUnreachable(InfraError):
    """No scheduler answered at the address within the time said."""


def checked_address(text: str, flag: str) -> str:
    """`text` as a scheduler address: `tcp://HOST:PORT` or `tls://HOST:PORT`, the port a whole
    number in ASCII digits from 1 to 65535; a one-line `UsageError` naming `flag` otherwise."""
    m = ADDRESS.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None or m["scheme"] not in SCHEMES:
        raise UsageError(f"{flag} {shown(text)}: expected tcp://HOST:PORT (or tls://HOST:PORT with TLS)")
    try:
        whole(m["port"], 1, 65535)
    except ValueError as e:
        raise UsageError(f"{flag} {shown(text)}: the port: {e}") from None
    return text.strip()


def probe(address: str, sec=None, flag: str = "--cluster", timeout: float = CONNECT_TIMEOUT) -> None:
    """Connect to the scheduler, read its handshake and leave, within `timeout` seconds; a
    `SchedulerUnreachable` that says the address and the time otherwise."""
    from distributed.comm import connect

    args = sec.get_connection_args("client") if sec is not None else {}
    not_dask = SchedulerUnreachable(f"{flag} {address}: not a Dask scheduler (what answered there is not "
                                    "Dask's handshake)")

    async def once():  # Dask's retries end first, so that a refusal is said as one
        comm = await connect(address, timeout=max(timeout - 1, timeout / 2), **args)
        await comm.close()

    try:
        if address.startswith("tcp://") and _first_frame_size(address, timeout) > FRAME_MAX:
            raise not_dask
        asyncio.run(asyncio.wait_for(once(), timeout))
    except (MemoryError, OverflowError):  # a tls:// peer read past its handshake
        raise not_dask from None
    except TimeoutError:
        raise SchedulerUnreachable(f"{flag} {address}: no Dask scheduler answered within {timeout:.0f} s "
                                   "(it accepted the connection, then said nothing)") from None
    except OSError as e:
        reason = _first_cause(e)
        raise SchedulerUnreachable(f"{flag} {address}: no Dask scheduler reached within {timeout:.0f} s: "
                                   f"{reason}") from None
    except (ValueError, TypeError) as e:
        raise UsageError(f"{flag} {address}: {e}") from None


def _first_frame_size(address: str, timeout: float) -> int:
    """The frame size a peer's first 8 bytes announce, as Dask would read it; a Dask
    scheduler sends its handshake (a frame of some hundred bytes) as soon as it accepts."""
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as s:
        head = b""
        while len(head) < FRAME_HEAD:
            chunk = s.recv(FRAME_HEAD - len(head))
            if not chunk:
                return 0  # closed before a frame: Dask's own connect says how
            head += chunk
    return struct.unpack("Q", head)[0]


def _first_cause(error: BaseException) -> str:
    """The innermost reason of a failed connect (`Connection refused`), not Dask's summary: the
    deepest error with an OS reason, else the deepest (Dask's last retry can end cancelled by its
    timeout, with the refusals that came before it further down the chain)."""
    chain = [error]
    while (chain[-1].__cause__ or chain[-1].__context__) is not None and len(chain) < 50:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    with_reason = [e for e in chain if getattr(e, "strerror", None)]
    if with_reason:
        return with_reason[-1].strerror
    if isinstance(chain[-1], (TimeoutError, asyncio.CancelledError)):
        return "each attempt timed out"
    return (str(chain[-1]).splitlines() or [""])[0] or type(chain[-1]).__name__
