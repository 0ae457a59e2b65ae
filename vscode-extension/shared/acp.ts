/**
 * The ACP wire types this project uses, re-exported as types only from the official SDK.
 * Rule: type-only. Nothing here may pull SDK runtime code into the webview bundle.
 */
export type {
  AvailableCommand,
  ContentBlock,
  PermissionOption,
  PermissionOptionKind,
  PlanEntry,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionConfigOption,
  SessionInfo,
  SessionModeState,
  SessionNotification,
  SessionUpdate,
  StopReason,
  ToolCallContent,
  ToolCallLocation,
  ToolCallStatus,
  ToolCallUpdate,
  ToolKind,
} from "@agentclientprotocol/sdk";
