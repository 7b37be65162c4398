"""A real browser for the web UI's tests: Debian's chromium driven by Playwright (no browser
download), and pages that fail their test on a JavaScript error or a failed request, each leaving
its screenshot under build/test-artifacts/ (or $VIEWLINEAGE_TEST_ARTIFACTS)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Response, sync_playwright

from .conftest import ROOT

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("VIEWLINEAGE_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts"))
needs_chromium = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None, reason="Debian's chromium is not installed (make test installs it)"
)


@contextlib.contextmanager
def launched() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            # As root, and on a machine whose network is closed: no sandbox, no background traffic.
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                  "--disable-component-update", "--disable-sync"],
        )  # fmt: skip
        yield browser
        browser.close()


class Visit:
    """A page opened in a fresh tab, failing on any console error or warning, or failed request."""

    def __init__(self, browser: Browser, url: str, name: str, status: int = 200) -> None:
        """`status`: what the page itself answers (a page refusing its question, 400)."""
        self.page: Page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.problems: list[str] = []
        # Chromium logs a page answered with an error status as a failed load: expected of `status`.
        expected = f"Failed to load resource: the server responded with a status of {status} "
        self.page.on(
            "console",
            lambda m: (
                self.problems.append(m.text)
                if m.type in ("error", "warning") and (status == 200 or not m.text.startswith(expected))
                else None
            ),
        )
        self.page.on("pageerror", lambda error: self.problems.append(str(error)))
        self.page.on("requestfailed", lambda request: self.problems.append(f"failed: {request.url}"))
        self.page.on("response", lambda r: self._check(r, status))
        response = self.page.goto(url, wait_until="networkidle")
        assert response is not None and response.status == status, url
        self.name = name

    def _check(self, response: Response, expected: int) -> None:
        if response.status >= 400 and not (
            response.request.is_navigation_request() and response.status == expected
        ):
            self.problems.append(f"{response.status}: {response.url}")

    def cells(self, table: str, column: str) -> list[str]:
        return self.page.locator(f"#{table} td[data-column={column}]").all_inner_texts()

    def close(self) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=ARTIFACTS / f"{self.name}.png", full_page=True)
        self.page.close()
        assert self.problems == [], self.problems
