import { isUnparsedBody, startEmulator } from "./http-emulator";
import type { EmulatorOptions, Exchange, ProviderSpec, UpstreamEmulator } from "./http-emulator";
import { rankDocuments, rerankTokens } from "./rerank-scores";
import { isRecord } from "./synthetic";

export interface JinaUpstreamOptions extends EmulatorOptions {
  /** Path prefix of the base URL (default ""; requests go to /v1/rerank). */
  basePath?: string;
  /**
   * Returned documents as plain strings (`"document": "text"`), a shape LiteLLM's Jina transform
   * says the API can send, instead of `{"text": ...}`.
   */
  documentsAsStrings?: boolean;
}

/**
 * Jina's API answers errors FastAPI-style, `{"detail": ...}` **[GUESS]**: the official reference
 * could not be read (provider-wire-formats.md §5.2); the messages are made up.
 */
const DEFAULT_DETAILS: Record<number, string> = {
  400: "Bad request",
  401: "Unauthorized: invalid API key",
  402: "Insufficient balance for this API key",
  404: "Not Found",
  429: "Rate limit exceeded, please try again later",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

type Issue = { type: string; loc: (string | number)[]; msg: string };

/**
 * A fake Jina reranker (`POST /v1/rerank`) on node:http: Bearer auth, 422 validation errors naming
 * the field, `return_documents` (default false, as Jina's API now has it), `usage.total_tokens`, no
 * id, and scripted failures. Scores come from word overlap with the query (rerank-scores.ts).
 */
export function startJinaUpstream(opts: JinaUpstreamOptions = {}): Promise<UpstreamEmulator> {
  const basePath = (opts.basePath ?? "").replace(/\/$/, "");

  const spec: ProviderSpec = {
    basePath,
    commonHeaders: () => ({}),
    precheck(ex) {
      if (opts.apiKey === undefined) return false;
      const auth = ex.req.headers.authorization;
      const key = auth?.startsWith("Bearer ") ? auth.slice(7).trim() : undefined;
      if (key !== opts.apiKey) {
        ex.json(401, { detail: key === undefined ? "Unauthorized: missing API key" : "Unauthorized: invalid API key" });
        return true;
      }
      return false;
    },
    errorBody: (status) => ({ detail: DEFAULT_DETAILS[status] ?? `Request failed with status ${status}` }),
    handle,
  };

  function handle(ex: Exchange): void {
    const { method, path } = ex.record;
    if (path !== `${basePath}/v1/rerank`) return ex.json(404, { detail: "Not Found" });
    if (method !== "POST") return ex.json(405, { detail: "Method Not Allowed" });
    const body = ex.record.body;
    if (isUnparsedBody(body) || !isRecord(body)) {
      return invalid(ex, [{ type: "json_invalid", loc: ["body"], msg: "JSON decode error" }]);
    }
    const issues: Issue[] = [];
    if (typeof body.model !== "string") issues.push(missingOr("model", body.model, "Input should be a valid string"));
    if (typeof body.query !== "string") issues.push(missingOr("query", body.query, "Input should be a valid string"));
    const docs = Array.isArray(body.documents) ? body.documents.map(documentText) : undefined;
    if (!docs) issues.push(missingOr("documents", body.documents, "Input should be a valid list"));
    else {
      docs.forEach((d, i) => {
        if (d === undefined) issues.push({ type: "string_type", loc: ["body", "documents", i], msg: "Input should be a valid string" });
      });
    }
    const topN = body.top_n;
    if (topN !== undefined && topN !== null && (typeof topN !== "number" || !Number.isInteger(topN) || topN < 1)) {
      issues.push({ type: "greater_than_equal", loc: ["body", "top_n"], msg: "Input should be greater than or equal to 1" });
    }
    if (issues.length > 0 || !docs) return invalid(ex, issues);
    const texts = docs as string[];
    const query = body.query as string;
    const withDocs = body.return_documents === true;
    const ranked = rankDocuments(query, texts, typeof topN === "number" ? topN : undefined);
    ex.json(200, {
      model: body.model,
      usage: { total_tokens: rerankTokens(query, texts) },
      results: ranked.map(({ index, relevance_score }) => {
        const text = texts[index] ?? "";
        return withDocs ? { index, document: opts.documentsAsStrings ? text : { text }, relevance_score } : { index, relevance_score };
      }),
    });
  }

  function invalid(ex: Exchange, detail: Issue[]): void {
    ex.json(422, { detail });
  }

  return startEmulator(spec, opts);
}

function missingOr(field: string, value: unknown, msg: string): Issue {
  return value === undefined ? { type: "missing", loc: ["body", field], msg: "Field required" } : { type: "string_type", loc: ["body", field], msg };
}

/** Newer Jina models take `{text}` objects as well as strings. */
function documentText(doc: unknown): string | undefined {
  if (typeof doc === "string") return doc;
  return isRecord(doc) && typeof doc.text === "string" ? doc.text : undefined;
}
