"""The token in front of the API and the pages: refused without it off loopback, asked for by a
bearer header or the login form's cookie, with /healthz and /metrics open."""

from __future__ import annotations

import functools
import http.client
import json
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.queries.cli import cli
from viewlineage.queries.web.app import store_health, web_app
from viewlineage.queries.web.auth import COOKIE, loopback, protected, read_token
from viewlineage.queries.web.server import WebServer
from viewlineage.sinks.readers import open_reader

TOKEN = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return path


def request(
    url: str, path: str, method: str = "GET", headers: dict[str, str] | None = None, body: str | None = None
) -> tuple[int, dict[str, str], str]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    answer = response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    connection.close()
    return answer


def test_other_machines_are_not_served_without_a_token(tmp_path: Path) -> None:
    hosts = ("127.0.0.1", "127.8.0.1", "::1", "localhost", "0.0.0.0", "10.0.0.1")
    assert [loopback(host) for host in hosts] == [True, True, True, True, False, False]
    db = str(tmp_path / "store.duckdb")
    served = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0", "--db", db])
    assert (served.exit_code, served.output) == (
        2,
        "error: listening on 0.0.0.0 serves the store to other machines: give --auth-token-file (a file "
        "holding a token of at least 16 random characters), or listen on 127.0.0.1\n",
    )
    (tmp_path / "w").mkdir()
    watched = CliRunner().invoke(
        cli, ["watch", str(tmp_path / "w"), "--metrics-port", "0", "--metrics-host", "0.0.0.0", "--db", db]
    )
    assert watched.exit_code == 2 and "give --auth-token-file" in watched.output
    short = tmp_path / "short"
    short.write_text("secret\n")
    reader = functools.partial(open_reader, tmp_path / "store.duckdb")
    app = web_app(reader, 1, store_health(reader))
    with pytest.raises(UsageError, match="the token is 6 characters; use at least 16"):
        protected(app, "0.0.0.0", short)
    with pytest.raises(UsageError, match=r"auth-token-file .*none: No such file"):
        protected(app, "0.0.0.0", tmp_path / "none")
    # Found by the eighteenth adversarial trial: a byte-order mark (an editor's) was taken into the
    # token, which no bearer header then matched; a token no header can carry is refused.
    marked = tmp_path / "marked"
    marked.write_bytes(b"\xef\xbb\xbf" + TOKEN.encode() + b"\r\n")
    assert read_token(marked) == TOKEN
    for unusable in ("0123456789abcdéf0123", "0123456789 abcdef0123"):
        short.write_text(unusable)
        with pytest.raises(UsageError, match="other than printable ASCII without spaces"):
            read_token(short)


def test_the_token_opens_the_api_and_the_pages(sample_store: Path, token_file: Path) -> None:
    reader = functools.partial(open_reader, sample_store)
    app = protected(web_app(reader, 30, store_health(reader)), "0.0.0.0", token_file)
    with WebServer(app, "127.0.0.1", 0) as server:
        url, asked = server.url, "/api/show?view=prod.db.event_agg"
        status, headers, body = request(url, asked)
        assert (status, headers["www-authenticate"], json.loads(body)) == (
            401,
            'Bearer realm="viewlineage"',
            {"error": "this server needs a token: send `Authorization: Bearer <token>`"},
        )
        assert request(url, asked, headers={"Authorization": "Bearer wrong"})[0] == 401
        status, _, body = request(url, asked, headers={"Authorization": f"Bearer {TOKEN}"})
        assert (status, json.loads(body)["view"]) == (200, "prod.db.event_agg")
        assert request(url, "/healthz")[0] == 200
        assert request(url, "/static/app.css")[0] == 200
        # The sixteenth adversarial trial: a 404 under the open /static/ listed every endpoint and page.
        missing = request(url, "/static/../api/search")
        assert (missing[0], json.loads(missing[2])) == (404, {"error": "no such file: /static/../api/search"})
        # A browser is sent to the form, and back where it was going once it signs in.
        status, headers, _ = request(url, "/table?table=db.events", headers={"Accept": "text/html"})
        assert (status, headers["location"]) == (303, "/login?next=%2Ftable%3Ftable%3Ddb.events")
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        wrong = request(url, "/login", "POST", form, urlencode({"token": "nope", "next": "/table"}))
        assert wrong[0] == 401 and "wrong token" in wrong[2]
        status, headers, _ = request(url, "/login", "POST", form, urlencode({"token": TOKEN, "next": "/mvs"}))
        assert (status, headers["location"]) == (303, "/mvs")
        cookie = headers["set-cookie"].split(";")[0]
        assert cookie.startswith(f"{COOKIE}=") and TOKEN not in cookie
        assert "HttpOnly" in headers["set-cookie"] and "SameSite=strict" in headers["set-cookie"]
        status, _, page = request(url, "/mvs", headers={"Cookie": cookie, "Accept": "text/html"})
        assert status == 200 and "<h1>Materialized views</h1>" in page
        assert request(url, asked, headers={"Cookie": cookie})[0] == 200
        assert request(url, asked, headers={"Cookie": f"{COOKIE}=forged"})[0] == 401
        # Found by the eleventh adversarial trial: the cookie was one fixed value, valid for good; it
        # lasts a working day now, its end signed in it, and a sign-in from another site is refused
        assert "Max-Age=43200" in headers["set-cookie"]
        expires, _, signature = cookie.partition("=")[2].partition(".")
        assert int(expires) - time.time() == pytest.approx(43200, abs=60)
        stale = f"{COOKIE}={int(time.time()) - 1}.{signature}"
        assert request(url, asked, headers={"Cookie": stale})[0] == 401
        refused = request(
            url, "/login", "POST", {**form, "Origin": "http://evil.example"}, urlencode({"token": TOKEN})
        )
        assert refused[0] == 403 and "a sign-in from another site is refused" in refused[2]
        # The form never sends anyone to another site.
        for elsewhere in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
            _, headers, _ = request(
                url, "/login", "POST", form, urlencode({"token": TOKEN, "next": elsewhere})
            )
            assert headers["location"] == "/"
        too_large = request(url, "/login", "POST", form, "token=" + "x" * 10_000)
        assert too_large[0] == 413
        _, headers, _ = request(url, "/logout", headers={"Cookie": cookie})
        assert headers["location"] == "/login" and f'{COOKIE}="";' in headers["set-cookie"]


