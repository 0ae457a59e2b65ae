"""Nested cards: each call a program (`run_code`) or a subagent (`task`) makes gets a card of its own under
the program's (`_meta.parentToolCallId`), and the program's card lists its nested calls as they move.

A program announces a call before dispatching it (`NestedCallProgress` on its progress sink); the call's
card lives in the turn's `CardBook` with the program's id as `parent_id`, and completes from the
registry's durable record of it (`on_code_dispatch`), so a replay draws the same card. The program's list
is redrawn at most every `NESTED_REDRAW_S`, and listed as the calls ended on the program's last update.

Must not: take another turn's call for one of its programs' (a nested call's signal derives from the
turn's), or redraw a program's card once it completed.
"""

from __future__ import annotations

import asyncio

from acp_bridge import mapping
from acp_bridge.mapping import ToolCallUpdate, ToolStatus, Update
from acp_bridge.turn.cards import CallState, CardBook
from acp_bridge.turn.presentable import Presentable
from presenters.task import NAME as TASK
from registry_core import CodeDispatchEvent, NestedCallProgress, TerminalCallView, ToolExecution, thaw
from registry_core.cancellation import derives_from

# How long a program's card waits to list its nested calls again after one of them moved: a program making
# hundreds of calls redraws its card a few times a second, not twice per call.
NESTED_REDRAW_S = 0.05


class NestedCards:
    """The nested calls of one turn's programs, kept in its card book (`cards.NestedHooks`)."""

    def __init__(self, book: CardBook) -> None:
        self.book = book

    def state_of(self, execution: ToolExecution) -> CallState | None:
        """The open card of `execution` when it is a nested call of one of this turn's programs."""
        if execution.parent is None:
            return None
        state = self.book.calls.get(execution.call_id)
        if state is None or state.parent_id is None or state.done or state.name != execution.name:
            return None
        return state if derives_from(execution.signal, self.book.signal) else None

    def program_of(self, execution: ToolExecution) -> CallState | None:
        """The open card of the call whose body reports on `execution` (a program making nested calls).
        Its body sees the call with the signal an execute wrapper gave it, derived from the turn's."""
        state = self.book.calls.get(execution.call_id)
        if state is None or state.done or state.name != execution.name:
            return None
        if execution.parent is None and state.parent_id is None:
            return state if derives_from(execution.signal, self.book.signal) else None
        return self.state_of(execution)

    def announce(self, execution: ToolExecution, progress: NestedCallProgress) -> None:
        """A program is about to dispatch a call: show the call's own card, under the program's, `pending`
        when the policy will ask about it, and list it on the program's card."""
        book = self.book
        program = self.program_of(execution)
        if program is None or progress.call_id in book.calls:
            return
        host = book.host
        arguments = thaw(progress.arguments)
        presentable = Presentable.of(host.scope, progress.name, arguments)
        view = presentable.call_view() if presentable is not None else None
        permissions = host.permissions
        decision = permissions.decide(progress.name, arguments)
        status: ToolStatus = "pending" if decision.kind == "ask" else "in_progress"
        call_id = progress.call_id
        state = CallState(
            call_id, progress.name, arguments, view, status, host.wire, presentable, parent_id=program.call_id
        )
        # Kept for the permission gate, which asks the turn when the call is dispatched (`decide`).
        state.decision, state.decided_at = decision, permissions.version
        if isinstance(view, TerminalCallView):
            state.live = book.live_output(call_id, state.wire)
        book.calls[call_id] = state
        program.nested.append(call_id)
        book.emit(state, mapping.tool_call_started(state.wire, call_id, state.name, arguments, view, status))
        self.moved(state)

    def on_code_dispatch(self, execution: ToolExecution, event: CodeDispatchEvent) -> bool:
        """A nested call of one of this turn's programs settled and was logged by the registry: log it with
        its card's note, complete its card from that durable copy (so a replay draws the same card), and
        list its outcome on its program's card. False when the call is none of this turn's."""
        state = self.book.calls.get(event.call_id)
        if (
            state is None
            or state.done
            or state.parent_id != event.parent_call_id
            or self.program_of(execution) is None
        ):
            return False
        self.book.finish(state, event.to_result(), dispatch=event)
        return True

    def question_card(self, parent_id: str, tool_call: ToolCallUpdate) -> ToolCallUpdate:
        """A nested call's permission question, naming the program it comes from (as its card shows it)."""
        program = self.book.calls.get(parent_id)
        shown = program.shown_title if program is not None and program.shown_title else parent_id
        asker = "the subagent" if program is not None and program.name == TASK else "the program"
        return mapping.nested_permission_call(tool_call, parent_id, shown, asker=asker)

    # --- the program's list -------------------------------------------------------------------------

    def moved(self, state: CallState) -> None:
        """A nested call's card moved: redraw its program's list of calls soon (once for a burst)."""
        program = self.book.calls.get(state.parent_id) if state.parent_id is not None else None
        if program is not None:
            self.moved_program(program)

    def moved_program(self, program: CallState) -> None:
        """Redraw a running program's list of calls soon (once for a burst)."""
        if program.done or program.redraw is not None:
            return
        program.redraw = asyncio.get_running_loop().call_later(NESTED_REDRAW_S, self._redraw, program)

    def _redraw(self, program: CallState) -> None:
        program.redraw = None
        if program.done:
            return
        self.book.emit(
            program,
            mapping.program_calls_update(
                program.wire,
                program.call_id,
                program.name,
                program.arguments,
                program.view,
                self._lines(program),
                self._locations(program),
                program.status_line,
            ),
        )

    def listed(self, program: CallState, update: Update) -> Update:
        """A program's last update, listing its nested calls in their final state (they all settled before
        it did); a redraw still pending is dropped."""
        if program.redraw is not None:
            program.redraw.cancel()
            program.redraw = None
        started = mapping.tool_call_started(
            program.wire, program.call_id, program.name, program.arguments, program.view, "in_progress"
        )
        return mapping.with_nested_calls(
            update,
            self._lines(program),
            self._locations(program),
            program.wire,
            card_content=started.get("content") or (),
        )

    def _lines(self, program: CallState) -> list[mapping.NestedLine]:
        calls = self.book.calls
        lines = []
        for call_id in program.nested:
            state = calls[call_id]  # a settled call's status is its final one (`CardBook.finish`)
            lines.append(mapping.NestedLine(state.shown_title or state.name, state.status))
        return lines

    def _locations(self, program: CallState) -> list[mapping.Location]:
        calls = self.book.calls
        return mapping.merged_locations(*(calls[call_id].shown_locations for call_id in program.nested))
