"""A session's checkpoints (`agent.services["checkpoints"]`): snapshots of its roots around each call that
may change files, what each call changed, and putting files back (`/rewind`, `revertFile`, a fork at a
turn).

- `begin_turn(n, prompt)`: turn n (1-based, the prompt's `_meta.acpBridge.turn`) begins; journaled.
- `around(execution, proceed)` (through `wrapper.checkpoint_wrapper`): a snapshot of every root before the
  call's body and one after; the paths that differ are the call's changes, journaled with both trees.
  For a command, an MCP tool or a program (not `edit`/`write`, whose cards show their own diff) the
  result gets `fileChanges` in its meta (`file_changes.py`: the card's diff blocks, live and replayed)
  and a line for the model.
- `rewind(n)` / `revert_file(call, path)`: the files the agent changed since (in turn n and later, or in
  that call) go back to their content before; a file whose content is not the one the agent left is a
  conflict, and nothing is written unless `force`. The restore itself is journaled as the agent's change,
  so a later rewind sees it as such.

The checkpoint before a turn is the snapshot before its first call that may write (a turn that only reads
costs nothing); what a rewind restores is, for each file, its content right before the agent's first
change of it from that turn on.

Must not: block the event loop (git runs in worker threads), fail a call because a snapshot failed (the
call runs and the failure is logged), or write a file the agent did not change.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from acp_bridge.checkpoints import file_changes
from acp_bridge.checkpoints.journal import CallEntry, Journal
from acp_bridge.checkpoints.prune import prune_once
from acp_bridge.checkpoints.store import ShadowStore, StoreError, root_key
from registry_core import TextBlock, ToolExecution, ToolExecutionResult, ToolResult, snapshot

log = logging.getLogger(__name__)

CHECKPOINTS_SERVICE = "checkpoints"
# Calls whose changes are journaled but not drawn on their card (their own card shows the diff).
SELF_DRAWN = frozenset({"edit", "write"})

_stores: dict[Path, ShadowStore] = {}
_stores_lock = threading.Lock()


def shared_store(base: Path, root: str) -> ShadowStore:
    """The one store object of a root in this process (its lock serialises every session's snapshots)."""
    git_dir = base / "roots" / root_key(root)
    with _stores_lock:
        store = _stores.get(git_dir)
        if store is None:
            store = _stores[git_dir] = ShadowStore(root, git_dir)
        return store


Action = Literal["removed", "restored", "recreated"]
_Mode = Literal["check", "force", "keep"]
_R = TypeVar("_R", ToolExecutionResult, ToolResult)


@dataclass(slots=True)
class Restore:
    """The outcome of a rewind or a file revert (the contract's result shape, `to_json`)."""

    status: Literal["restored", "conflict", "nothing"]
    restored: list[tuple[str, Action]] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "restored": [{"path": p, "action": a} for p, a in self.restored],
            "conflicts": [{"path": p, "reason": r} for p, r in self.conflicts],
        }


class UnknownTurn(ValueError):
    """No such turn (or call) in this session's checkpoints."""


@dataclass(slots=True)
class _Plan:
    store: ShadowStore
    rel: str
    path: str
    target: str | None
    agent_last: str | None


