/**
 * What the header and the first-run welcome say about the running agent: its name and version (ACP
 * `agentInfo`) and the model. ACP has no "which model" field: a `model` config option says it when the
 * agent offers one; for this project's bridge the `--model` argument does (absent: `scripted`, the
 * built-in offline demo script, which must be labelled as such: its answers are canned). Pure: tested.
 */
import type { SessionConfigOption } from "../../shared/acp";
import type { AgentView } from "../../shared/state";
import type { AgentSpec } from "../acp/agentSpec";

export interface AgentIdentity {
  name?: string;
  title?: string | null;
  version?: string;
}

export const DEMO_HINT = 'To use a real model, set acp.bridgeArgs to ["--model", "openai:MODEL"] with its API key (ACP_BRIDGE_API_KEY) in the environment.';

export function describeAgent(spec: AgentSpec, info: AgentIdentity | undefined, configOptions: readonly SessionConfigOption[] = []): AgentView {
  const view: AgentView = { title: info?.title || info?.name || spec.name, version: info?.version };
  const isBridge = info?.name === "acp-bridge" || (spec.args.includes("acp_bridge") && spec.args.includes("serve"));
  const option = configOptions.find((o): o is Extract<SessionConfigOption, { type: "select" }> => o.category === "model" && o.type === "select");
  // The model's id: the agent's model option when it has one (newer bridges do), else the bridge's --model.
  const id = option ? option.currentValue : isBridge ? bridgeModel(spec.args) : undefined;
  if (id === undefined) return view;
  const named = option?.options.flatMap((o) => ("options" in o ? o.options : [o])).find((v) => v.value === id)?.name;
  if (isBridge && (id === "scripted" || id === "scripted:demo")) {
    const demoNote = "Whatever you type, it plays the same script: it reads notes.md, edits app.py and runs it, files your workspace may not have. It shows how cards, approvals and diffs look.";
    return { ...view, model: "offline demo script (canned answers, no AI model)", demo: true, demoNote, modelHint: DEMO_HINT };
  }
  if (isBridge && id.startsWith("scripted:")) {
    const file = id.slice("scripted:".length).split("/").pop();
    return { ...view, model: `scripted replies from ${file} (no AI model)`, demo: true, demoNote: `Whatever you type, it replays the steps written in ${file}.`, modelHint: DEMO_HINT };
  }
  if (isBridge && id.startsWith("openai:")) return { ...view, model: id.slice("openai:".length) };
  return { ...view, model: named ?? id };
}

/** The bridge's `--model` value among `serve` arguments (`--model X` or `--model=X`), else its default. */
export function bridgeModel(args: readonly string[]): string {
  for (let i = args.length - 1; i >= 0; i--) {
    const a = args[i]!;
    if (a.startsWith("--model=")) return a.slice("--model=".length);
    if (a === "--model" && args[i + 1] !== undefined) return args[i + 1]!;
  }
  return "scripted";
}
