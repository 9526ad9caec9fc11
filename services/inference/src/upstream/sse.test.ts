import type { EventSourceMessage } from "eventsource-parser";
import { describe, expect, it } from "vitest";
import { readSse } from "./sse";

const stream = [
  ": keep-alive comment\n\n",
  'data: {"delta":"héllo wörld — 日本語 🚀"}\n\n',
  "event: message_start\n",
  'data: {"type":"message_start"}\n\n',
  ": another comment\n",
  "id: 7\n",
  "data: line one\n",
  "data: line two\n\n",
  "data: [DONE]\n\n",
].join("");

const expected = [
  { data: '{"delta":"héllo wörld — 日本語 🚀"}' },
  { event: "message_start", data: '{"type":"message_start"}' },
  { id: "7", data: "line one\nline two" },
  { data: "[DONE]" },
];

async function* chunksOf<T>(parts: T[]): AsyncGenerator<T> {
  for (const part of parts) yield part;
}

async function collect(body: AsyncIterable<Uint8Array | Buffer | string>): Promise<Pick<EventSourceMessage, "data" | "event" | "id">[]> {
  const out: Pick<EventSourceMessage, "data" | "event" | "id">[] = [];
  for await (const event of readSse(body)) {
    const shaped: Pick<EventSourceMessage, "data" | "event" | "id"> = { data: event.data };
    if (event.event !== undefined) shaped.event = event.event;
    if (event.id !== undefined) shaped.id = event.id;
    out.push(shaped);
  }
  return out;
}

function splitBytes(bytes: Uint8Array, size: number): Uint8Array[] {
  const parts: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
  return parts;
}

describe("readSse", () => {
  it("when the whole stream arrives in one chunk, then every event comes out in order, comments dropped, [DONE] kept as data", async () => {
    expect(await collect(chunksOf([Buffer.from(stream, "utf8")]))).toEqual(expected);
  });

  it("when the stream is split into one-byte chunks (inside multi-byte characters), then the events are identical", async () => {
    const bytes = new TextEncoder().encode(stream);
    expect(await collect(chunksOf(splitBytes(bytes, 1)))).toEqual(expected);
  });

  it("when the stream is split at every possible single boundary, then the events are identical", async () => {
    const bytes = new TextEncoder().encode(stream);
    for (let cut = 1; cut < bytes.length; cut++) {
      const events = await collect(chunksOf([bytes.subarray(0, cut), bytes.subarray(cut)]));
      expect(events, `cut at byte ${cut}`).toEqual(expected);
    }
  });

  it("when the stream is split into chunks of several sizes, then the events are identical", async () => {
    const bytes = new TextEncoder().encode(stream);
    for (const size of [2, 3, 5, 7, 13, 64]) {
      expect(await collect(chunksOf(splitBytes(bytes, size))), `size ${size}`).toEqual(expected);
    }
  });

  it("when a four-byte emoji is split across three chunks, then it is decoded whole", async () => {
    const bytes = new TextEncoder().encode("data: 🚀\n\n");
    const at = bytes.indexOf(0xf0);
    const parts = [bytes.subarray(0, at + 1), bytes.subarray(at + 1, at + 3), bytes.subarray(at + 3)];
    expect(await collect(chunksOf(parts))).toEqual([{ data: "🚀" }]);
  });

  it("when chunks are strings, then they are parsed the same way", async () => {
    const parts = stream.match(/[\s\S]{1,5}/g) ?? [];
    expect(await collect(chunksOf(parts))).toEqual(expected);
  });

  it("when lines end in CRLF, even split between CR and LF, then events are the same", async () => {
    const crlf = stream.replaceAll("\n", "\r\n");
    const bytes = new TextEncoder().encode(crlf);
    expect(await collect(chunksOf(splitBytes(bytes, 1)))).toEqual(expected);
  });

  it("when the stream holds only comments, then no event comes out", async () => {
    expect(await collect(chunksOf([": ping\n\n", ": ping\n\n"]))).toEqual([]);
  });

  it("when an event arrives, then it is yielded before the rest of the stream exists", async () => {
    let release = () => {};
    const more = new Promise<void>((resolve) => (release = resolve));
    async function* body(): AsyncGenerator<string> {
      yield "data: first\n\n";
      await more; // the upstream has not sent anything else yet
      yield "data: second\n\n";
    }
    const iterator = readSse(body());
    const first = await Promise.race([iterator.next(), new Promise<"blocked">((resolve) => setTimeout(() => resolve("blocked"), 500))]);
    expect(first).not.toBe("blocked");
    expect(first === "blocked" ? undefined : first.value?.data).toBe("first");
    release();
    const second = await iterator.next();
    expect(second.value?.data).toBe("second");
    expect((await iterator.next()).done).toBe(true);
  });
});
