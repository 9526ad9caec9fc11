/**
 * What SerpAPI answers that belongs to the gateway's account, not to the caller's search:
 * - in `search_metadata`: `id`, `json_endpoint`, `raw_html_file` and `prettify_html_file`, the
 *   search's place in our account's archive (fetching them needs our key);
 * - in `search_parameters`: `api_key`, should it ever be echoed;
 * - at the top level: the fields of SerpAPI's Account API (`/account`: plan, searches left, usage
 *   this month and hour), which no search answer should carry, removed should one ever do.
 * Everything else (results, `status`, times, `google_url`, pagination) keeps the provider's shape.
 */
export const serptoolInternalMetadata = ["id", "json_endpoint", "raw_html_file", "prettify_html_file"] as const;
export const serptoolAccountFields = [
  "account_id",
  "api_key",
  "account_email",
  "account_status",
  "plan_id",
  "plan_name",
  "plan_monthly_price",
  "searches_per_month",
  "plan_searches_left",
  "extra_credits",
  "total_searches_left",
  "this_month_usage",
  "this_hour_searches",
  "last_hour_searches",
  "account_rate_limit_per_hour",
] as const;

export function withoutSerpApiInternals(answer: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...answer };
  for (const field of serptoolAccountFields) delete out[field];
  const metadata = out.search_metadata;
  if (isObject(metadata)) {
    const kept = { ...metadata };
    for (const field of serptoolInternalMetadata) delete kept[field];
    out.search_metadata = kept;
  }
  const parameters = out.search_parameters;
  if (isObject(parameters) && "api_key" in parameters) {
    const { api_key: _key, ...kept } = parameters;
    out.search_parameters = kept;
  }
  return out;
}

/** Google's `organic_results` cut to the caller's `num`, should the provider return more. */
export function boundOrganicResults(answer: Record<string, unknown>, num: number | undefined): Record<string, unknown> {
  const results = answer.organic_results;
  if (num === undefined || !Array.isArray(results) || results.length <= num) return answer;
  return { ...answer, organic_results: results.slice(0, num) };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
