import { describe, expect, it } from "vitest";
import { editBlocksFor, editFile } from "../../shared/fileEdits";

const file = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");
const after13 = file.replace("line 13\n", "LINE 13\nextra\n");
/** The bridge's card for that edit: the hunk with 3 lines of context, located at its changed line. */
const card = {
  content: [{ type: "diff", path: "/ws/app.txt", oldText: "line 10\nline 11\nline 12\nline 13\nline 14\nline 15\nline 16\n", newText: "line 10\nline 11\nline 12\nLINE 13\nextra\nline 14\nline 15\nline 16\n" }],
  locations: [{ path: "/ws/app.txt", line: 13 }],
};
const blocks = editBlocksFor(card.content, card.locations, "/ws/app.txt");

describe("whole files from diff blocks", () => {
  it("applies a pending edit to the whole file (what review shows) and reverts an applied one (Open diff, Undo)", () => {
    expect(editFile(file, blocks, "apply")).toEqual({ ok: true, text: after13 });
    expect(editFile(after13, blocks, "revert")).toEqual({ ok: true, text: file });
  });

  it("finds the edit when lines above it moved since (the nearest occurrence)", () => {
    const shifted = `new first line\n${after13}`;
    expect(editFile(shifted, blocks, "revert")).toEqual({ ok: true, text: `new first line\n${file}` });
  });

  it("refuses, and says where, when the edited lines changed since", () => {
    const changed = after13.replace("LINE 13", "LINE THIRTEEN");
    expect(editFile(changed, blocks, "revert")).toEqual({ ok: false, reason: "the file changed where the agent's edit was at line 10", line: 10 });
  });

  it("places a loose old → new pair (no line) only where it occurs once", () => {
    const loose = [{ oldText: "line 13", newText: "LINE 13", anchor: undefined }];
    expect(editFile(file, loose, "apply")).toEqual({ ok: true, text: file.replace("line 13", "LINE 13") });
    expect(editFile(file, [{ oldText: "line 1", newText: "x" }], "apply").ok).toBe(false); // line 1, 10-19
  });

  it("a created file reverts to no file, only while it still holds what the agent wrote", () => {
    const created = [{ oldText: null, newText: "hello\n", anchor: { oldStart: 0, newStart: 1 } }];
    expect(editFile(null, created, "apply")).toEqual({ ok: true, text: "hello\n" });
    expect(editFile("hello\n", created, "revert")).toEqual({ ok: true, text: null });
    expect(editFile("hello, edited\n", created, "revert").ok).toBe(false);
    expect(editFile(null, blocks, "apply")).toEqual({ ok: false, reason: "the file does not exist" });
  });

  it("applies several hunks of one file together", () => {
    const two = editBlocksFor(
      [
        { type: "diff", path: "/f", oldText: "line 1\nline 2\n", newText: "line 1\nTWO\n" },
        { type: "diff", path: "/f", oldText: "line 19\nline 20\n", newText: "NINETEEN\nline 20\n" },
      ],
      [{ path: "/f", line: 2 }, { path: "/f", line: 19 }],
      "/f",
    );
    const applied = editFile(file, two, "apply");
    expect(applied.ok && applied.text).toBe(file.replace("line 2\n", "TWO\n").replace("line 19\n", "NINETEEN\n"));
    expect(editFile(applied.ok ? applied.text : "", two, "revert")).toEqual({ ok: true, text: file });
  });
});
