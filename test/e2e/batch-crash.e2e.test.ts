import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { spawnGateway, type GatewayProcess } from "./gateway-process";
import { eventually, NATS_BIN, startPrivateNats, startTestMesh, type RunningMesh } from "./harness";
import { newWorkspaceKey } from "./targets";

/**
 * A batch survives kill -9 of each process it passes through: while its lines run, jobs (which
 * admits them and writes the files), inference (which runs them) and ingress (which charges them to
 * the key's limits) are killed and started again, one after another; in a mesh of its own, NATS;
 * and the embedded default as a whole, started again on its data folder. The batch completes with every line exactly once in its output file, each with the answer
 * to its own request.
 *
 * GW_BATCH_CRASH_LINES sets the batch's size (1,000 by default, to keep the suite short; the
 * closing notes report a run at OpenAI's 50,000).
 */
const LINES = Number(process.env.GW_BATCH_CRASH_LINES ?? 1_000);
const UPSTREAM_KEY = "sk-batch-crash-upstream";

let oa: UpstreamEmulator;
beforeAll(async () => {
  oa = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
});
afterAll(() => oa?.close());
afterEach(() => oa.reset());

// Limits far above the batch, so that only the crashes slow it.
const config = () => `
providers:
  oa: { kind: openai, base_url: "${oa.url}", api_key_env: BATCH_CRASH_OA }
models:
  gpt: { type: chat, routes: [{ provider: oa, model: gpt-4o-mini }] }
plans:
  plus:       { requests_per_minute: 60, tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600, tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 10000000, tokens_per_minute: 1000000000 }
`;

/** Starts a batch of LINES chat lines on an enterprise key; answers the client and the batch's id. */
async function startBatch(gw: { adminURL: string; adminToken: string; baseURL: string }): Promise<{ client: OpenAI; id: string }> {
  const { key } = await newWorkspaceKey(gw, { name: "batch-crash", plan: "enterprise" });
  const client = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 5 });
  const input = Array.from({ length: LINES }, (_, i) =>
    JSON.stringify({
      custom_id: `line-${i}`,
      method: "POST",
      url: "/v1/chat/completions",
      body: { model: "gpt", messages: [{ role: "user", content: `crash-line-${i}` }], max_tokens: 5 },
    }),
  ).join("\n");
  const file = await client.files.create({ file: await toFile(Buffer.from(input), "crash.jsonl"), purpose: "batch" });
  const created = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  return { client, id: created.id };
}

/** Waits until the batch has this share of its lines done. */
async function linesDone(client: OpenAI, id: string, share: number): Promise<void> {
  await eventually(async () => ((await client.batches.retrieve(id)).request_counts?.completed ?? 0) >= LINES * share, 300_000);
}

/** The batch completes with every line once, each with the answer to its own request. */
async function expectEveryLineOnce(client: OpenAI, id: string): Promise<void> {
  const batch = await eventually(
    async () => {
      const b = await client.batches.retrieve(id);
      return b.status === "completed" ? b : undefined;
    },
    Math.max(120_000, LINES * 20),
  );
  expect(batch.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
  expect(batch.error_file_id).toBeUndefined();
  const text = await (await client.files.content(batch.output_file_id!)).text();
  const lines = text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { id: string; custom_id: string; response: { status_code: number; body: { choices: { message: { content: string } }[] } } });
  expect(lines).toHaveLength(LINES);
  const seen = new Set<string>();
  for (const line of lines) {
    expect(seen.has(line.custom_id), line.custom_id).toBe(false);
    seen.add(line.custom_id);
    expect(line.response.status_code).toBe(200);
    expect(line.response.body.choices[0]?.message.content).toMatch(new RegExp(`crash-${line.custom_id}(?!\\d)`));
  }
  expect(new Set(lines.map((l) => l.id)).size).toBe(LINES);
  // Every line reached the upstream; repeats only where a crash cut a delivery short.
  const calls = new Set(oa.requests.map((r) => JSON.stringify(r.body).match(/crash-line-\d+/)?.[0]).filter(Boolean));
  expect(calls.size).toBe(LINES);
}

