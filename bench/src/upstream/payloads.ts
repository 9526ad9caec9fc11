/**
 * Fixed OpenAI chat answers, serialised once: the benchmark's upstream must cost the same tiny,
 * constant amount on every request so that the gateway is the only variable.
 */

/** OpenAI answers with a dated snapshot name; the gateway must replace it with the public one. */
export const upstreamModelName = "gpt-4o-mini-2024-07-18";
const created = 1_715_558_400;
const id = "chatcmpl-bench0000000000000000000000";
const fingerprint = "fp_bench0000";

/** About 60 tokens: the size of a short real answer, not an empty one. */
export const answerText =
  "Benchmarks measure what they measure: here, the time a gateway adds between a client and a model " +
  "provider that answers instantly. Real providers take hundreds of milliseconds, so the gateway's share " +
  "should stay a small, steady fraction of that.";

const usage = {
  prompt_tokens: 28,
  completion_tokens: 58,
  total_tokens: 86,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};

export function chatCompletionBody(): Buffer {
  return Buffer.from(
    JSON.stringify({
      id,
      object: "chat.completion",
      created,
      model: upstreamModelName,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: answerText, refusal: null, annotations: [] },
          logprobs: null,
          finish_reason: "stop",
        },
      ],
      usage,
      service_tier: "default",
      system_fingerprint: fingerprint,
    }),
  );
}

/**
 * The same answer as OpenAI streams it: a role delta, the text split into `pieces` content deltas,
 * a finish chunk, then `data: [DONE]`. With `includeUsage` (the request's
 * `stream_options.include_usage`), every chunk carries `usage: null` and a usage-only chunk with
 * `choices: []` comes before `[DONE]`; without it, chunks have no `usage` key at all.
 */
export function chatCompletionFrames(pieces: number, includeUsage: boolean): Buffer[] {
  const chunk = (choices: unknown[], chunkUsage: unknown = null) => {
    const base = { id, object: "chat.completion.chunk", created, model: upstreamModelName, service_tier: "default", system_fingerprint: fingerprint, choices };
    return `data: ${JSON.stringify(includeUsage ? { ...base, usage: chunkUsage } : base)}\n\n`;
  };
  const frames = [chunk([{ index: 0, delta: { role: "assistant", content: "", refusal: null }, logprobs: null, finish_reason: null }])];
  for (const piece of splitEvenly(answerText, pieces)) {
    frames.push(chunk([{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }]));
  }
  frames.push(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }]));
  if (includeUsage) frames.push(chunk([], usage));
  frames.push("data: [DONE]\n\n");
  return frames.map((f) => Buffer.from(f));
}

/** `text` in `n` consecutive pieces of near-equal length (fewer if the text is shorter). */
export function splitEvenly(text: string, n: number): string[] {
  const count = Math.max(1, Math.min(n, text.length));
  const pieces: string[] = [];
  for (let i = 0; i < count; i++) {
    pieces.push(text.slice(Math.floor((i * text.length) / count), Math.floor(((i + 1) * text.length) / count)));
  }
  return pieces;
}
