import { describe, expect, it } from "vitest";
import { bridgeModel, describeAgent } from "../../src/install/agentInfo";
import { describeFailure, failureMessage } from "../../src/install/failure";

describe("an agent that stopped, said so the user can act", () => {
  const noModule = {
    agentName: "acp-bridge",
    command: "python3",
    builtin: true,
    message: 'agent "acp-bridge" exited during initialize (code 1, signal null):\n/usr/bin/python3: No module named acp_bridge',
  };

  it("a Python without acp_bridge: what to do, the cause kept whole, the setting to change", () => {
    const f = describeFailure(noModule);
    expect(f.summary).toBe("python3 does not have acp-bridge installed, so the agent cannot start.");
    expect(f.cause).toBe("/usr/bin/python3: No module named acp_bridge");
    expect(f.fix).toMatch(/python3 -m pip install/);
    expect(f.setting).toBe("acp.pythonCommand");
    expect(f.install).toBe(true);
  });

  it("offers the one-click install for the built-in bridge only", () => {
    expect(describeFailure({ agentName: "acp-bridge", command: "python3", builtin: true, message: 'cannot start agent "acp-bridge" (python3): spawn python3 ENOENT' }).install).toBe(true);
    expect(describeFailure({ ...noModule, builtin: false }).install).toBe(false);
    expect(describeFailure({ agentName: "a", command: "a", builtin: true, message: "exited with code 3" }).install).toBeUndefined();
  });

  it("the notification keeps the cause on its one line (it used to stop at the first line break)", () => {
    const msg = failureMessage("acp-bridge", describeFailure(noModule));
    expect(msg).not.toContain("\n");
    expect(msg).toMatch(/^ACP agent "acp-bridge" stopped: acp-bridge is not installed for python3\. /);
    expect(msg).toContain("Cause: /usr/bin/python3: No module named acp_bridge");
  });

  it("a command that is not there", () => {
    const f = describeFailure({ agentName: "acp-bridge", command: "/opt/py", builtin: true, message: 'cannot start agent "acp-bridge" (/opt/py): spawn /opt/py ENOENT' });
    expect(f.summary).toBe("/opt/py was not found, so the agent cannot start.");
    expect(f.setting).toBe("acp.pythonCommand");
    const other = describeFailure({ agentName: "mine", command: "mine-agent", builtin: false, message: 'cannot start agent "mine" (mine-agent): spawn mine-agent ENOENT' });
    expect(other.setting).toBe("acp.agents");
  });

  it("anything else: the agent's last stderr lines as the cause, no setting to blame", () => {
    const f = describeFailure({ agentName: "a", command: "a", builtin: false, message: "exited with code 3", stderrTail: "Traceback (most recent call last):\n  File x\nValueError: bad\n" });
    expect(f).toMatchObject({ summary: "The agent stopped: exited with code 3.", reason: "exited with code 3", cause: "Traceback (most recent call last):\n  File x\nValueError: bad" });
    expect(f.setting).toBeUndefined();
  });
});

describe("which model runs", () => {
  const spec = (args: string[]) => ({ name: "acp-bridge", command: "python3", args: ["-m", "acp_bridge", "serve", ...args] });
  const bridge = { name: "acp-bridge", title: "acp-bridge", version: "0.1.0" };

  it("labels the bridge's default model as the offline demo script", () => {
    expect(describeAgent(spec([]), bridge)).toMatchObject({ title: "acp-bridge", version: "0.1.0", demo: true, model: "offline demo script (canned answers, no AI model)" });
    expect(describeAgent(spec(["--model", "scripted:/x/s.json"]), bridge)).toMatchObject({ demo: true, model: "scripted replies from s.json (no AI model)" });
  });

  it("names a real model, from the bridge's --model or from the agent's model option", () => {
    const real = describeAgent(spec(["--model=openai:deepseek-chat"]), bridge);
    expect(real.model).toBe("deepseek-chat");
    expect(real.demo).toBeFalsy();
    const option = { id: "m", name: "Model", category: "model", type: "select" as const, currentValue: "l", options: [{ value: "l", name: "Large" }] };
    expect(describeAgent({ name: "other", command: "x", args: [] }, { name: "other" }, [option]).model).toBe("Large");
    expect(describeAgent({ name: "other", command: "x", args: [] }, { name: "other" }).model).toBeUndefined();
  });

  it("labels the demo from the bridge's own model option too (newer bridges offer one)", () => {
    const option = (value: string) => ({ id: "model", name: "Model", category: "model", type: "select" as const, currentValue: value, options: [{ value, name: value }] });
    expect(describeAgent(spec([]), bridge, [option("scripted:demo")])).toMatchObject({ demo: true, model: "offline demo script (canned answers, no AI model)" });
    expect(describeAgent(spec([]), bridge, [option("scripted:/x/s.json")]).demo).toBe(true);
    expect(describeAgent(spec([]), bridge, [option("deepseek-chat")]).model).toBe("deepseek-chat");
  });

  it("takes the last --model, as argparse does", () => {
    expect(bridgeModel(["--model", "a", "--model", "b"])).toBe("b");
    expect(bridgeModel(["--log-level", "debug"])).toBe("scripted");
  });
});
