/** `fs/read_text_file` line windows: `line` is 1-based, `limit` a maximum number of lines. */
export function sliceLines(text: string, line?: number | null, limit?: number | null): string {
  if (line == null && limit == null) return text;
  const lines = text.split(/(?<=\n)/); // keep each line's own terminator
  const start = Math.max(0, (line ?? 1) - 1);
  const end = limit == null ? lines.length : start + Math.max(0, limit);
  return lines.slice(start, end).join("");
}
