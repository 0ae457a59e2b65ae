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

from .wire import PermissionOption

# How long an "always" answer lasts, in the words the options use.
REMEMBERED_FOR = "this session"


def scope_words(label: str) -> str:
    """What an "always" answer covers, in words: the scope's label and how long it lasts."""
    return f"{label} ({REMEMBERED_FOR})"


def permission_options(scope_label: str) -> list[PermissionOption]:
    """The four ACP PermissionOptions for a call whose "always" answers cover `scope_label` (the policy's
    `Scope.label()`, e.g. "`npm test` commands")."""
    scope = scope_words(scope_label)
    return [
        {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
        {
            "optionId": "allow_always",
            "name": f"Always allow {scope}",
            "kind": "allow_always",
            "_meta": {"acpBridge": {"scope": scope_label}},
        },
        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        {
            "optionId": "reject_always",
            "name": f"Always reject {scope}",
            "kind": "reject_always",
            "_meta": {"acpBridge": {"scope": scope_label}},
        },
    ]


def option_scope(option: PermissionOption) -> str | None:
    """The scope label an option's answer is remembered for (None: a one-time answer, or no scope data)."""
    meta = option.get("_meta")
    bridge = meta.get("acpBridge") if isinstance(meta, dict) else None
    scope = bridge.get("scope") if isinstance(bridge, dict) else None
    return scope if isinstance(scope, str) and scope else None
