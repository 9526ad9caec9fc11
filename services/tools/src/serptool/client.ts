import { SerptoolSearchResponse, type SerptoolSearchQuery } from "@gw/contracts";
import type { Dispatcher } from "undici";
import { credentialAware, type ToolUpstream } from "../tool-upstream";
import { callJson, malformed, type ToolOutcome } from "../upstream/call";
import { upstreamUrl, type CallSignal } from "@gw/service-kit";
import { defaultRetryPolicy, withRetries, type RetryPolicy } from "../upstream/retry";
import { boundOrganicResults, withoutSerpApiInternals } from "./answer";
import { SERPTOOL_LABEL, serptoolHttpError } from "./errors";

export interface SerptoolClient {
  /**
   * `GET {base}/search.json` with the caller's parameters and the gateway's `api_key`: the answer in
   * SerpAPI's shape, its account internals removed (serptool/answer.ts), `organic_results` cut to `num`.
   */
  search(query: SerptoolSearchQuery, options?: { signal?: CallSignal }): Promise<ToolOutcome<Record<string, unknown>>>;
}

export function createSerptoolClient(upstream: ToolUpstream, agent: Dispatcher, retry: RetryPolicy = defaultRetryPolicy): SerptoolClient {
  return {
    search(query, options = {}) {
      const params = new URLSearchParams();
      for (const [name, value] of Object.entries(query)) if (typeof value === "string") params.set(name, value);
      // SerpAPI's credential travels as a query parameter (§2.1); set last so nothing can replace it.
      params.set("api_key", upstream.apiKey);
      return withRetries(upstream.maxRetries, retry, options.signal, async () => {
        const answer = await callJson(agent, {
          method: "GET",
          url: `${upstreamUrl(upstream.baseUrl, "/search.json")}?${params.toString()}`,
          headers: { ...upstream.headers, accept: "application/json" },
          timeoutMs: upstream.timeoutMs,
          signal: options.signal,
          label: SERPTOOL_LABEL,
          httpError: (status, h, text) => credentialAware(upstream, status, serptoolHttpError(status, h, text)),
        });
        if (!answer.ok) return answer;
        const parsed = SerptoolSearchResponse.safeParse(answer.value.body);
        if (!parsed.success) return { ok: false, error: malformed(SERPTOOL_LABEL) };
        const num = query.num === undefined ? undefined : Number(query.num);
        return { ok: true, value: boundOrganicResults(withoutSerpApiInternals(parsed.data), num) };
      });
    },
  };
}
