"""`session/list` over many stored sessions: newest first, the cwd filter, cursor paging that neither
repeats nor skips a session when others change between pages, titles (an old log's first prompt), the
additional directories, and a bad cursor refused."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from acp.exceptions import RequestError

from acp_bridge.history.session_index import PAGE_SIZE
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import write_script

BASE_NS = 1_700_000_000 * 10**9


def _store(state: Path, cwd: Path, n: int, *, roots: tuple[Path, ...] = ()) -> str:
    """A log as an older bridge wrote it (no title event), modified `n` seconds after BASE."""
    session_id = f"sess_{uuid.uuid4().hex}"
    sessions = state / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "sessionId": session_id, "cwd": str(cwd),
              "roots": [str(cwd), *map(str, roots)], "createdAt": "2023-11-14T22:13:20Z"}  # fmt: skip
    lines = [header, {"type": "user", "text": f"task number {n}"}, {"type": "assistant", "text": "ok"}]
    log = sessions / f"{session_id}.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    os.utime(log, ns=(BASE_NS + n * 10**9, BASE_NS + n * 10**9))
    return session_id


def _touch(state: Path, session_id: str, n: int) -> None:
    log = state / "sessions" / f"{session_id}.jsonl"
    os.utime(log, ns=(BASE_NS + n * 10**9, BASE_NS + n * 10**9))


async def test_pages_list_every_session_of_a_cwd_once_newest_first(
    bridges: StartBridge, tmp_path: Path
) -> None:
    state, mine, theirs = tmp_path / "state", tmp_path / "mine", tmp_path / "theirs"
    ids = {n: _store(state, mine, n) for n in range(PAGE_SIZE + 20)}
    for n in range(30):
        _store(state, theirs, 1000 + n)  # newer, and another project's
    bridge = await bridges("--state-dir", str(state), model=write_script(tmp_path / "s.json", [[]]))
    await bridge.initialize()

    first = await bridge.conn.list_sessions(cwd=str(mine))
    assert len(first.sessions) == PAGE_SIZE and first.next_cursor is not None
    newest = PAGE_SIZE + 19
    assert [s.session_id for s in first.sessions] == [ids[n] for n in range(newest, newest - PAGE_SIZE, -1)]
    top = first.sessions[0]
    assert (top.cwd, top.title, top.additional_directories) == (str(mine), f"task number {newest}", [])
    assert top.updated_at == "2023-11-14T22:14:29Z"

    # Between the pages: a shown session becomes the newest, and a new one is stored.
    _touch(state, ids[newest], 5000)
    _store(state, mine, 6000)
    second = await bridge.conn.list_sessions(cwd=str(mine), cursor=first.next_cursor)
    assert [s.session_id for s in second.sessions] == [ids[n] for n in range(19, -1, -1)]
    assert second.next_cursor is None

    everyone = await bridge.conn.list_sessions()
    assert len(everyone.sessions) == PAGE_SIZE
    assert {s.cwd for s in everyone.sessions} == {str(mine), str(theirs)}


async def test_listed_sessions_report_their_additional_directories(
    bridges: StartBridge, tmp_path: Path
) -> None:
    state, cwd, extra = tmp_path / "state", tmp_path / "cwd", tmp_path / "extra"
    session_id = _store(state, cwd, 1, roots=(extra,))
    bridge = await bridges("--state-dir", str(state), model=write_script(tmp_path / "s.json", [[]]))
    await bridge.initialize()
    (listed,) = (await bridge.conn.list_sessions(cwd=str(cwd))).sessions
    assert (listed.session_id, listed.additional_directories) == (session_id, [str(extra)])


@pytest.mark.parametrize("cursor", ["bogus", "offset:50", "WzEsMiwzXQ", ""])
async def test_a_cursor_the_bridge_did_not_hand_out_is_invalid_params(
    bridges: StartBridge, tmp_path: Path, cursor: str
) -> None:
    bridge = await bridges(
        "--state-dir", str(tmp_path / "state"), model=write_script(tmp_path / "s.json", [[]])
    )
    await bridge.initialize()
    with pytest.raises(RequestError) as caught:
        await bridge.conn.list_sessions(cursor=cursor)
    assert caught.value.code == -32602