def test_a_loopback_server_answers_only_to_its_own_names(sample_store: Path) -> None:
    """Found by the eighth adversarial trial: with no token on 127.0.0.1, a request naming any
    host was answered, so a page on another site could read the store through a name of its own
    that resolves to 127.0.0.1 (DNS rebinding)."""
    reader = functools.partial(open_reader, sample_store)
    app = protected(web_app(reader, 30, store_health(reader)), "127.0.0.1", None)
    with WebServer(app, "127.0.0.1", 0) as server:
        port = urlsplit(server.url).port
        asked = "/api/show?view=prod.db.event_agg"
        refused = request(server.url, asked, headers={"Host": "evil.example"})
        assert (refused[0], json.loads(refused[2])) == (  # JSON as every 400 (the tenth adversarial trial)
            400,
            {"error": "this server answers to 127.0.0.1, ::1, localhost, not 'evil.example'"},
        )
        for name in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
            assert request(server.url, asked, headers={"Host": name})[0] == 200


def test_a_rotated_token_works_at_once_and_guessing_is_slowed(sample_store: Path, token_file: Path) -> None:
    """Found by the adversarial trials: the token file was read once, at start (rotating it meant a
    restart), and nothing slowed a client trying token after token."""
    reader = functools.partial(open_reader, sample_store)
    app = protected(web_app(reader, 30, store_health(reader)), "0.0.0.0", token_file)
    asked, rotated = "/api/show?view=prod.db.event_agg", "fedcba9876543210fedcba9876543210"
    with WebServer(app, "127.0.0.1", 0) as server:
        url = server.url
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        _, headers, _ = request(url, "/login", "POST", form, urlencode({"token": TOKEN}))
        cookie = headers["set-cookie"].split(";")[0]
        token_file.write_text(rotated + "\n")
        assert request(url, asked, headers={"Authorization": f"Bearer {rotated}"})[0] == 200
        assert request(url, asked, headers={"Authorization": f"Bearer {TOKEN}"})[0] == 401
        assert request(url, asked, headers={"Cookie": cookie})[0] == 401  # signed with the old token
        token_file.write_text("short\n")  # half-written, or a mistake: the last good token stays
        assert request(url, asked, headers={"Authorization": f"Bearer {rotated}"})[0] == 200
        for attempt in range(9):  # 10 wrong tokens a minute (one above), then refused
            assert request(url, asked, headers={"Authorization": f"Bearer wrong{attempt}"})[0] == 401
        status, headers, body = request(url, asked, headers={"Authorization": f"Bearer {rotated}"})
        assert (status, json.loads(body)["error"].split(":")[0]) == (
            429,
            "too many wrong tokens from 127.0.0.1",
        )
        assert 1 <= int(headers["retry-after"]) <= 61
        refused = request(url, "/login", "POST", form, urlencode({"token": rotated}))
        assert refused[0] == 429
        assert request(url, "/healthz")[0] == 200  # orchestrators' probes are never refused


def test_a_stale_bearer_header_beside_a_good_cookie_is_no_wrong_token(
    sample_store: Path, token_file: Path
) -> None:
    """Found by a review: a request carrying an old bearer header and a valid session cookie was
    answered, but counted as a wrong token, so a signed-in browser was refused (429) after ten."""
    reader = functools.partial(open_reader, sample_store)
    app = protected(web_app(reader, 30, store_health(reader)), "0.0.0.0", token_file)
    asked = "/api/show?view=prod.db.event_agg"
    with WebServer(app, "127.0.0.1", 0) as server:
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        _, headers, _ = request(server.url, "/login", "POST", form, urlencode({"token": TOKEN}))
        both = {"Cookie": headers["set-cookie"].split(";")[0], "Authorization": "Bearer stale"}
        assert [request(server.url, asked, headers=both)[0] for _ in range(12)] == [200] * 12
        assert request(server.url, asked, headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
