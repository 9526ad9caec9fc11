import { z } from "zod";
import { ModelName } from "./model-name";

/**
 * `POST /v1/ocr` in the public format: Mistral's OCR request and answer, as LiteLLM exposes them
 * (provider-wire-formats.md §6), with LiteLLM's `"object": "ocr"` added to the answer. Parameters
 * not checked here pass through to the provider unchanged.
 */

const FILE_DOCUMENTS_UNSUPPORTED =
  "file documents are not supported: files cannot be uploaded through the gateway, so there is no file_id to refer to; " +
  'send {"type":"document_url"} or {"type":"image_url"} (a data: URL with the base64 content works for both)';

export const OcrDocumentUrl = z.looseObject({
  type: z.literal("document_url"),
  /** `https://…` or `data:application/pdf;base64,…`. */
  document_url: z.string().min(1, "document_url cannot be empty"),
  document_name: z.string().nullish(),
});

export const OcrImageUrl = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.union([z.string().min(1, "image_url cannot be empty"), z.looseObject({ url: z.string().min(1, "url cannot be empty") })]),
});

export const OcrDocument = z.discriminatedUnion("type", [OcrDocumentUrl, OcrImageUrl], {
  // Mistral's third kind, `{type:"file", file_id}`, names a file uploaded to Mistral's own Files API,
  // which the gateway does not offer: say why rather than "invalid discriminator".
  error: (issue) => (issue.code === "invalid_union" && isRecord(issue.input) && issue.input.type === "file" ? FILE_DOCUMENTS_UNSUPPORTED : undefined),
});
export type OcrDocument = z.infer<typeof OcrDocument>;

/** Mistral accepts only `json_schema` response formats for annotations. */
const AnnotationFormat = z.looseObject({ type: z.literal("json_schema"), json_schema: z.looseObject({}) });

export const OcrRequest = z.looseObject({
  model: ModelName,
  document: OcrDocument,
  id: z.string().nullish(),
  /** 0-based page indexes. */
  pages: z.array(z.number().int().nonnegative()).nullish(),
  include_image_base64: z.boolean().nullish(),
  image_limit: z.number().int().nonnegative().nullish(),
  image_min_size: z.number().int().nonnegative().nullish(),
  bbox_annotation_format: AnnotationFormat.nullish(),
  document_annotation_format: AnnotationFormat.nullish(),
  document_annotation_prompt: z.string().nullish(),
  table_format: z.enum(["markdown", "html"]).nullish(),
  extract_header: z.boolean().nullish(),
  extract_footer: z.boolean().nullish(),
});
export type OcrRequest = z.infer<typeof OcrRequest>;

export const OcrImage = z.looseObject({
  id: z.string(),
  top_left_x: z.number().nullish(),
  top_left_y: z.number().nullish(),
  bottom_right_x: z.number().nullish(),
  bottom_right_y: z.number().nullish(),
  image_base64: z.string().nullish(),
  image_annotation: z.string().nullish(),
});

export const OcrPageDimensions = z.looseObject({ dpi: z.number(), height: z.number(), width: z.number() });

/** One page: `index`, `markdown`, `images` and `dimensions` are always there; tables, header etc. may be. */
export const OcrPage = z.looseObject({
  index: z.number().int().nonnegative(),
  markdown: z.string(),
  images: z.array(OcrImage),
  dimensions: OcrPageDimensions.nullable(),
});
export type OcrPage = z.infer<typeof OcrPage>;

export const OcrUsageInfo = z.looseObject({
  pages_processed: z.number().int().nonnegative(),
  doc_size_bytes: z.number().int().nullish(),
});
export type OcrUsageInfo = z.infer<typeof OcrUsageInfo>;

/** The answer under the public model name; `document_annotation` is a JSON string when asked for. */
export const OcrResponse = z.object({
  pages: z.array(OcrPage),
  model: z.string(),
  document_annotation: z.string().nullable(),
  usage_info: OcrUsageInfo,
  object: z.literal("ocr"),
});
export type OcrResponse = z.infer<typeof OcrResponse>;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
