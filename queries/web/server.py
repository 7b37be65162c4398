"""Running the web application: uvicorn on an asyncio loop in a daemon thread, so that a slow query
holds up no health check and an idle or half-open connection holds no thread."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from viewlineage.indexer.errors import ServiceUnavailable

REQUEST_SECONDS = 10.0
"""How long a connection may take to send a whole request (a new one, or the next on a kept-alive
one) before it is closed: connections that send nothing, or a byte at a time, are not kept."""

KEEP_ALIVE_SECONDS = 5
MAX_CONNECTIONS = 1000
"""Beyond this many open connections, a request is answered 503 at once (each costs a file
descriptor and a little memory, no thread; a request runs on one of a pool of 40 threads)."""


class _RequestDeadlineProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, which times out idle connections only after a response, with a
    deadline for each request to arrive in full."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_request_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_request_deadline()

    def _arm_request_deadline(self) -> None:
        waiting_after = self.cycle  # a new request replaces it

        def expire() -> None:
            if self.cycle is waiting_after and not self.transport.is_closing():
                self.transport.close()

        self.loop.call_later(REQUEST_SECONDS, expire)


class WebServer:
    """Serves `app` on `host:port` (0: any free port) from a daemon thread until `close()`."""

    def __init__(self, app: ASGIApp, host: str, port: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self._socket = socket.create_server((host, port), family=family)
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise ServiceUnavailable(f"cannot listen on {host}:{port}: {reason}") from exc
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            app,
            http=_RequestDeadlineProtocol,
            lifespan="off",
            log_config=None,
            access_log=False,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            limit_concurrency=MAX_CONNECTIONS,
            server_header=False,
        )
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="http", daemon=True)
        self._failure: BaseException | None = None
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise ServiceUnavailable(
                    f"the web server on {host}:{self.port} did not start: {self._failure}"
                )
            time.sleep(0.01)

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._socket])
        except BaseException as exc:  # reported by the constructor while it waits for the start
            self._failure = exc

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> WebServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
