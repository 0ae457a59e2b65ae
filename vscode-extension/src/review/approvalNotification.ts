/**
 * Approval questions as notifications that end when the question does. VS Code has no API to close a
 * message notification, but a progress notification closes when its task ends: each question is one,
 * running until it is answered anywhere (card, review editor, this notification, a cancelled turn). Its
 * choices are command links in the message ("Allow once · Reject · Review · Always allow `ls` commands
 * (this session)"), none of them a default button; the lasting one says what it covers. It has no
 * Cancel button: it lives exactly as long as the question.
 */
import * as vscode from "vscode";
import type { AskUser, ApprovalPrompt } from "./permissions";

export const ANSWER_COMMAND = "acp.answerApproval";
export const REVIEW_COMMAND = "acp.reviewApproval";

export class ApprovalNotifications implements vscode.Disposable {
  private readonly waiting = new Map<string, (optionId: string | undefined) => void>();

  constructor(private readonly canReview: (toolCallId: string) => boolean) {}

  readonly ask: AskUser = (p: ApprovalPrompt) =>
    new Promise<string | undefined>((resolve) => {
      this.waiting.set(p.requestId, resolve);
      const answer = (c: ApprovalPrompt["choices"][number]) => link(linkText(c.label), ANSWER_COMMAND, [p.requestId, c.optionId]);
      // The short choices first, so a collapsed toast shows them whole; the lasting one, long with its
      // scope, last (the expanded toast shows all of it).
      const links = p.choices.filter((c) => !c.lasting).map(answer);
      links.push(link(this.canReview(p.toolCallId) ? "Review" : "Show", REVIEW_COMMAND, [p.toolCallId]));
      links.push(...p.choices.filter((c) => c.lasting).map(answer));
      void vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `${escapeLinkText(p.message)}: ${links.join(" · ")}` },
        async () => {
          await p.settled;
          this.finish(p.requestId, undefined);
        },
      );
    });

  /** A choice link was clicked. */
  choose(requestId: string, optionId: string): void {
    this.finish(requestId, optionId);
  }

  private finish(requestId: string, optionId: string | undefined): void {
    const resolve = this.waiting.get(requestId);
    this.waiting.delete(requestId);
    resolve?.(optionId);
  }

  dispose(): void {
    for (const id of [...this.waiting.keys()]) this.finish(id, undefined);
  }
}

function link(label: string, command: string, args: unknown[]): string {
  return `[${label}](command:${command}?${encodeURIComponent(JSON.stringify(args))})`;
}

/**
 * The question in a notification: short enough that the choices after it stay on the first line (a
 * toast shows one line until expanded), and with no brackets, which would start a link of their own
 * (full-width look-alikes instead; the card shows the exact text).
 */
function escapeLinkText(s: string): string {
  return noBrackets(s.length > 48 ? `${s.slice(0, 47)}…` : s);
}

/** A choice's words as a link's text: whole (a scope is never cut), without brackets. */
function linkText(s: string): string {
  return noBrackets(s);
}

function noBrackets(s: string): string {
  return s.replace(/\[/g, "［").replace(/\]/g, "］");
}
