/**
 * The Rules view (a tree in the ACP side bar): the "always" answers the agent remembers for the current
 * session or project, each with a Revoke button, and Revoke All in the title bar. Refreshed when a
 * session opens, after each approval answer and at the end of each turn. An agent without the bridge's
 * `_acpBridge/listRules` gets a line saying so.
 */
import * as vscode from "vscode";
import type { AgentConnection, RulesListing } from "../acp/connection";
import { type RuleLine, ruleLines, rulesMessage } from "./rules";
import type { SessionStore } from "../session/store";

const METHOD_NOT_FOUND = -32601;

export interface CurrentSession {
  /** The open session and its agent, if any. */
  currentSession(): { id: string; conn: AgentConnection } | undefined;
}

export class RulesView implements vscode.TreeDataProvider<RuleLine>, vscode.Disposable {
  private listing: RulesListing | undefined;
  private unavailable: string | undefined;
  private view: vscode.TreeView<RuleLine> | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly sub: { dispose(): void };
  private refreshing: Promise<void> = Promise.resolve();

  constructor(
    private readonly source: CurrentSession,
    store: SessionStore,
  ) {
    this.sub = store.listen((event) => {
      if (event.type === "sessionStarted" || event.type === "permissionResolved" || event.type === "turnEnded") void this.refresh();
    });
  }

  attach(view: vscode.TreeView<RuleLine>): void {
    this.view = view;
    this.show();
  }

  get rules(): RulesListing | undefined {
    return this.listing;
  }

  /** Ask the agent again (one request at a time; the last one wins). */
  refresh(): Promise<void> {
    const run = async () => {
      const s = this.source.currentSession();
      if (!s) return this.set(undefined);
      try {
        this.set(await s.conn.listRules(s.id));
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        this.set(undefined, code === METHOD_NOT_FOUND ? `${s.conn.spec.name} does not list remembered rules.` : `Could not list the rules: ${(err as Error).message}`);
      }
    };
    this.refreshing = this.refreshing.then(run, run);
    return this.refreshing;
  }

  /** Revoke rule `number`, or every rule. */
  async revoke(number?: number): Promise<void> {
    const s = this.source.currentSession();
    if (!s) return;
    this.set(await s.conn.forgetRules(s.id, number));
  }

  getTreeItem(line: RuleLine): vscode.TreeItem {
    const item = new vscode.TreeItem(line.label, vscode.TreeItemCollapsibleState.None);
    item.description = line.description;
    item.tooltip = line.tooltip;
    item.contextValue = "rule";
    item.iconPath = new vscode.ThemeIcon(line.allow ? "pass" : "circle-slash");
    return item;
  }

  getChildren(line?: RuleLine): RuleLine[] {
    return line || !this.listing ? [] : ruleLines(this.listing);
  }

  private set(listing: RulesListing | undefined, unavailable?: string): void {
    this.listing = listing;
    this.unavailable = unavailable;
    this.show();
    this.changed.fire();
  }

  private show(): void {
    if (this.view) this.view.message = rulesMessage(this.listing, this.unavailable);
  }

  dispose(): void {
    this.sub.dispose();
    this.changed.dispose();
  }
}
