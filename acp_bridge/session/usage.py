"""Usage and cost accounting of one session: what its context holds, and what its responses cost.

After each model response that reports usage, the context holds that response's prompt plus its output
(`used`); the client is told so with a `usage_update` against the selected model's window (`ModelInfo`:
the backend's metadata, the built-in table or `--context-window`). With no known window nothing is sent:
a guessed size would make a "context full" gauge lie. The cost adds up over the session's responses at
the price of the model that answered (input, prompt-cache hits and output priced apart, per million
tokens), and is sent only once some response was priced; responses whose price is unknown are counted,
and said to be left out (`_meta.acpBridge.unpricedResponses`). A compaction's summary request costs too,
but says nothing of the session's context. `UsageReported` keeps the figures in the session log, so a
reloaded session shows the same gauge and cost.

A prompt's own tokens (`PromptTokens`, the `usage` of its `session/prompt` answer) add up every model
request made while it ran: each step of its turn, and a compaction's summary request, threshold or
`/compact` (tokens the prompt spent, though they never fill the context). None when no request reported
usage (a model without usage, a slash command).

Must not: estimate tokens for the client; every figure sent is the backend's.
"""

from __future__ import annotations

from dataclasses import dataclass

from acp_bridge import mapping
from acp_bridge.client.channel import Update
from acp_bridge.history.session_log import UsageReported
from acp_bridge.models import Usage
from acp_bridge.models.catalog import ModelInfo, Price


def response_cost(usage: Usage, price: Price) -> float:
    """What one response cost in `price.currency`."""
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    return (
        (usage.input_tokens - cached) * price.input
        + cached * cached_rate
        + usage.output_tokens * price.output
    ) / 1_000_000


@dataclass(slots=True)
class PromptTokens:
    """The tokens of one prompt's model requests, summed; `responses` counts those that reported usage."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    responses: int = 0

    def add(self, usage: Usage) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.total_tokens += usage.total_tokens or usage.input_tokens + usage.output_tokens
        self.cached_input_tokens += usage.cached_input_tokens
        self.reasoning_tokens += usage.reasoning_tokens
        self.responses += 1

    def usage(self) -> mapping.PromptUsage | None:
        """The answer's `usage`, or None when no request reported any."""
        if not self.responses:
            return None
        return mapping.prompt_usage(
            self.input_tokens,
            self.output_tokens,
            self.total_tokens,
            thought=self.reasoning_tokens,
            cached_read=self.cached_input_tokens,
        )


class UsageMeter:
    """One session's usage. `used` is None until a response reported usage, and again after a compaction
    (the new context's size is known at its next response)."""

    def __init__(self) -> None:
        self.used: int | None = None
        self.cost = 0.0
        self.currency = "USD"
        self.priced = 0
        self.unpriced = 0
        self.prompt = PromptTokens()  # the running (or last) prompt's

    def begin_prompt(self) -> None:
        """A prompt starts: its tokens count from zero."""
        self.prompt = PromptTokens()

    def add(self, usage: Usage, model: ModelInfo, *, in_context: bool = True) -> None:
        """Account for one response of `model`; `in_context` False for a request outside the conversation
        (a compaction's summary), which costs but does not fill the context. Both count as the prompt's."""
        self.prompt.add(usage)
        if in_context:
            self.used = usage.input_tokens + usage.output_tokens
        if model.price is None:
            self.unpriced += 1
            return
        self.priced += 1
        self.currency = model.price.currency
        self.cost += response_cost(usage, model.price)

    def context_reset(self) -> None:
        self.used = None

    def fill(self, model: ModelInfo) -> float | None:
        """How full the context is (0 to 1 and beyond), when both the usage and the window are known."""
        if self.used is None or model.context_window is None:
            return None
        return self.used / model.context_window

    def update(self, model: ModelInfo) -> Update | None:
        """The `usage_update` for the client, or None when the window (or the usage) is unknown."""
        if self.used is None or model.context_window is None:
            return None
        cost = mapping.cost(self.cost, self.currency) if self.priced else None
        update = mapping.usage_update(self.used, model.context_window, cost)
        if self.priced and self.unpriced:
            update["_meta"] = {"acpBridge": {"unpricedResponses": self.unpriced}}
        return update

    def record(self) -> UsageReported:
        return UsageReported(self.used or 0, round(self.cost, 9) if self.priced else None, self.currency,
                             self.unpriced)  # fmt: skip

    def restore(self, stored: UsageReported | None, *, context_known: bool) -> None:
        """Take back the figures a log ended with; `context_known` False when a compaction came after them."""
        if stored is None:
            return
        self.used = stored.used if context_known else None
        if stored.cost is not None:
            self.cost, self.currency, self.priced = stored.cost, stored.currency, max(self.priced, 1)
        self.unpriced = stored.unpriced
