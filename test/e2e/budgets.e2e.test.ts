import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenAIUpstream, testRedisUrl } from "@gw/testkit";
import { JOB_HOLD_MS, LIVE_HOLD_MS } from "../../services/ingress/src/budgets/budget-gate";
import { HOLD_STEP_MS } from "../../services/ingress/src/budgets/types";
import { adminClient, eventually, startIngressReplica, type IngressReplica } from "./harness";
import { type GatewayTarget, newWorkspaceKey, startGatewayTarget, targetNames, testPlans } from "./targets";

/**
 * Monthly budgets end to end, in the mesh (two ingress processes on one Redis) and in the embedded
 * default: exactness under a race, the 429 through the official clients, and each way a hold is
 * settled (an answer, a stream, a stream the caller abandons, a failed call, an async job).
 *
 * Prices are set so sums are easy: $0.001 a token, in and out. The request below is estimated at 6
 * input tokens (its text at 4 characters a token) plus its max_tokens of 4: a worst case of $0.010.
 * The emulator reports 3 prompt tokens (its words) and 4 completion tokens: a real cost of $0.007.
 */
const UPSTREAM_KEY = "sk-upstream-budgets";
const NANO = 1e9;
const REAL = 0.007 * NANO;
const chat = { model: "chat-budget", max_tokens: 4, messages: [{ role: "user" as const, content: "hello there friend" }] };

let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY, chunkDelayMs: 5 });
}, 60_000);
afterAll(async () => {
  await upstream?.close();
});

const config = () => `
providers:
  primary: { kind: openai, base_url: "${upstream.url}", api_key_env: E2E_UPSTREAM_KEY, timeout_ms: 10000 }
  refused: { kind: openai, base_url: "${upstream.url}", api_key_env: E2E_WRONG_KEY, timeout_ms: 10000, max_retries: 0 }
models:
  chat-budget:
    type: chat
    routes: [{ provider: primary, model: gpt-4o-mini }]
    price: { input_per_mtok: 1000, output_per_mtok: 1000 }
  chat-refused:
    type: chat
    routes: [{ provider: refused, model: gpt-4o-mini }]
    price: { input_per_mtok: 1000, output_per_mtok: 1000 }
${testPlans}`;

interface BudgetLine {
  spent_usd: string | null;
  held_usd: string | null;
  remaining_usd: string | null;
}
interface BudgetStatus {
  period: string;
  resets_at: string;
  workspace: BudgetLine;
  keys: (BudgetLine & { key_id: string })[];
}

const nanoOf = (usd: string | null) => (usd === null ? null : Math.round(Number(usd) * NANO));

