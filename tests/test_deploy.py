"""deploy/: every viewlineage command line parses with the real CLI, and images are pinned.
Docker does not run here, so this is as far as the compose file is exercised (README says so)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
import yaml

from viewlineage.queries.cli import cli

DEPLOY = Path(__file__).parents[1] / "deploy"


def parse_command_line(args: list[str]) -> tuple[str, dict[str, object]]:
    """Parse `viewlineage ...` as the CLI would, without running it: (command, its parameters)."""
    assert args[0].endswith("viewlineage"), args
    with cli.make_context("viewlineage", args[1:], resilient_parsing=False) as context:
        name, command, rest = cli.resolve_command(context, [*context._protected_args, *context.args])
        assert command is not None and name is not None
        with command.make_context(name, rest, parent=context) as sub:
            return name, dict(sub.params)


def compose() -> dict[str, object]:
    document = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(document, dict)
    return document


def test_compose_command_lines_parse() -> None:
    services = compose()["services"]
    assert isinstance(services, dict)
    name, params = parse_command_line(services["consume"]["command"])
    assert name == "consume"
    assert params["topics"] == ("seaweedfs-filer",)
    assert params["allow_prefix"] == ("s3://lake/warehouse",)
    assert params["bootstrap_servers"] == "kafka:9092"
    assert params["metrics_port"] == 9464
    # Served on every address of the container: behind the token, mounted as a compose secret.
    assert (params["metrics_host"], params["auth_token_file"]) == (
        "0.0.0.0",
        "/run/secrets/viewlineage-token",
    )
    assert services["consume"]["secrets"] == ["viewlineage-token"]
    assert compose()["secrets"] == {"viewlineage-token": {"file": "./viewlineage-token"}}


def test_images_are_pinned() -> None:
    services = compose()["services"]
    assert isinstance(services, dict)
    for service in services.values():
        image = service["image"]
        assert re.fullmatch(r"[\w./-]+:\d[\w.-]*", image), image
    assert re.search(r"^FROM python:3\.11\.\d+-", (DEPLOY / "Dockerfile").read_text(), re.M)


def test_systemd_unit_command_line_parses() -> None:
    unit = (DEPLOY / "systemd" / "viewlineage-watch.service").read_text()
    (exec_start,) = re.findall(r"^ExecStart=(.+)$", unit, re.M)
    name, params = parse_command_line(shlex.split(exec_start))
    assert (name, params["root"], params["reconcile_every"]) == ("watch", "/srv/warehouse", "10m")


def test_a_wrong_flag_would_be_caught() -> None:
    with pytest.raises(click.NoSuchOption):
        parse_command_line(["viewlineage", "consume", "--topics", "x"])
