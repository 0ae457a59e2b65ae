/**
 * Edits in VS Code's own diff editor, whole files on both sides (never a bare excerpt numbered from 1):
 *
 * - Review (an edit awaiting approval): the file as it is ↔ the file as the edit will make it, with
 *   Accept and Reject in the editor's title bar (`acp-review` documents; see package.json's
 *   `editor/title` menu). The tab closes when the question is answered anywhere.
 * - Open diff (an applied edit): the file as it was before the edit ↔ the file itself (editable in
 *   place); a proposal that was rejected shows as the file ↔ what it would have become.
 * - Undo (an applied edit): the file returns to what it was before that edit, as an undoable editor
 *   change; when the lines it changed were changed again since, it says so and leaves the file alone.
 *
 * Whole files come from the card's diff blocks and the file as it is now (shared/fileEdits.ts). When
 * they cannot be rebuilt (the file changed where the edit was), Open diff falls back to the excerpt,
 * numbered at its place in the file, and says why.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import type { ToolCallContent } from "../../shared/acp";
import { isAwaiting } from "../../shared/cardView";
import { type EditBlock, editBlocksFor, editFile } from "../../shared/fileEdits";
import type { ToolCard } from "../../shared/state";
import type { PermissionBroker } from "./permissions";
import type { SessionStore } from "../session/store";

export const DIFF_SCHEME = "acp-diff";
export const REVIEW_SCHEME = "acp-review";

type DiffBlock = Extract<ToolCallContent, { type: "diff" }>;

/** Read-only texts behind `acp-diff:` and `acp-review:` URIs (the query is the key). */
export class DiffDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private next = 1;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(new URLSearchParams(uri.query).get("k") ?? "") ?? "";
  }

  uri(scheme: string, filePath: string, label: string, text: string, extra: Record<string, string> = {}): vscode.Uri {
    const key = String(this.next++);
    this.texts.set(key, text);
    if (this.texts.size > 200) this.texts.delete(this.texts.keys().next().value!); // old diffs: the editor has its copy
    const query = new URLSearchParams({ k: key, ...extra }).toString();
    return vscode.Uri.from({ scheme, path: `/${label}/${path.basename(filePath)}`, query });
  }
}

export interface EditHost {
  /** The file's text as the editor has it (unsaved changes included), or null if there is no such file. */
  read(filePath: string): Promise<string | null>;
  /** Replace the file's text (null: delete it), undoably, and save. */
  write(filePath: string, text: string | null): Promise<void>;
  /** Tell the agent, with the next prompt, what the user did to its work. */
  noteForAgent(text: string): void;
}

export class EditViews {
  constructor(
    private readonly docs: DiffDocuments,
    private readonly store: SessionStore,
    private readonly permissions: PermissionBroker,
    private readonly host: EditHost,
  ) {}

  /** The diff card's "Open diff": a review for a pending edit, else the whole-file diff of the edit. */
  async openDiff(toolCallId: string, index: number, proposed = false): Promise<void> {
    const card = this.store.state.cards[toolCallId];
    const list = proposed ? card?.proposed : card?.content;
    const block = list?.[index];
    if (!card || !list || block?.type !== "diff") return;
    if (isAwaiting(card)) return this.review(toolCallId, block.path);
    const blocks = editBlocksFor(list, card.locations, block.path);
    const current = await this.host.read(block.path);
    const name = path.basename(block.path);
    const applied = card.status === "completed" && !proposed && card.undo?.state !== "undone";
    if (applied) {
      const before = editFile(current, blocks, "revert");
      if (before.ok) {
        // The right side is the file itself, so the edit can be changed in place.
        const right = current === null ? this.docs.uri(DIFF_SCHEME, block.path, "after", "") : vscode.Uri.file(block.path);
        return this.diff(this.docs.uri(DIFF_SCHEME, block.path, "before", before.text ?? ""), right, `${name}: before ↔ after the agent's edit`);
      }
      return this.excerpt(block, blocks, `${name} changed since the agent's edit (${before.reason}): showing the edited lines only.`);
    }
    const after = editFile(current, blocks, "apply");
    if (after.ok) {
      const label = proposed || card.status === "failed" ? "not applied" : "proposed";
      return this.diff(this.docs.uri(DIFF_SCHEME, block.path, "current", current ?? ""), this.docs.uri(DIFF_SCHEME, block.path, label, after.text ?? ""), `${name}: now ↔ ${label} edit`);
    }
    return this.excerpt(block, blocks, `The edit no longer applies to ${name} (${after.reason}): showing the edited lines only.`);
  }

  /** Review a pending edit in the diff editor: the file now ↔ the file after the edit, Accept/Reject on top. */
  async review(toolCallId: string, onlyPath?: string): Promise<void> {
    const card = this.store.state.cards[toolCallId];
    const requestId = card?.permission?.requestId;
    if (!card || !requestId || !isAwaiting(card)) return;
    const diff = card.content.find((c): c is DiffBlock => c.type === "diff" && (onlyPath === undefined || c.path === onlyPath));
    if (!diff) return;
    const blocks = editBlocksFor(card.content, card.locations, diff.path);
    const current = await this.host.read(diff.path);
    const after = editFile(current, blocks, "apply");
    const name = path.basename(diff.path);
    // When the edit does not match the file as it is, the review compares the edit's own lines.
    const before = after.ok ? (current ?? "") : blocks.map((b) => b.oldText ?? "").join("\n…\n");
    const proposedText = after.ok ? (after.text ?? "") : blocks.map((b) => b.newText).join("\n…\n");
    const left = this.docs.uri(DIFF_SCHEME, diff.path, "current", before);
    const right = this.docs.uri(REVIEW_SCHEME, diff.path, "proposed", proposedText, { request: requestId, call: toolCallId });
    if (!after.ok) void vscode.window.showWarningMessage(`The agent's edit does not match ${name} as it is now (${after.reason}): the review shows the proposed lines only.`);
    await this.diff(left, right, `${name}: review the agent's edit`);
  }

