"""Reaching a scheduler, with every wait bounded and said: an address is checked as text
first (a `UsageError`), then one connection is made and the scheduler's handshake read within
`CONNECT_TIMEOUT` seconds. Dask's own connect bounds the connection but not the handshake
read, so a listener that accepts and never answers held a client or a worker forever; here
the whole exchange is bounded.

    address = checked_address("tcp://127.0.0.1:8786", "--cluster")
    probe(address, security, "--cluster")      # SchedulerUnreachable within CONNECT_TIMEOUT s
"""

import asyncio
import re

from plugpull.errors import InfraError, UsageError
from plugpull.values import shown, whole

CONNECT_TIMEOUT = 10.0  # seconds to connect to a scheduler and read its handshake
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

    async def once():  # Dask's retries end first, so that a refusal is said as one
        comm = await connect(address, timeout=max(timeout - 1, timeout / 2), **args)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(once(), timeout))
    except TimeoutError:
        raise SchedulerUnreachable(f"{flag} {address}: no Dask scheduler answered within {timeout:.0f} s "
                                   "(it accepted the connection, then said nothing)") from None
    except OSError as e:
        reason = _first_cause(e)
        raise SchedulerUnreachable(f"{flag} {address}: no Dask scheduler reached within {timeout:.0f} s: "
                                   f"{reason}") from None
    except (ValueError, TypeError) as e:
        raise UsageError(f"{flag} {address}: {e}") from None


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
