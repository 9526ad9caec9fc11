import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  startAnthropicUpstream,
  startCohereUpstream,
  startMistralUpstream,
  startOpenAIUpstream,
  startTavilyUpstream,
  type TavilyUpstream,
  type UpstreamEmulator,
} from "@gw/testkit";
import { eventually } from "./harness";
import { adminGet, handCost, type LedgerRecord, ledgerRecord, normalUsd, perToken, sumUsd } from "./ledger-helpers";
import { newWorkspaceKey, startGatewayTarget, targetNames, testPlans, type GatewayTarget } from "./targets";

/**
 * The usage ledger end to end, in both ways of running: every kind of call is recorded once under
 * the `x-request-id` its caller saw, with the usage the upstream reported (streams, translated
 * routes, async jobs and tools included) and a cost equal to the configured price times the units,
 * computed here by hand.
 */
const KEYS = { oa: "sk-ledger-oa", ant: "sk-ant-ledger", co: "co-ledger", mis: "mis-ledger", tv: "tvly-ledger" };
const up = {} as { oa: UpstreamEmulator; ant: UpstreamEmulator; co: UpstreamEmulator; mis: UpstreamEmulator; tv: TavilyUpstream };

const PRICES = {
  gpt: { input: "0.15", output: "0.6", cached: "0.075" },
  claude: { input: "3", output: "15", cached: "0.3", write: "3.75" },
  embed: { input: "0.02" },
  image: "0.04",
  tts: "0.015",
  stt: "0.0001",
  ocr: "0.001",
  rerank: "0.002",
  webtool: "0.008",
};

beforeAll(async () => {
  // Caching thresholds lowered so a test prompt of a few hundred tokens is cached as a long one is.
  up.oa = await startOpenAIUpstream({ apiKey: KEYS.oa, cacheMinTokens: 128 });
  up.ant = await startAnthropicUpstream({ apiKey: KEYS.ant, cacheMinTokens: 16 });
  up.co = await startCohereUpstream({ apiKey: KEYS.co });
  up.mis = await startMistralUpstream({ apiKey: KEYS.mis });
  up.tv = await startTavilyUpstream({ apiKey: KEYS.tv });
});
afterAll(async () => {
  await Promise.all(Object.values(up).map((u) => u?.close()));
});

const config = () => `
providers:
  oa:      { kind: openai,    base_url: "${up.oa.url}",  api_key_env: LEDGER_OA }
  ant:     { kind: anthropic, base_url: "${up.ant.url}", api_key_env: LEDGER_ANT }
  co:      { kind: cohere,    base_url: "${up.co.url}",  api_key_env: LEDGER_CO }
  mis:     { kind: mistral,   base_url: "${up.mis.url}", api_key_env: LEDGER_MIS }
  webtool: { kind: tavily,    base_url: "${up.tv.url}",  api_key_env: LEDGER_TV, price: { per_call: ${PRICES.webtool} } }
models:
  gpt:     { type: chat, routes: [{ provider: oa, model: gpt-4o-mini }],
             price: { input_per_mtok: ${PRICES.gpt.input}, output_per_mtok: ${PRICES.gpt.output}, cached_input_per_mtok: ${PRICES.gpt.cached} } }
  claude:  { type: chat, routes: [{ provider: ant, model: claude-sonnet-4-5 }],
             price: { input_per_mtok: ${PRICES.claude.input}, output_per_mtok: ${PRICES.claude.output}, cached_input_per_mtok: ${PRICES.claude.cached}, cache_write_per_mtok: ${PRICES.claude.write} } }
  mystery: { type: chat, routes: [{ provider: oa, model: mystery-model-9000 }] }
  reasoner: { type: chat, routes: [{ provider: oa, model: o4-mini }],
             price: { input_per_mtok: ${PRICES.gpt.input}, output_per_mtok: ${PRICES.gpt.output}, cached_input_per_mtok: ${PRICES.gpt.cached} } }
  embed:   { type: embedding, routes: [{ provider: oa, model: text-embedding-3-small }], price: { input_per_mtok: ${PRICES.embed.input} } }
  image:   { type: image, routes: [{ provider: oa, model: gpt-image-1 }], price: { per_image: ${PRICES.image} } }
  tts:     { type: speech, routes: [{ provider: oa, model: tts-1 }], price: { per_1k_chars: ${PRICES.tts} } }
  stt:     { type: transcription, routes: [{ provider: oa, model: whisper-1 }], price: { per_audio_second: ${PRICES.stt} } }
  ocr:     { type: ocr, routes: [{ provider: mis, model: mistral-ocr-latest }], price: { per_page: ${PRICES.ocr} } }
  rerank:  { type: rerank, routes: [{ provider: co, model: rerank-v3.5 }], price: { per_call: ${PRICES.rerank} } }
${testPlans}`;
const env = { LEDGER_OA: KEYS.oa, LEDGER_ANT: KEYS.ant, LEDGER_CO: KEYS.co, LEDGER_MIS: KEYS.mis, LEDGER_TV: KEYS.tv };

interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
}
interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

for (const name of targetNames) {
  describe(`when calls go through ${name}, then the ledger records each once, exactly`, () => {
    let gw: GatewayTarget;
    let key: string;
    let workspaceId: string;
    let keyId: string;
    const recorded: LedgerRecord[] = [];

    beforeAll(async () => {
      gw = await startGatewayTarget(name, config(), env);
      ({ key, workspaceId, keyId } = await newWorkspaceKey(
        gw,
        { name: "ledger", models: ["*"] },
        { models: ["gpt", "claude", "mystery", "reasoner", "embed", "image", "tts", "stt", "ocr", "rerank"] },
      ));
    }, 180_000);
    afterAll(() => gw?.stop());

    const call = async (path: string, init: { body?: unknown; form?: FormData; method?: string } = {}) => {
      const headers: Record<string, string> = { authorization: `Bearer ${key}` };
      let body: BodyInit | undefined;
      if (init.form) body = init.form;
      else if (init.body !== undefined) {
        headers["content-type"] = "application/json";
        body = JSON.stringify(init.body);
      }
      const res = await fetch(`${gw.baseURL}${path}`, { method: init.method ?? (body ? "POST" : "GET"), headers, body });
      const requestId = res.headers.get("x-request-id") ?? "";
      const text = await res.text();
      expect(requestId).toMatch(/^req_/);
      return { status: res.status, requestId, text, json: () => JSON.parse(text) as Record<string, unknown> };
    };
    const record = async (requestId: string) => {
      const r = await ledgerRecord(gw, requestId);
      recorded.push(r);
      expect(r).toMatchObject({ request_id: requestId, workspace_id: workspaceId, key_id: keyId });
      return r;
    };
    const tokensOfOpenAI = (u: OpenAIUsage) => ({
      input_tokens: u.prompt_tokens,
      output_tokens: u.completion_tokens,
      cached_input_tokens: u.prompt_tokens_details?.cached_tokens ?? null,
      reasoning_tokens: u.completion_tokens_details?.reasoning_tokens ?? null,
    });
    const gptCost = (u: OpenAIUsage) => {
      const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
      return handCost([
        [u.prompt_tokens - cached, perToken(PRICES.gpt.input)],
        [cached, perToken(PRICES.gpt.cached)],
        [u.completion_tokens, perToken(PRICES.gpt.output)],
      ]);
    };
    const tokensOfAnthropic = (u: AnthropicUsage) => {
      const read = u.cache_read_input_tokens ?? 0;
      const write = u.cache_creation_input_tokens ?? 0;
      return { input_tokens: u.input_tokens + read + write, output_tokens: u.output_tokens, cached_input_tokens: read, cache_write_tokens: write };
    };
    const claudeCost = (u: AnthropicUsage) =>
      handCost([
        [u.input_tokens, perToken(PRICES.claude.input)],
        [u.cache_read_input_tokens ?? 0, perToken(PRICES.claude.cached)],
        [u.cache_creation_input_tokens ?? 0, perToken(PRICES.claude.write)],
        [u.output_tokens, perToken(PRICES.claude.output)],
      ]);
    const messages = [{ role: "user", content: "what does the ledger record for this question" }];

    it("then a chat completion is recorded with the upstream's usage, the deployment and the configured price", async () => {
      const answer = await call("/chat/completions", { body: { model: "gpt", messages } });
      expect(answer.status).toBe(200);
      const usage = answer.json().usage as OpenAIUsage;
      const r = await record(answer.requestId);
      expect(r).toMatchObject({
        route: "/v1/chat/completions",
        model: "gpt",
        provider: "oa",
        upstream_model: "gpt-4o-mini",
        attempts: 1,
        status: 200,
        stream: false,
        error_type: null,
        ...tokensOfOpenAI(usage),
      });
      expect(normalUsd(r.cost_usd)).toBe(gptCost(usage));
      expect(r.price_version).toMatch(/^config:/);
      expect(r.duration_ms).toBeGreaterThan(0);
      expect(Date.parse(r.started_at)).toBeLessThanOrEqual(Date.now());
    });

    it("then a streamed chat completion is recorded with the usage chunk's numbers and a time to first token", async () => {
      const answer = await call("/chat/completions", { body: { model: "gpt", messages, stream: true, stream_options: { include_usage: true } } });
      const chunks = answer.text
        .split("\n")
        .filter((l) => l.startsWith("data: {"))
        .map((l) => JSON.parse(l.slice(6)) as { usage?: OpenAIUsage | null });
      const usage = chunks.find((c) => c.usage)?.usage as OpenAIUsage;
      const r = await record(answer.requestId);
      expect(r).toMatchObject({ stream: true, status: 200, ...tokensOfOpenAI(usage) });
      expect(r.ttft_ms).not.toBeNull();
      expect(normalUsd(r.cost_usd)).toBe(gptCost(usage));
    });

    it("then an Anthropic message is recorded with its input, cache read and cache write as Anthropic reported them", async () => {
      const answer = await call("/messages", { body: { model: "claude", max_tokens: 64, messages } });
      const usage = answer.json().usage as AnthropicUsage;
      const r = await record(answer.requestId);
      expect(r).toMatchObject({ route: "/v1/messages", provider: "ant", upstream_model: "claude-sonnet-4-5", ...tokensOfAnthropic(usage) });
      expect(normalUsd(r.cost_usd)).toBe(claudeCost(usage));
    });

    it("then a chat completion translated to Anthropic, plain and streamed, is recorded in Anthropic's own figures", async () => {
      const native = (await call("/messages", { body: { model: "claude", max_tokens: 64, messages } })).json().usage as AnthropicUsage;
      const plain = await call("/chat/completions", { body: { model: "claude", max_tokens: 64, messages } });
      const streamed = await call("/chat/completions", { body: { model: "claude", max_tokens: 64, messages, stream: true } });
      for (const answer of [plain, streamed]) {
        expect(answer.status).toBe(200);
        const r = await record(answer.requestId);
        expect(r).toMatchObject({ route: "/v1/chat/completions", provider: "ant", ...tokensOfAnthropic(native) });
        expect(normalUsd(r.cost_usd)).toBe(claudeCost(native));
      }
    });

    it("then prompt-cache reads and writes and reasoning tokens are recorded as reported and priced at their own rates", async () => {
      const long = Array.from({ length: 300 }, (_, i) => `clause ${i} of the standing instructions.`).join(" ");
      // Anthropic: the first call writes the marked system prompt to the cache, the second reads it.
      const cachedCall = () =>
        call("/messages", {
          body: { model: "claude", max_tokens: 32, system: [{ type: "text", text: `${name} ${long}`, cache_control: { type: "ephemeral" } }], messages },
        });
      for (const expectWrite of [true, false]) {
        const answer = await cachedCall();
        const usage = answer.json().usage as AnthropicUsage;
        expect(expectWrite ? usage.cache_creation_input_tokens : usage.cache_read_input_tokens).toBeGreaterThan(0);
        const r = await record(answer.requestId);
        expect(r).toMatchObject(tokensOfAnthropic(usage));
        expect(normalUsd(r.cost_usd)).toBe(claudeCost(usage));
      }
      // OpenAI: a repeated long prefix comes back as cached tokens, billed at the cached price.
      const prefix = [{ role: "system", content: `${name} ${long}` }];
      await call("/chat/completions", { body: { model: "gpt", messages: [...prefix, { role: "user", content: "first" }] } });
      const second = await call("/chat/completions", { body: { model: "gpt", messages: [...prefix, { role: "user", content: "second" }] } });
      const usage = second.json().usage as OpenAIUsage;
      expect(usage.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);
      const r = await record(second.requestId);
      expect(r).toMatchObject(tokensOfOpenAI(usage));
      expect(normalUsd(r.cost_usd)).toBe(gptCost(usage));
      // A reasoning model: its reasoning tokens are part of the output and shown apart.
      const reasoned = await call("/chat/completions", { body: { model: "reasoner", messages, reasoning_effort: "low" } });
      const reasoning = reasoned.json().usage as OpenAIUsage;
      expect(reasoning.completion_tokens_details?.reasoning_tokens).toBeGreaterThan(0);
      const rr = await record(reasoned.requestId);
      expect(rr).toMatchObject(tokensOfOpenAI(reasoning));
      expect(normalUsd(rr.cost_usd)).toBe(gptCost(reasoning));
    });

    it("then embeddings, images, speech, transcriptions, OCR and rerank are recorded in their own units and priced by them", async () => {
      const embed = await call("/embeddings", { body: { model: "embed", input: ["one two three four", "five"] } });
      const embedTokens = (embed.json().usage as { prompt_tokens: number }).prompt_tokens;
      expect(await record(embed.requestId)).toMatchObject({ input_tokens: embedTokens });
      expect(normalUsd(recorded.at(-1)?.cost_usd ?? null)).toBe(handCost([[embedTokens, perToken(PRICES.embed.input)]]));

      const image = await call("/images/generations", { body: { model: "image", prompt: "a ledger", n: 2 } });
      const imageRecord = await record(image.requestId);
      expect(imageRecord.units).toMatchObject({ images: 2 });
      expect(normalUsd(imageRecord.cost_usd)).toBe(handCost([[2, PRICES.image]]));

      const input = "Twelve characters of speech, give or take.";
      const speech = await call("/audio/speech", { body: { model: "tts", input, voice: "alloy" } });
      expect(speech.status).toBe(200);
      const speechRecord = await record(speech.requestId);
      expect(speechRecord.units).toMatchObject({ characters: input.length });
      expect(normalUsd(speechRecord.cost_usd)).toBe(handCost([[input.length / 1000, PRICES.tts]]));

      const form = new FormData();
      form.append("file", new Blob([Buffer.alloc(4096, 3)], { type: "audio/wav" }), "clip.wav");
      form.append("model", "stt");
      form.append("response_format", "verbose_json");
      const stt = await call("/audio/transcriptions", { form });
      const seconds = (stt.json().usage as { seconds: number }).seconds;
      const sttRecord = await record(stt.requestId);
      expect(sttRecord).toMatchObject({ model: "stt", units: { audio_seconds: seconds } });
      expect(normalUsd(sttRecord.cost_usd)).toBe(handCost([[seconds, PRICES.stt]]));

      const ocr = await call("/ocr", { body: { model: "ocr", document: { type: "document_url", document_url: "https://example.com/x.pdf" } } });
      const pages = (ocr.json().usage_info as { pages_processed: number }).pages_processed;
      const ocrRecord = await record(ocr.requestId);
      expect(ocrRecord.units).toMatchObject({ pages });
      expect(normalUsd(ocrRecord.cost_usd)).toBe(handCost([[pages, PRICES.ocr]]));

      const rerank = await call("/rerank", { body: { model: "rerank", query: "q", documents: ["a", "b"] } });
      expect(rerank.status).toBe(200);
      const rerankRecord = await record(rerank.requestId);
      expect(rerankRecord).toMatchObject({ route: "/v1/rerank", provider: "co" });
      expect(normalUsd(rerankRecord.cost_usd)).toBe(handCost([[1, PRICES.rerank]]));
    });

    it("then a web-tool call is one call at the tool's price", async () => {
      const search = await call("/tools/webtool/search", { body: { query: "usage ledgers" } });
      expect(search.status).toBe(200);
      const r = await record(search.requestId);
      expect(r).toMatchObject({ route: "/v1/tools/webtool/search", provider: "webtool", units: { calls: 1 }, status: 200 });
      expect(normalUsd(r.cost_usd)).toBe(handCost([[1, PRICES.webtool]]));
    });

    it("then an async job is recorded once, when it finishes, under the request id of the call that created it", async () => {
      const created = await call("/async/chat/completions", { body: { model: "gpt", messages } });
      expect(created.status).toBe(202);
      const jobId = created.json().id as string;
      const done = await eventually(async () => {
        const poll = await call(`/async/chat/completions/${jobId}`);
        const job = poll.json();
        return job.status === "completed" ? job : undefined;
      }, 30_000);
      const usage = (done.result as { usage: OpenAIUsage }).usage;
      const r = await record(created.requestId);
      expect(r).toMatchObject({ route: "/v1/async/chat/completions", job_id: jobId, status: 200, model: "gpt", provider: "oa", ...tokensOfOpenAI(usage) });
      expect(normalUsd(r.cost_usd)).toBe(gptCost(usage));
    });

    it("then a refusal at the door is recorded with its status and type, and a call without a key is not", async () => {
      const refused = await call("/embeddings", { body: { model: "not-allowed-here", input: "x" } });
      expect(refused.status).toBe(403);
      const r = await record(refused.requestId);
      expect(r).toMatchObject({ status: 403, model: "not-allowed-here", provider: null, input_tokens: null });
      expect(r.error_type).toBeTruthy();

      const anonymous = await fetch(`${gw.baseURL}/models`);
      expect(anonymous.status).toBe(401);
      const id = anonymous.headers.get("x-request-id") ?? "";
      // Give ingest the time a record would take (the refused call's record above is already in).
      await new Promise((r) => setTimeout(r, 300));
      expect((await adminGet(gw, `/admin/logs/${id}`)).status).toBe(404);
    });

    it("then a model with no known price is recorded with cost null", async () => {
      const answer = await call("/chat/completions", { body: { model: "mystery", messages } });
      expect(answer.status).toBe(200);
      const r = await record(answer.requestId);
      expect(r).toMatchObject({ model: "mystery", upstream_model: "mystery-model-9000", cost_usd: null, price_version: null });
      expect(r.input_tokens).toBeGreaterThan(0);
    });

    it("then the usage query and the month's statement add up to the records", async () => {
      const { body } = await adminGet(gw, `/admin/usage?workspace_id=${workspaceId}&group_by=model`);
      const rows = (body as { data: { model: string | null; requests: number; input_tokens: number; output_tokens: number }[] }).data;
      const byModel = new Map(rows.map((row) => [row.model, row]));
      const { body: all } = await adminGet(gw, `/admin/logs?workspace_id=${workspaceId}&limit=1000`);
      const records = (all as { data: LedgerRecord[] }).data;
      expect(records.length).toBeGreaterThanOrEqual(recorded.length);
      for (const model of ["gpt", "claude", "embed"]) {
        const mine = records.filter((r) => r.model === model);
        expect(byModel.get(model)).toMatchObject({
          requests: mine.length,
          input_tokens: mine.reduce((n, r) => n + (r.input_tokens ?? 0), 0),
          output_tokens: mine.reduce((n, r) => n + (r.output_tokens ?? 0), 0),
        });
      }
      const month = new Date().toISOString().slice(0, 7);
      const first = await adminGet(gw, `/admin/workspaces/${workspaceId}/statement?month=${month}`);
      expect(first.status).toBe(200);
      const statement = first.body as { total_usd: string; lines: { amount_usd: string }[] };
      expect(normalUsd(statement.total_usd)).toBe(sumUsd(records.map((r) => r.cost_usd)));
      expect(normalUsd(statement.total_usd)).toBe(sumUsd(statement.lines.map((l) => l.amount_usd)));
      // The month is still open (its statement is frozen only once it closes): the same lines again.
      const again = await adminGet(gw, `/admin/workspaces/${workspaceId}/statement?month=${month}`);
      expect((again.body as typeof statement).lines).toEqual(statement.lines);
      expect(statement.lines.length).toBeGreaterThan(0);
      const csv = await adminGet(gw, `/admin/workspaces/${workspaceId}/statement?month=${month}&format=csv`);
      expect(csv.status).toBe(200);
      expect(csv.text.split("\n")[0]).toMatch(/amount/i);
    });
  });
}
