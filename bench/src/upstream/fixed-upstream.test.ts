import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixedUpstream, type FixedUpstream } from "./fixed-upstream";
import { answerText, splitEvenly, upstreamModelName } from "./payloads";

const key = "sk-test";
let upstream: FixedUpstream;
let paced: FixedUpstream;

beforeAll(async () => {
  upstream = await startFixedUpstream({ apiKey: key, streamPieces: 5 });
  paced = await startFixedUpstream({ apiKey: key, streamPieces: 5, frameIntervalMs: 20 });
});
afterAll(async () => {
  await upstream.close();
  await paced.close();
});

interface Chunk {
  object: string;
  model: string;
  choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[];
  usage?: Record<string, unknown> | null;
}

/** The data of each event: the upstream frames data-only events, one per blank-line block. */
const sseData = (text: string) =>
  text
    .split("\n\n")
    .filter(Boolean)
    .map((e) => e.replace(/^data: /, ""));

const chat = (base: string, body: object, auth = `Bearer ${key}`) =>
  fetch(`${base}/chat/completions`, { method: "POST", headers: { authorization: auth, "content-type": "application/json" }, body: JSON.stringify(body) });

describe("the fixed upstream", () => {
  it("answers a chat request with the fixed completion and counts it", async () => {
    const before = upstream.answered;
    const res = await chat(upstream.url, { model: "m", messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; model: string; choices: { message: { content: string } }[] };
    expect(body.object).toBe("chat.completion");
    expect(body.model).toBe(upstreamModelName);
    expect(body.choices[0]?.message.content).toBe(answerText);
    expect(upstream.answered).toBe(before + 1);
  });

  it("refuses a wrong key like a provider, without counting it", async () => {
    const before = upstream.answered;
    const res = await chat(upstream.url, { model: "m" }, "Bearer nope");
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_api_key");
    expect(upstream.answered).toBe(before);
  });

  it("when a stream asks for usage, then it sends role, content, finish and usage chunks, then [DONE]", async () => {
    const res = await chat(upstream.url, { model: "m", messages: [], stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = sseData(await res.text());
    expect(events).toHaveLength(1 + 5 + 1 + 1 + 1);
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Chunk);
    expect(chunks.every((c) => c.object === "chat.completion.chunk" && c.model === upstreamModelName)).toBe(true);
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: "assistant", content: "", refusal: null });
    const content = chunks.slice(1, 6);
    expect(content.every((c) => c.choices[0]?.finish_reason === null && c.usage === null)).toBe(true);
    expect(content.map((c) => c.choices[0]?.delta.content).join("")).toBe(answerText);
    expect(chunks[6]?.choices[0]).toMatchObject({ delta: {}, finish_reason: "stop" });
    expect(chunks[6]?.usage).toBeNull();
    expect(chunks[7]?.choices).toEqual([]);
    expect(chunks[7]?.usage).toMatchObject({ prompt_tokens: 28, completion_tokens: 58, total_tokens: 86 });
  });

  it("when a stream does not ask for usage, then no chunk has a usage field and none carries it", async () => {
    const res = await chat(upstream.url, { model: "m", messages: [], stream: true });
    const events = sseData(await res.text());
    expect(events).toHaveLength(1 + 5 + 1 + 1);
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Chunk);
    expect(chunks.every((c) => !("usage" in c) && c.choices.length === 1)).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe(answerText);
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe("stop");
  });

  it("paces stream frames at the configured interval", async () => {
    const started = performance.now();
    const res = await chat(paced.url, { model: "m", messages: [], stream: true, stream_options: { include_usage: true } });
    const frames = sseData(await res.text()).length; // role, 5 pieces, finish, usage, [DONE]
    expect(frames).toBe(9);
    expect(performance.now() - started).toBeGreaterThanOrEqual(20 * (frames - 1) - 5);
  });

  it("answers 404 to other routes", async () => {
    expect((await fetch(`${upstream.url}/models`)).status).toBe(404);
  });
});

describe("splitEvenly", () => {
  it("splits without losing or reordering characters", () => {
    expect(splitEvenly("abcdefg", 3)).toEqual(["ab", "cd", "efg"]);
    expect(splitEvenly("ab", 5)).toEqual(["a", "b"]);
    expect(splitEvenly(answerText, 20).join("")).toBe(answerText);
  });
});

describe("the stats route", () => {
  it("reports how many chat requests were answered", async () => {
    const res = await fetch(new URL("/_bench/stats", upstream.url));
    expect(await res.json()).toEqual({ answered: upstream.answered });
  });
});
