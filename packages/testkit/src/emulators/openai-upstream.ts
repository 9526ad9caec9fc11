import { chatCompletion, chatCompletionFrames, createChatPromptCache, planChat } from "./openai-chat";
import { completion, completionFrames, planCompletion } from "./openai-completions";
import { answerSpeech, answerTranscription } from "./openai-audio";
import { embeddingsResponse, hasEmbeddingInput } from "./openai-embeddings";
import { answerImages } from "./openai-images";
import { isUnparsedBody, startEmulator } from "./http-emulator";
import type { EmulatorOptions, Exchange, ProviderSpec, UpstreamEmulator } from "./http-emulator";
import { defaultEmbeddingDimensions, isRecord, randomId } from "./synthetic";
import type { JsonObject } from "./synthetic";

export interface OpenAIUpstreamOptions extends EmulatorOptions {
  /** Path prefix the SDK's baseURL ends with (default "/v1"). */
  basePath?: string;
  /** Ids served by GET /models (default: a few chat and embedding models). */
  models?: string[];
  /**
   * Shortest chat prompt, in tokens, that the automatic prompt cache keeps (OpenAI: 1024). Tests
   * lower it to avoid sending thousands; hits still come in 128-token steps.
   */
  cacheMinTokens?: number;
}

const DEFAULT_MODELS = ["gpt-4o-mini", "gpt-4o", "gpt-3.5-turbo-instruct", "text-embedding-3-small", "text-embedding-3-large"];
/** Fixed so that listings are deterministic (2024-05-13). */
const MODEL_CREATED = 1715558400;

/** `{"error":{message,type,param,code}}`: all four keys are required by the spec's `Error`. */
export function openAIError(message: string, type: string, param: string | null = null, code: string | null = null) {
  return { error: { message, type, param, code } };
}

const NO_KEY =
  "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth " +
  "(i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the " +
  "API from your browser and are prompted for a username. You can obtain an API key from " +
  "https://platform.openai.com/account/api-keys.";

/** OpenAI shows the first 8 and last 4 characters of a rejected key. */
function maskKey(key: string): string {
  return key.length <= 12 ? "*".repeat(key.length) : `${key.slice(0, 8)}${"*".repeat(key.length - 12)}${key.slice(-4)}`;
}

/** Bodies for scripted error statuses that came without one (observed OpenAI envelopes, §3.3). */
function defaultError(status: number, model: string): JsonObject {
  switch (status) {
    case 400:
      return openAIError("Invalid request.", "invalid_request_error");
    case 401:
      return openAIError(
        `Incorrect API key provided: ${maskKey("sk-emulator-key")}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        "invalid_request_error",
        null,
        "invalid_api_key",
      );
    case 403:
      return openAIError("Country, region, or territory not supported", "request_forbidden", null, "unsupported_country_region_territory");
    case 404:
      return openAIError(`The model \`${model}\` does not exist or you do not have access to it.`, "invalid_request_error", null, "model_not_found");
    case 429:
      return openAIError(
        `Rate limit reached for ${model || "requests"} in organization org-emulator on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.`,
        "requests",
        null,
        "rate_limit_exceeded",
      );
    case 503:
      return openAIError("The engine is currently overloaded, please try again later.", "server_error");
    default:
      return status >= 500
        ? openAIError("The server had an error while processing your request. Sorry about that!", "server_error")
        : openAIError(`Request failed with status ${status}.`, "invalid_request_error");
  }
}

function requestModel(ex: Exchange): string {
  return isRecord(ex.record.body) && typeof ex.record.body.model === "string" ? ex.record.body.model : "";
}

/**
 * A fake OpenAI API on node:http for the official `openai` client: models, chat completions
 * (stream and not, tool calls, prompt caching, reasoning tokens), legacy completions, embeddings,
 * image generation, speech and transcriptions (multipart), with scripted failures. reset() also
 * empties the prompt cache.
 */
