"""docker-compose.yml cannot be run here (no images can be built), so it is read: every
service that runs Argue runs a real ``argue`` subcommand with arguments it accepts, every
``ARGUE_`` variable it sets is a real setting, and the cluster's proxy is set up for
server-sent events."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli.main import SUBCOMMANDS, build_parser
from app.config import Settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def argue_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: service
        for name, service in compose["services"].items()
        if service.get("image", "").startswith("argue") or "build" in service
    }


def setting_names() -> set[str]:
    return {f"ARGUE_{name.upper()}" for name in Settings.model_fields}


def dockerfile_command() -> list[str]:
    match = re.search(r"^CMD (\[.*\])$", (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    assert match, "the Dockerfile has no CMD in exec form"
    command: list[str] = yaml.safe_load(match.group(1))
    return command


def test_the_default_service_is_one_container_serving_the_app(compose: dict[str, Any]) -> None:
    default = {n: s for n, s in compose["services"].items() if not s.get("profiles")}
    assert list(default) == ["argue"]
    assert "command" not in default["argue"]
    assert dockerfile_command()[:2] == ["argue", "serve"]
    assert "ARGUE_DATABASE_URL" not in default["argue"]["environment"]


def test_the_cluster_profile_has_the_services_a_team_needs(compose: dict[str, Any]) -> None:
    cluster = {n for n, s in compose["services"].items() if "cluster" in s.get("profiles", [])}
    assert cluster == {"postgres", "redis", "web-a", "web-b", "worker-a", "worker-b", "proxy"}
    commands = {
        n: compose["services"][n]["command"][:2]
        for n in cluster
        if n.startswith(("web-", "worker-"))
    }
    assert commands == {
        "web-a": ["argue", "serve"],
        "web-b": ["argue", "serve"],
        "worker-a": ["argue", "worker"],
        "worker-b": ["argue", "worker"],
    }
    assert set(compose["services"]["proxy"]["depends_on"]) == {
        "web-a",
        "web-b",
        "worker-a",
        "worker-b",
    }


def test_every_argue_command_is_a_real_subcommand_with_valid_arguments(
    compose: dict[str, Any],
) -> None:
    commands = [dockerfile_command()] + [
        s["command"] for s in argue_services(compose).values() if "command" in s
    ]
    assert len(commands) >= 5
    for command in commands:
        assert command[0] == "argue"
        assert command[1] in SUBCOMMANDS, f"{command[1]!r} is not an argue subcommand"
        build_parser(command[1:]).parse_args(command[1:])


def test_only_services_that_serve_http_keep_the_images_http_health_check(
    compose: dict[str, Any],
) -> None:
    probed = re.search(
        r"^HEALTHCHECK .*?(\d+)/healthz", (ROOT / "Dockerfile").read_text(), re.S | re.M
    )
    assert probed is not None
    port = probed.group(1)
    for name, service in argue_services(compose).items():
        command = service.get("command", dockerfile_command())
        if command[:2] == ["argue", "serve"]:
            assert command[command.index("--port") + 1] == port, name
            assert "healthcheck" not in service, name
        else:
            assert service.get("healthcheck", {}).get("disable") is True, name


def test_every_argue_variable_set_is_a_real_setting(compose: dict[str, Any]) -> None:
    known = setting_names()
    seen: set[str] = set()
    for name, service in argue_services(compose).items():
        for variable in service.get("environment", {}):
            if variable.startswith("ARGUE_"):
                assert variable in known, f"{name} sets {variable}, which Argue does not read"
                seen.add(variable)
    assert {"ARGUE_DATABASE_URL", "ARGUE_REDIS_URL", "ARGUE_RUN_DEBATES"} <= seen


def test_the_cluster_settings_are_ones_argue_accepts(compose: dict[str, Any]) -> None:
    environment = compose["services"]["worker-a"]["environment"]
    values = {
        key.removeprefix("ARGUE_").lower(): value.replace("${POSTGRES_PASSWORD:-argue}", "x")
        for key, value in environment.items()
    }
    settings = Settings(**values)
    assert settings.sqlalchemy_url.startswith("postgresql")
    assert settings.run_debates == "workers"


def test_the_proxy_neither_buffers_nor_cuts_a_live_stream() -> None:
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    wanted = r"^\s*(proxy_buffering|proxy_read_timeout|proxy_http_version)\s+(\S+);"
    directives = dict(re.findall(wanted, conf, re.MULTILINE))
    assert directives["proxy_buffering"] == "off"
    assert directives["proxy_http_version"] == "1.1"
    timeout = directives["proxy_read_timeout"]
    seconds = int(timeout[:-1]) * {"s": 1, "m": 60, "h": 3600}[timeout[-1]]
    assert seconds >= 600
    assert re.search(r"server web-a:8000", conf) and re.search(r"server web-b:8000", conf)
    assert re.search(r"proxy_set_header Host \$http_host;", conf)


def test_the_proxy_sends_every_request_about_one_debate_to_one_node() -> None:
    """A debate's page, streams and downloads hash to one node, so only that node reads and
    renders its live events; the node is found from the path alone."""
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    upstream = re.search(r"upstream argue_web \{(.*?)\}", conf, re.DOTALL)
    assert upstream is not None
    hashed = re.search(r"^\s*hash \$(\w+) consistent;", upstream.group(1), re.MULTILINE)
    assert hashed is not None
    route = re.search(r"map \$uri \$" + hashed.group(1) + r" \{(.*?)\}", conf, re.DOTALL)
    assert route is not None
    pattern, value = re.findall(r"^\s*~(\S+)\s+\$(\d+);", route.group(1), re.MULTILINE)[0]
    debate_id = "0193a1b2c3d4"
    for path in (
        f"/debates/{debate_id}",
        f"/debates/{debate_id}/stream",
        f"/debates/{debate_id}/finals.md",
        f"/api/debates/{debate_id}",
        f"/api/debates/{debate_id}/events",
    ):
        found = re.match(pattern, path)
        assert found is not None and found.group(int(value)) == debate_id, path
    assert re.match(pattern, "/healthz") is None
    assert re.search(r"^\s*default\s+\$request_id;", route.group(1), re.MULTILINE)
