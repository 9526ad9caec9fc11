import { z } from "zod";
import { ModelName } from "./model-name";
import { Usage } from "./chat";

/**
 * OpenAI legacy text completions (`POST /v1/completions`). As with chat, the fields we interpret
 * are checked and everything else passes through to the upstream unchanged.
 */

export const CompletionPrompt = z.union([z.string(), z.array(z.string()), z.array(z.number().int()), z.array(z.array(z.number().int()))]);
export type CompletionPrompt = z.infer<typeof CompletionPrompt>;

const penalty = z.number().min(-2).max(2).nullish();

export const CompletionRequest = z.looseObject({
  model: ModelName,
  prompt: CompletionPrompt,
  max_tokens: z.number().int().min(0).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  best_of: z.number().int().min(0).max(20).nullish(),
  logprobs: z.number().int().min(0).max(5).nullish(),
  echo: z.boolean().nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  suffix: z.string().nullish(),
  presence_penalty: penalty,
  frequency_penalty: penalty,
  seed: z.number().int().nullish(),
  user: z.string().nullish(),
});
export type CompletionRequest = z.infer<typeof CompletionRequest>;

const CompletionChoice = z.looseObject({
  text: z.string(),
  index: z.number().int(),
  finish_reason: z.string().nullish(),
});

/** A `text_completion` answer; stream chunks have the same shape with partial `text`. */
export const Completion = z.looseObject({
  id: z.string(),
  object: z.literal("text_completion"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(CompletionChoice),
  usage: Usage.nullish(),
});
export type Completion = z.infer<typeof Completion>;