export async function startOpenAIUpstream(opts: OpenAIUpstreamOptions = {}): Promise<UpstreamEmulator> {
  const promptCache = createChatPromptCache({ minTokens: opts.cacheMinTokens });
  const basePath = (opts.basePath ?? "/v1").replace(/\/$/, "");
  const models = opts.models ?? DEFAULT_MODELS;
  const modelList = JSON.stringify({
    object: "list",
    data: models.map((id) => ({ id, object: "model", created: MODEL_CREATED, owned_by: "system" })),
  });

  const spec: ProviderSpec = {
    basePath,
    commonHeaders: () => ({
      "x-request-id": `req_${randomId(32)}`,
      "openai-version": "2020-10-01",
      "openai-processing-ms": "1",
      "x-ratelimit-limit-requests": "10000",
      "x-ratelimit-remaining-requests": "9999",
      "x-ratelimit-reset-requests": "6ms",
      "x-ratelimit-limit-tokens": "30000000",
      "x-ratelimit-remaining-tokens": "29999990",
      "x-ratelimit-reset-tokens": "0s",
    }),
    precheck(ex) {
      if (opts.apiKey === undefined) return false;
      const auth = ex.req.headers.authorization;
      if (auth === `Bearer ${opts.apiKey}`) return false;
      const given = auth?.startsWith("Bearer ") ? auth.slice(7).trim() : "";
      ex.json(
        401,
        given
          ? openAIError(
              `Incorrect API key provided: ${maskKey(given)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
              "invalid_request_error",
              null,
              "invalid_api_key",
            )
          : openAIError(NO_KEY, "invalid_request_error"),
      );
      return true;
    },
    errorBody: (status, ex) => defaultError(status, requestModel(ex)),
    handle: (ex) => route(ex),
  };

  async function route(ex: Exchange): Promise<void> {
    const { method, path } = ex.record;
    const sub = path.startsWith(`${basePath}/`) ? path.slice(basePath.length) : undefined;
    const post = sub === undefined ? undefined : postRoutes.get(sub);
    if (sub === "/models" || (sub?.startsWith("/models/") ?? false)) {
      if (method !== "GET") return invalidMethod(ex);
      if (sub === "/models") return ex.json(200, modelList);
      const id = decodeURIComponent(sub?.slice("/models/".length) ?? "");
      return models.includes(id)
        ? ex.json(200, { id, object: "model", created: MODEL_CREATED, owned_by: "system" })
        : ex.json(404, openAIError(`The model '${id}' does not exist`, "invalid_request_error", "model", "model_not_found"));
    }
    // Multipart, so not a JSON route: the emulator keeps its body as bytes.
    if (sub === "/audio/transcriptions") return method === "POST" ? answerTranscription(ex) : invalidMethod(ex);
    if (!post) return ex.json(404, openAIError(`Invalid URL (${method} ${path})`, "invalid_request_error"));
    if (method !== "POST") return invalidMethod(ex);
    const body = ex.record.body;
    if (isUnparsedBody(body) || !isRecord(body)) {
      return ex.json(
        400,
        openAIError(
          "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
          "invalid_request_error",
        ),
      );
    }
    if (typeof body.model !== "string" || body.model === "") {
      return ex.json(400, openAIError("you must provide a model parameter", "invalid_request_error"));
    }
    await post(ex, body);
  }

  const postRoutes = new Map<string, (ex: Exchange, body: JsonObject) => Promise<void> | void>([
    ["/chat/completions", chat],
    ["/completions", legacy],
    ["/embeddings", embeddings],
    ["/images/generations", answerImages],
    ["/audio/speech", answerSpeech],
  ]);

  function invalidMethod(ex: Exchange): void {
    ex.json(405, openAIError(`Invalid method for URL (${ex.record.method} ${ex.record.path})`, "invalid_request_error"));
  }

  function chat(ex: Exchange, body: JsonObject): Promise<void> | void {
    if (!Array.isArray(body.messages)) return missing(ex, "messages");
    const plan = planChat(body, promptCache);
    const id = `chatcmpl-${randomId(29)}`;
    const created = Math.floor(Date.now() / 1000);
    if (body.stream === true) return ex.sse(200, chatCompletionFrames(plan, id, created));
    ex.json(200, chatCompletion(plan, id, created));
  }

  function legacy(ex: Exchange, body: JsonObject): Promise<void> | void {
    const plan = planCompletion(body);
    const id = `cmpl-${randomId(29)}`;
    const created = Math.floor(Date.now() / 1000);
    if (body.stream === true) return ex.sse(200, completionFrames(plan, id, created));
    ex.json(200, completion(plan, id, created));
  }

  function embeddings(ex: Exchange, body: JsonObject): void {
    if (!hasEmbeddingInput(body)) return missing(ex, "input");
    // OpenAI refuses to lengthen a vector: `dimensions` may only shorten the model's own.
    const native = defaultEmbeddingDimensions(typeof body.model === "string" ? body.model : "");
    if (typeof body.dimensions === "number" && body.dimensions > native) {
      return ex.json(
        400,
        openAIError(
          `Invalid value for 'dimensions': ${body.dimensions}. It must be at most ${native} for this model.`,
          "invalid_request_error",
          "dimensions",
          "invalid_value",
        ),
      );
    }
    ex.json(200, embeddingsResponse(body));
  }

  function missing(ex: Exchange, param: string): void {
    ex.json(400, openAIError(`Missing required parameter: '${param}'.`, "invalid_request_error", param, "missing_required_parameter"));
  }

  const emulator = await startEmulator(spec, opts);
  return {
    ...emulator,
    reset() {
      emulator.reset();
      promptCache.clear();
    },
  };
}
