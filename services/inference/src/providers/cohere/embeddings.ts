import type { Embedding, EmbeddingsRequest } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { bearerJsonHeaders, malformed, postJson, upstreamUrl } from "../../upstream/json-call";
import type { EmbeddingsResult, ProviderContext, UpstreamCall } from "../types";
import { CohereEmbedResponse } from "./wire";
import { failureContext } from "../../upstream/errors";

/** Cohere takes at most 96 texts per embed call; OpenAI-style callers send up to 2,048. */
export const COHERE_MAX_TEXTS = 96;

/**
 * OpenAI embeddings on Cohere's v2 embed API (`POST {base_url}/v2/embed`). Inputs are embedded as
 * `search_document` (what an OpenAI caller embedding a corpus means), in float, and come back in
 * the OpenAI shape as floats; the route encodes them as the caller asked. More than 96 inputs are
 * sent in consecutive batches, one at a time so as not to trip Cohere's rate limit ourselves.
 */
export async function cohereEmbeddings(ctx: ProviderContext, call: UpstreamCall<EmbeddingsRequest>): Promise<EmbeddingsResult> {
  const texts = textInputs(call.request.input);
  if (!texts) {
    return {
      ok: false,
      error: new GatewayError("invalid_request", `The model \`${call.publicModel}\` accepts text input only, not token arrays`, {
        param: "input",
        retryable: false,
      }),
    };
  }
  const data: Embedding[] = [];
  let billed: number | undefined = 0;
  for (let start = 0; start < texts.length; start += COHERE_MAX_TEXTS) {
    const batch = texts.slice(start, start + COHERE_MAX_TEXTS);
    const result = await postJson(
      ctx.agent,
      {
        url: upstreamUrl(ctx.config.base_url, "/v2/embed"),
        headers: bearerJsonHeaders(ctx.apiKey, ctx.config.headers),
        body: embedBody(call.upstreamModel, batch, call.request.dimensions),
        timeoutMs: ctx.config.timeout_ms,
        signal: call.signal,
        names: failureContext(ctx, call),
      },
      CohereEmbedResponse,
    );
    if (!result.ok) return result;
    const vectors = result.value.embeddings.float;
    if (vectors.length !== batch.length) return { ok: false, error: malformed() };
    for (const [i, embedding] of vectors.entries()) data.push({ object: "embedding", index: start + i, embedding });
    const meta = result.value.meta;
    const tokens = meta?.billed_units?.input_tokens ?? meta?.tokens?.input_tokens;
    billed = billed === undefined || tokens === undefined ? undefined : billed + tokens;
  }
  return {
    ok: true,
    response: {
      object: "list",
      data,
      model: call.publicModel,
      // Without Cohere's count nothing is made up: the route then reports no usage at all.
      ...(billed === undefined ? {} : { usage: { prompt_tokens: billed, total_tokens: billed } }),
    },
  };
}

export function embedBody(model: string, texts: string[], dimensions: number | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = { model, texts, input_type: "search_document", embedding_types: ["float"] };
  // embed-v4 takes 256/512/1024/1536; v3 models refuse the field, and that 400 reaches the caller.
  if (dimensions !== undefined) body.output_dimension = dimensions;
  return body;
}

/** Cohere embeds text only: OpenAI's token-array inputs have no Cohere equivalent. */
function textInputs(input: EmbeddingsRequest["input"]): string[] | undefined {
  if (typeof input === "string") return [input];
  return input.every((item): item is string => typeof item === "string") ? input : undefined;
}
