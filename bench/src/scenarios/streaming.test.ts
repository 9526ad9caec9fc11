import { describe, expect, it } from "vitest";
import { SseSplitter } from "../sse-timing";
import { chatCompletionFrames, upstreamModelName } from "../upstream/payloads";
import { checkChatStream } from "./streaming";

const events = (includeUsage: boolean) => new SseSplitter().push(Buffer.concat(chatCompletionFrames(4, includeUsage)));
const expected = { events: 1 + 4 + 1 + 1 + 1, model: upstreamModelName };

describe("checkChatStream", () => {
  it("when the stream is the upstream's, then it passes", () => {
    expect(checkChatStream(events(true), expected)).toBeUndefined();
  });

  it("when a chunk is missing, then it names the count", () => {
    const data = events(true);
    data.splice(2, 1);
    expect(checkChatStream(data, expected)).toMatch(/7 events, expected 8/);
  });

  it("when the usage chunk was left out, then it fails", () => {
    expect(checkChatStream(events(false), { ...expected, events: 7 })).toMatch(/usage chunk/);
  });

  it("when a chunk names another model, then it fails naming the model", () => {
    expect(checkChatStream(events(true), { ...expected, model: "gpt-4o-mini" })).toMatch(/names model gpt-4o-mini-2024-07-18, expected gpt-4o-mini/);
  });

  it("when two content chunks come in the wrong order, then it fails", () => {
    const data = events(true);
    [data[1], data[2]] = [data[2] as string, data[1] as string];
    expect(checkChatStream(data, expected)).toMatch(/content differs/);
  });

  it("when the stream does not end with [DONE], then it fails", () => {
    const data = events(true);
    data[data.length - 1] = "{}";
    expect(checkChatStream(data, expected)).toMatch(/\[DONE\]/);
  });
});
