"""``argue models``: every provider, whether it is ready (and in words why not), its models.

Providers that can list their models are asked, briefly and all at once; a listing that fails
or times out is shown in a line and the configured default stands in for it.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.config import Settings
    from app.providers.base import ProviderStatus

LIST_TIMEOUT = 8.0


@dataclass(frozen=True)
class ProviderReport:
    name: str
    configured: bool
    reason: str
    default_model: str
    models: tuple[str, ...]
    models_error: str | None = None


def _seconds(text: str) -> float:
    """A positive, finite number of seconds: ``float`` alone takes "nan", "inf" and "-1"."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=LIST_TIMEOUT,
        help=f"seconds to wait for each provider's model list (default {LIST_TIMEOUT:g})",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio

    from app.config import get_settings

    reports = asyncio.run(collect(get_settings(), list_timeout=args.timeout))
    if args.json:
        print(json.dumps([asdict(report) for report in reports], indent=2))
    else:
        print(render(reports))
    return 0


async def collect(settings: Settings, *, list_timeout: float) -> list[ProviderReport]:
    import asyncio

    from app.providers.registry import PROVIDER_NAMES, provider_status

    statuses = [provider_status(name, settings) for name in PROVIDER_NAMES]
    return list(await asyncio.gather(*(_report(s, settings, list_timeout) for s in statuses)))


async def _report(
    status: ProviderStatus, settings: Settings, list_timeout: float
) -> ProviderReport:
    import asyncio

    from app.providers.base import ProviderError
    from app.providers.registry import build_provider

    fallback = (status.default_model,)
    if not status.configured:
        return _from_status(status, fallback)
    error: str | None = None
    try:
        provider = build_provider(status.name, settings)
        models = await asyncio.wait_for(provider.list_models(), list_timeout)
    except TimeoutError:
        error = f"no model list within {list_timeout:g}s"
    except ProviderError as exc:
        error = f"{exc.kind.value}: {_first_line(exc.message)}"
    except Exception as exc:  # a listing is a courtesy: never let it break the command
        error = f"{type(exc).__name__}: {_first_line(str(exc))}"
    if error is not None or not models:
        return _from_status(status, fallback, error)
    return _from_status(status, tuple(models))


def _from_status(
    status: ProviderStatus, models: tuple[str, ...], error: str | None = None
) -> ProviderReport:
    return ProviderReport(
        name=status.name,
        configured=status.configured,
        reason=status.reason,
        default_model=status.default_model,
        models=models,
        models_error=error,
    )


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def render(reports: list[ProviderReport]) -> str:
    width = max(len(report.name) for report in reports)
    lines: list[str] = []
    for report in reports:
        state = "ready" if report.configured else "not configured"
        lines.append(f"{report.name:<{width}}  {state:<14}  {report.reason}")
        indent = " " * (width + 2)
        if report.models_error:
            lines.append(f"{indent}models: could not list ({report.models_error})")
        if report.models == (report.default_model,):
            lines.append(f"{indent}model: {report.default_model}")
            continue
        shown = [f"{m} (default)" if m == report.default_model else m for m in report.models]
        if report.default_model not in report.models:
            shown.insert(0, f"{report.default_model} (default)")
        lines.append(f"{indent}models: {', '.join(shown)}")
    return "\n".join(lines)
