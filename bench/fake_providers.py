"""The fake providers as the benchmark runs them: ``tests.fakes.llm_server`` in its own
process, with realistic pacing and tokens that carry the moment they were sent.

Every token the fake streams is ``t1234.567890s ``: the placeholder in the scripted token is
replaced by ``time.monotonic()`` at the instant the token is written to the wire (the wire
modules are wrapped, nothing in ``tests/fakes`` changes). ``time.monotonic()`` is one clock for
every process on a machine, so a viewer in another process subtracts the stamp from its own
clock to get the token's trip through the app.

Pacing is scripted with the fake's own public rules (``POST /_fake/rule`` with an empty
``contains``, one per provider), so it can be changed while the server runs. Each seat of the
benchmark's debates uses its own provider, which makes a provider's pace its seat's pace.

Run alone: ``python -m bench.fake_providers --port 8765 --pace anthropic=0.5:50``.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import httpx

from bench import processes

STAMP_PLACEHOLDER = "@@NOW@@"
# A plain word, as most tokens are: no ``<`` or ``&`` that Markdown would try as a tag or
# that HTML escaping would lengthen, which would make the app's work on it unlike a real reply's.
STAMPED_TOKEN = f"t{STAMP_PLACEHOLDER}s "
STAMP_PATTERN = re.compile(r"\bt(\d+\.\d+)s\b")
PROVIDERS = ("anthropic", "gemini", "openai")


@dataclass(frozen=True)
class Pace:
    """How one provider streams: seconds before the first token, then tokens per second,
    sent ``tokens_per_chunk`` at a time (1 is the worst case for the app: every token is a
    wire event its SDK parses; real Anthropic and Gemini streams carry several per event)."""

    first_token_delay: float = 0.5
    tokens_per_second: float = 50.0
    tokens_per_chunk: int = 1

    @property
    def chunk_delay(self) -> float:
        if self.tokens_per_second <= 0:
            return 0.0
        return self.tokens_per_chunk / self.tokens_per_second

    def chunks(self, tokens: int) -> list[str]:
        """The reply's wire chunks: every token stamped with its chunk's send time."""
        full, rest = divmod(tokens, self.tokens_per_chunk)
        return [STAMPED_TOKEN * self.tokens_per_chunk] * full + (
            [STAMPED_TOKEN * rest] if rest else []
        )


def parse_pace(text: str) -> tuple[str, Pace]:
    """``provider=first_token_delay:tokens_per_second[:tokens_per_chunk]`` (``all=`` sets
    every provider)."""
    name, _, value = text.partition("=")
    delay, _, rest = value.partition(":")
    rate, _, chunk = rest.partition(":")
    if not name or not delay or not rate:
        raise argparse.ArgumentTypeError(f"expected provider=delay:rate[:chunk], got {text!r}")
    if name != "all" and name not in PROVIDERS:
        raise argparse.ArgumentTypeError(f"unknown provider {name!r}")
    return name, Pace(float(delay), float(rate), int(chunk or 1))


def pace_argument(name: str, pace: Pace) -> str:
    """``pace`` for ``name`` (a provider, or ``all``) as ``--pace`` takes it."""
    return f"{name}={pace.first_token_delay}:{pace.tokens_per_second}:{pace.tokens_per_chunk}"


# Tokens per wire event as the real APIs stream them: Anthropic's text deltas carry a few
# tokens, Gemini's chunks a phrase or more (often far more than 10), OpenAI's chat chunks one.
REALISTIC_TOKENS_PER_CHUNK = {"anthropic": 3, "gemini": 10, "openai": 1}


def realistic_paces(first_token_delay: float, tokens_per_second: float) -> dict[str, Pace]:
    """Every provider at one pace, each sending the tokens per wire event its API does."""
    return {
        name: Pace(first_token_delay, tokens_per_second, REALISTIC_TOKENS_PER_CHUNK[name])
        for name in PROVIDERS
    }


def paces_from(items: list[tuple[str, Pace]], defaults: dict[str, Pace]) -> dict[str, Pace]:
    paces = dict(defaults)
    for name, pace in items:
        if name == "all":
            paces = dict.fromkeys(PROVIDERS, pace)
        else:
            paces[name] = pace
    return paces


def start(
    *, tokens: int, paces: Mapping[str, Pace], log: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """The fake providers in a process of their own, every reply ``tokens`` tokens at
    ``paces`` (by provider, or ``all``), answering: the process and its URL."""
    port = processes.free_port()
    args = processes.python(
        "-m", "bench.fake_providers", "--port", str(port), "--tokens", str(tokens)
    )
    for name, pace in paces.items():
        args += ["--pace", pace_argument(name, pace)]
    process = processes.spawn(args, log=log)
    url = f"http://{processes.HOST}:{port}"
    processes.wait_until_ready(f"{url}/_fake/requests", process)
    return process, url


def stamps_in(text: str) -> list[float]:
    return [float(match) for match in STAMP_PATTERN.findall(text)]


# -- scripting the running fake over HTTP -------------------------------------------------


async def script_paces(
    client: httpx.AsyncClient, base_url: str, paces: dict[str, Pace], tokens: int
) -> None:
    """Forget earlier rules and the request log, then pace every provider's replies."""
    response = await client.post(f"{base_url}/_fake/reset")
    response.raise_for_status()
    for provider, pace in paces.items():
        rule: dict[str, Any] = {
            "provider": provider,
            "contains": "",  # every request of this provider
            "tokens": pace.chunks(tokens),
            "first_token_delay": pace.first_token_delay,
            "token_delay": pace.chunk_delay,
        }
        response = await client.post(f"{base_url}/_fake/rule", json=rule)
        response.raise_for_status()


