import { z } from "zod";
import { ModelName } from "./model-name";

/**
 * OpenAI image generation (`POST /v1/images/generations`). The gateway needs `model` (it routes on
 * it, where OpenAI would default to dall-e-2) and `prompt`; the rest passes through unchanged.
 */

export const ImageGenerationRequest = z.looseObject({
  model: ModelName,
  prompt: z.string().min(1),
  n: z.number().int().min(1).max(10).nullish(),
  size: z.string().nullish(),
  quality: z.string().nullish(),
  response_format: z.enum(["url", "b64_json"]).nullish(),
  output_format: z.string().nullish(),
  output_compression: z.number().int().min(0).max(100).nullish(),
  background: z.string().nullish(),
  moderation: z.string().nullish(),
  style: z.string().nullish(),
  stream: z.boolean().nullish(),
  partial_images: z.number().int().min(0).max(3).nullish(),
  user: z.string().nullish(),
});
export type ImageGenerationRequest = z.infer<typeof ImageGenerationRequest>;

/** GPT image models report tokens; DALL·E models report nothing. */
export const ImagesUsage = z.looseObject({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
});
export type ImagesUsage = z.infer<typeof ImagesUsage>;

export const ImagesResponse = z.looseObject({
  created: z.number().int(),
  data: z.array(z.looseObject({ b64_json: z.string().optional(), url: z.string().optional(), revised_prompt: z.string().optional() })).optional(),
  usage: ImagesUsage.nullish(),
});
export type ImagesResponse = z.infer<typeof ImagesResponse>;
