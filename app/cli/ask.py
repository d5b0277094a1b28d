"""``argue ask``: stream one reply from one provider — the smallest proof that a seat works.

The reply goes to stdout as it arrives; retries, token usage and latency go to stderr, so
``argue ask … > reply.txt`` keeps only the reply. Unlike a debate seat, ``ask`` never falls
back to another provider: an unconfigured provider is reported and the command exits 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.providers.registry import PROVIDER_NAMES

if TYPE_CHECKING:
    from app.config import Settings
    from app.providers.base import Provider, Usage

DEFAULT_SYSTEM = "You are a helpful assistant. Answer clearly and concisely."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--provider",
        "-p",
        default="local",
        choices=PROVIDER_NAMES,
        metavar="NAME",
        help=f"which provider answers: {', '.join(PROVIDER_NAMES)} (default: local)",
    )
    parser.add_argument("--model", "-m", help="model name (default: the provider's default)")
    parser.add_argument(
        "--max-tokens",
        type=int,
        help="cap on the reply's tokens (default: ARGUE_MAX_OUTPUT_TOKENS)",
    )
    parser.add_argument("--system", "-s", default=DEFAULT_SYSTEM, help="the system text")
    parser.add_argument("prompt", nargs="?", help="the prompt; read from stdin when omitted")


@dataclass(frozen=True)
class Reply:
    text: str
    usage: Usage | None
    stop_reason: str | None
    first_token_after: float | None
    seconds: float


def run(args: argparse.Namespace) -> int:
    import asyncio

    from app.config import get_settings
    from app.providers.base import ProviderError
    from app.providers.registry import build_provider, default_model

    if args.max_tokens is not None and args.max_tokens < 1:
        print(
            f"argue ask: --max-tokens must be at least 1 (got {args.max_tokens})", file=sys.stderr
        )
        return 2
    prompt = _prompt(args.prompt)
    if not prompt:
        print("argue ask: give a prompt (an argument, or text on stdin)", file=sys.stderr)
        return 2
    settings = get_settings()
    provider = build_provider(args.provider, settings)
    status = provider.status()
    if not status.configured:
        print(f"argue ask: {args.provider} is not configured: {status.reason}", file=sys.stderr)
        return 2
    model = args.model or default_model(args.provider, settings)
    max_tokens = settings.max_output_tokens if args.max_tokens is None else args.max_tokens
    try:
        reply = asyncio.run(
            _ask(
                provider,
                settings,
                model=model,
                system=args.system,
                prompt=prompt,
                max_tokens=max_tokens,
            )
        )
    except ProviderError as exc:
        print(
            f"\nargue ask: {exc.provider} failed ({exc.kind.value}"
            f"{f' {exc.status}' if exc.status is not None else ''}): {exc.message}",
            file=sys.stderr,
        )
        return 1
    if reply.text and not reply.text.endswith("\n"):
        print(flush=True)  # before the summary on stderr, or a terminal shows them joined
    print(_summary(args.provider, model, reply), file=sys.stderr)
    return 0


def _prompt(argument: str | None) -> str:
    if argument is not None:
        return argument.strip()
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    return sys.stdin.read().strip()


async def _ask(
    provider: Provider,
    settings: Settings,
    *,
    model: str,
    system: str,
    prompt: str,
    max_tokens: int,
) -> Reply:
    from app.providers.base import Finished, Message, Retrying, TextDelta
    from app.providers.resilience import stream_with_retries

    started = time.monotonic()
    first: float | None = None
    parts: list[str] = []
    finished: Finished | None = None
    events = stream_with_retries(
        provider,
        model=model,
        system=system,
        messages=(Message("user", prompt),),
        max_tokens=max_tokens,
        settings=settings,
    )
    async for event in events:
        if isinstance(event, TextDelta):
            if not event.text:
                continue  # a keep-alive (the local model waiting for its turn)
            if first is None:
                first = time.monotonic() - started
            parts.append(event.text)
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif isinstance(event, Retrying):
            # What was printed so far is void: say so, then the retry starts afresh.
            if parts:
                print(file=sys.stdout, flush=True)
            parts.clear()
            first = None
            print(
                f"[{event.error}; retry {event.attempt} in {event.delay:.1f}s]",
                file=sys.stderr,
                flush=True,
            )
        elif isinstance(event, Finished):
            finished = event
    return Reply(
        text="".join(parts),
        usage=finished.usage if finished else None,
        stop_reason=finished.stop_reason if finished else None,
        first_token_after=first,
        seconds=time.monotonic() - started,
    )


def _summary(provider: str, model: str, reply: Reply) -> str:
    if reply.usage is None:
        tokens = "tokens unknown"
    else:
        tokens = f"{reply.usage.input_tokens} in, {reply.usage.output_tokens} out"
        if reply.usage.estimated:
            tokens += " (estimated)"
    timing = f"{reply.seconds:.1f}s"
    if reply.first_token_after is not None:
        timing += f" (first token after {reply.first_token_after:.1f}s)"
    stop = f" · stop: {reply.stop_reason}" if reply.stop_reason else ""
    return f"— {provider} · {model} · {tokens} · {timing}{stop}"
