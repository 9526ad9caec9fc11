import { ProviderConfig } from "@gw/config";
import type { GatewayError } from "@gw/errors";
import type { UpstreamEmulator } from "@gw/testkit";
import type { Agent } from "undici";
import { afterAll, afterEach, beforeAll } from "vitest";
import { createUpstreamAgent } from "@gw/service-kit";
import type { ProviderContext, UpstreamCall } from "./types";

/**
 * For adapter tests: one emulator and one upstream agent per test file (started before all tests,
 * reset after each, closed after all), and the ProviderContext and UpstreamCall a route would build.
 */

export interface ProviderTestUpstream {
  /** The running emulator; read it inside tests, as it is only started in `beforeAll`. */
  readonly up: UpstreamEmulator;
  /** The context the route hands the adapter, with the server's key unless another is given. */
  context(options?: { apiKey?: string; config?: Partial<ProviderConfig> }): ProviderContext;
}

export function useProviderUpstream(options: {
  name: string;
  kind: ProviderConfig["kind"];
  apiKey: string;
  start: (opts: { apiKey: string }) => Promise<UpstreamEmulator>;
  /** The configured base_url for the emulator's URL (as is unless given). */
  baseUrl?: (url: string) => string;
}): ProviderTestUpstream {
  let up: UpstreamEmulator | undefined;
  let agent: Agent | undefined;

  beforeAll(async () => {
    up = await options.start({ apiKey: options.apiKey });
    agent = createUpstreamAgent();
  });
  afterEach(() => up?.reset());
  afterAll(async () => {
    await agent?.close();
    await up?.close();
  });

  const started = () => {
    if (!up || !agent) throw new Error("the upstream emulator is only started in beforeAll");
    return { up, agent };
  };
  return {
    get up() {
      return started().up;
    },
    context({ apiKey = options.apiKey, config = {} } = {}) {
      const { up, agent } = started();
      const base_url = options.baseUrl ? options.baseUrl(up.url) : up.url;
      return { name: options.name, config: ProviderConfig.parse({ kind: options.kind, base_url, ...config }), apiKey, agent };
    },
  };
}

/** The call a route makes for one request, under a fixed request id. */
export function upstreamCall<Req>(
  request: Req,
  models: { publicModel: string; upstreamModel: string },
  signal: AbortSignal = new AbortController().signal,
): UpstreamCall<Req> {
  return { request, publicModel: models.publicModel, upstreamModel: models.upstreamModel, requestId: "req_test", signal };
}

/** The error of a result that was expected to fail. */
export function failure(result: { ok: true } | { ok: false; error: GatewayError }): GatewayError {
  if (result.ok) throw new Error("expected a failure");
  return result.error;
}
