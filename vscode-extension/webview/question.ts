/**
 * A question the agent asks (ACP form elicitation) as a form in the conversation: the fields its schema
 * asks for (shared/elicitation.ts), Submit (the answer), Decline, and "Not now" (cancel). What the user
 * typed survives re-renders (a snapshot replay), kept per question. Once answered, the form gives way to
 * the answer in words.
 */
import { answerWords, type FormField, type FormInput, formContent, formFields } from "../shared/elicitation";
import type { QuestionView } from "../shared/state";
import { h } from "./dom";
import { send } from "./vscodeApi";

const drafts = new Map<string, FormInput>();

export function renderQuestion(el: HTMLElement, q: QuestionView): void {
  const fields = formFields(q.schema);
  el.className = `question${q.answer ? " answered" : " open"}`;
  el.dataset.requestId = q.id;
  const head = h("div", { class: "question-head" }, h("span", { class: "question-label" }, "The agent asks"), h("div", { class: "question-text" }, q.message));
  if (q.answer) {
    drafts.delete(q.id);
    el.replaceChildren(head, h("div", { class: "question-answer" }, answerWords(fields, q.answer.action, q.answer.content)));
    return;
  }
  const input: FormInput = drafts.get(q.id) ?? initialInput(fields);
  drafts.set(q.id, input);
  const error = h("div", { class: "question-error", role: "alert" });
  const submit = () => {
    const result = formContent(fields, input);
    if ("error" in result) {
      error.textContent = result.error;
      return;
    }
    send({ type: "question", requestId: q.id, action: "accept", content: result.content });
  };
  const form = h(
    "form",
    {
      class: "question-form",
      onsubmit: (e: Event) => {
        e.preventDefault();
        submit();
      },
    },
    ...fields.map((f) => field(q.id, f, input)),
    error,
    h(
      "div",
      { class: "question-actions" },
      h("button", { type: "submit", class: "question-submit", "data-focus-key": "q-submit" }, "Submit"),
      h("button", { type: "button", class: "secondary question-decline", "data-focus-key": "q-decline", onclick: () => send({ type: "question", requestId: q.id, action: "decline" }) }, "Decline"),
      h("button", { type: "button", class: "link question-cancel", "data-focus-key": "q-cancel", title: "Leave the question unanswered", onclick: () => send({ type: "question", requestId: q.id, action: "cancel" }) }, "Not now"),
    ),
  );
  // A change answers the complaint: it goes until the next Submit.
  for (const type of ["input", "change"]) form.addEventListener(type, () => (error.textContent = ""));
  el.replaceChildren(head, form);
}

function initialInput(fields: readonly FormField[]): FormInput {
  const input: FormInput = {};
  for (const f of fields) {
    if (f.default === undefined) continue;
    input[f.key] = typeof f.default === "number" ? String(f.default) : f.default;
  }
  return input;
}

function field(requestId: string, f: FormField, input: FormInput): HTMLElement {
  const id = `q-${requestId}-${f.key}`;
  const label = `${f.title}${f.required ? " *" : ""}`;
  const help = f.description ? h("div", { class: "question-help" }, f.description) : null;
  if (f.kind === "choice" || f.kind === "multi") {
    const multi = f.kind === "multi";
    const chosen = () => (Array.isArray(input[f.key]) ? (input[f.key] as string[]) : []);
    const boxes = f.options.map((o, i) => {
      const box = h("input", { type: multi ? "checkbox" : "radio", name: id, id: `${id}-${i}`, value: o.value, "data-focus-key": `${f.key}:${i}` });
      box.checked = multi ? chosen().includes(o.value) : input[f.key] === o.value;
      box.addEventListener("change", () => {
        if (!multi) input[f.key] = o.value;
        else input[f.key] = box.checked ? [...chosen(), o.value] : chosen().filter((v) => v !== o.value);
      });
      return h("label", { class: "question-option", for: `${id}-${i}`, title: o.description ?? undefined }, box, o.title);
    });
    return h("fieldset", { class: "question-field" }, h("legend", {}, label), help, ...boxes);
  }
  if (f.kind === "boolean") {
    const box = h("input", { type: "checkbox", id, "data-focus-key": f.key });
    box.checked = input[f.key] === true;
    box.addEventListener("change", () => (input[f.key] = box.checked));
    return h("div", { class: "question-field" }, h("label", { for: id, class: "question-option" }, box, label), help);
  }
  const text = h("input", { type: f.kind === "text" ? (f.format === "email" ? "email" : "text") : "number", id, class: "question-input", "data-focus-key": f.key, step: f.kind === "integer" ? 1 : undefined });
  text.value = typeof input[f.key] === "string" ? (input[f.key] as string) : "";
  text.addEventListener("input", () => (input[f.key] = text.value));
  return h("div", { class: "question-field" }, h("label", { for: id }, label), help, text);
}
