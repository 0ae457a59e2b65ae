"""Keeping the checkpoint store bounded: old sessions' checkpoints are pruned.

Once per process (when its first session with checkpoints starts, in a worker thread): the journals of
sessions beyond the `KEEP_SESSIONS` most recently active, or inactive for more than `KEEP_DAYS`, are
deleted; then each root's store keeps only the trees the remaining journals name (one tree object listing
them all, under `refs/acp-bridge/keep`) and `git gc` drops the rest (objects younger than an hour are
kept whatever: a snapshot another bridge is taking right now names no journal yet). A store no journal
names any more is deleted as a whole.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from pathlib import Path

from acp_bridge.checkpoints.store import ShadowStore, StoreError

log = logging.getLogger(__name__)

KEEP_SESSIONS = 50
KEEP_DAYS = 30

_done: set[Path] = set()
_lock = threading.Lock()


def prune_once(base: Path) -> None:
    """`prune` at most once per process and base directory, in a daemon thread."""
    with _lock:
        if base in _done:
            return
        _done.add(base)
    threading.Thread(target=_safe_prune, args=(base,), name="checkpoint-prune", daemon=True).start()


def _safe_prune(base: Path) -> None:
    try:
        prune(base)
    except Exception:  # a prune that fails leaves the store as it was; it is tried again next start
        log.exception("pruning the checkpoint store %s failed", base)


def prune(base: Path, *, keep_sessions: int = KEEP_SESSIONS, keep_days: float = KEEP_DAYS) -> int:
    """Delete old sessions' checkpoints (see the module docstring); how many journals went."""
    sessions = base / "sessions"
    journals = sorted(sessions.glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)
    cutoff = time.time() - keep_days * 86400
    old = [p for k, p in enumerate(journals) if k >= keep_sessions or p.stat().st_mtime < cutoff]
    if not old:
        return 0
    for path in old:
        path.unlink(missing_ok=True)
    live: dict[str, set[str]] = {}
    for path in sessions.glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                raw = json.loads(line)
                for side in ("before", "after"):
                    for root, tree in raw.get(side, {}).items():
                        live.setdefault(root, set()).add(tree)
            except (ValueError, AttributeError):
                continue
    for git_dir in (base / "roots").glob("*"):
        try:
            root = (git_dir / "acp-bridge-root").read_text().strip()
        except OSError:
            continue
        trees = live.get(root)
        if not trees:
            shutil.rmtree(git_dir, ignore_errors=True)
            continue
        store = ShadowStore(root, git_dir)
        try:
            store.keep_only(sorted(trees))
        except StoreError as exc:
            log.warning("pruning %s failed: %s", git_dir, exc)
    return len(old)