  /** Accept (allow once) or reject the edit under review; `uri` is the review document's. */
  async answerReview(uri: vscode.Uri | undefined, accept: boolean): Promise<void> {
    const target = uri?.scheme === REVIEW_SCHEME ? uri : activeReviewUri();
    if (!target) return;
    const q = new URLSearchParams(target.query);
    const requestId = q.get("request") ?? "";
    const card = this.store.state.cards[q.get("call") ?? ""];
    const option = card?.permission?.requestId === requestId ? card.permission.options.find((o) => o.kind === (accept ? "allow_once" : "reject_once")) : undefined;
    if (!option || !this.permissions.isOpen(requestId)) {
      void vscode.window.showInformationMessage("This edit was already answered.");
      await closeReviews(requestId);
      return;
    }
    let feedback: string | undefined;
    if (!accept) {
      feedback = await vscode.window.showInputBox({ title: "Reject the agent's edit", prompt: "Why? (optional: the agent is told, so it can do better)", placeHolder: "e.g. keep the old name, it is used elsewhere" });
      if (feedback === undefined) return; // Escape: not answered yet
    }
    this.permissions.answer(requestId, option.optionId, feedback);
  }

  /** Undo an applied edit: every file it changed goes back to what it was, or nothing changes and the card says why. */
  async undo(toolCallId: string): Promise<void> {
    const card = this.store.state.cards[toolCallId];
    if (!card || card.status !== "completed" || card.undo?.state === "undone") return;
    const paths = [...new Set(card.content.flatMap((c) => (c.type === "diff" ? [c.path] : [])))];
    const planned: Array<{ path: string; text: string | null }> = [];
    for (const p of paths) {
      const result = editFile(await this.host.read(p), editBlocksFor(card.content, card.locations, p), "revert");
      if (!result.ok) {
        this.store.dispatch({ type: "undoFailed", toolCallId, reason: `Cannot undo: ${this.rel(p)}: ${result.reason}. Nothing was changed.` });
        return;
      }
      planned.push({ path: p, text: result.text });
    }
    try {
      for (const p of planned) await this.host.write(p.path, p.text);
    } catch (err) {
      this.store.dispatch({ type: "undoFailed", toolCallId, reason: `Cannot undo: ${err instanceof Error ? err.message : String(err)}` });
      return;
    }
    this.store.dispatch({ type: "editUndone", toolCallId });
    this.host.noteForAgent(`(The user undid your edit "${card.title}": ${paths.map((p) => this.rel(p)).join(", ")} ${paths.length === 1 ? "is" : "are"} back to what ${paths.length === 1 ? "it was" : "they were"} before it.)`);
  }

  /** Close the review tabs of a question that was answered. */
  onAnswered(requestId: string): void {
    void closeReviews(requestId);
  }

  private rel(p: string): string {
    const cwd = this.store.state.cwd;
    return cwd && p.startsWith(`${cwd}/`) ? p.slice(cwd.length + 1) : p;
  }

  private async excerpt(block: DiffBlock, blocks: EditBlock[], why: string): Promise<void> {
    void vscode.window.showInformationMessage(why);
    const anchor = blocks.find((b) => b.newText === block.newText)?.anchor;
    // Pad the excerpt down to its place in the file, so the diff editor's line numbers are the file's
    // (the same padding on both sides: a different one would show as changed blank lines).
    const pad = "\n".repeat(Math.max(0, (anchor?.newStart ?? 1) - 1));
    const left = this.docs.uri(DIFF_SCHEME, block.path, "before", pad + (block.oldText ?? ""));
    const right = this.docs.uri(DIFF_SCHEME, block.path, "after", pad + block.newText);
    await this.diff(left, right, `${path.basename(block.path)} (agent edit, excerpt)`);
  }

  private async diff(left: vscode.Uri, right: vscode.Uri, title: string): Promise<void> {
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  }
}

function activeReviewUri(): vscode.Uri | undefined {
  const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
  return input instanceof vscode.TabInputTextDiff && input.modified.scheme === REVIEW_SCHEME ? input.modified : undefined;
}

async function closeReviews(requestId: string): Promise<void> {
  const tabs = vscode.window.tabGroups.all.flatMap((g) =>
    g.tabs.filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === REVIEW_SCHEME && new URLSearchParams(t.input.modified.query).get("request") === requestId),
  );
  if (tabs.length > 0) await vscode.window.tabGroups.close(tabs);
}

/** Whether a card has a diff that the review editor can show. */
export function canReview(card: ToolCard | undefined): boolean {
  return !!card && isAwaiting(card) && card.content.some((c) => c.type === "diff");
}
