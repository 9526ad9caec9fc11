import { createParser, type EventSourceMessage } from "eventsource-parser";

/**
 * Turns a byte stream into SSE events as they arrive. Each upstream chunk is parsed and handed on
 * at once: nothing waits for the end of the stream.
 */
export async function* readSse(body: AsyncIterable<Uint8Array | Buffer | string>): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => queue.push(event) });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true }));
    while (queue.length > 0) yield queue.shift() as EventSourceMessage;
  }
  parser.feed(decoder.decode());
  while (queue.length > 0) yield queue.shift() as EventSourceMessage;
}
