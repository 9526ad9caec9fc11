import { createInProcessBus } from "@gw/bus";
import type { Bus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import type { Identity, UsageRecord } from "@gw/contracts";
import type { Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { createPricer } from "@gw/pricing";
import { signIdentity } from "@gw/service-kit";
import type { Pricer } from "../pricing";
import { operatorIdentity } from "../scope";
import { createUsageService, type UsageService } from "../service";

/** Test helpers shared by the ledger's suites: a running service, records, signed calls. */

export const secret = "usage-test-internal-secret-0123456789";
export const logger = createLogger({ service: "usage-test", level: "silent" });
const limits = { requests_per_minute: 1, tokens_per_minute: 1 };

/** The day prices change in the tests' pricer: input tokens cost 2.5 USD per million before it, 3 after. */
export const PRICE_CHANGE = Date.UTC(2025, 0, 20);

function gatewayWith(inputPerMtok: number): GatewayConfig {
  return GatewayConfig.parse({
    providers: {
      openai: { kind: "openai", base_url: "https://api.openai.com/v1" },
      tavily: { kind: "tavily", base_url: "https://api.tavily.com", price: { per_call: 0.008 } },
    },
    models: {
      "gpt-test": { type: "chat", routes: [{ provider: "openai", model: "gpt-4o" }], price: { input_per_mtok: inputPerMtok, output_per_mtok: 10 } },
      "emb-test": { type: "embedding", routes: [{ provider: "openai", model: "text-embedding-3-small" }], price: { input_per_mtok: 0.02 } },
      // No price in the configuration and none in the library for this upstream model: unpriced.
      mystery: { type: "chat", routes: [{ provider: "openai", model: "no-such-upstream-model" }] },
    },
    plans: { plus: limits, pro: limits, enterprise: limits },
  });
}

export const gateway = gatewayWith(2.5);

/** `@gw/pricing` itself, with the configuration's price changed at PRICE_CHANGE. */
export function testPricer(): Pricer {
  const before = createPricer(gatewayWith(2.5));
  const after = createPricer(gatewayWith(3));
  return { price: (query) => ((query.at ?? 0) < PRICE_CHANGE ? before : after).price(query) };
}

let sequence = 0;

/** A chat call's record; every field can be overridden. */
export function record(extra: Partial<UsageRecord> & { workspace_id: string; started_at: number }): UsageRecord {
  sequence += 1;
  return {
    request_id: `req_${sequence.toString(36).padStart(8, "0")}_${Math.random().toString(36).slice(2, 8)}`,
    duration_ms: 120,
    key_id: "key_a",
    route: "/v1/chat/completions",
    model: "gpt-test",
    status: 200,
    stream: false,
    // No upstream_model: the pricer then takes the model's own route (for "mystery", one without a price).
    outcome: { provider: "openai", attempts: 1, upstream_ms: 100, usage: { input_tokens: 1000, output_tokens: 100 } },
    ...extra,
  };
}

export interface RunningLedger {
  bus: Bus;
  service: UsageService;
  url: string;
  /** Publishes records (each under its own message id, so a repeat is delivered again). */
  publish(records: UsageRecord[]): Promise<void>;
  /** Publishes one message holding `records` as they are (malformed ones too: the bus checks only the batch). */
  publishMessage(records: unknown[]): Promise<void>;
  /** Waits until every record published so far has been handled (written, skipped or dropped). */
  settle(): Promise<void>;
  get(path: string, identity?: Identity): Promise<Response>;
  /** A counter's value on the service's /metrics, summed over its labels (0 before its first increment). */
  metric(name: string): Promise<number>;
  json<T = Record<string, unknown>>(path: string, identity?: Identity): Promise<T>;
  stop(): Promise<void>;
}

export interface LedgerOptions {
  db: Db;
  clock: () => number;
  retentionDays?: number;
}

export async function startLedger(options: LedgerOptions): Promise<RunningLedger> {
  const bus = createInProcessBus({ logger });
  const service = createUsageService({
    settings: { host: "127.0.0.1", port: 0, internalSecret: secret, retentionDays: options.retentionDays ?? 400 },
    gateway,
    bus,
    db: options.db,
    logger,
    clock: options.clock,
    pricer: testPricer(),
    // Each batch tries the plain insert first, as all do outside a redelivery's window; otherwise
    // the tests after the first redelivery would all take the statement that skips duplicates.
    batch: { skipDuplicatesForMs: 0 },
  });
  const { url } = await service.start();
  let published = 0;
  let copies = 0;
  const get = (path: string, identity: Identity = operatorIdentity) => fetch(`${url}${path}`, { headers: { "x-gw-identity": signIdentity(identity, secret) } });
  const metric = async (name: string): Promise<number> => {
    const text = await (await fetch(`${url}/metrics`)).text();
    // Summed over its label values.
    const lines = text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    return lines.reduce((sum, line) => sum + Number(line.split(" ").pop()), 0);
  };
  const handled = async (): Promise<number> => {
    let sum = 0;
    for (const name of [
      "gw_usage_records_ingested_total",
      "gw_usage_duplicate_records_total",
      "gw_usage_expired_records_total",
      "gw_usage_invalid_records_total",
    ]) {
      sum += await metric(name);
    }
    return sum;
  };
  return {
    bus,
    service,
    url,
    async publish(records) {
      for (const r of records) {
        copies += 1;
        await bus.enqueue("usage.records", { records: [r] }, { msgId: `${r.request_id}:${copies}` });
      }
      published += records.length;
    },
    async publishMessage(records) {
      copies += 1;
      await bus.enqueue("usage.records", { records }, { msgId: `message:${copies}` });
      published += records.length;
    },
    async settle() {
      await waitFor(async () => (await handled()) >= published, "every published record to be handled");
    },
    get,
    metric,
    async json<T>(path: string, identity?: Identity) {
      const res = await get(path, identity);
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    },
    async stop() {
      await service.stop();
      await bus.close();
    },
  };
}

/** Polls until `check` holds, failing after `timeoutMs` with what it waited for. */
export async function waitFor(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function identityOf(workspaceId: string): Identity {
  return { workspace_id: workspaceId, key_id: "key_a", plan: "pro", models: [["*"]], tools: [] };
}

let workspaces = 0;
/** A workspace id no other test uses, so tests sharing a database stay apart. */
export function freshWorkspace(): string {
  workspaces += 1;
  return `ws_${workspaces}_${Math.random().toString(36).slice(2, 8)}`;
}
