import { describe, expect, it, vi } from "vitest";
import * as vscode from "vscode";
import { splitCommandLine } from "../../src/acp/agentSpec";
import { choosesStateDir, configuredAgentNames, resolveAgent } from "../../src/session/config";

vi.mock("vscode", async () => (await import("jest-mock-vscode")).createVSCodeMock(vi));

function settings(values: Record<string, unknown>) {
  vi.spyOn(vscode.workspace, "getConfiguration").mockReturnValue({ get: (k: string, d?: unknown) => values[k] ?? d } as unknown as vscode.WorkspaceConfiguration);
}

describe("agent settings", () => {
  it("the default agent is the bridge through the configured Python", () => {
    settings({ pythonCommand: "/venv/bin/python", bridgeArgs: ["--model", "scripted:${workspaceFolder}/s.json"] });
    expect(resolveAgent("acp-bridge", "/ws")).toEqual({ name: "acp-bridge", command: "/venv/bin/python", args: ["-m", "acp_bridge", "serve", "--model", "scripted:/ws/s.json"], cwd: "/ws" });
  });

  it("falls back to python3 when nothing is configured", () => {
    settings({});
    expect(resolveAgent("acp-bridge", undefined).command).toBe("python3");
  });

  it("runs any configured ACP agent, substituting ${workspaceFolder}", () => {
    settings({ agents: [{ name: "other", command: "${workspaceFolder}/bin/agent", args: ["--acp"], env: { KEY: "v" } }, { name: 3 }] });
    expect(resolveAgent("other", "/ws")).toEqual({ name: "other", command: "/ws/bin/agent", args: ["--acp"], env: { KEY: "v" }, cwd: "/ws" });
    expect(configuredAgentNames()).toEqual(["acp-bridge", "other"]);
  });

  it("keeps the built-in bridge's sessions in the history dir, so session/list and session/load work", () => {
    settings({ pythonCommand: "py", bridgeArgs: ["--model", "scripted"] });
    expect(resolveAgent("acp-bridge", "/ws", "/storage/sessions").args).toEqual(["-m", "acp_bridge", "serve", "--model", "scripted", "--state-dir", "/storage/sessions"]);
  });

  it("leaves a --state-dir the user chose alone", () => {
    for (const chosen of [["--state-dir", "${workspaceFolder}/.acp"], ["--state-dir=/mine"], ["--state", "/mine"]]) {
      settings({ bridgeArgs: chosen });
      const args = resolveAgent("acp-bridge", "/ws", "/storage/sessions").args;
      expect(args).not.toContain("/storage/sessions");
      expect(args.filter((a) => a.startsWith("--s"))).toHaveLength(1);
    }
    expect(choosesStateDir(["--model", "scripted:/s.json", "--log-level", "debug"])).toBe(false);
    expect(choosesStateDir(["--", "--max-steps", "3"])).toBe(false);
  });

  it("never adds --state-dir to other agents", () => {
    settings({ agents: [{ name: "other", command: "agent", args: ["--acp"] }, { name: "acp-bridge", command: "my-bridge", args: ["serve"] }] });
    expect(resolveAgent("other", "/ws", "/storage/sessions").args).toEqual(["--acp"]);
    // An `acp.agents` entry named like the built-in one is a custom agent: it runs exactly as configured.
    expect(resolveAgent("acp-bridge", "/ws", "/storage/sessions").args).toEqual(["serve"]);
  });

  it('acpBridge.rememberAlways = project keeps "always" answers per project: --remember project', () => {
    settings({ pythonCommand: "py", rememberAlways: "project" });
    expect(resolveAgent("acp-bridge", "/ws", "/s").args).toEqual(["-m", "acp_bridge", "serve", "--state-dir", "/s", "--remember", "project"]);
    settings({ pythonCommand: "py", rememberAlways: "project", bridgeArgs: ["--remember=session"] });
    expect(resolveAgent("acp-bridge", "/ws").args).toEqual(["-m", "acp_bridge", "serve", "--remember=session"]);
    settings({ pythonCommand: "py", rememberAlways: "session" });
    expect(resolveAgent("acp-bridge", "/ws").args).not.toContain("--remember");
  });

  it("runs the bridge the extension installed, unless acp.pythonCommand names another Python", () => {
    settings({});
    expect(resolveAgent("acp-bridge", "/ws", undefined, "/storage/bridge-venv/bin/python").command).toBe("/storage/bridge-venv/bin/python");
    settings({ pythonCommand: "python3" });
    expect(resolveAgent("acp-bridge", "/ws", undefined, "/storage/bridge-venv/bin/python").command).toBe("/storage/bridge-venv/bin/python");
    settings({ pythonCommand: "/opt/py/bin/python" });
    expect(resolveAgent("acp-bridge", "/ws", undefined, "/storage/bridge-venv/bin/python").command).toBe("/opt/py/bin/python");
  });

  it("splits a command line with quotes", () => {
    expect(splitCommandLine(`python -m "acp bridge" 'x y'`)).toEqual(["python", "-m", "acp bridge", "x y"]);
  });
});
