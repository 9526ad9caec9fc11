import type { Response } from "express";
import type { Usage } from "@gw/contracts";
import type { StreamFailure } from "../providers/types";
import type { RouteAnswer } from "./route-handler";
import { endSse, startSse, writeSse } from "./sse-writer";

/** A chat or text completion answer in OpenAI's shape: one JSON body, or a stream of chunks. */
export type OpenAIAnswer =
  | { kind: "json"; completion: { usage?: Usage | null } }
  | {
      kind: "stream";
      events: AsyncIterable<{ type: "chunk"; chunk: unknown } | { type: "usage"; usage: Usage } | { type: "error"; error: StreamFailure }>;
    };

/**
 * An OpenAI-shaped answer, with the real usage ingress settles the token reservation with: a header
 * on JSON answers; on streams, whose usage is known only at the end, a trailer (ingress removes
 * both). A stream ends with `[DONE]`, or with one `{"error":…}` event on failure.
 */
export function openAIAnswer(answer: OpenAIAnswer): RouteAnswer {
  if (answer.kind === "json") return { kind: "json", body: answer.completion, totalTokens: answer.completion.usage?.total_tokens };
  return { kind: "live", send: (res) => sendOpenAIStream(res, answer.events) };
}

async function sendOpenAIStream(res: Response, events: Extract<OpenAIAnswer, { kind: "stream" }>["events"]): Promise<void> {
  startSse(res);
  let totalTokens: number | undefined;
  for await (const event of events) {
    if (event.type === "usage") {
      totalTokens = event.usage.total_tokens;
      continue;
    }
    if (event.type === "error") {
      await writeSse(res, JSON.stringify({ error: { ...event.error, param: null } }));
      endSse(res, totalTokens);
      return;
    }
    await writeSse(res, JSON.stringify(event.chunk));
  }
  await writeSse(res, "[DONE]");
  endSse(res, totalTokens);
}
