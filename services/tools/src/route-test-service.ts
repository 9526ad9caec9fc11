import { Writable } from "node:stream";
import { createInProcessBus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import { internalHeaders, type Identity } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { signIdentity } from "@gw/service-kit";
import { createToolsService } from "./service";
import type { RetryPolicy } from "./upstream/retry";

/**
 * For route tests: the tools service on a free port in front of emulated upstreams, called with an
 * identity signed as ingress signs it.
 */

const SECRET = "tools-route-test-secret";
const identity: Identity = { workspace_id: "ws_1", key_id: "key_1", plan: "pro", models: [["*"]], tools: ["webtool", "serptool"] };
const limits = { requests_per_minute: 100, tokens_per_minute: 100_000 };

/** Retries at once (a scripted 5xx is retried without a real backoff). */
export const instantRetry: RetryPolicy = { baseDelayMs: 0, maxDelayMs: 0, maxRetryAfterMs: 10_000, sleep: async () => {}, random: () => 0.5 };

export interface ToolAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export interface ToolRouteTestService {
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<ToolAnswer>;
  get(path: string, headers?: Record<string, string>): Promise<ToolAnswer>;
  url: string;
  stop(): Promise<void>;
}

export interface ToolTestUpstream {
  kind: "tavily" | "serpapi" | "openai";
  url: string;
  /** The credential in the environment; undefined leaves it unset. */
  key: string | undefined;
  maxRetries?: number;
  timeoutMs?: number;
}

export async function startToolRouteTestService(options: {
  upstreams: Partial<Record<"webtool" | "serptool", ToolTestUpstream>>;
}): Promise<ToolRouteTestService> {
  const gateway = GatewayConfig.parse({
    providers: Object.fromEntries(
      Object.entries(options.upstreams).map(([name, up]) => [
        name,
        {
          kind: up.kind,
          base_url: up.url,
          api_key_env: `TOOLS_TEST_${name.toUpperCase()}_KEY`,
          max_retries: up.maxRetries ?? 0,
          timeout_ms: up.timeoutMs ?? 10_000,
        },
      ]),
    ),
    plans: { plus: limits, pro: limits, enterprise: limits },
  });
  const logger = createLogger({ service: "tools-test", level: "warn", destination: new Writable({ write: (_c, _e, done) => done() }) });
  const service = createToolsService({
    settings: { host: "127.0.0.1", port: 0, internalSecret: SECRET },
    gateway,
    secrets: Object.fromEntries(Object.entries(options.upstreams).map(([name, up]) => [name, up.key])),
    bus: createInProcessBus({ logger }),
    logger,
    retry: instantRetry,
  });
  const { url } = await service.start();
  const signed = () => ({ [internalHeaders.identity]: signIdentity(identity, SECRET) });
  const answer = async (res: Response): Promise<ToolAnswer> => {
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  };
  return {
    url,
    async post(path, body, headers = {}) {
      const payload = typeof body === "string" ? body : JSON.stringify(body);
      return answer(await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...signed(), ...headers }, body: payload }));
    },
    async get(path, headers = {}) {
      return answer(await fetch(`${url}${path}`, { headers: { ...signed(), ...headers } }));
    },
    stop: () => service.stop(),
  };
}