class SessionCheckpoints:
    """One session's checkpoints (see the module docstring)."""

    def __init__(self, base: Path, session_id: str, roots: Sequence[str], cwd: str) -> None:
        self.base = base
        self.session_id = session_id
        self.cwd = cwd
        self.stores = [shared_store(base, root) for root in roots]
        self.journal = Journal(journal_path(base, session_id))
        self.turn = max((t.turn for t in self.journal.turns), default=0)
        self._restores = 0

    # --- recording ----------------------------------------------------------------------------------

    def begin_turn(self, turn: int, prompt: str) -> None:
        self.turn = turn
        at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        try:
            self.journal.begin_turn(turn, prompt, at)
        except OSError as exc:
            log.warning("checkpoint journal not written: %s", exc)

    async def _snapshot(self) -> dict[str, str]:
        return await asyncio.to_thread(lambda: {s.root: s.snapshot() for s in self.stores})

    async def around(
        self, execution: ToolExecution, proceed: Callable[[ToolExecution], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        """Run a call between two snapshots (see the module docstring)."""
        try:
            before = await self._snapshot()
        except StoreError as exc:
            log.warning("checkpoint before %s failed: %s", execution.call_id, exc)
            return await proceed(execution)
        result = await proceed(execution)
        return await self._after(self.turn, execution.call_id, execution.name, before, result)

    async def after_background(self, call_id: str, result: ToolResult) -> ToolResult:
        """A background command ended: what it changed since its call returned, drawn on its final card
        (`fileChanges` and the model's line, as `around` does) and journaled under its call."""
        earlier = [c for c in self.journal.calls if c.call == call_id]
        if not earlier:
            return result
        last = earlier[-1]
        return await self._after(last.turn, call_id, last.tool, last.after, result)

    async def _after(self, turn: int, call_id: str, tool: str, before: dict[str, str], result: _R) -> _R:
        """The snapshot after a call, journaled; the result with what changed since `before`."""
        try:
            after = await self._snapshot()
            changed = await asyncio.to_thread(self._changes, before, after)
        except StoreError as exc:
            log.warning("checkpoint after %s failed: %s", call_id, exc)
            return result
        paths = {root: [rel for rel, _ in found] for root, found in changed.items() if found}
        try:
            self.journal.add_call(CallEntry(turn, call_id, tool, before, after, paths))
        except OSError as exc:
            log.warning("checkpoint journal not written: %s", exc)
        changes = [c for found in changed.values() for _, c in found]
        if not changes or tool in SELF_DRAWN:
            return result
        meta = file_changes.with_changes(result.meta, file_changes.meta_value(changes))
        note = TextBlock(file_changes.model_note(changes, self.cwd))
        return replace(result, meta=snapshot(meta), content=(*result.content, note))

    def _changes(
        self, before: Mapping[str, str], after: Mapping[str, str]
    ) -> dict[str, list[tuple[str, file_changes.Changed]]]:
        """Per root: (relative path, its change with contents) of each path that differs."""
        out: dict[str, list[tuple[str, file_changes.Changed]]] = {}
        for store in self.stores:
            found = store.changes(before[store.root], after[store.root])
            if not found:
                continue
            shown = found[: file_changes.MAX_SHOWN_FILES]
            blobs = store.blobs([b for c in shown for b in (c.old, c.new) if b is not None])
            out[store.root] = [
                (
                    c.path,
                    file_changes.Changed(
                        os.path.join(store.root, c.path),
                        blobs.get(c.old) if c.old is not None else None,
                        blobs.get(c.new) if c.new is not None else None,
                    ),
                )
                for c in shown
            ] + [
                (
                    c.path,
                    file_changes.Changed(
                        os.path.join(store.root, c.path), b"" if c.old else None, b"" if c.new else None
                    ),
                )
                for c in found[file_changes.MAX_SHOWN_FILES :]
            ]
        return out

    # --- listing ------------------------------------------------------------------------------------

    def turns(self) -> list[dict[str, Any]]:
        """`_acpBridge/checkpoints`: each turn, with how many files its calls changed."""
        counts: dict[int, set[tuple[str, str]]] = {}
        for call in self.journal.calls:
            if call.tool == RESTORE_TOOL:
                continue
            counts.setdefault(call.turn, set()).update((r, p) for r, ps in call.paths.items() for p in ps)
        return [
            {"turn": t.turn, "prompt": t.prompt, "at": t.at, "files": len(counts.get(t.turn, ()))}
            for t in sorted(self.journal.turns, key=lambda t: t.turn)
        ]

    def has_turn(self, turn: int) -> bool:
        return any(t.turn == turn for t in self.journal.turns)

    # --- restoring ----------------------------------------------------------------------------------

    async def rewind(self, turn: int, *, force: bool = False, keep_conflicts: bool = False) -> Restore:
        """Put back the files the agent changed in turn `turn` and later (`keep_conflicts`: all but the
        conflicting ones). Raises UnknownTurn."""
        if not self.has_turn(turn):
            raise UnknownTurn(f"this session has no turn {turn}")
        calls = [c for c in self.journal.calls if c.turn >= turn]
        return await self._restore(calls, None, "force" if force else "keep" if keep_conflicts else "check")

    async def revert_file(self, call_id: str, path: str, *, force: bool = False) -> Restore:
        """Put `path` (absolute) back as it was before call `call_id`. Raises UnknownTurn for a call that
        has no checkpoint, ValueError for a file that call did not change."""
        calls = [c for c in self.journal.calls if c.call == call_id and c.tool != RESTORE_TOOL]
        if not calls:
            raise UnknownTurn(f"no checkpoint of the call {call_id}")
        for store in self.stores:
            rel = _relative_to(path, store.root)
            if rel is not None and any(rel in c.paths.get(store.root, ()) for c in calls):
                # The call's entries (a background command's end adds one): the earliest that changed it.
                return await self._restore(calls, (store.root, rel), "force" if force else "check")
        raise ValueError(f"the call {call_id} did not change {path}")

    async def _restore(self, calls: list[CallEntry], only: tuple[str, str] | None, mode: _Mode) -> Restore:
        plans = await asyncio.to_thread(self._plan, calls, only)
        return await asyncio.to_thread(self._apply, plans, mode)

    def _plan(self, calls: list[CallEntry], only: tuple[str, str] | None) -> list[_Plan]:
        """For each file the calls changed: its content before the first of them, and the content the
        agent last left it with (over the whole journal)."""
        plans: list[_Plan] = []
        for store in self.stores:
            targets: dict[str, str] = {}  # rel → tree whose blob is the target
            for call in calls:
                for rel in call.paths.get(store.root, ()):
                    if only is None or only == (store.root, rel):
                        targets.setdefault(rel, call.before[store.root])
            last: dict[str, str] = {}
            for call in self.journal.calls:
                for rel in call.paths.get(store.root, ()):
                    if rel in targets:
                        last[rel] = call.after[store.root]
            for rel, tree in sorted(targets.items()):
                plans.append(
                    _Plan(
                        store, rel, os.path.join(store.root, rel), store.blob_at(tree, rel),
                        store.blob_at(last[rel], rel),
                    )
                )  # fmt: skip
        return plans

    def _apply(self, plans: list[_Plan], mode: _Mode) -> Restore:
        """Restore the planned files; a conflict stops everything (`check`), is overwritten (`force`) or
        is left as it is (`keep`)."""
        outcome = Restore("nothing")
        todo: list[tuple[_Plan, Action]] = []
        for plan in plans:
            current = plan.store.blob_of_file(plan.rel)
            if current == plan.target:
                continue
            if current != plan.agent_last:
                reason = (
                    "deleted since the agent's change"
                    if current is None
                    else "changed since the agent's last change (by you or another program)"
                )
                outcome.conflicts.append((plan.path, reason))
                if mode == "keep":
                    continue
            action: Action = (
                "removed" if plan.target is None else "recreated" if current is None else "restored"
            )
            todo.append((plan, action))
        if outcome.conflicts and mode == "check":
            outcome.status = "conflict"
            return outcome
        if not todo:
            return outcome
        before = {s.root: s.snapshot() for s in self.stores}
        for plan, action in todo:
            plan.store.restore(plan.rel, plan.target)
            outcome.restored.append((plan.path, action))
        after = {s.root: s.snapshot() for s in self.stores}
        self._restores += 1
        paths: dict[str, list[str]] = {}
        for plan, _ in todo:
            paths.setdefault(plan.store.root, []).append(plan.rel)
        entry = CallEntry(
            self.turn, f"restore-{self._restores}-{os.getpid()}", RESTORE_TOOL, before, after, paths
        )
        self.journal.add_call(entry)
        outcome.status = "restored"
        return outcome

    def fork_to(self, session_id: str, turn: int) -> None:
        """A fork at `turn`: the new session's journal holds the turns before it."""
        self.journal.copy_before(journal_path(self.base, session_id), turn)


RESTORE_TOOL = "/rewind"


def journal_path(base: Path, session_id: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in session_id)
    return base / "sessions" / f"{safe}.jsonl"


def _relative_to(path: str, root: str) -> str | None:
    path = os.path.normpath(path)
    if path == root or not path.startswith(root.rstrip(os.sep) + os.sep):
        return None
    return os.path.relpath(path, root).replace(os.sep, "/")


def restore_note(outcome: Restore, cwd: str, what: str) -> str:
    """What the model is told after a rewind or a revert."""
    names = ", ".join(
        f"{file_changes.relative(p, cwd)} ({a})" for p, a in outcome.restored[: file_changes.MAX_NAMED_FILES]
    )
    more = len(outcome.restored) - file_changes.MAX_NAMED_FILES
    tail = f", and {more} more" if more > 0 else ""
    return (
        f"[The user reverted {what}; these files are back as they were before: {names}{tail}. "
        "Read them again before relying on their contents.]"
    )


def session_checkpoints(
    base: str | None, session_id: str, roots: Sequence[str], cwd: str
) -> SessionCheckpoints | None:
    """A session's checkpoints under `base` (None: the bridge keeps none); the first one of a process
    prunes the store (`prune.prune_once`)."""
    if base is None:
        return None
    prune_once(Path(base))
    return SessionCheckpoints(Path(base), session_id, roots, cwd)
