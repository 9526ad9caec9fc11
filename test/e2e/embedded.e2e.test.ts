import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadGatewayConfig, resolveProviderSecrets } from "@gw/config";
import { createLogger } from "@gw/logger";
import { assertOpenAI, startOpenAIUpstream } from "@gw/testkit";
import { loadEmbeddedEnv } from "../../services/embedded/src/config";
import { ensureDevelopmentWorkspace } from "../../services/embedded/src/dev-workspace";
import { startEmbedded, type EmbeddedGateway } from "../../services/embedded/src/embedded";

/**
 * The embedded default: the four service factories in one process on PGlite and the in-process bus,
 * with none of DATABASE_URL, REDIS_URL, NATS_URL set.
 */
const UPSTREAM_KEY = "sk-embedded-upstream";
let upstream: Awaited<ReturnType<typeof startOpenAIUpstream>>;
let dataDir: string;
let configPath: string;
let gw: EmbeddedGateway | undefined;
const logger = createLogger({ service: "embedded-test", level: "silent" });

async function start(): Promise<EmbeddedGateway> {
  const env = loadEmbeddedEnv({ PORT: "0", ADMIN_PORT: "0", GATEWAY_DATA_DIR: dataDir, GATEWAY_CONFIG: configPath });
  const config = loadGatewayConfig(env.GATEWAY_CONFIG);
  return startEmbedded(env, config, resolveProviderSecrets(config, { EMB_KEY: UPSTREAM_KEY }), logger);
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
  dataDir = mkdtempSync(join(tmpdir(), "gw-embedded-"));
  configPath = join(dataDir, "gateway.config.yaml");
  writeFileSync(
    configPath,
    `providers:
  up: { kind: openai, base_url: "${upstream.url}", api_key_env: EMB_KEY }
models:
  chat-local: { type: chat, routes: [{ provider: up, model: gpt-4o-mini }] }
plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`,
  );
});

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

describe("when the gateway runs embedded with nothing configured", () => {
  let key: string;

  it("then a fresh data folder gets a development workspace and a working key", async () => {
    gw = await start();
    const dev = await ensureDevelopmentWorkspace(gw.adminUrl, gw.adminToken);
    expect(dev.key).toMatch(/^gw_live_[0-9A-Za-z]{40}$/);
    key = dev.key as string;
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(["chat-local"]);
  });

  it("then chat, streaming and errors work as in the mesh", async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${gw!.url}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: "chat-local", messages: [{ role: "user", content: "embedded hi" }] });
    assertOpenAI("CreateChatCompletionResponse", completion);
    expect(completion.model).toBe("chat-local");
    expect(upstream.requests.at(-1)?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);

    let text = "";
    for await (const chunk of await client.chat.completions.create({
      model: "chat-local",
      messages: [{ role: "user", content: "embedded stream" }],
      stream: true,
    })) {
      text += chunk.choices[0]?.delta.content ?? "";
    }
    expect(text).toContain("embedded stream");
    await expect(new OpenAI({ apiKey: "gw_live_nope", baseURL: `${gw!.url}/v1`, maxRetries: 0 }).models.list()).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
  });

  it("then a restart on the same data folder keeps the key and creates no second workspace", async () => {
    await gw?.stop();
    gw = await start();
    const again = await ensureDevelopmentWorkspace(gw.adminUrl, gw.adminToken);
    expect(again).toEqual({ count: 1 });
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    expect((await client.models.list()).data).toHaveLength(1);
  });
});
