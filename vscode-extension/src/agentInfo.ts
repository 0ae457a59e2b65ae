/**
 * What the header and the first-run welcome say about the running agent: its name and version (ACP
 * `agentInfo`) and the model. ACP has no "which model" field: a `model` config option says it when the
 * agent offers one; for this project's bridge the `--model` argument does (absent: `scripted`, the
 * built-in offline demo script, which must be labelled as such: its answers are canned). Pure: tested.
 */
import type { SessionConfigOption } from "../shared/acp";
import type { AgentView } from "../shared/state";
import type { AgentSpec } from "./acp/agentSpec";

export interface AgentIdentity {
  name?: string;
  title?: string | null;
  version?: string;
}

export const DEMO_HINT = 'To use a real model, set acp.bridgeArgs to ["--model", "openai:MODEL"] with its API key (ACP_BRIDGE_API_KEY) in the environment.';

export function describeAgent(spec: AgentSpec, info: AgentIdentity | undefined, configOptions: readonly SessionConfigOption[] = []): AgentView {
  const view: AgentView = { title: info?.title || info?.name || spec.name, version: info?.version };
  const option = configOptions.find((o) => o.category === "model" && o.type === "select");
  if (option && option.type === "select") {
    const values = option.options.flatMap((o) => ("options" in o ? o.options : [o]));
    view.model = values.find((v) => v.value === option.currentValue)?.name ?? option.currentValue;
    return view;
  }
  const isBridge = info?.name === "acp-bridge" || (spec.args.includes("acp_bridge") && spec.args.includes("serve"));
  if (!isBridge) return view;
  const model = bridgeModel(spec.args);
  if (model === "scripted") return { ...view, model: "offline demo script (canned answers, no AI model)", demo: true, modelHint: DEMO_HINT };
  if (model.startsWith("scripted:")) {
    const file = model.slice("scripted:".length).split("/").pop();
    return { ...view, model: `scripted replies from ${file} (no AI model)`, demo: true, modelHint: DEMO_HINT };
  }
  if (model.startsWith("openai:")) return { ...view, model: model.slice("openai:".length) };
  return { ...view, model };
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
