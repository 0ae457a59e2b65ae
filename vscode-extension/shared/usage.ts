/**
 * The context gauge and the cost, in words (host and webview): "12.3k of 128k tokens", the share of the
 * window in use, and the session's cost when the agent reports one, marked incomplete when some model
 * responses had no known price (the bridge's `_meta.acpBridge.unpricedResponses`). Pure: unit-tested.
 */
import type { CompactionView, UsageView } from "./state";

export interface UsageText {
  /** "12.3k of 128k tokens". */
  tokens: string;
  /** 0..100, rounded; the share of the context window in use. */
  percent: number;
  /** "$0.0123", absent when the agent reports no cost. */
  cost?: string;
  /** Why the cost is a lower bound, when it is. */
  incomplete?: string;
}

export function usageText(u: UsageView): UsageText {
  const percent = u.size > 0 ? Math.min(100, Math.round((u.used / u.size) * 100)) : 0;
  const out: UsageText = { tokens: `${compact(u.used)} of ${compact(u.size)} tokens`, percent };
  if (u.cost) out.cost = money(u.cost.amount, u.cost.currency);
  if (u.unpriced) out.incomplete = `incomplete: ${u.unpriced} model ${u.unpriced === 1 ? "response has" : "responses have"} no known price`;
  return out;
}

/** 950 → "950", 12_345 → "12.3k", 128_000 → "128k", 1_048_576 → "1.05M". */
export function compact(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 1_000_000) return `${trim((n / 1000).toPrecision(3))}k`;
  return `${trim((n / 1_000_000).toPrecision(3))}M`;
}

function trim(s: string): string {
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

/** An ISO 4217 amount as money ("$0.0123", "€1.20"); any other unit as "12 credits". */
export function money(amount: number, currency: string): string {
  const digits = Math.abs(amount) > 0 && Math.abs(amount) < 1 ? 4 : 2;
  if (/^[A-Z]{3}$/.test(currency)) {
    try {
      return new Intl.NumberFormat("en", { style: "currency", currency, minimumFractionDigits: 2, maximumFractionDigits: digits }).format(amount);
    } catch {
      // not a currency Intl knows: fall through to the plain form
    }
  }
  return `${Number(amount.toFixed(digits))} ${currency}`;
}

/** The number of unpriced responses in a `usage_update`'s `_meta`, if the bridge says so. */
export function unpricedResponses(meta: Record<string, unknown> | null | undefined): number | undefined {
  const bridge = meta?.acpBridge;
  if (typeof bridge !== "object" || bridge === null) return undefined;
  const n = (bridge as Record<string, unknown>).unpricedResponses;
  return typeof n === "number" && n > 0 ? n : undefined;
}

/** A compaction's timeline line: "Compacting the conversation…", "Conversation compacted: 12 earlier messages summarized, 4 kept". */
export function compactionTitle(c: CompactionView): string {
  const bridge = c.meta?.acpBridge;
  const m = typeof bridge === "object" && bridge !== null ? (bridge as Record<string, unknown>) : {};
  const why = m.trigger === "command" ? " (/compact)" : m.trigger === "threshold" ? " (context nearly full)" : "";
  switch (c.status) {
    case "in_progress":
      return `Compacting the conversation${why}…`;
    case "completed": {
      const counts = typeof m.summarizedMessages === "number" ? `: ${m.summarizedMessages} earlier messages summarized${typeof m.keptMessages === "number" ? `, ${m.keptMessages} kept` : ""}` : "";
      return `Conversation compacted${why}${counts}`;
    }
    case "failed":
      return `Compaction failed${why}${c.error ? `: ${c.error}` : ""}`;
    case "cancelled":
      return "Compaction cancelled";
    default:
      return `Compaction ${c.status}`;
  }
}