for (const name of targetNames) {
  describe(`budgets in ${name}`, { timeout: 180_000 }, () => {
    let gw: GatewayTarget;
    let second: IngressReplica | undefined;
    let bases: [string, string];
    let admin: ReturnType<typeof adminClient>;

    beforeAll(async () => {
      gw = await startGatewayTarget(name, config(), {
        E2E_UPSTREAM_KEY: UPSTREAM_KEY,
        E2E_WRONG_KEY: "sk-not-the-upstream-key",
        LOG_LEVEL: "warn",
        // A busy test machine must not make a slow Redis answer count as Redis being down.
        GATEWAY_RATE_LIMIT_TIMEOUT_MS: "5000",
      });
      if (gw.mesh) second = await startIngressReplica(gw.mesh);
      bases = [gw.baseURL, second?.baseURL ?? gw.baseURL];
      admin = adminClient(gw.adminURL, gw.adminToken);
    }, 180_000);
    afterAll(async () => {
      await second?.stop();
      await gw?.stop();
    });

    const status = (workspaceId: string) => admin<BudgetStatus>("GET", `/admin/workspaces/${workspaceId}/budget`);
    /** The workspace's counter once nothing is held any more (every admitted request settled). */
    const settledSpend = async (workspaceId: string, scope: "workspace" | "key" = "workspace") =>
      eventually(async () => {
        const s = await status(workspaceId);
        const line = scope === "workspace" ? s.workspace : s.keys[0];
        return line && line.held_usd !== null && nanoOf(line.held_usd) === 0 ? (nanoOf(line.spent_usd) as number) : undefined;
      });
    /** The workspace's budget counter for this month, as Redis holds it (the mesh). */
    const redisCounter = async (workspaceId: string) => {
      const redis = createClient({ url: await testRedisUrl() });
      await redis.connect();
      try {
        const [key] = await redis.keys(`${gw.mesh?.env.GATEWAY_REDIS_PREFIX ?? ""}bg:{${workspaceId}}:ws:*`);
        return key ? await redis.hGetAll(key) : {};
      } finally {
        redis.destroy();
      }
    };
    const post = (base: string, key: string, body: unknown, path = "/chat/completions") =>
      fetch(`${base}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });

    it("then 500 racing requests never spend past a budget of 50 worst cases, and requests that fit go on until it is spent", async () => {
      const { workspaceId, key } = await newWorkspaceKey(gw, { name: "race", plan: "enterprise", budget: { monthly_usd: 0.5, mode: "hard" } });
      const answers = await Promise.all(
        Array.from({ length: 500 }, async (_, i) => {
          const res = await post(bases[i % 2] as string, key, chat);
          const body = (await res.json()) as { error?: { type: string } };
          return { status: res.status, type: body.error?.type };
        }),
      );
      const admitted = answers.filter((a) => a.status === 200).length;
      expect(answers.filter((a) => a.status !== 200).every((a) => a.status === 429 && a.type === "insufficient_quota")).toBe(true);
      expect(admitted).toBeGreaterThanOrEqual(50);
      const afterRace = await settledSpend(workspaceId);
      expect(afterRace).toBe(admitted * REAL);
      expect(afterRace).toBeLessThanOrEqual(0.5 * NANO);

      // One at a time now, each settled before the next: every request that fits is let in.
      let more = 0;
      for (;;) {
        const res = await post(gw.baseURL, key, chat);
        await res.arrayBuffer();
        if (res.status !== 200) {
          expect(res.status).toBe(429);
          break;
        }
        more += 1;
        await settledSpend(workspaceId);
      }
      // 71 requests of $0.007 is $0.497: the 72nd's worst case ($0.010) no longer fits in $0.50.
      expect(admitted + more).toBe(71);
      expect(await settledSpend(workspaceId)).toBe(71 * REAL);
      // The ledger agrees with the counter, cent for cent, refusals included at no cost.
      const usage = await eventually(async () => {
        const { data } = await admin<{ data: { requests: number; cost_usd: string }[] }>("GET", `/admin/usage?workspace_id=${workspaceId}`);
        return data[0]?.requests === 501 + more ? data[0] : undefined;
      }, 30_000);
      expect(nanoOf(usage.cost_usd)).toBe(71 * REAL);
    });

    it("then a spent key budget is a 429 insufficient_quota the official clients raise without retrying", async () => {
      const { workspaceId, key } = await newWorkspaceKey(gw, { name: "clients", timezone: "Europe/Berlin" }, { budget: { monthly_usd: 0.01, mode: "hard" } });
      expect((await post(gw.baseURL, key, chat)).status).toBe(200);
      await settledSpend(workspaceId, "key");
      const { resets_at } = await status(workspaceId);
      expect(resets_at).toMatch(/^\d{4}-\d{2}-01T00:00:00\+0[12]:00$/);

      let attempts = 0;
      const counting: typeof fetch = (input, init) => {
        attempts += 1;
        return fetch(input, init);
      };
      const openai = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 2, fetch: counting });
      const err = await openai.chat.completions.create(chat).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.RateLimitError);
      const refused = err as InstanceType<typeof OpenAI.RateLimitError>;
      expect(refused.status).toBe(429);
      expect(refused.type).toBe("insufficient_quota");
      expect(refused.code).toBe("insufficient_quota");
      expect(refused.message).toContain(`Monthly budget of $0.01 reached for this API key; it resets on ${resets_at.slice(0, 10)} 00:00 Europe/Berlin`);
      expect(refused.headers.get("x-should-retry")).toBe("false");
      expect(refused.headers.get("x-budget-limit-usd")).toBe("0.01");
      expect(refused.headers.get("x-budget-remaining-usd")).toBe("0.003000");
      expect(refused.headers.get("x-budget-reset")).toBe(resets_at);
      expect(attempts).toBe(1);

      attempts = 0;
      const anthropic = new Anthropic({ apiKey: key, baseURL: gw.baseURL.replace(/\/v1$/, ""), maxRetries: 2, fetch: counting });
      const denied = await anthropic.messages.create({ ...chat, max_tokens: 4 }).catch((e: unknown) => e);
      expect(denied).toBeInstanceOf(Anthropic.RateLimitError);
      expect((denied as InstanceType<typeof Anthropic.RateLimitError>).status).toBe(429);
      expect((denied as { error: { error: { type: string } } }).error.error.type).toBe("insufficient_quota");
      expect(attempts).toBe(1);
    });

    it("then a stream settles to its reported usage, an abandoned one keeps its hold, and a failed call costs nothing", async () => {
      const { workspaceId, key } = await newWorkspaceKey(gw, { name: "streams", budget: { monthly_usd: 5, mode: "soft" } });
      const openai = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });
      const stream = await openai.chat.completions.create({ ...chat, stream: true, stream_options: { include_usage: true } });
      let reported = 0;
      for await (const chunk of stream) if (chunk.usage) reported = chunk.usage.total_tokens;
      expect(reported).toBe(7);
      expect(await settledSpend(workspaceId)).toBe(REAL);

      // 40 words streamed 5 ms apart; the caller leaves after the first event.
      const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
      const long = { model: "chat-budget", max_tokens: 60, stream: true, messages: [{ role: "user", content: words }] };
      const worst = (Math.ceil("user".length / 4) + Math.ceil(words.length / 4) + 60) * 0.001 * NANO;
      const controller = new AbortController();
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(long),
        signal: controller.signal,
      });
      expect(res.status).toBe(200);
      await res.body?.getReader().read();
      controller.abort();
      expect(await eventually(async () => ((await settledSpend(workspaceId)) === REAL + worst ? true : undefined))).toBe(true);

      const failed = await post(gw.baseURL, key, { ...chat, model: "chat-refused" });
      await failed.arrayBuffer();
      expect(failed.status).toBeGreaterThanOrEqual(400);
      expect(await settledSpend(workspaceId)).toBe(REAL + worst);
    });

    it("then an async job holds its worst case until it has run, and settles to what it used", async () => {
      const { workspaceId, key } = await newWorkspaceKey(gw, { name: "budget", budget: { monthly_usd: 5, mode: "hard" } });
      const created = await post(gw.baseURL, key, chat, "/async/chat/completions");
      expect(created.status).toBe(202);
      const job = (await created.json()) as { id: string };
      await eventually(async () => {
        const res = await fetch(`${gw.baseURL}/async/chat/completions/${job.id}`, { headers: { authorization: `Bearer ${key}` } });
        return ((await res.json()) as { status: string }).status === "completed";
      }, 30_000);
      expect(await settledSpend(workspaceId)).toBe(REAL);
      if (name === "the mesh") {
        // The job's hold was filed to end a day on (a live call's two hours on), and nothing is left under it.
        const counter = await redisCounter(workspaceId);
        expect(Number(counter.x) * HOLD_STEP_MS - Date.now()).toBeGreaterThan(JOB_HOLD_MS - 10 * 60_000);
        expect(Number(counter.x) * HOLD_STEP_MS - Date.now()).toBeLessThanOrEqual(JOB_HOLD_MS + HOLD_STEP_MS);
        expect(Object.keys(counter).filter((field) => field.startsWith("e"))).toEqual([]);
        const live = await newWorkspaceKey(gw, { name: "budget-live", budget: { monthly_usd: 5, mode: "hard" } });
        expect((await post(gw.baseURL, live.key, chat)).status).toBe(200);
        expect(await settledSpend(live.workspaceId)).toBe(REAL);
        const liveCounter = await redisCounter(live.workspaceId);
        expect(Number(liveCounter.x) * HOLD_STEP_MS - Date.now()).toBeLessThanOrEqual(LIVE_HOLD_MS + HOLD_STEP_MS);
        expect(Number(liveCounter.x) * HOLD_STEP_MS - Date.now()).toBeGreaterThan(LIVE_HOLD_MS - 10 * 60_000);
      }
    });

    if (name === "the mesh") {
      it("then counters lost from Redis are rebuilt from the ledger's month-to-date before the next request", async () => {
        const { workspaceId, key } = await newWorkspaceKey(gw, { name: "budget", budget: { monthly_usd: 5, mode: "hard" } });
        for (let i = 0; i < 2; i++) expect((await post(gw.baseURL, key, chat)).status).toBe(200);
        expect(await settledSpend(workspaceId)).toBe(2 * REAL);
        await eventually(async () => {
          const { data } = await admin<{ data: { requests: number }[] }>("GET", `/admin/usage?workspace_id=${workspaceId}`);
          return data[0]?.requests === 2;
        }, 30_000);
        const redis = createClient({ url: await testRedisUrl() });
        await redis.connect();
        const prefix = gw.mesh?.env.GATEWAY_REDIS_PREFIX ?? "";
        const keys = await redis.keys(`${prefix}bg:{${workspaceId}}:*`);
        expect(keys.length).toBeGreaterThan(0);
        await redis.del(keys);
        redis.destroy();
        expect((await status(workspaceId)).workspace.spent_usd).toBeNull();
        expect((await post(bases[1], key, chat)).status).toBe(200);
        expect(await settledSpend(workspaceId)).toBe(3 * REAL);
      });
    }
  });
}
