import { describe, expect, it } from "vitest";
import type { RelayedStreamEvent } from "../types";
import { relayEvents } from "./passthrough";

const names = { upstreamModel: "gpt-image-1", publicModel: "image" };

async function* bytes(...frames: string[]): AsyncGenerator<Buffer> {
  for (const frame of frames) yield Buffer.from(frame);
}

async function collect(events: AsyncIterable<RelayedStreamEvent>): Promise<RelayedStreamEvent[]> {
  const out: RelayedStreamEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

describe("relayEvents", () => {
  it("when events are named, then names and data pass through unchanged and usage is reported before its event", async () => {
    const partial = JSON.stringify({ type: "image_generation.partial_image", b64_json: "AA==" });
    const done = JSON.stringify({ type: "image_generation.completed", b64_json: "AA==", usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 } });
    const events = await collect(
      relayEvents(bytes(`event: image_generation.partial_image\ndata: ${partial}\n\n`, `event: image_generation.completed\ndata: ${done}\n\n`), names),
    );
    expect(events).toEqual([
      { type: "event", event: "image_generation.partial_image", data: partial },
      { type: "usage", totalTokens: 3 },
      { type: "event", event: "image_generation.completed", data: done },
    ]);
  });

  it("when events are data-only and end with [DONE], then [DONE] is passed on and ends the relay", async () => {
    const delta = JSON.stringify({ type: "transcript.text.delta", delta: "Hi" });
    const events = await collect(relayEvents(bytes(`data: ${delta}\n\n`, "data: [DONE]\n\n", `data: ${delta}\n\n`), names));
    expect(events).toEqual([
      { type: "event", event: undefined, data: delta },
      { type: "event", event: undefined, data: "[DONE]" },
    ]);
  });

  it("when the upstream sends an error event, then it becomes an error naming the public model, and the relay stops", async () => {
    const failure = JSON.stringify({ error: { message: "gpt-image-1 failed", type: "server_error", code: "boom" } });
    const events = await collect(relayEvents(bytes(`data: ${failure}\n\n`, `data: {"type":"late"}\n\n`), names));
    expect(events).toEqual([{ type: "error", error: { message: "image failed", type: "server_error", code: "boom" } }]);
  });

  it("when the body fails mid-way, then the relay ends with an error event", async () => {
    async function* broken(): AsyncGenerator<Buffer> {
      yield Buffer.from(`data: {"type":"a"}\n\n`);
      throw Object.assign(new Error("socket hang up"), { code: "UND_ERR_SOCKET" });
    }
    const events = await collect(relayEvents(broken(), names));
    expect(events.at(-1)).toMatchObject({ type: "error", error: { code: "upstream_error" } });
  });
});
