import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { newWorkspaceKey, startGatewayTarget, type TargetName, testPlans } from "./targets";

/**
 * A poll held for its job (`Prefer: wait`) when the gateway stops is answered at once, from the row
 * as it is, rather than keeping the stop (and ingress's drain) waiting until its wait ends.
 */
const KEY = "sk-held-stop";
/** Longer than any held poll (8 s): only the stop can make the poll answer sooner. */
const UPSTREAM_DELAY_MS = 12_000;
let oa: UpstreamEmulator;

beforeAll(async () => {
  oa = await startOpenAIUpstream({ apiKey: KEY });
});
afterAll(() => oa?.close());

const config = () => `
providers:
  oa: { kind: openai, base_url: "${oa.url}", api_key_env: HELD_STOP_OA, max_retries: 0 }
models:
  gpt: { type: chat, routes: [{ provider: oa, model: gpt-4o-mini }] }
${testPlans}`;

describe.each<TargetName>(["the embedded default", "the mesh"])("when %s stops while a poll waits for its job", (name) => {
  it("then the poll answers at once with the job's status, not at the end of its wait", async () => {
    const gw = await startGatewayTarget(name, config(), { HELD_STOP_OA: KEY });
    let stopped: Promise<unknown> | undefined;
    try {
      const { key } = await newWorkspaceKey(gw, { name: "held", models: ["*"] });
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      oa.script({ delayMs: UPSTREAM_DELAY_MS });
      const created = await fetch(`${gw.baseURL}/async/chat/completions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: "gpt", messages: [{ role: "user", content: "hold" }] }),
      });
      const { id } = (await created.json()) as { id: string };
      // The job has reached the upstream, which holds it: from now on only the stop ends the poll early.
      const deadline = Date.now() + 10_000;
      while (oa.requests.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(oa.requests).toHaveLength(1);
      const polled = fetch(`${gw.baseURL}/async/chat/completions/${id}`, { headers: { ...headers, prefer: "wait=8" } });
      await new Promise((r) => setTimeout(r, 500));
      const started = Date.now();
      stopped = gw.stop();
      const res = await polled;
      expect(Date.now() - started).toBeLessThan(6_000);
      expect(res.status).toBe(200);
      expect(["queued", "processing"]).toContain(((await res.json()) as { status: string }).status);
    } finally {
      await (stopped ?? gw.stop());
      oa.reset();
    }
  }, 60_000);
});
