"""The options of a permission question (`session/request_permission`): allow once, always allow, reject,
always reject. The option id equals its kind, so an answer maps back without a table.

An "always" answer is remembered for a scope the policy chose (`permissions.Scope`: a command prefix, a
tool on a file, a host). Its name says it in words, and its `_meta.acpBridge.scope` carries the same
label as data (ACP reserves `_meta` on every type for such extensions:
https://agentclientprotocol.com/protocol/extensibility), so a face that shows the question its own way
(`lsp/approval.py`) reads the scope there, never out of the name.

Must not: decide anything; the permission gate chooses the scope and acts on the answer.
"""

from __future__ import annotations

from .wire import ALLOW_SERVER_OPTION, PermissionOption

# How long an "always" answer lasts, in the words the options use.
REMEMBERED_FOR = "this session"


def scope_words(label: str, remembered_for: str = REMEMBERED_FOR) -> str:
    """What an "always" answer covers, in words: the scope's label and how long it lasts."""
    return f"{label} ({remembered_for})"


def permission_options(
    scope_label: str,
    *,
    offer_always: bool = True,
    reject_label: str | None = None,
    server_label: str | None = None,
    remembered_for: str = REMEMBERED_FOR,
) -> list[PermissionOption]:
    """The ACP PermissionOptions for a call whose "always" answers cover `scope_label` (the policy's
    `Scope.label()`, e.g. "`npm test` commands"); "Always reject" covers `reject_label` when the policy
    rejects more broadly than it allows. Without `offer_always` (a call no rule may cover: outside the
    workspace, a protected file) there is no "Always allow". `server_label` (an MCP tool) adds a wider
    "always allow": every tool of its server."""
    rejected = reject_label or scope_label
    options: list[PermissionOption] = [{"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}]
    if offer_always:
        options.append(
            {
                "optionId": "allow_always",
                "name": f"Always allow {scope_words(scope_label, remembered_for)}",
                "kind": "allow_always",
                "_meta": {"acpBridge": {"scope": scope_label}},
            }
        )
    if offer_always and server_label is not None:
        options.append(
            {
                "optionId": ALLOW_SERVER_OPTION,
                "name": f"Always allow {scope_words(server_label, remembered_for)}",
                "kind": "allow_always",
                "_meta": {"acpBridge": {"scope": server_label}},
            }
        )
    options += [
        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        {
            "optionId": "reject_always",
            "name": f"Always reject {scope_words(rejected, remembered_for)}",
            "kind": "reject_always",
            "_meta": {"acpBridge": {"scope": rejected}},
        },
    ]
    return options


def option_scope(option: PermissionOption) -> str | None:
    """The scope label an option's answer is remembered for (None: a one-time answer, or no scope data)."""
    meta = option.get("_meta")
    bridge = meta.get("acpBridge") if isinstance(meta, dict) else None
    scope = bridge.get("scope") if isinstance(bridge, dict) else None
    return scope if isinstance(scope, str) and scope else None
