import { randomUUID } from "node:crypto";
import { isUnparsedBody, startEmulator } from "./http-emulator";
import type { EmulatorOptions, Exchange, ProviderSpec, UpstreamEmulator } from "./http-emulator";
import { rankDocuments } from "./rerank-scores";
import { countTokens, embeddingVector, isRecord } from "./synthetic";
import type { JsonObject } from "./synthetic";

export interface CohereUpstreamOptions extends EmulatorOptions {
  /** Path prefix of the base URL (default ""; the SDK and the gateway add /v2/...). */
  basePath?: string;
}

/**
 * Error bodies are `{id?, message}` (observed: `{'message': 'invalid api token'}` on a 401, in
 * cohere-toolkit#857 and many SDK reports); the message texts below are the commonly seen ones.
 */
const DEFAULT_MESSAGES: Record<number, string> = {
  400: "invalid request",
  401: "invalid api token",
  404: "Not Found",
  422: "invalid request",
  429: "You are using a Trial key, which is limited to 10 API calls / minute. You can continue to use the Trial key for free or upgrade to a Production key with higher rate limits at 'https://dashboard.cohere.com/api-keys'.",
  500: "internal server error, this has been reported to our developers",
  503: "service unavailable",
};

const INPUT_TYPES = ["search_document", "search_query", "classification", "clustering", "image"];
/** Embedding types this emulator produces (Cohere also has binary, ubinary and base64). */
const EMBEDDING_TYPES = ["float", "int8", "uint8"];
const MAX_TEXTS = 96;
/** embed-v4 takes these widths only (probed on the real API: any other is a 422); v3 models take none. */
const V4_DIMENSIONS = [256, 512, 1024, 1536];

function defaultDimensions(model: string): number {
  if (model.startsWith("embed-v4")) return 1536;
  return model.includes("light") ? 384 : 1024;
}

/**
 * A fake Cohere v2 API on node:http: `POST /v2/embed` and `POST /v2/rerank`, Bearer auth, Cohere's
 * `{message}` errors and scripted failures. Vectors are the same seeded unit vectors as the OpenAI
 * emulator's; rerank scores come from word overlap with the query (rerank-scores.ts).
 */
export function startCohereUpstream(opts: CohereUpstreamOptions = {}): Promise<UpstreamEmulator> {
  const basePath = (opts.basePath ?? "").replace(/\/$/, "");

  function fail(ex: Exchange, status: number, message: string): void {
    ex.json(status, { id: randomUUID(), message });
  }

  const spec: ProviderSpec = {
    basePath,
    commonHeaders: () => ({ "x-debug-trace-id": randomUUID().replace(/-/g, "") }),
    precheck(ex) {
      if (opts.apiKey === undefined) return false;
      const auth = ex.req.headers.authorization;
      if (!auth) {
        fail(ex, 401, "no api key supplied");
        return true;
      }
      // Cohere accepts the scheme in any case ("bearer" in its own curl examples).
      const key = /^bearer /i.test(auth) ? auth.slice(7).trim() : "";
      if (key !== opts.apiKey) {
        fail(ex, 401, "invalid api token");
        return true;
      }
      return false;
    },
    errorBody: (status) => ({ id: randomUUID(), message: DEFAULT_MESSAGES[status] ?? `request failed with status ${status}` }),
    handle,
  };

  function handle(ex: Exchange): void {
    const { method, path } = ex.record;
    const route = path === `${basePath}/v2/embed` ? embed : path === `${basePath}/v2/rerank` ? rerank : undefined;
    if (!route) return fail(ex, 404, "Not Found");
    if (method !== "POST") return fail(ex, 405, "Method Not Allowed");
    const body = ex.record.body;
    if (isUnparsedBody(body) || !isRecord(body)) return fail(ex, 400, "invalid request: could not parse the request body as JSON");
    if (typeof body.model !== "string" || body.model === "") return fail(ex, 400, "invalid request: model must be specified");
    route(ex, body, body.model);
  }

  function embed(ex: Exchange, body: JsonObject, model: string): void {
    if (typeof body.input_type !== "string" || !INPUT_TYPES.includes(body.input_type)) {
      return fail(ex, 400, "invalid request: valid input_type must be provided with the provided model");
    }
    const texts = body.texts;
    if (!Array.isArray(texts) || texts.length === 0 || !texts.every((t) => typeof t === "string")) {
      return fail(ex, 400, "invalid request: texts must be a non-empty list of strings");
    }
    if (texts.length > MAX_TEXTS) {
      return fail(ex, 400, `invalid request: total number of texts must be at most ${MAX_TEXTS} - received ${texts.length}`);
    }
    const types = body.embedding_types === undefined ? ["float"] : body.embedding_types;
    if (!Array.isArray(types) || types.length === 0 || !types.every((t) => typeof t === "string" && EMBEDDING_TYPES.includes(t))) {
      return fail(ex, 400, `invalid request: embedding_types must be a list of ${EMBEDDING_TYPES.join(", ")}`);
    }
    let dims = defaultDimensions(model);
    if (body.output_dimension !== undefined) {
      if (!model.startsWith("embed-v4")) return fail(ex, 400, "invalid request: output_dimension is not supported for this model");
      if (typeof body.output_dimension !== "number" || !V4_DIMENSIONS.includes(body.output_dimension)) {
        return fail(
          ex,
          422,
          `${String(body.output_dimension)} is not a valid output_dimension value for this model, [${V4_DIMENSIONS.join(" ")}] is supported`,
        );
      }
      dims = body.output_dimension;
    }
    const vectors = (texts as string[]).map((t) => embeddingVector(t, dims));
    const embeddings: JsonObject = {};
    for (const type of types as string[]) {
      embeddings[type] = vectors.map((v) => Array.from(v, (x) => (type === "float" ? x : quantise(x, type === "uint8"))));
    }
    const inputTokens = (texts as string[]).reduce((n, t) => n + countTokens(t), 0);
    ex.json(200, {
      id: randomUUID(),
      embeddings,
      texts,
      meta: { api_version: { version: "2" }, billed_units: { input_tokens: inputTokens } },
      response_type: "embeddings_by_type",
    });
  }

  function rerank(ex: Exchange, body: JsonObject): void {
    if (typeof body.query !== "string" || body.query === "") return fail(ex, 400, "invalid request: query must not be empty");
    const docs = body.documents;
    if (!Array.isArray(docs) || docs.length === 0) return fail(ex, 400, "invalid request: documents must not be empty");
    // v2 removed object documents: structured data is sent as (YAML) strings.
    if (!docs.every((d) => typeof d === "string")) return fail(ex, 400, "invalid request: documents must be a list of strings");
    const topN = body.top_n;
    if (topN !== undefined && (typeof topN !== "number" || !Number.isInteger(topN) || topN < 1)) {
      return fail(ex, 400, "invalid request: top_n must be a positive integer");
    }
    ex.json(200, {
      id: randomUUID(),
      results: rankDocuments(body.query, docs as string[], topN as number | undefined),
      meta: {
        api_version: { version: "2", is_experimental: false },
        // One search unit is a query with up to 100 documents.
        billed_units: { search_units: Math.ceil(docs.length / 100) },
      },
    });
  }

  return startEmulator(spec, opts);
}

/** A unit vector's component as an int8 (−128…127) or uint8 (0…255) value, scaled so that typical components (about ±1/√dims) use the range. */
function quantise(x: number, unsigned: boolean): number {
  const signed = Math.max(-128, Math.min(127, Math.round(x * 127 * 8)));
  return unsigned ? signed + 128 : signed;
}
