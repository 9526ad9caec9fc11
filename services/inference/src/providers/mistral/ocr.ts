import { OcrPage, OcrUsageInfo, type OcrRequest } from "@gw/contracts";
import { z } from "zod";
import { bearerJsonHeaders, postJson, upstreamUrl } from "../../upstream/json-call";
import type { OcrResult, ProviderContext, UpstreamCall } from "../types";
import { failureContext } from "../../upstream/errors";

/** Mistral's OCR answer, read loosely: only what the public answer is built from is checked. */
const MistralOcrResponse = z.looseObject({
  pages: z.array(OcrPage),
  model: z.string().optional(),
  document_annotation: z.string().nullish(),
  usage_info: OcrUsageInfo,
});

/**
 * OCR on Mistral (`POST {base_url}/ocr`, base_url like https://api.mistral.ai/v1), whose shape is the
 * public one: the request goes as the caller sent it under the upstream model, and the answer comes
 * back under the public model with LiteLLM's `"object": "ocr"` (provider-wire-formats.md §6).
 */
export async function mistralOcr(ctx: ProviderContext, call: UpstreamCall<OcrRequest>): Promise<OcrResult> {
  const result = await postJson(
    ctx.agent,
    {
      url: upstreamUrl(ctx.config.base_url, "/ocr"),
      headers: bearerJsonHeaders(ctx.apiKey, ctx.config.headers),
      body: { ...call.request, model: call.upstreamModel },
      timeoutMs: ctx.config.timeout_ms,
      signal: call.signal,
      names: failureContext(ctx, call),
      errorBody: mistralErrorBody,
    },
    MistralOcrResponse,
  );
  if (!result.ok) return result;
  const { pages, document_annotation, usage_info } = result.value;
  return { ok: true, response: { pages, model: call.publicModel, document_annotation: document_annotation ?? null, usage_info, object: "ocr" } };
}

/**
 * Mistral's 422 carries FastAPI's details as its `message` (`{detail:[{loc, msg}]}`): rewritten as one
 * readable `{message}` naming each field ("document.document_url: Field required"). Other bodies
 * (`{message: "..."}`) are read as they are.
 */
export function mistralErrorBody(text: string): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return text;
  }
  const detail = (body as { message?: { detail?: unknown } } | null)?.message?.detail ?? (body as { detail?: unknown } | null)?.detail;
  if (!Array.isArray(detail)) return text;
  const parts = detail.map((d: { loc?: unknown; msg?: unknown }) => {
    const loc = Array.isArray(d?.loc) ? d.loc.filter((p, i) => !(i === 0 && p === "body")).join(".") : "";
    const msg = typeof d?.msg === "string" ? d.msg : "invalid";
    return loc ? `${loc}: ${msg}` : msg;
  });
  return JSON.stringify({ message: parts.join("; ") || "The model provider rejected the request" });
}
