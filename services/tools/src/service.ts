import type { Bus } from "@gw/bus";
import type { GatewayConfig } from "@gw/config";
import type { Logger } from "@gw/logger";
import { createInternalHttp } from "@gw/service-kit";

export interface ToolsSettings {
  host: string;
  port: number;
  internalSecret: string;
}

export interface ToolsDeps {
  settings: ToolsSettings;
  gateway: GatewayConfig;
  secrets: Record<string, string | undefined>;
  bus: Bus;
  logger: Logger;
}

export interface ToolsService {
  start(): Promise<{ url: string }>;
  stop(): Promise<void>;
}

/**
 * The tools service: web-tool adapters (webtool, serptool) and research execution. Its routes
 * arrive with the Tools API work; until then every /v1 call is answered 404 in the OpenAI envelope.
 */
export function createToolsService(deps: ToolsDeps): ToolsService {
  const http = createInternalHttp({
    name: "tools",
    logger: deps.logger,
    host: deps.settings.host,
    port: deps.settings.port,
    internalSecret: deps.settings.internalSecret,
    checks: { nats: () => deps.bus.ping() },
    mount() {},
  });
  return {
    async start() {
      return { url: (await http.start()).url };
    },
    stop: () => http.stop(),
  };
}
