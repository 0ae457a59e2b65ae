/** Identifiers contributed in package.json (a unit test checks they match). */
export const VIEW_ID = "acp.agentView";
export const CONTAINER_ID = "acp";
export const RULES_VIEW_ID = "acp.rulesView";
export const COMMANDS = {
  newSession: "acp.newSession",
  cancel: "acp.cancel",
  restart: "acp.restartAgent",
  selectAgent: "acp.selectAgent",
  pickMode: "acp.selectMode",
  pickModel: "acp.selectModel",
  history: "acp.history",
  renameSession: "acp.renameSession",
  forkSession: "acp.forkSession",
  deleteSession: "acp.deleteSession",
  refreshRules: "acp.refreshRules",
  revokeRule: "acp.revokeRule",
  revokeAllRules: "acp.revokeAllRules",
  toggleFollow: "acp.toggleFollow",
  showOutput: "acp.showOutput",
  login: "acp.login",
  sendPrompt: "acp.sendPrompt",
  focus: "acp.focus",
  attachSelection: "acp.attachSelection",
  acceptEdit: "acp.acceptEdit",
  rejectEdit: "acp.rejectEdit",
} as const;
