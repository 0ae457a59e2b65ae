"""What the client said it can do at `initialize` (`ClientCapabilities`), read leniently from ACP's
`clientCapabilities` and `clientInfo`. Part of the core's seam (`client/channel.py` re-exports it); a
module of its own because the ACP face reads it while answering `initialize`, before the core is loaded
(`acp/handshake.py`).

Must not: import anything but the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


# A NamedTuple, not a dataclass: cheap to define, on the way to answering `initialize` (see `settings.Mode`).
class ClientCapabilities(NamedTuple):
    """What the client said it can do, snapshotted once at `initialize`.

    `terminal_meta`: Zed's display-only terminal convention (`clientCapabilities._meta.terminal_output`).
    `fs_read` / `fs_write`: `fs/read_text_file` / `fs/write_text_file` (unsaved buffers, reviewable edits).
    `terminal`: the client's `terminal/*` methods (advertised by clients, not used by the bridge yet).
    `elicitation_form` / `elicitation_url`: `elicitation/create` (an MCP server's questions to the user).
    `compaction` / `notices`: `session.compaction` / `session.notices` (`{}`), the unstable
    `compaction_update` and `notice` session updates. `config_boolean`: `session.configOptions.boolean`
    (`{}`), config options of type `boolean` (shown as toggles, set with a boolean value).
    `auth_terminal`: `auth.terminal`, the client can run a `terminal` authentication method.
    `auth_terminal_meta`: the older signal of the same,
    `_meta["terminal-auth"]: true` (Zed, and the ACP Registry's check), answered by an auth method that
    carries the command in its own `_meta["terminal-auth"]`.
    `subagents`: `subagents` (`{}`), the subagents RFD's `subagent_update` and child session streams.
    """

    terminal_meta: bool = False
    fs_read: bool = False
    fs_write: bool = False
    terminal: bool = False
    client_name: str | None = None
    # `elicitation/create` (ACP elicitation), by mode: a form the editor fills in, or a URL it opens.
    elicitation_form: bool = False
    elicitation_url: bool = False
    compaction: bool = False
    notices: bool = False
    config_boolean: bool = False
    auth_terminal: bool = False
    auth_terminal_meta: bool = False
    subagents: bool = False

    @staticmethod
    def from_acp(
        raw: Mapping[str, Any] | None, client_info: Mapping[str, Any] | None = None
    ) -> ClientCapabilities:
        """Read ACP `clientCapabilities` leniently: anything missing or mistyped means "unsupported"."""
        caps = raw if isinstance(raw, Mapping) else {}
        fs = caps.get("fs")
        fs = fs if isinstance(fs, Mapping) else {}
        meta = caps.get("_meta")
        meta = meta if isinstance(meta, Mapping) else {}
        name = client_info.get("name") if isinstance(client_info, Mapping) else None
        elicitation = caps.get("elicitation")
        elicitation = elicitation if isinstance(elicitation, Mapping) else {}
        session = caps.get("session")
        session = session if isinstance(session, Mapping) else {}
        config_options = session.get("configOptions")
        config_options = config_options if isinstance(config_options, Mapping) else {}
        auth = caps.get("auth")
        auth = auth if isinstance(auth, Mapping) else {}
        return ClientCapabilities(
            terminal_meta=meta.get("terminal_output") is True,
            fs_read=fs.get("readTextFile") is True,
            fs_write=fs.get("writeTextFile") is True,
            terminal=caps.get("terminal") is True,
            client_name=name if isinstance(name, str) else None,
            elicitation_form=isinstance(elicitation.get("form"), Mapping),
            elicitation_url=isinstance(elicitation.get("url"), Mapping),
            # `{}` (any object) advertises them; omitted or null does not.
            compaction=isinstance(session.get("compaction"), Mapping),
            notices=isinstance(session.get("notices"), Mapping),
            config_boolean=isinstance(config_options.get("boolean"), Mapping),
            auth_terminal=auth.get("terminal") is True,
            auth_terminal_meta=meta.get("terminal-auth") is True,
            subagents=isinstance(caps.get("subagents"), Mapping),
        )
