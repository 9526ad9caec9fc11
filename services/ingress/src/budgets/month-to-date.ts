import { internalHeaders, operatorIdentity } from "@gw/contracts";
import { IdentitySigner } from "@gw/service-kit";
import { nanoOf } from "./worst-case";

/** A workspace's month-to-date spend, and each of its keys', in nano-dollars. */
export interface MonthSpend {
  workspace: number;
  keys: Map<string, number>;
}

export type MonthToDate = (workspaceId: string, from: number) => Promise<MonthSpend>;

/** How long an answer serves other requests that need the same seed: a burst after a flush asks once. */
const REUSE_MS = 5_000;

/**
 * The ledger's spend since `from`, asked of the usage service (one query per workspace and month,
 * shared by the requests waiting for it): what a budget counter starts from when Redis has none
 * (first request of the month, a restart, a failover). Records still on their way to the ledger are
 * not in it; they are the most the counter can be short by.
 */
export function monthToDateFromLedger(usageUrl: string, internalSecret: string, timeoutMs = 5_000): MonthToDate {
  const signer = new IdentitySigner(internalSecret);
  const asked = new Map<string, { at: number; answer: Promise<MonthSpend> }>();
  return (workspaceId, from) => {
    const id = `${workspaceId}@${from}`;
    const now = Date.now();
    const known = asked.get(id);
    if (known && now - known.at < REUSE_MS) return known.answer;
    // Signed per call: a signed identity is good for a short while only.
    const answer = query(usageUrl, signer.sign({ ...operatorIdentity }), workspaceId, from, timeoutMs);
    asked.set(id, { at: now, answer });
    answer.catch(() => asked.delete(id));
    if (asked.size > 10_000) for (const [k, v] of asked) if (now - v.at >= REUSE_MS) asked.delete(k);
    return answer;
  };
}

async function query(usageUrl: string, identity: string, workspaceId: string, from: number, timeoutMs: number): Promise<MonthSpend> {
  const params = new URLSearchParams({ workspace_id: workspaceId, from: new Date(from).toISOString(), group_by: "key" });
  const res = await fetch(`${usageUrl}/v1/usage?${params}`, {
    headers: { [internalHeaders.identity]: identity },
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) throw new Error(`the usage service answered ${res.status} for month-to-date spend`);
  const { data } = (await res.json()) as { data: { key_id?: string; cost_usd: string | null }[] };
  const keys = new Map<string, number>();
  let workspace = 0;
  for (const row of data) {
    const nano = row.cost_usd === null ? 0 : nanoOf(row.cost_usd, "half-up");
    workspace += nano;
    if (row.key_id) keys.set(row.key_id, nano);
  }
  return { workspace, keys };
}
