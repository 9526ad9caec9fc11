import type { Bus, Consumer } from "@gw/bus";
import type { GatewayConfig } from "@gw/config";
import type { Logger } from "@gw/logger";
import { Catalog, createGenAiMetrics, createInternalHttp, createUpstreamAgent, type GenAiMetrics } from "@gw/service-kit";
import { CircuitBreakers } from "./circuit-breaker";
import { mountAudioRoutes } from "./routes/audio";
import { mountChatRoutes } from "./routes/chat";
import { mountCompletionsRoutes } from "./routes/completions";
import { mountEmbeddingsRoutes } from "./routes/embeddings";
import { mountImagesRoutes } from "./routes/images";
import { mountMessagesRoutes } from "./routes/messages";
import { mountModelRoutes } from "./routes/models";
import { mountResponsesRoutes } from "./routes/responses";
import { mountRerankRoutes } from "./routes/rerank";
import { mountOcrRoutes } from "./routes/ocr";
import { startJobWorker } from "./job-worker";
import type { RouteHandlers } from "./routes/route-handler";
import { providerAdapters } from "./providers/registry";
import { genAiObserver } from "./usage/genai-observer";
import { createPricer } from "@gw/pricing";

export interface InferenceSettings {
  host: string;
  port: number;
  internalSecret: string;
  bodyLimitBytes: number;
  /** Async jobs this process runs at once; 0 runs none (a replica that only serves live calls). */
  jobConcurrency: number;
  /** The jobs service, which holds what a job's messages cannot carry (asked for per call); needed to run jobs. */
  jobsUrl?: () => string;
}

export interface InferenceDeps {
  settings: InferenceSettings;
  gateway: GatewayConfig;
  /** Provider credentials by provider name, resolved from the environment by main. */
  secrets: Record<string, string | undefined>;
  bus: Bus;
  logger: Logger;
}

export interface InferenceService {
  start(): Promise<{ url: string }>;
  stop(): Promise<void>;
}

export function createInferenceService(deps: InferenceDeps): InferenceService {
  const { settings, logger } = deps;
  const agent = createUpstreamAgent();
  const catalog = new Catalog(deps.gateway);
  const handlers: RouteHandlers = new Map();
  let genAi: GenAiMetrics | undefined;
  let observer: ReturnType<typeof genAiObserver> | undefined;
  // A deployment failing 5 times in a row is skipped for 30 s, then tried once before it is trusted.
  const breakers = new CircuitBreakers({ threshold: 5, cooldownMs: 30_000, onState: (deployment, state) => genAi?.breakerState(deployment, state) });
  const http = createInternalHttp({
    name: "inference",
    logger,
    host: settings.host,
    port: settings.port,
    internalSecret: settings.internalSecret,
    checks: { nats: () => deps.bus.ping() },
    onClose: (req, res, durationMs) => observer?.onClose(req, res, durationMs),
    mount(app) {
      mountModelRoutes(app, catalog);
      const routeDeps = { catalog, config: deps.gateway, secrets: deps.secrets, agent, bodyLimit: `${settings.bodyLimitBytes}b`, breakers, genAi, handlers };
      mountChatRoutes(app, routeDeps);
      mountMessagesRoutes(app, routeDeps);
      mountResponsesRoutes(app, routeDeps);
      mountEmbeddingsRoutes(app, routeDeps);
      mountRerankRoutes(app, routeDeps);
      mountOcrRoutes(app, routeDeps);
      mountCompletionsRoutes(app, routeDeps);
      mountImagesRoutes(app, routeDeps);
      mountAudioRoutes(app, routeDeps);
    },
  });

  genAi = createGenAiMetrics(http.metrics);
  observer = genAiObserver(genAi, createPricer(deps.gateway));

  for (const [name, provider] of Object.entries(deps.gateway.providers)) {
    // Tool providers are the tools service's to report.
    if (!providerAdapters[provider.kind]) continue;
    if (provider.api_key_env && !deps.secrets[name]) {
      logger.warn({ provider: name, env: provider.api_key_env }, "provider credential not set; its models will answer 503");
    }
  }

  let worker: Consumer | undefined;
  return {
    async start() {
      const server = await http.start();
      if (settings.jobConcurrency > 0) {
        if (!settings.jobsUrl) throw new Error("inference runs async jobs only with the jobs service's URL (JOBS_URL)");
        worker = await startJobWorker({
          bus: deps.bus,
          handlers,
          observer,
          jobsUrl: settings.jobsUrl,
          internalSecret: settings.internalSecret,
          logger,
          concurrency: settings.jobConcurrency,
          largeRequestBytes: settings.bodyLimitBytes,
        });
      }
      return { url: server.url };
    },
    async stop() {
      // Running jobs finish (and are acked) while the routes they call still answer.
      await worker?.stop();
      await http.stop();
      observer?.flush();
      await agent.close();
    },
  };
}
