/**
 * What the ACP client needs from its host to answer the agent: the client half of ACP as an interface.
 * The VS Code extension implements it with editors, notifications and terminals; tests implement it with
 * plain objects. Nothing here may import `vscode`.
 */
import type {
  CreateElicitationRequest,
  CreateElicitationResponse,
  CreateTerminalRequest,
  CreateTerminalResponse,
  KillTerminalRequest,
  ReadTextFileRequest,
  ReadTextFileResponse,
  ReleaseTerminalRequest,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionNotification,
  TerminalOutputRequest,
  TerminalOutputResponse,
  WaitForTerminalExitRequest,
  WaitForTerminalExitResponse,
  WriteTextFileRequest,
} from "@agentclientprotocol/sdk";

export interface TerminalHandlers {
  create(p: CreateTerminalRequest): CreateTerminalResponse | Promise<CreateTerminalResponse>;
  output(p: TerminalOutputRequest): TerminalOutputResponse;
  waitForExit(p: WaitForTerminalExitRequest): Promise<WaitForTerminalExitResponse>;
  kill(p: KillTerminalRequest): void;
  release(p: ReleaseTerminalRequest): void;
}

export interface ClientHandlers {
  /** Called synchronously, in arrival order; `t0` is when the message arrived (Date.now()). */
  onUpdate(n: SessionNotification, t0: number): void;
  requestPermission(p: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse>;
  /** `elicitation/create`: a question to the user (this client renders form mode). */
  elicit?(p: CreateElicitationRequest, signal: AbortSignal): Promise<CreateElicitationResponse>;
  readTextFile?(p: ReadTextFileRequest): Promise<ReadTextFileResponse>;
  writeTextFile?(p: WriteTextFileRequest): Promise<void>;
  terminal?: TerminalHandlers;
}
