/** How to launch one ACP agent over stdio. Pure data; see src/session/config.ts for where it comes from. */
export interface AgentSpec {
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
}

/** Split a command line such as ACP_BRIDGE_CMD into words (double/single quotes group words). */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) words.push(m[1] ?? m[2] ?? m[3] ?? "");
  return words;
}
