/**
 * What the client keeps of each session, next to what the agent keeps: the answers given to approval
 * questions (an agent's `session/load` replays the calls but not the questions, so without this a
 * reloaded card loses its "Answered: …" line) and the last view of the session (for `session/resume`,
 * which returns no history). One JSON file per session in the extension's global storage; the oldest
 * files beyond MAX_SESSIONS are deleted. Plain Node (no vscode): unit-tested on a temp directory.
 */
import { mkdir, readdir, readFile, rename, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { PermissionOption } from "../../shared/acp";
import type { SessionState } from "../../shared/state";

export interface StoredAnswer {
  label: string;
  kind?: PermissionOption["kind"];
  feedback?: string;
}

interface SessionFile {
  answers: Record<string, StoredAnswer>;
  view?: SessionState;
}

export const MAX_SESSIONS = 100;
/** A view bigger than this is not kept (terminals are capped, so only huge sessions reach it). */
export const MAX_VIEW_BYTES = 4 * 1024 * 1024;

export class SessionArchive {
  private readonly cache = new Map<string, SessionFile>();
  private writes: Promise<void> = Promise.resolve();

  constructor(private readonly dir: string) {}

  async answers(sessionId: string): Promise<Record<string, StoredAnswer>> {
    return (await this.read(sessionId)).answers;
  }

  async view(sessionId: string): Promise<SessionState | undefined> {
    return (await this.read(sessionId)).view;
  }

  recordAnswer(sessionId: string, toolCallId: string, answer: StoredAnswer): Promise<void> {
    return this.change(sessionId, (f) => {
      f.answers[toolCallId] = answer;
    });
  }

  saveView(sessionId: string, state: SessionState): Promise<void> {
    return this.change(sessionId, (f) => {
      f.view = state;
    });
  }

  /** Drop what the client kept of a deleted session. */
  forget(sessionId: string): Promise<void> {
    const run = async () => {
      this.cache.delete(sessionId);
      await unlink(this.path(sessionId)).catch(() => undefined);
    };
    this.writes = this.writes.then(run, run).catch(() => undefined);
    return this.writes;
  }

  /** Resolves when every change so far is on disk. */
  flushed(): Promise<void> {
    return this.writes;
  }

  private path(sessionId: string): string {
    return join(this.dir, `${sessionId.replace(/[^A-Za-z0-9_.-]/g, "_")}.json`);
  }

  private async read(sessionId: string): Promise<SessionFile> {
    await this.writes;
    const cached = this.cache.get(sessionId);
    if (cached) return cached;
    const file = await this.readUncached(sessionId);
    this.cache.set(sessionId, file);
    return file;
  }

  private change(sessionId: string, edit: (f: SessionFile) => void): Promise<void> {
    const run = async () => {
      const file = this.cache.get(sessionId) ?? (await this.readUncached(sessionId));
      edit(file);
      this.cache.set(sessionId, file);
      let text = JSON.stringify(file);
      if (text.length > MAX_VIEW_BYTES) text = JSON.stringify({ answers: file.answers });
      await mkdir(this.dir, { recursive: true });
      const path = this.path(sessionId);
      await writeFile(`${path}.tmp`, text);
      await rename(`${path}.tmp`, path); // never a half-written file
      await this.prune();
    };
    this.writes = this.writes.then(run, run).catch(() => undefined);
    return this.writes;
  }

  private async readUncached(sessionId: string): Promise<SessionFile> {
    try {
      const raw = JSON.parse(await readFile(this.path(sessionId), "utf8")) as Partial<SessionFile>;
      return { answers: typeof raw.answers === "object" && raw.answers ? raw.answers : {}, view: raw.view };
    } catch {
      return { answers: {} }; // none yet, or unreadable: start empty
    }
  }

  private async prune(): Promise<void> {
    const names = (await readdir(this.dir)).filter((n) => n.endsWith(".json"));
    if (names.length <= MAX_SESSIONS) return;
    const dated = await Promise.all(names.map(async (n) => ({ n, t: (await stat(join(this.dir, n))).mtimeMs })));
    dated.sort((a, b) => a.t - b.t);
    for (const { n } of dated.slice(0, dated.length - MAX_SESSIONS)) await unlink(join(this.dir, n)).catch(() => undefined);
  }
}
