import type { Response } from "express";
import type { Usage } from "@gw/contracts";
import type { StreamFailure } from "../providers/types";
import { endSse, startSse, writeSse } from "./sse-writer";
import { sendJson } from "./json-answer";

/** A chat or text completion answer in OpenAI's shape: one JSON body, or a stream of chunks. */
export type OpenAIAnswer =
  | { kind: "json"; completion: { usage?: Usage | null } }
  | {
      kind: "stream";
      events: AsyncIterable<{ type: "chunk"; chunk: unknown } | { type: "usage"; usage: Usage } | { type: "error"; error: StreamFailure }>;
    };

/**
 * Sends an OpenAI-shaped answer, and tells ingress the real usage so it can settle the token
 * reservation: a header on JSON answers; on streams, whose usage is known only at the end, a trailer
 * (ingress removes both). A stream ends with `[DONE]`, or with one `{"error":…}` event on failure.
 */
export async function sendOpenAIAnswer(res: Response, answer: OpenAIAnswer): Promise<void> {
  if (answer.kind === "json") {
    sendJson(res, answer.completion, answer.completion.usage?.total_tokens);
    return;
  }
  startSse(res);
  let totalTokens: number | undefined;
  for await (const event of answer.events) {
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
