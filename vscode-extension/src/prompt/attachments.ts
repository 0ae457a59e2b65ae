/**
 * What the user attaches to a prompt, as ACP content blocks: a selection (`resource` whose URI names the
 * lines, `file:///abs#L3-7`, with its text), a file (its text as a `resource`, or a `resource_link` when
 * it is binary or too big to embed), an image (`image`, base64), an @-mention (`resource_link`). And what
 * to send when the agent does not take embedded context or images (ACP's baseline is text and resource
 * links). Plain Node, no `vscode`: unit-tested.
 */
import { basename, extname } from "node:path";
import { pathToFileURL } from "node:url";
import type { ContentBlock } from "@agentclientprotocol/sdk";
import type { Attachment } from "../../shared/protocol";

/** Files up to this size are embedded with their text; bigger ones are attached as links. */
export const MAX_EMBED_BYTES = 256 * 1024;
/** Images up to this size are attached (they travel base64 in the prompt). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

const TEXT_TYPES: Record<string, string> = {
  ".py": "text/x-python",
  ".ts": "text/x-typescript",
  ".tsx": "text/x-typescript",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".json": "application/json",
  ".md": "text/markdown",
  ".html": "text/html",
  ".css": "text/css",
  ".sh": "text/x-shellscript",
  ".rs": "text/x-rust",
  ".go": "text/x-go",
  ".java": "text/x-java",
  ".c": "text/x-c",
  ".h": "text/x-c",
  ".cpp": "text/x-c++",
  ".yaml": "application/yaml",
  ".yml": "application/yaml",
  ".toml": "application/toml",
  ".xml": "application/xml",
};

export const IMAGE_TYPES: Record<string, string> = { ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp" };

export function fileUri(path: string): string {
  return pathToFileURL(path).href;
}

export function textMimeType(path: string): string {
  return TEXT_TYPES[extname(path).toLowerCase()] ?? "text/plain";
}

/** Lines `start`..`end` (1-based, inclusive) of `path` with their text. */
export function selectionAttachment(path: string, start: number, end: number, text: string): Attachment {
  const lines = start === end ? `L${start}` : `L${start}-${end}`;
  return {
    label: `${basename(path)}:${start === end ? start : `${start}-${end}`}`,
    block: { type: "resource", resource: { uri: `${fileUri(path)}#${lines}`, mimeType: textMimeType(path), text } },
  };
}

/** A file: an image as an image, text as a resource with its text, anything else (or too big) as a link. */
export function fileAttachment(path: string, bytes: Uint8Array): Attachment {
  const name = basename(path);
  const image = IMAGE_TYPES[extname(path).toLowerCase()];
  if (image && bytes.byteLength <= MAX_IMAGE_BYTES) return { label: name, block: { type: "image", mimeType: image, data: Buffer.from(bytes).toString("base64"), uri: fileUri(path) } };
  const text = bytes.byteLength <= MAX_EMBED_BYTES ? asText(bytes) : undefined;
  if (text !== undefined) return { label: name, block: { type: "resource", resource: { uri: fileUri(path), mimeType: textMimeType(path), text } } };
  return { label: name, block: { type: "resource_link", uri: fileUri(path), name, size: bytes.byteLength } };
}

/** An @-mention of a workspace file. */
export function mentionBlock(path: string, label: string): ContentBlock {
  return { type: "resource_link", uri: fileUri(path), name: label };
}

/** UTF-8 text without NUL bytes, else undefined (a binary file). */
function asText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

export interface PromptCapabilities {
  image?: boolean;
  embeddedContext?: boolean;
}

/**
 * The blocks as this agent takes them: without `embeddedContext` a resource becomes a text block that
 * names it and holds its text; without `image` an image is left out, and said.
 */
export function forAgent(blocks: readonly ContentBlock[], caps: PromptCapabilities | null | undefined): { blocks: ContentBlock[]; dropped: string[] } {
  const out: ContentBlock[] = [];
  const dropped: string[] = [];
  for (const b of blocks) {
    if (b.type === "resource" && !caps?.embeddedContext) {
      const r = b.resource;
      out.push("text" in r ? { type: "text", text: `${r.uri}:\n\`\`\`\n${r.text}\n\`\`\`` } : { type: "resource_link", uri: r.uri, name: r.uri.split("/").pop() ?? r.uri });
    } else if (b.type === "image" && !caps?.image) {
      dropped.push(b.uri ? (b.uri.split("/").pop() ?? "an image") : "an image");
    } else out.push(b);
  }
  return { blocks: out, dropped };
}