async def recorded_requests(client: httpx.AsyncClient, base_url: str) -> list[dict[str, Any]]:
    response = await client.get(f"{base_url}/_fake/requests", timeout=60)
    response.raise_for_status()
    requests: list[dict[str, Any]] = response.json()
    return requests


# -- the server process -------------------------------------------------------------------


# What real streams carry besides the text, per wire event: the SDKs parse all of it, so a
# fake without it would be cheaper for the app than the real APIs. Gemini repeats the usage
# so far, the model version and the response id in every chunk; OpenAI adds the service tier,
# a null usage and a random-length ``obfuscation`` pad (to hide token lengths) to every chunk.
_GEMINI_EXTRAS = {
    "usageMetadata": {
        "promptTokenCount": 412,
        "totalTokenCount": 412,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 412}],
    },
    "responseId": "b2xkLWZha2UtcmVzcG9uc2UtaWQ",
}
_OPENAI_EXTRAS = {"service_tier": "default", "usage": None, "obfuscation": "k3Jd9aQ2xZ"}


def _full_shape(provider: str, frame: bytes) -> bytes:
    """A text chunk as the real API sends it: the fake's own frame with the real API's other
    fields added (Anthropic's text deltas carry nothing more)."""
    extras = {"gemini": _GEMINI_EXTRAS, "openai": _OPENAI_EXTRAS}.get(provider)
    if extras is None:
        return frame
    head, _, rest = frame.partition(b"data: ")
    end = rest.index(b"\n")
    if rest[end - 1 : end] == b"\r":
        end -= 1
    payload = json.loads(rest[:end])
    payload.update(extras)
    return head + b"data: " + json.dumps(payload).encode() + rest[end:]


def _stamping(provider: str, wire: ModuleType) -> Any:
    """The wire module with ``stream_token`` stamping each token as it is sent, in the real
    API's full event shape."""
    original = wire.stream_token

    def stream_token(model: str, text: str) -> bytes:
        if STAMP_PLACEHOLDER in text:
            text = text.replace(STAMP_PLACEHOLDER, f"{time.monotonic():.6f}")
        return _full_shape(provider, original(model, text))

    names = {name: getattr(wire, name) for name in dir(wire) if not name.startswith("__")}
    return SimpleNamespace(**{**names, "stream_token": stream_token})


def serve(host: str, port: int, paces: dict[str, Pace], tokens: int) -> None:
    # Imported here: only the server process needs the fake (and the repo root on sys.path).
    from tests.fakes import llm_server

    for name, wire in list(llm_server.WIRES.items()):
        llm_server.WIRES[name] = _stamping(name, wire)
    server = llm_server.FakeLLMServer(host=host, port=port)
    for provider, pace in paces.items():
        server.rule(
            provider=provider,
            contains="",
            reply="",
            tokens=pace.chunks(tokens),
            first_token_delay=pace.first_token_delay,
            token_delay=pace.chunk_delay,
        )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    print(f"fake providers on {server.url}", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fake_providers",
        description="Serve the fake LLM APIs with paced, time-stamped tokens.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--tokens", type=int, default=100, help="tokens in every reply")
    parser.add_argument(
        "--pace",
        type=parse_pace,
        action="append",
        default=[],
        metavar="PROVIDER=DELAY:RATE",
        help="first-token delay (s) and tokens/s for a provider (or 'all'); repeatable",
    )
    args = parser.parse_args(argv)
    if args.host != "127.0.0.1":
        sys.exit("the benchmark's fake only listens on 127.0.0.1")
    serve(args.host, args.port, paces_from(args.pace, realistic_paces(0.5, 50.0)), args.tokens)


if __name__ == "__main__":
    main()
