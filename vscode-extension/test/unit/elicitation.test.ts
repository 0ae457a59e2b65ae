/**
 * Question forms (ACP form elicitation): the schema's properties as fields, the user's input checked and
 * turned into the answer's content, the answer in words, and the broker's accept / decline / cancel.
 */
import { describe, expect, it } from "vitest";
import { answerWords, formContent, formFields } from "../../shared/elicitation";
import { QuestionBroker } from "../../src/review/questions";
import { SessionStore } from "../../src/session/store";

const schema = {
  type: "object",
  properties: {
    answer: { type: "string", title: "Answer", oneOf: [{ const: "b", title: "Blue" }, { const: "g", title: "Green" }] },
    other: { type: "string", title: "Or your own answer", description: "Used instead of the choice above." },
    count: { type: "integer", title: "How many", minimum: 1, maximum: 5, default: 2 },
    sure: { type: "boolean", title: "Sure?" },
    tags: { type: "array", title: "Tags", items: { anyOf: [{ const: "x", title: "X" }, { const: "y", title: "Y" }] }, maxItems: 1 },
    size: { type: "string", enum: ["s", "m"] },
    weird: { type: "_custom" },
  },
  required: ["answer", "count"],
};

describe("question forms", () => {
  it("reads the schema's properties as fields (unknown types left out)", () => {
    const fields = formFields(schema);
    expect(fields.map((f) => [f.key, f.kind, f.required])).toEqual([
      ["answer", "choice", true],
      ["other", "text", false],
      ["count", "integer", true],
      ["sure", "boolean", false],
      ["tags", "multi", false],
      ["size", "choice", false],
    ]);
    expect(fields[0]!.options).toEqual([{ value: "b", title: "Blue", description: undefined }, { value: "g", title: "Green", description: undefined }]);
    expect(fields[2]!.default).toBe(2);
  });

  it("checks the input and builds the content; says what is wrong", () => {
    const fields = formFields(schema);
    expect(formContent(fields, { count: "2" })).toEqual({ error: "Answer: an answer is needed." });
    expect(formContent(fields, { answer: "b", count: "9" })).toEqual({ error: "How many: at most 5." });
    expect(formContent(fields, { answer: "b", count: "2.5" })).toEqual({ error: "How many: a whole number is needed." });
    expect(formContent(fields, { answer: "b", count: "1", tags: ["x", "y"] })).toEqual({ error: "Tags: choose at most 1." });
    expect(formContent(fields, { answer: "nope", count: "1" })).toEqual({ error: "Answer: choose one of the options." });
    expect(formContent(fields, { answer: "g", other: "teal", count: "3", sure: true, tags: ["y"] })).toEqual({ content: { answer: "g", other: "teal", count: 3, sure: true, tags: ["y"] } });
  });

  it("says the answer in words", () => {
    const fields = formFields(schema);
    expect(answerWords(fields, "accept", { answer: "g" })).toBe("Answered: Green");
    expect(answerWords(fields, "accept", { answer: "g", other: "teal" })).toBe("Answered: Answer: Green; Or your own answer: teal");
    expect(answerWords(fields, "decline", undefined)).toBe("Declined");
    expect(answerWords(fields, "cancel", undefined)).toBe("Cancelled");
  });

  it("the broker answers accept with the content, decline, or cancel (a cancelled turn); URL mode is declined", async () => {
    const store = new SessionStore();
    const broker = new QuestionBroker(store);
    const first = broker.request({ sessionId: "s", mode: "form", message: "Colour?", requestedSchema: schema } as never);
    const id = store.state.timeline.find((i) => i.type === "question")!.id;
    expect(broker.answer(id, "accept", { answer: "b" })).toBe(true);
    expect(await first).toEqual({ action: "accept", content: { answer: "b" } });
    expect(broker.answer(id, "decline")).toBe(false);
    const second = broker.request({ sessionId: "s", mode: "form", message: "Again?", requestedSchema: schema } as never);
    broker.cancelAll();
    expect(await second).toEqual({ action: "cancel" });
    expect(store.state.timeline.map((i) => (i.type === "question" ? i.answer?.action : i.type))).toEqual(["accept", "cancel"]);
    expect(await broker.request({ sessionId: "s", mode: "url", message: "Go", elicitationId: "e", url: "https://example.invalid" } as never)).toEqual({ action: "decline" });
  });
});
