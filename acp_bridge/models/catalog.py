"""The models a session may pick, and what the bridge knows of each: its context window, its price and
whether it takes a reasoning effort.

The list, once per process (`ModelCatalog.load`, shared by every session, with a timeout): `--models a,b,c`
when given; else what the backend lists (`base.ListsModels`: an OpenAI-compatible endpoint's
`GET /models`, a script's own entry); else the configured model alone. The configured model (`--model`)
is always offered, first. Models that cannot chat (embeddings, speech, images, moderation) are left out
of an endpoint's list.

A model's context window comes from, in this order: the endpoint's metadata for it (`context_length`,
`context_window`, `max_context_length`, `max_model_len`, `top_provider.context_length`, whichever it
sends), the built-in table below (`KNOWN_MODELS`, each figure with the vendor page it comes from), then
`--context-window` (for the configured model). A model none of them describes has no window, and the
bridge reports no usage for it rather than a guessed size. Its price comes from `--price-in/--price-out`
(for the configured model), then the table; with neither, no cost is reported. Reasoning effort (OpenAI's
`reasoning_effort`) is offered where the endpoint lists `reasoning_effort` among a model's
`supported_parameters`, or the table says the model takes it. DeepSeek's reasoner is a model of its own,
not an effort.

Must not: guess a window or a price; block a session for longer than the listing's timeout.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from acp_bridge.models.base import ListsModels, ModelBackend, ModelError

log = logging.getLogger(__name__)

# How long the first session may wait for the endpoint's model list.
LIST_TIMEOUT_S: Final = 5.0
# A picker of more entries than this is of no use (some routers list hundreds).
MAX_MODELS: Final = 300

# OpenAI's `reasoning_effort` values (https://platform.openai.com/docs/api-reference/chat/create): the
# o-series takes low/medium/high, the GPT-5 family `minimal` too. `medium` is the API's default.
EFFORTS: Final = ("low", "medium", "high")
GPT5_EFFORTS: Final = ("minimal", "low", "medium", "high")
DEFAULT_EFFORT: Final = "medium"


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens: input (a cache miss), output, and input served from the provider's
    prompt cache when the vendor prices it apart."""

    input: float
    output: float
    cached_input: float | None = None
    currency: str = "USD"


@dataclass(frozen=True, slots=True)
class KnownModel:
    context_window: int
    price: Price | None = None
    efforts: tuple[str, ...] = ()


# Well-known models, as their vendors document them. Prices change: `--price-in/--price-out` override
# them for the configured model, and a figure here is only ever used for a model of exactly this name
# (or this name with a date suffix, e.g. `gpt-4o-2024-08-06`).
KNOWN_MODELS: Final[Mapping[str, KnownModel]] = {
    # DeepSeek, https://api-docs.deepseek.com/quick_start/pricing (the V4 table): 1M context for both
    # models; per 1M tokens, cache hit / cache miss / output. `deepseek-chat` and `deepseek-reasoner` are
    # listed there as V4-Flash's non-thinking and thinking modes (names kept for compatibility).
    "deepseek-v4-flash": KnownModel(1_000_000, Price(0.14, 0.28, 0.0028)),
    "deepseek-v4-pro": KnownModel(1_000_000, Price(1.74, 3.48, 0.145)),
    "deepseek-chat": KnownModel(1_000_000, Price(0.14, 0.28, 0.0028)),
    "deepseek-reasoner": KnownModel(1_000_000, Price(0.14, 0.28, 0.0028)),
    # OpenAI: windows from each model's page, https://platform.openai.com/docs/models/<model>; prices
    # (input / cached input / output per 1M tokens) from https://platform.openai.com/docs/pricing.
    "gpt-4o": KnownModel(128_000, Price(2.50, 10.00, 1.25)),
    "gpt-4o-mini": KnownModel(128_000, Price(0.15, 0.60, 0.075)),
    "gpt-4.1": KnownModel(1_047_576, Price(2.00, 8.00, 0.50)),
    "gpt-4.1-mini": KnownModel(1_047_576, Price(0.40, 1.60, 0.10)),
    "gpt-4.1-nano": KnownModel(1_047_576, Price(0.10, 0.40, 0.025)),
    "o3": KnownModel(200_000, Price(2.00, 8.00, 0.50), EFFORTS),
    "o3-mini": KnownModel(200_000, Price(1.10, 4.40, 0.55), EFFORTS),
    "o4-mini": KnownModel(200_000, Price(1.10, 4.40, 0.275), EFFORTS),
    "gpt-5": KnownModel(400_000, Price(1.25, 10.00, 0.125), GPT5_EFFORTS),
    "gpt-5-mini": KnownModel(400_000, Price(0.25, 2.00, 0.025), GPT5_EFFORTS),
    "gpt-5-nano": KnownModel(400_000, Price(0.05, 0.40, 0.005), GPT5_EFFORTS),
    # Moonshot (Kimi), https://platform.moonshot.ai/docs/pricing/chat: Kimi K2 per 1M tokens, cache hit
    # $0.15, cache miss $0.60, output $2.50; the moonshot-v1 windows are in their names (8K, 32K, 128K).
    "kimi-k2-0905-preview": KnownModel(262_144, Price(0.60, 2.50, 0.15)),
    "kimi-k2-0711-preview": KnownModel(131_072, Price(0.60, 2.50, 0.15)),
    "moonshot-v1-8k": KnownModel(8_192),
    "moonshot-v1-32k": KnownModel(32_768),
    "moonshot-v1-128k": KnownModel(131_072),
    # Qwen, Alibaba Cloud Model Studio, https://www.alibabacloud.com/help/en/model-studio/models: windows
    # only (their prices are tiered by the prompt's length, which one figure per token cannot state).
    "qwen-max": KnownModel(32_768),
    "qwen3-max": KnownModel(262_144),
    "qwen3-coder-plus": KnownModel(1_048_576),
}

_DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")
# Families an OpenAI-compatible endpoint lists that cannot answer chat completions.
_NOT_CHAT = re.compile(
    r"embed|whisper|tts|dall-e|moderation|transcribe|realtime|-audio|-image|^davinci|^babbage"
)
_WINDOW_KEYS: Final = ("context_length", "context_window", "max_context_length", "max_model_len")

ENDPOINT_SOURCE: Final = "the backend's model metadata"
TABLE_SOURCE: Final = "the built-in table of well-known models"
WINDOW_FLAG_SOURCE: Final = "--context-window"
PRICE_FLAG_SOURCE: Final = "--price-in/--price-out"


def known_model(model_id: str) -> KnownModel | None:
    """The table's entry for `model_id`: exactly, after a router's `vendor/` prefix, or without a date
    suffix. Never a longer or shorter name (`o3-pro` is not `o3`)."""
    name = model_id.strip().lower()
    for candidate in (name, name.rsplit("/", 1)[-1]):
        entry = KNOWN_MODELS.get(candidate) or KNOWN_MODELS.get(_DATE_SUFFIX.sub("", candidate))
        if entry is not None:
            return entry
    return None


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One offered model and where each of its figures comes from (None: unknown)."""

    id: str
    context_window: int | None = None
    window_source: str | None = None
    price: Price | None = None
    price_source: str | None = None
    efforts: tuple[str, ...] = ()

    @property
    def default_effort(self) -> str | None:
        if not self.efforts:
            return None
        return DEFAULT_EFFORT if DEFAULT_EFFORT in self.efforts else self.efforts[0]

    def describe(self) -> str:
        """A line for the picker: window and price, as far as they are known."""
        parts = []
        if self.context_window is not None:
            parts.append(f"{_tokens(self.context_window)} context")
        if self.price is not None:
            parts.append(f"${self.price.input:g} in / ${self.price.output:g} out per million tokens")
        if self.efforts:
            parts.append("reasoning effort")
        return " · ".join(parts) or "context window unknown"


def _tokens(count: int) -> str:
    if count >= 1_000_000 and count % 1_000_000 == 0:
        return f"{count // 1_000_000}M"
    if count >= 1000:
        return f"{round(count / 1000)}K"
    return str(count)


def endpoint_window(entry: Mapping[str, Any]) -> int | None:
    """The context window an endpoint's model entry states, under whichever name it uses."""
    candidates: list[object] = [entry.get(key) for key in _WINDOW_KEYS]
    top = entry.get("top_provider")
    if isinstance(top, Mapping):
        candidates.append(top.get("context_length"))
    for value in candidates:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def endpoint_efforts(entry: Mapping[str, Any]) -> tuple[str, ...]:
    supported = entry.get("supported_parameters")
    if isinstance(supported, list) and "reasoning_effort" in supported:
        return EFFORTS
    return ()


