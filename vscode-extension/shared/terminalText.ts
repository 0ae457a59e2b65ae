/**
 * Appending to a capped terminal buffer: keep the newest `cap` characters, cut from the start at a
 * character boundary (never inside a surrogate pair) and, when one is near, at a line start.
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
