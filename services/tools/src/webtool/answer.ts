/**
 * Top-level fields of Tavily answers that describe the gateway's account rather than the caller's
 * result: `usage` (`{credits}`, on search, extract, crawl, map and research reads when
 * `include_usage` is set, provider-wire-formats.md §1.2–1.6) and `credits` (kept out should a
 * response ever carry it bare). They are removed from every answer, whatever the request asked.
 */
export const webtoolInternalFields = ["usage", "credits"] as const;

export function withoutInternalFields<T extends Record<string, unknown>>(answer: T): T {
  const out: Record<string, unknown> = { ...answer };
  for (const field of webtoolInternalFields) delete out[field];
  return out as T;
}

/**
 * The answer's `results` cut to `max` (the caller's `max_results` or `limit`, else the provider's
 * default), so the spec's bound holds even when the provider returns more than asked.
 */
export function boundResults<T extends { results: unknown[] }>(answer: T, max: number): T {
  return answer.results.length > max ? { ...answer, results: answer.results.slice(0, max) } : answer;
}

/** The request body as forwarded: `include_usage` asks for account data we would only remove. */
export function forwardedBody(request: Record<string, unknown>): Record<string, unknown> {
  const { include_usage: _usage, ...body } = request;
  return body;
}
