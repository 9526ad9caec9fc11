import { randomBytes } from "node:crypto";
import { startEmulator } from "./http-emulator";
import type { EmulatorOptions, Exchange, ProviderSpec, UpstreamEmulator } from "./http-emulator";
import type { JsonObject } from "./synthetic";

/**
 * A fake SerpAPI (provider-wire-formats.md §2) on node:http: `GET /search.json` and `GET /search`
 * (the npm SDK's form, JSON unless `output=html`), the credential in the `api_key` query parameter,
 * SerpAPI's `{"error": "..."}` bodies and scripted failures.
 *
 * Answers follow the Google engine's envelope (search_metadata, search_parameters,
 * search_information, organic_results, related_searches, pagination, serpapi_pagination) and are
 * deterministic in `q`, `num` and `start`. `google_news` answers with `news_results`, `google_images`
 * with `images_results`; the query parameter is `search_query` for `youtube`, `k` for `amazon`, else
 * `q`. A query containing "no results" gives SerpAPI's empty answer: 200 with a top-level `error`.
 */

export interface SerpApiUpstreamOptions extends EmulatorOptions {
  /** Path prefix of the base URL (default ""). */
  basePath?: string;
}

const DEFAULT_ERRORS: Record<number, string> = {
  400: "Missing query `q` parameter.",
  401: "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key",
  403: "Your account has been deleted.",
  404: "Not Found",
  429: "Your account has run out of searches.",
  500: "Internal server error.",
  503: "We couldn't get valid results for this search. Please try again later.",
};

/** SerpAPI's own message when the hourly throughput limit (not the monthly quota) is hit. */
export const SERPAPI_THROUGHPUT_ERROR = "You have exceeded the hourly throughput limit for your plan. Please upgrade your plan or try again later.";

const QUERY_PARAM: Record<string, string> = { youtube: "search_query", amazon: "k" };

export function startSerpApiUpstream(opts: SerpApiUpstreamOptions = {}): Promise<UpstreamEmulator> {
  const basePath = (opts.basePath ?? "").replace(/\/$/, "");
  const fail = (ex: Exchange, status: number, message: string) => ex.json(status, { error: message });

  const spec: ProviderSpec = {
    basePath,
    commonHeaders: () => ({}),
    precheck(ex) {
      if (opts.apiKey === undefined) return false;
      const given = ex.record.query.api_key;
      if (given !== opts.apiKey) {
        fail(ex, 401, DEFAULT_ERRORS[401]!);
        return true;
      }
      return false;
    },
    errorBody: (status) => ({ error: DEFAULT_ERRORS[status] ?? `Request failed with status ${status}` }),
    handle,
  };

  function handle(ex: Exchange): void {
    const { method, path, query } = ex.record;
    const route = path.startsWith(basePath) ? path.slice(basePath.length) : path;
    if (route !== "/search.json" && route !== "/search") return fail(ex, 404, "Not Found");
    if (method !== "GET") return fail(ex, 405, "Method Not Allowed");
    const engine = query.engine ?? "google";
    const queryParam = QUERY_PARAM[engine] ?? "q";
    const q = query[queryParam];
    if (!q) return fail(ex, 400, `Missing query \`${queryParam}\` parameter.`);
    const num = query.num === undefined ? 10 : Number(query.num);
    const start = query.start === undefined ? 0 : Number(query.start);
    if (!Number.isInteger(num) || num < 1 || num > 100) return fail(ex, 400, "Invalid `num` parameter.");
    if (!Number.isInteger(start) || start < 0) return fail(ex, 400, "Invalid `start` parameter.");
    const id = randomBytes(12).toString("hex");
    const hashPart = randomBytes(8).toString("hex");
    const now = new Date()
      .toISOString()
      .replace("T", " ")
      .replace(/\.\d{3}Z$/, " UTC");
    const host = "https://serpapi.com";
    const { api_key: _secret, ...echoed } = query;
    const parameters: JsonObject = { engine, [queryParam]: q, google_domain: "google.com", device: query.device ?? "desktop", ...echoed };
    const qs = (extra: Record<string, string>) => new URLSearchParams({ ...echoed, engine, ...extra }).toString();
    const metadata: JsonObject = {
      id,
      status: "Success",
      json_endpoint: `${host}/searches/${hashPart}/${id}.json`,
      created_at: now,
      processed_at: now,
      [`${engine}_url`]: `https://www.google.com/search?q=${encodeURIComponent(q)}`,
      raw_html_file: `${host}/searches/${hashPart}/${id}.html`,
      prettify_html_file: `${host}/searches/${hashPart}/${id}.prettify`,
      total_time_taken: 1.01,
    };
    if (query.output === "html") {
      ex.json(200, `<!doctype html><html><body><h1>${escapeHtml(q)}</h1></body></html>`, { "content-type": "text/html; charset=utf-8" });
      return;
    }
    if (q.includes("no results")) {
      ex.json(200, {
        search_metadata: metadata,
        search_parameters: parameters,
        search_information: { query_displayed: q, organic_results_state: "Fully empty" },
        error: "Google hasn't returned any results for this query.",
      });
      return;
    }
    const slug =
      q
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, "-")
        .replace(/^-|-$/g, "") || "query";
    const items = Array.from({ length: num }, (_, i) => {
      const position = start + i + 1;
      const link = `https://${slug}.example.com/${position}`;
      return {
        position,
        title: `${q} — result ${position}`,
        link,
        displayed_link: link,
        snippet: `Snippet ${position} about ${q}.`,
        source: `${slug}.example.com`,
      };
    });
    const results: JsonObject =
      engine === "google_news"
        ? {
            news_results: items.map(({ position, title, link, snippet, source }) => ({
              position,
              title,
              link,
              snippet,
              source: { name: source },
              date: "1 day ago",
            })),
          }
        : engine === "google_images"
          ? { images_results: items.map(({ position, title, link }) => ({ position, title, link, original: `${link}.jpg`, thumbnail: `${link}-thumb.jpg` })) }
          : {
              organic_results: items,
              related_searches: [
                {
                  block_position: 1,
                  query: `${q} more`,
                  link: `https://www.google.com/search?q=${encodeURIComponent(`${q} more`)}`,
                  serpapi_link: `${host}/search.json?${qs({ q: `${q} more` })}`,
                },
              ],
            };
    const next = String(start + num);
    ex.json(200, {
      search_metadata: metadata,
      search_parameters: parameters,
      search_information: {
        query_displayed: q,
        total_results: 1000 + slug.length,
        time_taken_displayed: 0.28,
        organic_results_state: "Results for exact spelling",
      },
      ...results,
      pagination: { current: start / num + 1, next: `https://www.google.com/search?q=${encodeURIComponent(q)}&start=${next}` },
      serpapi_pagination: {
        current: start / num + 1,
        next_link: `${host}/search.json?${qs({ start: next })}`,
        next: `${host}/search.json?${qs({ start: next })}`,
      },
    });
  }

  return startEmulator(spec, opts);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c] as string);
}