@dataclass(frozen=True, slots=True)
class CatalogSettings:
    """The command line's say: `--models`, and `--context-window` / `--price-in` / `--price-out`, which
    describe the configured model."""

    models: tuple[str, ...] | None = None
    context_window: int | None = None
    price: Price | None = None


def configured_model(backend: ModelBackend) -> str:
    """The model the backend was configured with (`openai:X` → `X`; a script is its own model)."""
    return backend.model if isinstance(backend, ListsModels) else backend.name


class ModelCatalog:
    """The process's model list (see the module docstring). `models` is what is known now: the configured
    model alone until `load()` finished."""

    def __init__(
        self,
        backend: ModelBackend,
        settings: CatalogSettings | None = None,
        *,
        timeout: float = LIST_TIMEOUT_S,
    ) -> None:
        self._backend = backend
        self._settings = settings or CatalogSettings()
        self._timeout = timeout
        self.default = configured_model(backend)
        self._models: tuple[ModelInfo, ...] = (self._describe(self.default, None),)
        self._loading: asyncio.Task[None] | None = None
        self.problem: str | None = None  # why the endpoint's list could not be read, if it could not
        self._refused = False  # the endpoint refused the key: a later login may fix it, so ask again

    @property
    def models(self) -> tuple[ModelInfo, ...]:
        return self._models

    def get(self, model_id: str) -> ModelInfo | None:
        return next((m for m in self._models if m.id == model_id), None)

    def prefetch(self) -> None:
        """Start loading now (the first `session/new` then finds it done)."""
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())

    async def load(self) -> tuple[ModelInfo, ...]:
        """The full list, read once (again only after the endpoint refused the key); later calls answer at
        once. A waiter's cancellation does not cancel the shared load."""
        if self._refused and self._loading is not None and self._loading.done():
            self._loading, self._refused, self.problem = None, False, None
        self.prefetch()
        assert self._loading is not None
        await asyncio.shield(self._loading)
        return self._models

    async def _load(self) -> None:
        ids: list[str] = []
        metadata: dict[str, Mapping[str, Any]] = {}
        if self._settings.models is not None:
            ids = list(self._settings.models)
        elif isinstance(self._backend, ListsModels):
            try:
                entries = await asyncio.wait_for(self._backend.list_models(), self._timeout)
            except ModelError as exc:
                self.problem = exc.message
                self._refused = exc.kind == "auth"
            except TimeoutError:
                self.problem = f"the model list did not arrive within {self._timeout:g} s"
            except Exception as exc:  # noqa: BLE001 - a broken list must not break every session/new
                self.problem = f"the model list could not be read ({type(exc).__name__}: {exc})"
            else:
                for entry in entries:
                    model_id = str(entry["id"])
                    if model_id == self.default or not _NOT_CHAT.search(model_id.lower()):
                        metadata.setdefault(model_id, entry)
                ids = sorted(metadata)
            if self.problem is not None:
                log.warning("offering only %s: %s", self.default, self.problem)
        offered = [self.default, *(i for i in dict.fromkeys(ids) if i and i != self.default)][:MAX_MODELS]
        self._models = tuple(self._describe(model_id, metadata.get(model_id)) for model_id in offered)

    def _describe(self, model_id: str, entry: Mapping[str, Any] | None) -> ModelInfo:
        known = known_model(model_id)
        info = ModelInfo(model_id)
        window = endpoint_window(entry) if entry is not None else None
        if window is not None:
            info = replace(info, context_window=window, window_source=ENDPOINT_SOURCE)
        elif known is not None:
            info = replace(info, context_window=known.context_window, window_source=TABLE_SOURCE)
        elif model_id == self.default and self._settings.context_window is not None:
            info = replace(
                info, context_window=self._settings.context_window, window_source=WINDOW_FLAG_SOURCE
            )
        if model_id == self.default and self._settings.price is not None:
            info = replace(info, price=self._settings.price, price_source=PRICE_FLAG_SOURCE)
        elif known is not None and known.price is not None:
            info = replace(info, price=known.price, price_source=TABLE_SOURCE)
        efforts = endpoint_efforts(entry) if entry is not None else ()
        return replace(info, efforts=efforts or (known.efforts if known is not None else ()))
