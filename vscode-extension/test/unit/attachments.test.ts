/**
 * Prompt attachments as ACP blocks: a selection names its lines in the URI and carries its text; a file
 * is its text, an image, or a link (binary, too big); and the fallbacks for an agent without embedded
 * context or images.
 */
import { describe, expect, it } from "vitest";
import { fileAttachment, forAgent, MAX_EMBED_BYTES, mentionBlock, selectionAttachment } from "../../src/prompt/attachments";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("prompt attachments", () => {
  it("a selection is a resource whose URI names its lines, with the text", () => {
    expect(selectionAttachment("/ws/src/app.py", 3, 7, "x = 1\n")).toEqual({
      label: "app.py:3-7",
      block: { type: "resource", resource: { uri: "file:///ws/src/app.py#L3-7", mimeType: "text/x-python", text: "x = 1\n" } },
    });
    expect(selectionAttachment("/ws/a b.txt", 2, 2, "y").block).toMatchObject({ resource: { uri: "file:///ws/a%20b.txt#L2", mimeType: "text/plain" } });
  });

  it("a file is its text, an image, or a link when binary or too big", () => {
    expect(fileAttachment("/ws/notes.md", bytes("# hi\n")).block).toEqual({ type: "resource", resource: { uri: "file:///ws/notes.md", mimeType: "text/markdown", text: "# hi\n" } });
    expect(fileAttachment("/ws/dot.png", new Uint8Array([137, 80, 78, 71])).block).toEqual({ type: "image", mimeType: "image/png", data: "iVBORw==", uri: "file:///ws/dot.png" });
    expect(fileAttachment("/ws/a.bin", new Uint8Array([1, 0, 2])).block).toEqual({ type: "resource_link", uri: "file:///ws/a.bin", name: "a.bin", size: 3 });
    expect(fileAttachment("/ws/big.txt", new Uint8Array(MAX_EMBED_BYTES + 1).fill(65)).block.type).toBe("resource_link");
    expect(mentionBlock("/ws/src/app.py", "src/app.py")).toEqual({ type: "resource_link", uri: "file:///ws/src/app.py", name: "src/app.py" });
  });

  it("an agent without embedded context gets the text in a text block; without images, images are left out and said", () => {
    const blocks = [selectionAttachment("/ws/a.py", 1, 2, "code").block, fileAttachment("/ws/p.png", new Uint8Array([1])).block, mentionBlock("/ws/b.py", "b.py")];
    expect(forAgent(blocks, { image: true, embeddedContext: true })).toEqual({ blocks, dropped: [] });
    expect(forAgent(blocks, {})).toEqual({
      blocks: [{ type: "text", text: "file:///ws/a.py#L1-2:\n```\ncode\n```" }, blocks[2]],
      dropped: ["p.png"],
    });
  });
});
