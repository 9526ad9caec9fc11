import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsServerAvailable, startOpenAIUpstream, startPrivateNats, type PrivateNats, type UpstreamEmulator } from "@gw/testkit";
import { eventually, startTestMesh, type RunningMesh } from "./harness";
import { adminGet, type LedgerRecord } from "./ledger-helpers";
import { newWorkspaceKey, testPlans } from "./targets";

/**
 * No usage record lost or doubled when a process dies under load: kill -9 the usage service, then
 * inference, then NATS itself (a private server, restarted on the same store), each while calls
 * are flowing. Every request id a caller saw appears exactly once in the ledger, and the roll-ups
 * count each once.
 */
const UPSTREAM_KEY = "sk-usage-crash";
let upstream: UpstreamEmulator;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
});
afterAll(() => upstream?.close());

const config = () => `
providers:
  oa: { kind: openai, base_url: "${upstream.url}", api_key_env: CRASH_OA, max_retries: 0 }
models:
  gpt: { type: chat, routes: [{ provider: oa, model: gpt-4o-mini }] }
${testPlans}`;

const CALLS = 240;
const CONCURRENCY = 6;

type Victim = "usage" | "inference" | "nats";

describe.skipIf(!natsServerAvailable())(
  "when a process is killed while calls flow, then every request id is in the ledger exactly once",
  { timeout: 240_000 },
  () => {
    for (const victim of (process.env.CRASH_ONLY ? [process.env.CRASH_ONLY] : ["usage", "inference", "nats"]) as Victim[]) {
      describe(`when ${victim} is killed`, () => {
        let nats: PrivateNats;
        let gw: RunningMesh;
        beforeAll(async () => {
          nats = await startPrivateNats();
          gw = await startTestMesh(config(), { CRASH_OA: UPSTREAM_KEY, NATS_URL: nats.url });
        }, 120_000);
        afterAll(async () => {
          await gw?.stop();
          await nats?.stop();
        });

        it("then each answered request is recorded once, whatever its status", async () => {
          const { key, workspaceId } = await newWorkspaceKey(gw, { name: `crash-${victim}` });
          const seen: { id: string; status: number }[] = [];
          let next = 0;
          let killed: Promise<void> | undefined;
          const worker = async () => {
            while (next < CALLS) {
              const i = next++;
              if (i === CALLS / 3) killed = kill(victim, gw, nats);
              const res = await fetch(`${gw.baseURL}/chat/completions`, {
                method: "POST",
                headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
                body: JSON.stringify({ model: "gpt", messages: [{ role: "user", content: `call ${i}` }] }),
              }).catch(() => undefined);
              if (!res) continue;
              await res.arrayBuffer();
              const id = res.headers.get("x-request-id");
              if (id) seen.push({ id, status: res.status });
            }
          };
          await Promise.all(Array.from({ length: CONCURRENCY }, worker));
          await killed;
          expect(seen.length).toBeGreaterThan(CALLS / 2);
          if (victim === "inference") expect(seen.some((s) => s.status >= 500)).toBe(true);

          let lastCount = 0;
          const records = await eventually(async () => {
            const all = await allRecords(gw, workspaceId);
            lastCount = all.length;
            return all.length >= seen.length ? all : undefined;
          }, 90_000).catch((err: unknown) => {
            throw new Error(`${lastCount} of ${seen.length} records after 90 s (${(err as Error).message})\n${gw.output().slice(-6000)}`);
          });
          const ids = records.map((r) => r.request_id);
          expect(new Set(ids).size).toBe(ids.length);
          expect(new Set(ids)).toEqual(new Set(seen.map((s) => s.id)));
          const statusOf = new Map(records.map((r) => [r.request_id, r.status]));
          for (const s of seen) expect(statusOf.get(s.id), s.id).toBe(s.status);
          // The roll-ups hold each record once too (a redelivery never counts twice).
          const usage = await adminGet(gw, `/admin/usage?workspace_id=${workspaceId}`);
          const totals = (usage.body as { data: { requests: number }[] }).data;
          expect(totals.reduce((n, row) => n + row.requests, 0)).toBe(seen.length);
        });
      });
    }
  },
);

/** Kills the victim, waits a moment for calls to meet the gap, and brings it back. */
async function kill(victim: Victim, gw: RunningMesh, nats: PrivateNats): Promise<void> {
  if (victim === "nats") {
    await nats.crash();
    await new Promise((r) => setTimeout(r, 1_500));
    await nats.restart();
    return;
  }
  await gw.crash(victim);
  await new Promise((r) => setTimeout(r, 500));
  await gw.respawn(victim);
}

async function allRecords(gw: RunningMesh, workspaceId: string): Promise<LedgerRecord[]> {
  const out: LedgerRecord[] = [];
  let cursor: string | null = null;
  do {
    const page = await adminGet(gw, `/admin/logs?workspace_id=${workspaceId}&limit=1000${cursor ? `&cursor=${cursor}` : ""}`);
    if (page.status !== 200) throw new Error(`logs → ${page.status} ${page.text}`);
    const body = page.body as { data: LedgerRecord[]; next_cursor: string | null };
    out.push(...body.data);
    cursor = body.next_cursor;
  } while (cursor);
  return out;
}