const TIMEOUT_MS = Math.max(600_000, LINES * 40);

describe(`when the mesh's processes are killed while a batch of ${LINES} lines runs`, () => {
  let gw: RunningMesh | undefined;
  afterAll(async () => {
    await gw?.stop();
  });

  it(
    "then kill -9 of jobs, inference and ingress in turn loses no line and doubles none: the batch completes with each line once",
    async () => {
      gw = await startTestMesh(config(), { BATCH_CRASH_OA: UPSTREAM_KEY });
      const { client, id } = await startBatch(gw);
      for (const [share, name] of [
        [0.15, "jobs"],
        [0.4, "inference"],
        [0.65, "ingress"],
      ] as const) {
        await linesDone(client, id, share);
        await gw.crash(name);
        await gw.respawn(name);
      }
      await expectEveryLineOnce(client, id);
    },
    TIMEOUT_MS,
  );
});

describe.skipIf(!existsSync(NATS_BIN))(`when NATS is killed while a batch of ${LINES} lines runs`, () => {
  let nats: ChildProcess | undefined;
  const storeDir = mkdtempSync(join(tmpdir(), "gw-nats-batch-"));
  let gw: RunningMesh | undefined;

  afterAll(async () => {
    await gw?.stop();
    nats?.kill("SIGKILL");
    rmSync(storeDir, { recursive: true, force: true });
  });

  it(
    "then the batch completes with each line once: the lines' work and events are kept on disk, and what was not yet published is sent again",
    async () => {
      const port = await freePort();
      nats = await startPrivateNats(port, storeDir);
      gw = await startTestMesh(config(), { BATCH_CRASH_OA: UPSTREAM_KEY, NATS_URL: `nats://127.0.0.1:${port}` });
      const { client, id } = await startBatch(gw);
      await linesDone(client, id, 0.3);
      await new Promise<void>((resolve) => {
        nats!.once("exit", () => resolve());
        nats!.kill("SIGKILL");
      });
      await new Promise((r) => setTimeout(r, 1_500));
      nats = await startPrivateNats(port, storeDir);
      await expectEveryLineOnce(client, id);
    },
    TIMEOUT_MS,
  );
});

describe("when the embedded default is killed while a batch runs", () => {
  const running: GatewayProcess[] = [];
  afterAll(async () => {
    await Promise.all(running.map((g) => g.stop("SIGKILL")));
  });

  it(
    "then the next start on the same data folder carries the batch on: it completes with each line once",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "gw-batch-embedded-"));
      const configPath = join(dir, "gateway.config.yaml");
      writeFileSync(configPath, config());
      const adminToken = `gw_admin_${"b".repeat(32)}`;
      const start = async () => {
        const gw = await spawnGateway("main", {
          GATEWAY_DATA_DIR: join(dir, "data"),
          GATEWAY_CONFIG: configPath,
          GATEWAY_ADMIN_TOKEN: adminToken,
          BATCH_CRASH_OA: UPSTREAM_KEY,
        });
        running.push(gw);
        await gw.banner();
        return gw;
      };
      const first = await start();
      // Each upstream call takes 10 ms, so that the kill lands while lines are running.
      oa.script(...Array.from({ length: LINES * 2 }, () => ({ delayMs: 10 })));
      const { client, id } = await startBatch({ adminURL: first.adminURL, adminToken, baseURL: first.baseURL });
      await linesDone(client, id, 0.3);
      await first.stop("SIGKILL");
      const second = await start();
      await expectEveryLineOnce(new OpenAI({ apiKey: client.apiKey, baseURL: second.baseURL, maxRetries: 5 }), id);
      expect(await second.stop()).toBe(0);
    },
    TIMEOUT_MS,
  );
});
