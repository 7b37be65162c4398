"""Take the README's screenshots of the web UI: the bundled sample warehouse indexed into a scratch
store, `viewlineage serve` on a free loopback port, and each page in Debian's headless chromium
(a maintainer's script, like `vendor_web_assets.py`: the PNGs are committed, and neither set-up nor
tests run it).

    python scripts/screenshots.py        # writes docs/screenshots/*.png
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "sample" / "warehouse"
TARGET = ROOT / "docs" / "screenshots"
PAGES = {
    "activity": ("/", None),
    "view": ("/view?view=prod.db.event_agg&before=9&after=13", "Versions side by side"),
    "lineage": ("/lineage?name=prod.db.events&as_of=2026-11-21T23:17:28Z&compare=2026-11-21T23:17:25Z", None),
    "impact": ("/impact?table=prod.db.events&column=kind&change=drop", None),
    "table": ("/table?table=prod.sales.orders", None),
    "health": ("/health", None),
}
"""Each screenshot's name, the page it shows and the heading of the part shown (None: the top)."""


def main() -> None:
    subprocess.run([sys.executable, str(ROOT / "tests" / "data" / "restore_mtimes.py")], check=True)
    TARGET.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "store.duckdb"
        cli = [sys.executable, "-m", "viewlineage.queries.cli", "--db", str(db)]
        mapped = ["--catalog-map", f"{SAMPLE}=prod", "--no-progress"]
        subprocess.run([*cli, "index", str(SAMPLE), *mapped], check=True, capture_output=True)
        server = subprocess.Popen([*cli, "serve", "--port", "0"], stderr=subprocess.PIPE, text=True)
        try:
            assert server.stderr is not None
            site = server.stderr.readline().split(" at ")[-1].strip().removesuffix("/api/")
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=shutil.which("chromium"))
                for name, (path, heading) in PAGES.items():
                    page = browser.new_page(viewport={"width": 1280, "height": 800})
                    page.goto(site + path, wait_until="networkidle")
                    if heading is not None:
                        page.evaluate(
                            "(text) => [...document.querySelectorAll('h2')]"
                            ".find((h) => h.textContent === text).scrollIntoView()",
                            heading,
                        )
                    page.screenshot(path=TARGET / f"{name}.png")
                    page.close()
                browser.close()
        finally:
            server.terminate()
            server.wait(10)
    print(f"screenshots in {TARGET}")


if __name__ == "__main__":
    main()
