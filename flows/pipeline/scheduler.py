"""Whether a `--dask` address is a Dask scheduler that answers, asked in a bounded time before anything is stored
or taken from an inbox.

Belongs here: the check of a scheduler address that the commands taking `--dask` make before their flow starts, and
that the nightly flow makes before it claims a run. Distributed's own connection is not that check: it retries an
address nobody listens on for its whole timeout (30 s), waits without end for a listener that says nothing, and
reads the first bytes an HTTP server sends back as the length of a message to allocate. A Dask server greets
first (its handshake: 8 bytes of length, then a small message), so the check reads that greeting on a plain
socket before it asks the server who it is (`identity`, a scheduler's or a worker's).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from judged.transforms.errors import UsageError

SCHEDULER_SECONDS = 5.0
"""How long the check waits for an answer in all: a scheduler on its network answers within milliseconds."""
GREETING_BYTES = 1 << 16
"""The longest greeting a Dask server sends (its handshake is some 60 bytes): more is another protocol's bytes."""


def require_scheduler(address: str, seconds: float = SCHEDULER_SECONDS) -> None:
    """Return when a Dask scheduler answers at `address` (`tcp://host:port`, or another scheme distributed
    knows) within `seconds`; otherwise a UsageError naming `--dask`, the address and what answered instead."""
    deadline = time.monotonic() + seconds
    scheme, _, location = address.partition("://")
    if scheme == "tcp":
        _require_greeting(address, location, deadline, seconds)
    kind = _identity(address, deadline, seconds).get("type")
    if kind != "Scheduler":
        raise UsageError("--dask", f"{address} is a Dask {kind or 'server'}, not a scheduler: give the scheduler's "
                                   "address")


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.01)


def _require_greeting(address: str, location: str, deadline: float, seconds: float) -> None:
    """A UsageError unless the server at `location` (host:port) sends a Dask greeting's first 8 bytes, a length
    a greeting can have, before the deadline, without being sent anything."""
    from distributed.comm.addressing import parse_host_port

    try:
        host, port = parse_host_port(location, 8786)
    except ValueError as error:
        raise UsageError("--dask", f"{address}: {error}") from None
    try:
        connection = socket.create_connection((host, port), timeout=_left(deadline))
    except socket.gaierror as error:
        raise UsageError("--dask", f"{address}: unknown host {host!r} ({error.strerror})") from None
    except TimeoutError:
        raise UsageError("--dask", f"{address}: nothing answered within {seconds:g} s") from None
    except OSError as error:
        raise UsageError("--dask", f"{address}: no Dask scheduler there ({error.strerror or error})") from None
    with connection:
        header = b""
        try:
            while len(header) < 8:
                connection.settimeout(_left(deadline))
                received = connection.recv(8 - len(header))
                if not received:
                    raise UsageError("--dask", f"{address} closed the connection without a Dask greeting: not a Dask "
                                               "scheduler")
                header += received
        except TimeoutError:
            raise UsageError("--dask", f"{address} took the connection but sent no Dask greeting within {seconds:g} "
                                       "s: not a Dask scheduler (an HTTP server, or another service?)") from None
        except OSError as error:
            raise UsageError("--dask", f"{address}: the connection failed ({error.strerror or error})") from None
    (length,) = struct.unpack("Q", header)  # distributed's frame header: a native unsigned 64-bit length
    if not 0 < length <= GREETING_BYTES:
        raise UsageError("--dask", f"{address} answered with something other than a Dask greeting ({header!r}): not "
                                   "a Dask scheduler")


def _identity(address: str, deadline: float, seconds: float) -> dict[str, Any]:
    """The server's own description (`identity`: its `type` says Scheduler or Worker), asked over distributed's
    connection, in a thread of its own (the caller may run an event loop) and bounded by the deadline."""
    from distributed.core import rpc
    from distributed.security import Security

    # The client's connection settings of dask's configuration (tls:// needs its certificates), as a Client takes them.
    connection_args = Security().get_connection_args("client")

    async def ask() -> dict[str, Any]:
        async with rpc(address, timeout=_left(deadline), connection_args=connection_args) as remote:
            return await remote.identity()

    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            return pool.submit(lambda: asyncio.run(asyncio.wait_for(ask(), _left(deadline)))).result()
        except TimeoutError:
            raise UsageError("--dask", f"{address}: no Dask scheduler answered within {seconds:g} s") from None
        except Exception as error:  # whatever the peer sent broke distributed's reading (a MemoryError, ...)
            lines = [line for line in str(error).splitlines() if line.strip()]
            why = type(error).__name__ + (f": {lines[0].strip()}" if lines else "")
            raise UsageError("--dask", f"{address}: not a Dask scheduler that answers ({why})") from None
