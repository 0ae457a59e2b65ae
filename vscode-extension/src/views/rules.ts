/**
 * The Rules view's content, from the bridge's `_acpBridge/listRules` answer: one line per remembered
 * "always" answer (numbered as `/permissions` numbers them, for `_acpBridge/forgetRules`), and a line
 * saying what they cover. Pure, no `vscode`: unit-tested.
 */
import type { RulesListing } from "../acp/connection";

export interface RuleLine {
  number: number;
  label: string;
  /** "allowed · edit · this project" */
  description: string;
  tooltip: string;
  allow: boolean;
}

export function ruleLines(listing: RulesListing): RuleLine[] {
  return listing.rules.map((r) => ({
    number: r.number,
    label: r.description,
    description: [r.allow ? "allowed" : "rejected", r.tool, r.scope].filter(Boolean).join(" · "),
    tooltip: `${r.number}. ${r.description}\n${r.allow ? "Always allowed" : "Always rejected"}, remembered for ${listing.rememberedFor}. Revoke it to be asked again.`,
    allow: r.allow,
  }));
}

/** What the view says above its lines. */
export function rulesMessage(listing: RulesListing | undefined, unavailable?: string): string {
  if (unavailable) return unavailable;
  if (!listing) return "No session yet.";
  // The bridge says it in words: "this session", "this project".
  const scope = listing.rememberedFor;
  if (listing.rules.length === 0) return `No "always" answers remembered for ${scope}. Mode: ${listing.mode}.`;
  return `"Always" answers remembered for ${scope}. Mode: ${listing.mode}.`;
}
