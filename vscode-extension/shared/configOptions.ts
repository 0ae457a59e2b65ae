/**
 * Session config options (`configOptions` of session/new, load, resume, `config_option_update` and the
 * `session/set_config_option` answer) as the header shows them: one picker per select option, placed by
 * category (the permission mode, then the model and its reasoning effort, then the rest, each in the
 * agent's order), and one toggle per boolean option (the extension advertises
 * `session.configOptions.boolean`), in the agent's order. Pure: unit-tested.
 */
import type { SessionConfigOption } from "./acp";

export type SelectOption = Extract<SessionConfigOption, { type: "select" }>;
export type BooleanOption = Extract<SessionConfigOption, { type: "boolean" }>;

const CATEGORY_ORDER: Record<string, number> = { mode: 0, model: 1, thought_level: 2 };

export function pickerOptions(options: readonly SessionConfigOption[]): SelectOption[] {
  const rank = (o: SessionConfigOption) => CATEGORY_ORDER[o.category ?? ""] ?? 3;
  return options
    .map((o, i) => ({ o, i }))
    .filter((x): x is { o: SelectOption; i: number } => x.o.type === "select")
    .sort((a, b) => rank(a.o) - rank(b.o) || a.i - b.i)
    .map((x) => x.o);
}

export function toggleOptions(options: readonly SessionConfigOption[]): BooleanOption[] {
  return options.filter((o): o is BooleanOption => o.type === "boolean");
}
