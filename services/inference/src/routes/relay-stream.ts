import type { Response } from "express";
import type { RelayedStreamEvent } from "../providers/types";
import { endSse, startSse, writeSse } from "./sse-writer";

/**
 * Writes a stream the gateway relays unchanged (image and transcription streams): each event with
 * its name, then the usage it reported, if any, as the trailer ingress settles the token limit with.
 * A mid-stream failure is one `{"error":…}` event, which the openai client throws as an APIError.
 */
export async function writeRelayedStream(res: Response, events: AsyncIterable<RelayedStreamEvent>): Promise<void> {
  startSse(res);
  let totalTokens: number | undefined;
  for await (const item of events) {
    if (item.type === "usage") {
      totalTokens = item.totalTokens;
      continue;
    }
    if (item.type === "error") {
      await writeSse(res, JSON.stringify({ error: { ...item.error, param: null } }));
      break;
    }
    await writeSse(res, item.data, item.event);
  }
  endSse(res, totalTokens);
}
