"""Who may read the API and the pages: anyone on loopback; elsewhere, whoever holds the token in the
file `auth-token-file` names. Programs send it as a bearer header; browsers type it once into the
login form, which sets a cookie. `/healthz` and `/metrics` stay open for orchestrators and
Prometheus, and the stylesheet and scripts for the login page.

The cookie holds an HMAC of the token, not the token: a cookie that leaks from a browser's store
opens the pages, but does not reveal what API clients send. Every comparison takes constant time.
The file is read again when it changes (a rotated token works at once, and the old one, and every
cookie signed with it, stops working), and a client address that sends more than `MAX_FAILURES`
wrong tokens in `FAILURE_WINDOW_SECONDS` is refused (429) until the window has passed.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import threading
import time
from collections import deque
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from viewlineage.indexer.errors import UsageError
from viewlineage.queries.web.api import COOKIE, PREFIX, encode

OPEN_PATHS = ("/healthz", "/metrics", "/static/")
MIN_TOKEN_CHARS = 16
SESSION_SECONDS = 12 * 3600
"""How long a browser's sign-in lasts."""
MAX_FORM_BYTES = 4096
MAX_FAILURES = 10
FAILURE_WINDOW_SECONDS = 60.0
MAX_TRACKED_CLIENTS = 10_000
"""Addresses whose failures are kept: past it, those with none in the window are forgotten."""


