/**
 * Questions against the REAL Python bridge: the client advertises form elicitation, so the `ask_user`
 * tool's question arrives as `elicitation/create` (form mode: a titled single choice and an optional free
 * text); the form's answer reaches the tool, and a declined question is reported as declined.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { answerWords, formContent, formFields } from "../../shared/elicitation";
import type { QuestionView } from "../../shared/state";
import { bridgeSpec, connect, type Harness, workspace } from "./harness";

const opened: Harness[] = [];
after(async () => {
  await Promise.all(opened.map((h) => h.close()));
});

async function ask(answer: (q: QuestionView, h: Harness) => void): Promise<Harness> {
  const ws = workspace({});
  const h = await connect(bridgeSpec("ask.json", ws), ws);
  opened.push(h);
  h.store.listen((e) => {
    if (e.type !== "questionAsked") return;
    const q = h.store.state.timeline.find((i): i is QuestionView => i.type === "question" && i.id === e.requestId)!;
    setTimeout(() => answer(q, h), 0);
  });
  assert.equal((await h.conn.prompt(h.sessionId, "ask me")).stopReason, "end_turn", h.stderr());
  return h;
}

describe("questions (form elicitation) vs the real bridge", () => {
  it("asks ask_user's question as a form; the chosen answer reaches the tool", async () => {
    const h = await ask((q, h) => {
      const fields = formFields(q.schema);
      assert.deepEqual(fields.map((f) => [f.key, f.kind, f.options.map((o) => o.title)]), [["answer", "choice", ["Blue", "Green"]], ["other", "text", []]]);
      const result = formContent(fields, { answer: "Green" });
      assert.ok("content" in result);
      h.questions.answer(q.id, "accept", result.content);
    });
    const q = h.store.state.timeline.find((i): i is QuestionView => i.type === "question")!;
    assert.equal(q.message, "Which colour should the button be?");
    assert.equal(q.toolCallId, "call_ask");
    assert.equal(answerWords(formFields(q.schema), q.answer!.action, q.answer!.content), "Answered: Green");
    const card = h.store.state.cards.call_ask!;
    assert.equal(card.status, "completed");
    assert.match(JSON.stringify(card.content) + JSON.stringify(card.rawOutput), /Green/);
  });

  it("a declined question is declined for the tool", async () => {
    const h = await ask((q, h) => h.questions.answer(q.id, "decline"));
    const card = h.store.state.cards.call_ask!;
    assert.match(JSON.stringify(card.content) + JSON.stringify(card.rawOutput), /declined/i);
  });
});
