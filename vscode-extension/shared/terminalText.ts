/**
 * Terminal text shared by host and webview. Appending to a capped terminal buffer: keep the newest `cap`
 * characters, cut from the start at a character boundary (never inside a surrogate pair) and, when one
 * is near, at a line start. The exit badge's words for an exit status.
 */
export interface CappedText {
  output: string;
  droppedChars: number;
  totalChars: number;
}

export function appendCapped(buf: CappedText, data: string, cap: number): void {
  buf.totalChars += data.length;
  let out = buf.output + data;
  if (out.length > cap) {
    let cut = out.length - cap;
    const nl = out.indexOf("\n", cut);
    if (nl !== -1 && nl - cut < 512) cut = nl + 1;
    else if (isLowSurrogate(out.charCodeAt(cut))) cut += 1;
    buf.droppedChars += cut;
    out = out.slice(cut);
  }
  buf.output = out;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

export type ExitTone = "ok" | "bad" | "stopped" | "running" | "pending";

/**
 * A terminal's exit badge. A signal wins over a code ("killed: SIGTERM", e.g. a cancelled command), a
 * code shows as "exit N", and an ended terminal with neither (the agent closed it without a status)
 * shows "stopped". No exit yet: "running".
 */
export function exitBadge(exit: { exitCode: number | null; signal: string | null } | undefined): { text: string; tone: ExitTone } {
  if (!exit) return { text: "running", tone: "running" };
  if (exit.signal) return { text: `killed: ${exit.signal}`, tone: "bad" };
  if (exit.exitCode === null) return { text: "stopped", tone: "stopped" };
  return { text: `exit ${exit.exitCode}`, tone: exit.exitCode === 0 ? "ok" : "bad" };
}