def loopback(host: str) -> bool:
    """Whether `host` is an address only this machine reaches."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: Path) -> str:
    """The token in `path` (its first line, after a byte-order mark an editor may have written); a
    `UsageError` when it is unreadable, too short to resist guessing, or not what a header can carry."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except OSError as exc:
        raise UsageError(f"auth-token-file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"auth-token-file {path}: not text") from None
    token = lines[0].strip() if lines else ""
    if len(token) < MIN_TOKEN_CHARS:
        raise UsageError(
            f"auth-token-file {path}: the token is {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
            "random ones (`openssl rand -hex 32 > FILE`)"
        )
    if not (token.isascii() and token.isprintable()) or " " in token:
        raise UsageError(
            f"auth-token-file {path}: the token holds characters other than printable ASCII without "
            "spaces, which an Authorization header cannot carry as they are"
        )
    return token


def protected(app: ASGIApp, host: str, token_file: Path | None) -> ASGIApp:
    """`app` as served on `host`: behind the token when there is one; refused (a `UsageError`) on
    an address other machines reach without one."""
    if token_file is None:
        if not loopback(host):
            raise UsageError(
                f"listening on {host} serves the store to other machines: give --auth-token-file "
                "(a file holding a token of at least 16 random characters), or listen on 127.0.0.1"
            )
        # A page on another site can make a browser ask a loopback server under a name of its
        # own that resolves to 127.0.0.1 (DNS rebinding), and read the answer: only the machine's
        # own names are served.
        return OwnNames(app, {host, "127.0.0.1", "localhost", "::1"})
    return TokenAuth(app, TokenFile(token_file))


class OwnNames:
    """ASGI middleware: requests naming a host other than `names` (the `Host` header) get a 400,
    in the API's terms (`{"error": ...}`)."""

    def __init__(self, app: ASGIApp, names: set[str]) -> None:
        self.app = app
        self.names = {name.lower().strip("[]") for name in names}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            asked = Request(scope).headers.get("host", "")
            try:
                name = urlsplit(f"//{asked}").hostname or ""
            except ValueError:  # a malformed port or bracket
                name = ""
            if name not in self.names:
                known = ", ".join(sorted(self.names))
                error = {"error": f"this server answers to {known}, not {asked[:80]!r}"}
                await Response(encode(error), 400, media_type="application/json")(scope, receive, send)
                return
        await self.app(scope, receive, send)


class TokenFile:
    """The token `auth-token-file` holds, read again when the file changes: a file that becomes
    unreadable or holds too short a token keeps the last good one (no sign-in is opened or locked
    out by a half-written file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.token = read_token(path).encode()
        self._seen = self._stamp()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            status = self.path.stat()
        except OSError:
            return None
        return status.st_mtime_ns, status.st_size

    def current(self) -> bytes:
        stamp = self._stamp()
        if stamp is not None and stamp != self._seen:
            self._seen = stamp
            with contextlib.suppress(UsageError):
                self.token = read_token(self.path).encode()
        return self.token


class Failures:
    """Wrong tokens per client address in the last `FAILURE_WINDOW_SECONDS`."""

    def __init__(self) -> None:
        self._times: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, client: str) -> int | None:
        """Seconds until `client` may try again; None when it may now."""
        with self._lock:
            times = self._recent(client)
            if len(times) < MAX_FAILURES:
                return None
            return max(1, int(times[0] + FAILURE_WINDOW_SECONDS - time.monotonic()) + 1)

    def record(self, client: str) -> None:
        with self._lock:
            if client not in self._times and len(self._times) >= MAX_TRACKED_CLIENTS:
                for known in list(self._times):
                    if not self._recent(known):
                        del self._times[known]
            self._times.setdefault(client, deque(maxlen=MAX_FAILURES)).append(time.monotonic())

    def _recent(self, client: str) -> deque[float]:
        times = self._times.get(client, deque())
        while times and times[0] <= time.monotonic() - FAILURE_WINDOW_SECONDS:
            times.popleft()
        return times


class TokenAuth:
    """ASGI middleware: the token (a bearer header, or the login form's cookie) or no answer."""

    def __init__(self, app: ASGIApp, token: TokenFile) -> None:
        self.app = app
        self.token = token
        self.failures = Failures()

    def _session(self, expires: int) -> str:
        """A session cookie's value: its end (epoch seconds), signed with the token, so that a
        cookie copied or kept past a sign-out stops working by itself."""
        signed = hmac.new(self.token.current(), f"viewlineage session {expires}".encode(), hashlib.sha256)
        return f"{expires}.{signed.hexdigest()}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        path = request.url.path
        client = request.client.host if request.client else ""
        retry = self.failures.retry_after(client)
        if retry is not None and not path.startswith(OPEN_PATHS):
            response = Response(
                encode({"error": f"too many wrong tokens from {client}: try again in {retry} s"}),
                429,
                media_type="application/json",
                headers={"retry-after": str(retry)},
            )
        elif path == "/login":
            response = await self._login(request, client)
        elif path == "/logout":
            response = RedirectResponse("/login", 303)
            response.delete_cookie(COOKIE, path="/")
        elif path.startswith(OPEN_PATHS) or self._authorized(request):
            await self.app(scope, receive, send)
            return
        elif path.startswith(PREFIX) or "text/html" not in request.headers.get("accept", ""):
            response = Response(
                encode({"error": "this server needs a token: send `Authorization: Bearer <token>`"}),
                401,
                media_type="application/json",
                headers={"www-authenticate": 'Bearer realm="viewlineage"'},
            )
        else:
            wanted = path + (f"?{request.url.query}" if request.url.query else "")
            response = RedirectResponse(f"/login?{urlencode({'next': wanted})}", 303)
        await response(scope, receive, send)

    def _authorized(self, request: Request) -> bool:
        """Whether the bearer header or the session cookie holds; a wrong bearer header counts as a
        failure only when the cookie does not hold either (a stale header beside a good cookie)."""
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        bearer = scheme.lower() == "bearer"
        if bearer and hmac.compare_digest(given.strip().encode(), self.token.current()):
            return True
        cookie = request.cookies.get(COOKIE, "")
        expires, _, _ = cookie.partition(".")
        live = expires.isdigit() and int(expires) > time.time()
        if live and hmac.compare_digest(cookie.encode(), self._session(int(expires)).encode()):
            return True
        if bearer:
            self.failures.record(request.client.host if request.client else "")
        return False

    async def _login(self, request: Request, client: str) -> Response:
        """GET: the form. POST: the token typed in; right, the cookie and the page asked for."""
        wanted = _local_path(request.query_params.get("next", "/"))
        if request.method != "POST":
            return _login_page(wanted, None, 200)
        # A browser names the page a form was sent from: only this server's own (as it is asked
        # for, directly or through a proxy that says so), so that another site cannot sign one in.
        origin = request.headers.get("origin")
        served = {request.headers.get("host"), request.headers.get("x-forwarded-host")}
        if origin is not None and urlsplit(origin).netloc not in served:
            return _login_page(wanted, "a sign-in from another site is refused", 403)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                return _login_page(wanted, "the form is too large", 413)
        form = parse_qs(body.decode(errors="replace"))
        given = (form.get("token") or [""])[0].strip()
        wanted = _local_path((form.get("next") or [wanted])[0])
        if not hmac.compare_digest(given.encode(), self.token.current()):
            self.failures.record(client)
            return _login_page(wanted, "wrong token", 401)
        response = RedirectResponse(wanted, 303)
        expires = int(time.time()) + SESSION_SECONDS
        response.set_cookie(
            COOKIE,
            self._session(expires),
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response


def _local_path(text: str) -> str:
    """`text` if it is a path on this server, else `/`: the login never sends anyone elsewhere."""
    if text.startswith("/") and not text.startswith(("//", "/\\")) and "\\" not in text:
        return text
    return "/"


def _login_page(wanted: str, problem: str | None, status: int) -> Response:
    from viewlineage.queries.web.pages import TEMPLATES

    page = TEMPLATES.get_template("login.html").render(
        title="Sign in", wanted=wanted, problem=problem, questions={}
    )
    return HTMLResponse(page, status_code=status)
