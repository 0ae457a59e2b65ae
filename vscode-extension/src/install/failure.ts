/**
 * An agent that would not start, or stopped, described so the user can act: what happened in one
 * sentence, the agent's own last words kept whole (the cause), what to do about it, and the setting that
 * decides it. The known cases are the built-in bridge's: a Python without acp_bridge, a Python that is
 * not there; both offer to install the bridge (src/install/bridgeInstall.ts). Pure (no vscode): unit-tested.
 */
import type { FailureView } from "../../shared/state";

export interface FailureInput {
  agentName: string;
  /** The command that was run. */
  command: string;
  /** The built-in bridge (`acp.pythonCommand -m acp_bridge serve`) rather than an `acp.agents` entry. */
  builtin: boolean;
  /** The error as the connection reported it (may span lines). */
  message: string;
  /** The last lines the agent wrote to stderr, if any. */
  stderrTail?: string;
}

const NO_MODULE = /No module named '?acp_bridge'?/;
const NOT_FOUND = /\bENOENT\b|not found|No such file or directory/;

export function describeFailure(f: FailureInput): FailureView {
  const text = `${f.message}\n${f.stderrTail ?? ""}`;
  const setting = f.builtin ? "acp.pythonCommand" : "acp.agents";
  // Known causes come with a setting to change; anything else with a restart and the agent's log.
  if (NO_MODULE.test(text)) {
    return {
      summary: `${f.command} does not have acp-bridge installed, so the agent cannot start.`,
      reason: `acp-bridge is not installed for ${f.command}`,
      cause: lastLines(text.split("\n").filter((l) => NO_MODULE.test(l)).join("\n")),
      fix: `Install acp-bridge: the extension sets it up in its own environment with a Python 3.11+ it finds (one click). Or install it into that Python yourself (\`${f.command} -m pip install acp-bridge-agent\`), or set acp.pythonCommand to a Python that has it (after \`make demo\` in a checkout: \`<checkout>/.venv/bin/python\`).`,
      setting: "acp.pythonCommand",
      install: f.builtin,
    };
  }
  if (/cannot start agent/.test(f.message) && NOT_FOUND.test(f.message)) {
    return {
      summary: `${f.command} was not found, so the agent cannot start.`,
      reason: `${f.command} was not found`,
      cause: lastLines(f.message),
      fix: f.builtin ? "Install acp-bridge (one click: the extension sets it up with a Python 3.11+ it finds), or set acp.pythonCommand to the full path of a Python 3.11+ that has acp-bridge installed." : `Check the command of the "${f.agentName}" entry in acp.agents.`,
      setting,
      install: f.builtin,
    };
  }
  const stderr = lastLines(f.stderrTail ?? "");
  return {
    summary: `The agent stopped: ${firstLine(f.message)}.`,
    reason: firstLine(f.message),
    cause: stderr || (f.message.includes("\n") ? lastLines(f.message.slice(f.message.indexOf("\n") + 1)) : undefined),
    fix: "Restart it; if it stops again, Show Agent Output has its full log.",
  };
}

/**
 * One line for a notification, which shows no line breaks: what happened, what to do, and the cause
 * (every line of it, joined).
 */
export function failureMessage(agentName: string, v: FailureView): string {
  const cause = v.cause ? ` Cause: ${v.cause.split("\n").map((l) => l.trim()).filter(Boolean).join(" / ")}` : "";
  const fix = v.setting ? ` ${v.fix}` : "";
  return `ACP agent "${agentName}" stopped: ${v.reason}.${fix}${cause}`;
}

function firstLine(s: string): string {
  return s.split("\n")[0]!.trim().replace(/:$/, "");
}

/** The last few non-empty lines (a traceback's last lines say what went wrong). */
function lastLines(s: string, n = 6): string {
  return s
    .split("\n")
    .map((l) => l.trimEnd())
    .filter((l) => l.trim())
    .slice(-n)
    .join("\n");
}
