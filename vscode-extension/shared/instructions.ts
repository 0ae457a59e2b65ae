/**
 * The project instructions the agent follows (AGENTS.md, or CLAUDE.md and the like where there is none), as
 * the bridge reports them: a `notice` whose `_meta.acpBridge.instructions` lists the files, `event` saying
 * whether they were loaded (the session's files, at its first turn), changed (the session's files again,
 * re-read) or added (a folder's own file, when the agent first worked there). The view shows them as one
 * line ("Instructions: AGENTS.md, docs/AGENTS.md"), each name opening its file.
 */
import type { SessionUpdate } from "./acp";
import type { InstructionFileView } from "./state";

export interface InstructionsReport {
  event: "loaded" | "changed" | "added";
  files: InstructionFileView[];
}

type Notice = Extract<SessionUpdate, { sessionUpdate: "notice" }>;

/** The files a notice reports, when it is the bridge's instructions notice. */
export function instructionsOf(update: Notice): InstructionsReport | undefined {
  const bridge = record(record(update._meta)?.acpBridge);
  const report = record(bridge?.instructions);
  if (!report || !["loaded", "changed", "added"].includes(report.event as string) || !Array.isArray(report.files)) return undefined;
  const files: InstructionFileView[] = [];
  for (const f of report.files) {
    const r = record(f);
    if (typeof r?.path !== "string" || !r.path) continue;
    const name = typeof r.name === "string" && r.name ? r.name : r.path.split("/").pop()!;
    files.push({ path: r.path, name, scope: typeof r.scope === "string" ? r.scope : "root", ...(typeof r.skipped === "string" ? { skipped: r.skipped } : {}) });
  }
  return { event: report.event as InstructionsReport["event"], files };
}

/**
 * The files after a report: loaded or changed replace the session's own files (the user's and the
 * roots'), keeping the folder files already added; added puts folder files in (once each, newest kept).
 */
export function mergeInstructions(current: InstructionFileView[] | undefined, report: InstructionsReport): InstructionFileView[] {
  const before = current ?? [];
  if (report.event === "added") {
    const paths = new Set(report.files.map((f) => f.path));
    return [...before.filter((f) => !paths.has(f.path)), ...report.files];
  }
  return [...report.files, ...before.filter((f) => f.scope === "folder" && !report.files.some((g) => g.path === f.path))];
}

/** How a file is named on the line: its path relative to the session's folder, else as reported. */
export function instructionLabel(file: InstructionFileView, cwd: string | undefined): string {
  if (file.scope === "user") return `${file.name} (yours)`;
  if (cwd && file.path.startsWith(`${cwd.replace(/\/$/, "")}/`)) return file.path.slice(cwd.replace(/\/$/, "").length + 1);
  return file.path;
}

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}
