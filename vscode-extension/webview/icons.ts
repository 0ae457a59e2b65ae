/** One small SVG path per ACP tool kind. */
import type { ToolKind } from "../shared/acp";

export const KIND_ICONS: Record<ToolKind, string> = {
  read: "M4 1.5h5l3 3v10H4z M9 1.5v3h3",
  edit: "M2.5 13.5l1-3 7-7 2 2-7 7z M9.5 4.5l2 2",
  delete: "M3 4h10 M6 4V2.5h4V4 M4.5 4l1 9.5h5l1-9.5",
  move: "M2 8h10 M9 5l3 3-3 3",
  search: "M7 2.5a4.5 4.5 0 1 0 0.01 0z M10.2 10.2l3.5 3.5",
  execute: "M2.5 4l4 4-4 4 M8 12.5h5.5",
  think: "M8 2a4 4 0 0 0-2.5 7.1V11h5V9.1A4 4 0 0 0 8 2z M6 13.5h4",
  fetch: "M8 1.5a6.5 6.5 0 1 0 .01 0z M1.5 8h13 M8 1.5c-2.5 3-2.5 10 0 13 M8 1.5c2.5 3 2.5 10 0 13",
  switch_mode: "M2 5h10l-2.5-2.5 M14 11H4l2.5 2.5",
  other: "M8 5.5a2.5 2.5 0 1 0 .01 0z M8 1v2 M8 13v2 M1 8h2 M13 8h2",
};
