import type { Bus, Consumer } from "@gw/bus";
import type { GatewayConfig } from "@gw/config";
import type { Logger } from "@gw/logger";
import { createInternalHttp, createUpstreamAgent } from "@gw/service-kit";
import { startResearchWorker, type ResearchPolling } from "./research-worker";
import { mountSerptoolRoutes } from "./serptool/routes";
import { checkToolProviders, toolProviderKinds } from "./tool-upstream";
import type { RetryPolicy } from "./upstream/retry";
import { mountWebtoolRoutes } from "./webtool/routes";

export interface ToolsSettings {
  host: string;
  port: number;
  internalSecret: string;
  /** Largest JSON body a tool route reads (default 1 MiB; ingress has its own limit in front). */
  bodyLimitBytes?: number;
  /** Research jobs this process runs at once; 0 (the default) runs none. */
  jobConcurrency?: number;
  /** How often a running research task is read at the provider. */
  researchPolling?: ResearchPolling;
}

export interface ToolsDeps {
  settings: ToolsSettings;
  gateway: GatewayConfig;
  /** Provider credentials by provider name, resolved from the environment by main. */
  secrets: Record<string, string | undefined>;
  bus: Bus;
  logger: Logger;
  /** Tests shorten the backoff between retries of a failing provider. */
  retry?: RetryPolicy;
}

export interface ToolsService {
  start(): Promise<{ url: string }>;
  stop(): Promise<void>;
}

/**
 * The tools service: the web-tool adapters (`webtool`, Tavily's wire format; `serptool`, SerpAPI's)
 * behind `/v1/tools/...`, reached only through ingress, which has checked the key's tool permission
 * and charged the rate limit. A tool provider of the wrong kind stops the start with a config error.
 */
export function createToolsService(deps: ToolsDeps): ToolsService {
  const { settings, logger } = deps;
  checkToolProviders(deps.gateway);
  const agent = createUpstreamAgent();
  const http = createInternalHttp({
    name: "tools",
    logger,
    host: settings.host,
    port: settings.port,
    internalSecret: settings.internalSecret,
    checks: { nats: () => deps.bus.ping() },
    mount(app) {
      const routeDeps = { gateway: deps.gateway, secrets: deps.secrets, agent, bodyLimit: `${settings.bodyLimitBytes ?? 1024 * 1024}b`, retry: deps.retry };
      mountWebtoolRoutes(app, routeDeps);
      mountSerptoolRoutes(app, routeDeps);
    },
  });

  for (const tool of Object.keys(toolProviderKinds)) {
    const provider = deps.gateway.providers[tool];
    if (!provider) logger.info({ tool }, "tool not configured; its routes answer 404");
    else if (!deps.secrets[tool]) logger.warn({ tool, env: provider.api_key_env }, "tool provider credential not set; its routes answer 503");
  }

  let worker: Consumer | undefined;
  return {
    async start() {
      const url = (await http.start()).url;
      if (settings.jobConcurrency) {
        worker = await startResearchWorker({
          bus: deps.bus,
          gateway: deps.gateway,
          secrets: deps.secrets,
          agent,
          internalSecret: settings.internalSecret,
          logger,
          concurrency: settings.jobConcurrency,
          polling: settings.researchPolling ?? { initialMs: 2_000, maxMs: 15_000 },
          retry: deps.retry,
        });
      }
      return { url };
    },
    async stop() {
      await worker?.stop();
      await http.stop();
      await agent.close();
    },
  };
}
