import { createHash } from "node:crypto";
import { GatewayConfig } from "@gw/config";
import type { UsageRecord } from "@gw/contracts";

const limits = { requests_per_minute: 1, tokens_per_minute: 1 };
const statuses = [...new Array<number>(17).fill(200), 429, 500, 400];

/**
 * The usage benches' records: a multi-tenant spread of 200 workspaces over five priced models and
 * statuses mostly 200. Record `i`'s workspace, key, model and status all follow from `i % 200`, so
 * each workspace has one key, model and status: 200 roll-up keys an hour, every one of them in any
 * 512 records in a row (about a quarter of an hour's at 100,000 over two days), the costly case for
 * the upserts. `total` records spread over the two days before `now`; record `i` is the
 * same in every run and process given the same `total` and `now`.
 */
export function benchRecords(total: number, now: number) {
  const models = ["gpt-4o", "gpt-4o-mini", "claude-sonnet", "claude-haiku", "text-embedding-3-small"];
  const gateway = GatewayConfig.parse({
    providers: {
      openai: { kind: "openai", base_url: "https://api.openai.com/v1" },
      anthropic: { kind: "anthropic", base_url: "https://api.anthropic.com" },
    },
    models: Object.fromEntries(
      models.map((m) => [
        m,
        {
          type: m.startsWith("text-") ? "embedding" : "chat",
          routes: [{ provider: m.startsWith("claude") ? "anthropic" : "openai", model: m }],
          price: { input_per_mtok: 2.5, output_per_mtok: 10 },
        },
      ]),
    ),
    plans: { plus: limits, pro: limits, enterprise: limits },
  });
  const recordAt = (i: number): UsageRecord => {
    const model = models[i % models.length]!;
    return {
      request_id: `req_bench_${i.toString(36).padStart(10, "0")}`,
      started_at: now - 2 * 86_400_000 + Math.floor((i / total) * 2 * 86_400_000),
      duration_ms: 50 + (i % 997),
      workspace_id: `ws_${i % 200}`,
      key_id: `key_${i % 200}_${i % 5}`,
      route: model.startsWith("text-") ? "/v1/embeddings" : "/v1/chat/completions",
      model,
      status: statuses[i % statuses.length]!,
      stream: i % 3 === 0,
      outcome: {
        provider: model.startsWith("claude") ? "anthropic" : "openai",
        upstream_model: model,
        attempts: 1,
        upstream_ms: 40 + (i % 900),
        usage: { input_tokens: 200 + (i % 3000), output_tokens: i % 800, cached_input_tokens: i % 4 === 0 ? 128 : undefined },
      },
    };
  };
  /**
   * Record `i` as the live bench's one-in-flight scenario makes them: one workspace, key and model,
   * every call answered, all within the last minute (a batch then meets one roll-up row of each kind).
   * Its id begins with a time that grows with `i`, as the gateway's ids do over a run (newRequestId),
   * or with `randomIds` is random throughout, as they were before.
   */
  const liveRecordAt = (i: number, { randomIds = false }: { randomIds?: boolean } = {}): UsageRecord => ({
    ...recordAt(0),
    request_id: randomIds ? `req_${hexOf(i)}` : `req_${(now - 60_000 + i).toString(16).padStart(12, "0")}${hexOf(i).slice(12)}`,
    started_at: now - 60_000 + (i % 60_000),
    status: 200,
    stream: false,
  });
  return { models, gateway, recordAt, liveRecordAt };
}

/** 32 hex digits that look random and are the same for `i` in every run. */
function hexOf(i: number): string {
  return createHash("md5").update(String(i)).digest("hex");
}
