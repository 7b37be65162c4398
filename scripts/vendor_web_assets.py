"""Fetch the web UI's JavaScript from the npm registry into `queries/web/static/vendor/` (a
maintainer's script: set-up and tests never run it; the files are committed, since deployments are
air-gapped).

    python scripts/vendor_web_assets.py            # fetch what vendored.json pins, check, record
    python scripts/vendor_web_assets.py --check    # only check the committed files (no network)

`vendored.json` pins each package's version and the files taken from its tarball. The first fetch
of a version records the registry's `integrity` (SHA-512 of the tarball); later fetches refuse a
tarball that does not match it. Each file lands in `vendor/` under its own name, and the package's
licence as `vendor/<package>.LICENSE`; the manifest records their SHA-256, which `--check` (and the
test suite) compare.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import sys
import tarfile
import urllib.request
from pathlib import Path
from typing import Any

VENDOR = Path(__file__).resolve().parents[1] / "queries" / "web" / "static" / "vendor"
MANIFEST = VENDOR / "vendored.json"
LICENCE_NAMES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "license")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:
        return bytes(response.read())


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(registry: str, package: dict[str, Any]) -> None:
    name, version = package["name"], package["version"]
    published = json.loads(_get(f"{registry}/{name}/{version}"))
    integrity = published["dist"]["integrity"]
    if package.get("integrity", integrity) != integrity:
        raise SystemExit(f"{name}@{version}: the registry's integrity {integrity} is not the pinned one")
    tarball = _get(published["dist"]["tarball"])
    if _integrity(tarball) != integrity:
        raise SystemExit(f"{name}@{version}: the tarball does not match its integrity {integrity}")
    with tarfile.open(fileobj=io.BytesIO(tarball)) as archive:
        members = {member.name.removeprefix("package/"): member for member in archive.getmembers()}
        licence = next((n for n in LICENCE_NAMES if n in members), None)
        if licence is None:
            raise SystemExit(f"{name}@{version}: no licence file in the tarball")
        recorded = {}
        for wanted, saved in [*((f, Path(f).name) for f in package["files"]), (licence, f"{name}.LICENSE")]:
            extracted = archive.extractfile(members[wanted])
            assert extracted is not None, wanted
            data = extracted.read()
            (VENDOR / saved).write_bytes(data)
            recorded[saved] = _sha256(data)
    package.update(integrity=integrity, licence=published.get("license"), sha256=recorded)
    print(f"{name}@{version}: {', '.join(recorded)}")


def check(manifest: dict[str, Any]) -> list[str]:
    """What differs between the committed files and the manifest."""
    problems = []
    for package in manifest["packages"]:
        for file_name, digest in package.get("sha256", {}).items():
            path = VENDOR / file_name
            if not path.exists():
                problems.append(f"{path} is missing")
            elif _sha256(path.read_bytes()) != digest:
                problems.append(f"{path} is not the file fetched from the registry")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the committed files")
    arguments = parser.parse_args(argv)
    manifest = json.loads(MANIFEST.read_text())
    if not arguments.check:
        for package in manifest["packages"]:
            fetch(manifest["registry"], package)
        MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    problems = check(manifest)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
