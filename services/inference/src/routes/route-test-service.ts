import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { Writable } from "node:stream";
import { createInProcessBus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import { internalHeaders, outcomeTokens, type Identity } from "@gw/contracts";
import { createLogger } from "@gw/logger";
import { signIdentity } from "@gw/service-kit";
import { createInferenceService } from "../service";

/**
 * For route tests: the inference service on a free port in front of emulated upstreams, and a
 * node:http client signing the identity as ingress does (node:http, because only it exposes trailers).
 */

const SECRET = "inference-route-test-secret";
const identity: Identity = { workspace_id: "ws_1", key_id: "key_1", plan: "pro", models: [["*"]], tools: [] };
const limits = { requests_per_minute: 100, tokens_per_minute: 100_000 };

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  body: Buffer;
  text: string;
}

export interface RouteTestService {
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<RawAnswer>;
  stop(): Promise<void>;
}

/** One upstream the service reaches, by provider name in the gateway config. */
export interface RouteTestUpstream {
  kind: string;
  url: string;
  key: string;
  /** 0 unless given, so a scripted failure is answered at once. */
  maxRetries?: number;
  /** The provider's `anthropic_beta` allow-list (Anthropic kind only). */
  anthropicBeta?: string[];
}

export async function startRouteTestService(options: {
  upstreams: Record<string, RouteTestUpstream>;
  models: Record<string, { type: string; provider: string; model: string }>;
  bodyLimitBytes?: number;
}): Promise<RouteTestService> {
  const gateway = GatewayConfig.parse({
    providers: Object.fromEntries(
      Object.entries(options.upstreams).map(([name, up]) => [
        name,
        {
          kind: up.kind,
          base_url: up.url,
          api_key_env: `ROUTE_TEST_${name.toUpperCase().replace(/\W/g, "_")}_KEY`,
          max_retries: up.maxRetries ?? 0,
          anthropic_beta: up.anthropicBeta,
        },
      ]),
    ),
    models: Object.fromEntries(Object.entries(options.models).map(([name, m]) => [name, { type: m.type, routes: [{ provider: m.provider, model: m.model }] }])),
    plans: { plus: limits, pro: limits, enterprise: limits },
  });
  const logger = createLogger({ service: "inference-test", level: "warn", destination: new Writable({ write: (_c, _e, done) => done() }) });
  const service = createInferenceService({
    settings: { host: "127.0.0.1", port: 0, internalSecret: SECRET, bodyLimitBytes: options.bodyLimitBytes ?? 1_000_000, jobConcurrency: 0 },
    gateway,
    secrets: Object.fromEntries(Object.entries(options.upstreams).map(([name, up]) => [name, up.key])),
    bus: createInProcessBus({ logger }),
    logger,
  });
  const { url } = await service.start();

  const post = (path: string, body: unknown, headers: Record<string, string> = {}): Promise<RawAnswer> => {
    const payload = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        `${url}${path}`,
        {
          method: "POST",
          headers: { "content-type": "application/json", [internalHeaders.identity]: signIdentity(identity, SECRET), ...headers },
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on("data", (part: Buffer) => parts.push(part));
          res.on("end", () => {
            const all = Buffer.concat(parts);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, body: all, text: all.toString("utf8") });
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  };
  return { post, stop: () => service.stop() };
}

/**
 * The tokens an answer's headers or trailers report to ingress's token limits, as ingress reads them:
 * the usage field when there is one, else the total in the outcome.
 */
export function reportedTokens(fields: NodeJS.Dict<string | string[]>): string | undefined {
  const own = fields[internalHeaders.usageTokens];
  if (typeof own === "string") return own;
  const outcome = fields[internalHeaders.outcome];
  const total = outcomeTokens(typeof outcome === "string" ? outcome : undefined);
  return total === undefined ? undefined : String(total);
}

/** The `data:` payloads of an SSE body, `[DONE]` left out. */
export function sseData(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice("data: ".length)) as Record<string, unknown>);
}

/** Encodes a web FormData as multipart bytes with its content type, as a client would send it. */
export async function multipart(form: FormData): Promise<{ body: Buffer; contentType: string }> {
  const encoded = new Response(form);
  return { body: Buffer.from(await encoded.arrayBuffer()), contentType: encoded.headers.get("content-type") ?? "" };
}
