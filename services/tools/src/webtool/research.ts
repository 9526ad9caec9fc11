import type { GatewayConfig } from "@gw/config";
import type { WebtoolResearchQueued, WebtoolResearchRequest, WebtoolResearchStatus } from "@gw/contracts";
import type { Dispatcher } from "undici";
import { resolveToolUpstream } from "../tool-upstream";
import type { ToolOutcome } from "../upstream/call";
import type { RetryPolicy } from "../upstream/retry";
import { createWebtoolClient, type WebtoolCallOptions } from "./client";

/** What the research job worker has at hand: the service's config, secrets and pooled agent. */
export interface WebtoolResearchDeps {
  gateway: GatewayConfig;
  secrets: Record<string, string | undefined>;
  agent: Dispatcher;
  /** An enterprise workspace's own provider credentials, used before the platform's. */
  credentials?: Record<string, string>;
  retry?: RetryPolicy;
}

/**
 * Starts a research task on the web-tool provider (Tavily `POST /research`, never retried here).
 * Without a `webtool` provider: a 404 `not_found` error value; without its credential: 503.
 */
export function startResearch(
  deps: WebtoolResearchDeps,
  request: WebtoolResearchRequest,
  options?: WebtoolCallOptions,
): Promise<ToolOutcome<WebtoolResearchQueued>> {
  const upstream = resolveToolUpstream(deps.gateway, deps.secrets, "webtool", deps.credentials);
  if (!upstream.ok) return Promise.resolve(upstream);
  return createWebtoolClient(upstream.value, deps.agent, deps.retry).startResearch(request, options);
}

/** Reads a research task (Tavily `GET /research/{request_id}`): running, completed, failed or another status. */
export function getResearch(deps: WebtoolResearchDeps, requestId: string, options?: WebtoolCallOptions): Promise<ToolOutcome<WebtoolResearchStatus>> {
  const upstream = resolveToolUpstream(deps.gateway, deps.secrets, "webtool", deps.credentials);
  if (!upstream.ok) return Promise.resolve(upstream);
  return createWebtoolClient(upstream.value, deps.agent, deps.retry).getResearch(requestId, options);
}
