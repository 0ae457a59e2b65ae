/**
 * ACP form elicitation (`elicitation/create`, mode "form") as a form the Agent view renders: the
 * requested schema's properties as fields (a single choice for `oneOf`/`enum` strings, a text, number or
 * yes/no field, a multiple choice for arrays), the user's input checked against the schema and turned
 * into the answer's `content`, and the answer in words. Unknown property types are left out (the agent
 * gets what the user could give). Pure: host and webview, unit-tested.
 */
export type ContentValue = string | number | boolean | string[];

export interface FieldOption {
  value: string;
  title: string;
  description?: string;
}

export interface FormField {
  key: string;
  kind: "choice" | "text" | "number" | "integer" | "boolean" | "multi";
  title: string;
  description?: string;
  required: boolean;
  options: FieldOption[];
  default?: ContentValue;
  min?: number;
  max?: number;
  pattern?: string;
  format?: string;
}

/** The user's raw input per field: text boxes give strings, a yes/no a boolean, a multiple choice a list. */
export type FormInput = Record<string, string | boolean | string[] | undefined>;

export function formFields(schema: unknown): FormField[] {
  const s = record(schema);
  const props = record(s?.properties) ?? {};
  const required = new Set(Array.isArray(s?.required) ? s.required.filter((x): x is string => typeof x === "string") : []);
  const out: FormField[] = [];
  for (const [key, raw] of Object.entries(props)) {
    const p = record(raw);
    if (!p) continue;
    const base = { key, title: str(p.title) ?? key, description: str(p.description), required: required.has(key), options: [] as FieldOption[] };
    if (p.type === "string") {
      const options = titled(p.oneOf) ?? (Array.isArray(p.enum) ? p.enum.filter((v): v is string => typeof v === "string").map((v) => ({ value: v, title: v })) : undefined);
      if (options) out.push({ ...base, kind: "choice", options, default: str(p.default) });
      else out.push({ ...base, kind: "text", default: str(p.default), min: num(p.minLength), max: num(p.maxLength), pattern: str(p.pattern), format: str(p.format) });
    } else if (p.type === "number" || p.type === "integer") {
      out.push({ ...base, kind: p.type, default: num(p.default), min: num(p.minimum), max: num(p.maximum) });
    } else if (p.type === "boolean") {
      out.push({ ...base, kind: "boolean", default: typeof p.default === "boolean" ? p.default : undefined });
    } else if (p.type === "array") {
      const items = record(p.items);
      const options = titled(items?.anyOf) ?? (Array.isArray(items?.enum) ? items.enum.filter((v): v is string => typeof v === "string").map((v) => ({ value: v, title: v })) : undefined);
      if (!options) continue;
      const dflt = Array.isArray(p.default) ? p.default.filter((v): v is string => typeof v === "string") : undefined;
      out.push({ ...base, kind: "multi", options, default: dflt, min: num(p.minItems), max: num(p.maxItems) });
    }
  }
  return out;
}

/** The answer's `content` from the user's input, or the first problem with it, in words. */
export function formContent(fields: readonly FormField[], input: FormInput): { content: Record<string, ContentValue> } | { error: string } {
  const content: Record<string, ContentValue> = {};
  for (const f of fields) {
    const v = input[f.key];
    const missing = v === undefined || v === "" || (Array.isArray(v) && v.length === 0);
    if (f.kind === "boolean") {
      if (typeof v === "boolean") content[f.key] = v;
      else if (f.required) content[f.key] = false;
      continue;
    }
    if (missing) {
      if (f.required) return { error: `${f.title}: an answer is needed.` };
      continue;
    }
    if (f.kind === "multi") {
      const list = Array.isArray(v) ? v : [String(v)];
      if (f.min !== undefined && list.length < f.min) return { error: `${f.title}: choose at least ${f.min}.` };
      if (f.max !== undefined && list.length > f.max) return { error: `${f.title}: choose at most ${f.max}.` };
      content[f.key] = list;
    } else if (f.kind === "number" || f.kind === "integer") {
      const n = Number(String(v).trim());
      if (!Number.isFinite(n) || (f.kind === "integer" && !Number.isInteger(n))) return { error: `${f.title}: ${f.kind === "integer" ? "a whole number" : "a number"} is needed.` };
      if (f.min !== undefined && n < f.min) return { error: `${f.title}: at least ${f.min}.` };
      if (f.max !== undefined && n > f.max) return { error: `${f.title}: at most ${f.max}.` };
      content[f.key] = n;
    } else if (f.kind === "choice") {
      const s = String(v);
      if (!f.options.some((o) => o.value === s)) return { error: `${f.title}: choose one of the options.` };
      content[f.key] = s;
    } else {
      const s = String(v);
      if (f.min !== undefined && s.length < f.min) return { error: `${f.title}: at least ${f.min} characters.` };
      if (f.max !== undefined && s.length > f.max) return { error: `${f.title}: at most ${f.max} characters.` };
      if (f.pattern !== undefined && !safeTest(f.pattern, s)) return { error: `${f.title}: not in the expected form.` };
      content[f.key] = s;
    }
  }
  return { content };
}

/** "Answered: Blue", "Answered: Blue; Or your own answer: teal", "Declined", "Cancelled". */
export function answerWords(fields: readonly FormField[], action: string, content: Record<string, ContentValue> | undefined): string {
  if (action === "decline") return "Declined";
  if (action === "cancel") return "Cancelled";
  const given = fields.filter((f) => content?.[f.key] !== undefined);
  const parts = given.map((f) => {
    const v = content![f.key]!;
    const shown = Array.isArray(v) ? v.map((x) => optionTitle(f, x)).join(", ") : typeof v === "boolean" ? (v ? "yes" : "no") : optionTitle(f, String(v));
    // One value needs no field name; several are told apart by theirs.
    return given.length === 1 ? shown : `${f.title}: ${shown}`;
  });
  return `Answered${parts.length ? `: ${parts.join("; ")}` : ""}`;
}

function optionTitle(f: FormField, value: string): string {
  return f.options.find((o) => o.value === value)?.title ?? value;
}

function safeTest(pattern: string, s: string): boolean {
  try {
    return new RegExp(pattern, "u").test(s);
  } catch {
    return true; // a pattern this client cannot read is the agent's to check
  }
}

function titled(v: unknown): FieldOption[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out = v.flatMap((o) => {
    const r = record(o);
    return r && typeof r.const === "string" ? [{ value: r.const, title: str(r.title) ?? r.const, description: str(r.description) }] : [];
  });
  return out.length ? out : undefined;
}

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function num(v: unknown): number | undefined {
  return typeof v === "number" ? v : undefined;
}
