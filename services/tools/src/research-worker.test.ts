import { createInProcessBus, type Bus, type Consumer } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import type { Identity, JobEvent, JobWork } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { createUpstreamAgent, credentialsTransitPurpose, Sealer } from "@gw/service-kit";
import { startTavilyUpstream, type TavilyUpstream } from "@gw/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startResearchWorker } from "./research-worker";
import { instantRetry } from "./route-test-service";

/** The research worker on the in-process bus, in front of the Tavily emulator, as jobs hands it work. */
const PLATFORM_KEY = "tvly-platform-worker-test";
const SECRET = "research-worker-test-internal-secret";
const plans = {
  plus: { requests_per_minute: 1, tokens_per_minute: 1 },
  pro: { requests_per_minute: 1, tokens_per_minute: 1 },
  enterprise: { requests_per_minute: 1, tokens_per_minute: 1 },
};
const identity: Identity = { workspace_id: "ws_research", key_id: "key_1", plan: "enterprise", models: [["*"]], tools: ["webtool"] };
const logger = createLogger({ service: "research-worker-test", level: "silent" });
const agent = createUpstreamAgent();
let up: TavilyUpstream;
let bus: Bus;
let worker: Consumer;
const events: JobEvent[] = [];
let n = 0;

beforeAll(async () => {
  up = await startTavilyUpstream({ apiKey: PLATFORM_KEY, research: { pendingPolls: 0, inProgressPolls: 0 } });
  const gateway = GatewayConfig.parse({ providers: { webtool: { kind: "tavily", base_url: up.url, api_key_env: "TV", max_retries: 2 } }, plans });
  bus = createInProcessBus({ logger });
  await bus.consume("jobs.events", { durable: "jobs" }, async (event) => void events.push(event));
  worker = await startResearchWorker({
    bus,
    gateway,
    secrets: { webtool: PLATFORM_KEY },
    agent,
    internalSecret: SECRET,
    logger,
    concurrency: 2,
    polling: { initialMs: 10, maxMs: 20 },
    retry: instantRetry,
  });
});
afterAll(async () => {
  await worker?.stop();
  await bus?.close();
  await up?.close();
  await agent.close();
});
beforeEach(() => up.reset());

async function run(credentials: string): Promise<JobEvent> {
  const work: JobWork = {
    job_id: `job_${String(++n).padStart(32, "0")}`,
    route: "tools/webtool/research",
    identity,
    credentials,
    request: { format: "json", body: { input: "What do gateways cache?" } },
    attempt: 1,
  };
  await bus.enqueue("jobs.work.tools", work, { msgId: `${work.job_id}:1` });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const final = events.find((e) => e.job_id === work.job_id && (e.status === "failed" || e.status === "completed"));
    if (final) return final;
    if (Date.now() > deadline) throw new Error(`no final event for ${work.job_id}: ${JSON.stringify(events)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sealedFor = (workspaceId: string, credentials: Record<string, string>) =>
  new Sealer(SECRET, credentialsTransitPurpose).seal(JSON.stringify(credentials), workspaceId);

describe("when a research job carries the workspace's own credentials", () => {
  it("then credentials that do not open fail the job, saying so, and the platform's credential is never used instead", async () => {
    const final = await run("v1.not.a.sealed-value");
    expect(final).toMatchObject({
      status: "failed",
      error: { error: { code: "provider_not_configured", message: expect.stringContaining("could not be opened") } },
    });
    // Sealed for another workspace: the same.
    expect(await run(sealedFor("ws_other", { webtool: "tvly-own" }))).toMatchObject({ status: "failed" });
    expect(up.requests).toHaveLength(0);
  });

  it("then a credential the provider refuses fails the job at once with the workspace's 424, tried once", async () => {
    const final = await run(sealedFor(identity.workspace_id, { webtool: "tvly-workspace-refused" }));
    expect(final).toMatchObject({
      status: "failed",
      error: { error: { code: "provider_credential_refused", message: expect.stringContaining("refused this workspace's own credential") } },
    });
    expect(up.requests.map((r) => r.headers.authorization)).toEqual(["Bearer tvly-workspace-refused"]);
  });
});
