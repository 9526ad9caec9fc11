import type { Response } from "express";
import { internalHeaders, type Usage } from "@gw/contracts";
import type { StreamFailure } from "../providers/types";
import { startSse, writeSse } from "./sse-writer";

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
    const usage = answer.completion.usage;
    if (usage) res.setHeader(internalHeaders.usageTokens, String(usage.total_tokens));
    res.json(answer.completion);
    return;
  }
  startSse(res, [internalHeaders.usageTokens]);
  let totalTokens: number | undefined;
  const end = () => {
    if (totalTokens !== undefined) res.addTrailers({ [internalHeaders.usageTokens]: String(totalTokens) });
    res.end();
  };
  for await (const event of answer.events) {
    if (event.type === "usage") {
      totalTokens = event.usage.total_tokens;
      continue;
    }
    if (event.type === "error") {
      await writeSse(res, JSON.stringify({ error: { ...event.error, param: null } }));
      end();
      return;
    }
    await writeSse(res, JSON.stringify(event.chunk));
  }
  if (!res.destroyed) {
    await writeSse(res, "[DONE]");
    end();
  }
}
