"""A session's config options (ACP `configOptions`): the permission mode, the model, the thinking effort
when the selected model takes one, and auto-compaction for a client that takes boolean options, with the
state behind the last three.

`session/new`, `session/load` (and `session/resume`) answer `options()`; `session/set_config_option`,
`session/set_mode` and `/mode` change them, and the session then sends a `config_option_update` whoever
changed what. Options, in this order:
- `mode` (category `mode`): the permission modes (`settings.MODES`; the mode itself lives in the
  session's permissions);
- `model` (category `model`): the catalog's models (`models.catalog`), the configured one first;
- `thought_level` (category `thought_level`): the model's reasoning efforts, only while the selected
  model takes one; `medium` (the API's default) until the user picks another;
- `auto_compact` (type `boolean`, no category): whether the session compacts by itself once its context
  reaches `--compact-at` (off: only `/compact` does); on until the user turns it off. Offered only to a
  client that advertised `clientCapabilities.session.configOptions.boolean`; for any other it stays on,
  whatever a log says, since that client could not turn it back on.
The model, the effort and auto-compaction are per session, logged on each change (`ConfigChanged`) and
restored by `session/load` (and resume, fork), the model when it is still offered.

Must not: know the transport, or send anything (the session sends what `options()` describes).
"""

from __future__ import annotations

from typing import Final

from acp_bridge import mapping
from acp_bridge.client.channel import Update
from acp_bridge.common.errors import InvalidParams, quoted
from acp_bridge.common.settings import MODES
from acp_bridge.history.session_log import ConfigChanged
from acp_bridge.models.catalog import ModelCatalog, ModelInfo
from acp_bridge.session.usage import UsageMeter

MODE: Final = "mode"
MODEL: Final = "model"
THOUGHT_LEVEL: Final = "thought_level"
AUTO_COMPACT: Final = "auto_compact"

_EFFORT_NAMES: Final = {"minimal": "Minimal", "low": "Low", "medium": "Medium", "high": "High"}


class SessionControls:
    """One session's model, thinking effort, auto-compaction and usage meter. `boolean_options`: the
    client takes boolean config options (so `auto_compact` is offered, and may be off)."""

    def __init__(self, catalog: ModelCatalog, *, boolean_options: bool = False) -> None:
        self.catalog = catalog
        self.model = catalog.default
        self.effort: str | None = None  # the user's pick; None: the model's default
        self.boolean_options = boolean_options
        self.auto_compact = True
        self.meter = UsageMeter()

    @property
    def info(self) -> ModelInfo:
        """What the catalog knows of the selected model."""
        return self.catalog.get(self.model) or ModelInfo(self.model)

    @property
    def thought_level(self) -> str | None:
        """The effort in force: the user's pick when the model takes it, else the model's default."""
        info = self.info
        return self.effort if self.effort in info.efforts else info.default_effort

    def step_choice(self) -> tuple[str | None, str | None]:
        """(model, reasoning effort) for a model request: None for the backend's own model, and for an
        effort the user never picked (the API's default applies)."""
        model = self.model if self.model != self.catalog.default else None
        effort = self.effort if self.effort in self.info.efforts else None
        return model, effort

    # --- the options ----------------------------------------------------------------------------------

    def options(self, mode: str) -> list[mapping.ConfigOption]:
        """Every config option with its current value (`mode` is the session's permission mode)."""
        listed: list[mapping.ConfigOption] = [
            mapping.config_select(
                MODE,
                "Permission mode",
                "What runs without asking, what asks, and what is denied.",
                "mode",
                mode,
                ((m.id, m.name, m.description) for m in MODES.values()),
            ),
            mapping.config_select(
                MODEL,
                "Model",
                "The model that answers this session's prompts.",
                "model",
                self.model,
                ((m.id, m.id, m.describe()) for m in self.catalog.models),
            ),
        ]
        info, level = self.info, self.thought_level
        if info.efforts and level is not None:
            listed.append(
                mapping.config_select(
                    THOUGHT_LEVEL,
                    "Thinking effort",
                    f"How much {info.id} reasons before it answers (more is slower and costs more).",
                    "thought_level",
                    level,
                    ((e, _EFFORT_NAMES.get(e, e.title()), None) for e in info.efforts),
                )
            )
        if self.boolean_options:
            listed.append(
                mapping.config_boolean(
                    AUTO_COMPACT,
                    "Auto-compact",
                    "Summarize the older conversation by itself when the context fills up (off: only "
                    "/compact does).",
                    self.auto_compact,
                )
            )
        return listed

    def update(self, mode: str) -> Update:
        return mapping.config_option_update(self.options(mode))

    def ids(self) -> list[str]:
        return [
            MODE,
            MODEL,
            *([THOUGHT_LEVEL] if self.info.efforts else []),
            *([AUTO_COMPACT] if self.boolean_options else []),
        ]

    # --- changes ---------------------------------------------------------------------------------------

    def set_model(self, value: object) -> None:
        """Select a model the catalog offers. Raises InvalidParams otherwise."""
        if not isinstance(value, str) or self.catalog.get(value) is None:
            offered = ", ".join(m.id for m in self.catalog.models)
            raise InvalidParams(f"unknown model {quoted(value)}; offered: {offered}")
        self.model = value

    def set_thought_level(self, value: object) -> None:
        """Pick the effort of the selected model. Raises InvalidParams when it takes none or not this one."""
        efforts = self.info.efforts
        if not efforts:
            raise InvalidParams(
                f"the model {self.model} takes no thinking effort; options: {', '.join(self.ids())}"
            )
        if value not in efforts:
            raise InvalidParams(
                f"unknown thinking effort {quoted(value)}; {self.model} takes {', '.join(efforts)}"
            )
        self.effort = str(value)

    def set_auto_compact(self, value: object) -> None:
        """Turn auto-compaction on or off. Raises InvalidParams for a value that is not a boolean."""
        if not isinstance(value, bool):
            raise InvalidParams(
                f'{AUTO_COMPACT} is a boolean option: its value must be true or false (type "boolean"), '
                f"got {quoted(value)}"
            )
        self.auto_compact = value

    def record(self) -> ConfigChanged:
        return ConfigChanged(self.model, self.effort, self.auto_compact)

    def restore(self, stored: ConfigChanged | None) -> str | None:
        """Take back a logged choice; a note for the user when its model is no longer offered."""
        if stored is None:
            return None
        if self.boolean_options:
            self.auto_compact = stored.auto_compact
        if stored.model is not None and stored.model != self.model:
            if self.catalog.get(stored.model) is None:
                return (
                    f"This session used the model `{stored.model}`, which is not offered now; "
                    f"it continues with `{self.model}`."
                )
            self.model = stored.model
        self.effort = stored.thought_level
        return None
