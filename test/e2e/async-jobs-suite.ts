import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertOpenAI,
  speechBytes,
  startAnthropicUpstream,
  startCohereUpstream,
  startMistralUpstream,
  startOpenAIUpstream,
  type UpstreamEmulator,
} from "@gw/testkit";
import { eventually } from "./harness";
import { newWorkspaceKey, startGatewayTarget, type GatewayTarget, type TargetName, testPlans } from "./targets";

/**
 * Async jobs through ingress, in the mesh (JetStream) and the embedded default (in-process bus):
 * creation answers a job id, the poll answers the regular route's exact result (binary as base64),
 * errors in the route's envelope, workspace isolation, idempotency keys and poll guidance.
 */
const KEYS = { oa: "sk-async-oa", ant: "sk-ant-async", co: "co-async", mis: "mis-async" };
let oa: UpstreamEmulator;
let ant: UpstreamEmulator;
let co: UpstreamEmulator;
let mis: UpstreamEmulator;

const config = () => `
providers:
  oa:  { kind: openai,    base_url: "${oa.url}",  api_key_env: ASYNC_OA, max_retries: 0 }
  ant: { kind: anthropic, base_url: "${ant.url}", api_key_env: ASYNC_ANT }
  co:  { kind: cohere,    base_url: "${co.url}",  api_key_env: ASYNC_CO }
  mis: { kind: mistral,   base_url: "${mis.url}", api_key_env: ASYNC_MIS }
models:
  gpt:    { type: chat,          routes: [{ provider: oa, model: gpt-4o-mini }] }
  claude: { type: chat,          routes: [{ provider: ant, model: claude-sonnet-4-5 }] }
  embed:  { type: embedding,     routes: [{ provider: oa, model: text-embedding-3-small }] }
  rr:     { type: rerank,        routes: [{ provider: co, model: rerank-v3.5 }] }
  tts:    { type: speech,        routes: [{ provider: oa, model: tts-1 }] }
  stt:    { type: transcription, routes: [{ provider: oa, model: whisper-1 }] }
  instr:  { type: completion,    routes: [{ provider: oa, model: gpt-3.5-turbo-instruct }] }
  image:  { type: image,         routes: [{ provider: oa, model: gpt-image-1 }] }
  ocr:    { type: ocr,           routes: [{ provider: mis, model: mistral-ocr-latest }] }
${testPlans}`;
const env = { ASYNC_OA: KEYS.oa, ASYNC_ANT: KEYS.ant, ASYNC_CO: KEYS.co, ASYNC_MIS: KEYS.mis };

interface Job {
  id: string;
  status: string;
  created_at: number;
  result?: Record<string, unknown>;
  error?: Record<string, unknown>;
}

/**
 * The suite for one target; each target has a test file of its own (async-jobs.<target>.e2e.test.ts),
 * so that the two run side by side in the suite's workers rather than one after the other.
 */
export function asyncJobsSuite(name: TargetName): void {
  beforeAll(async () => {
    oa = await startOpenAIUpstream({ apiKey: KEYS.oa });
    ant = await startAnthropicUpstream({ apiKey: KEYS.ant });
    co = await startCohereUpstream({ apiKey: KEYS.co });
    mis = await startMistralUpstream({ apiKey: KEYS.mis });
  });
  afterAll(async () => {
    await Promise.all([oa?.close(), ant?.close(), co?.close(), mis?.close()]);
  });

  describe(`when async jobs run through ${name}`, () => {
    let gw: GatewayTarget;
    let key: string;
    let sameWorkspaceKey: string;
    let otherWorkspaceKey: string;

    beforeAll(async () => {
      gw = await startGatewayTarget(name, config(), env);
      const first = await newWorkspaceKey(gw, { name: "async", models: ["*"] });
      key = first.key;
      const admin = await fetch(`${gw.adminURL}/admin/workspaces/${first.workspaceId}/keys`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.adminToken}`, "content-type": "application/json" },
        body: "{}",
      });
      sameWorkspaceKey = ((await admin.json()) as { key: string }).key;
      otherWorkspaceKey = (await newWorkspaceKey(gw, { name: "other", models: ["*"] })).key;
    }, 180_000);
    afterAll(async () => {
      await gw?.stop();
      for (const up of [oa, ant, co, mis]) up.reset();
    });

    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}, as = key) => {
      const res = await fetch(`${gw.baseURL}${path}`, {
        method,
        headers: { authorization: `Bearer ${as}`, ...(body instanceof FormData ? {} : { "content-type": "application/json" }), ...headers },
        body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
      });
      return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
    };
    const create = async (route: string, body: unknown, headers: Record<string, string> = {}) => {
      const res = await call("POST", `/async/${route}`, body, headers);
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      return res.body as unknown as Job;
    };
    const settle = async (route: string, id: string, as = key): Promise<Job> => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const res = await call("GET", `/async/${route}/${id}`, undefined, {}, as);
        expect(res.status).toBe(200);
        const job = res.body as unknown as Job;
        if (job.status === "completed" || job.status === "failed") {
          expect(res.headers.get("retry-after")).toBeNull();
          return job;
        }
        expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(2);
        if (Date.now() > deadline) throw new Error(`job ${id} still ${job.status}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    it("then a chat job is created queued and completes with exactly the chat route's answer", async () => {
      const job = await create("chat/completions", { model: "gpt", messages: [{ role: "user", content: "async hello" }], max_tokens: 20 });
      expect(job).toEqual({ id: expect.stringMatching(/^job_[0-9a-f]{32}$/), status: "queued", created_at: expect.any(Number) });
      expect(Math.abs(job.created_at - Date.now() / 1000)).toBeLessThan(60);
      const done = await settle("chat/completions", job.id);
      expect(done.status).toBe("completed");
      assertOpenAI("CreateChatCompletionResponse", done.result);
      expect(done.result).toMatchObject({ model: "gpt", choices: [{ message: { role: "assistant", content: expect.stringContaining("async hello") } }] });
      expect(oa.requests.at(-1)?.headers.authorization).toBe(`Bearer ${KEYS.oa}`);
    });

    it("then a job still running says so, with retry-after guidance of a few seconds", async () => {
      oa.script({ delayMs: 1_500 });
      const job = await create("chat/completions", { model: "gpt", messages: [{ role: "user", content: "slow" }] });
      const polled = await call("GET", `/async/chat/completions/${job.id}`);
      expect(["queued", "processing"]).toContain(polled.body.status);
      expect(polled.headers.get("retry-after")).toBe("2");
      expect((await settle("chat/completions", job.id)).status).toBe("completed");
    });

    it("then a poll that prefers to wait (RFC 7240) answers once the job finishes, or with its status at the end of the wait", async () => {
      oa.script({ delayMs: 1_500 });
      const job = await create("chat/completions", { model: "gpt", messages: [{ role: "user", content: "wait for me" }] });
      const started = Date.now();
      // Asked for more than the most a poll waits: it waits 8 s at most, and says so.
      const done = await call("GET", `/async/chat/completions/${job.id}`, undefined, { prefer: "wait=30" });
      // Woken by the finish, not by the end of its 8 s wait (the upstream takes 1.5 s).
      expect(Date.now() - started).toBeLessThan(7_000);
      expect(done.status).toBe(200);
      expect(done.headers.get("preference-applied")).toBe("wait=8");
      expect(done.body).toMatchObject({
        id: job.id,
        status: "completed",
        result: { choices: [{ message: { content: expect.stringContaining("wait for me") } }] },
      });

      oa.script({ delayMs: 4_000 });
      const slow = await create("chat/completions", { model: "gpt", messages: [{ role: "user", content: "slower" }] });
      const polled = await call("GET", `/async/chat/completions/${slow.id}`, undefined, { prefer: "respond-async, wait=1" });
      expect(polled.headers.get("preference-applied")).toBe("wait=1");
      expect(["queued", "processing"]).toContain(polled.body.status);
      expect(polled.headers.get("retry-after")).toBe("2");
      // Another workspace waits for nothing: the job is not there for it.
      const other = await call("GET", `/async/chat/completions/${slow.id}`, undefined, { prefer: "wait=30" }, otherWorkspaceKey);
      expect(other.status).toBe(404);
      expect(other.headers.get("preference-applied")).toBeNull();
      expect((await settle("chat/completions", slow.id)).status).toBe("completed");
    });

    it("then messages, embeddings, rerank, speech and transcription jobs answer as their routes do", async () => {
      const [messages, embeddings, rerank, speech] = await Promise.all([
        create("messages", { model: "claude", max_tokens: 50, messages: [{ role: "user", content: "hi claude" }] }),
        create("embeddings", { model: "embed", input: ["one", "two"] }),
        create("rerank", { model: "rr", query: "capital of France", documents: ["Berlin", "Paris is the capital of France"], top_n: 1 }),
        create("audio/speech", { model: "tts", input: "async speech", voice: "alloy", response_format: "wav" }),
      ]);
      const form = new FormData();
      form.append("file", new Blob([Buffer.alloc(4096, 3)], { type: "audio/wav" }), "clip.wav");
      form.append("model", "stt");
      const transcription = await create("audio/transcriptions", form);

      expect((await settle("messages", messages.id)).result).toMatchObject({ type: "message", role: "assistant", model: "claude" });
      const emb = (await settle("embeddings", embeddings.id)).result!;
      assertOpenAI("CreateEmbeddingResponse", emb);
      expect((emb.data as unknown[]).length).toBe(2);
      const rr = (await settle("rerank", rerank.id)).result!;
      expect(rr.results).toEqual([expect.objectContaining({ index: 1 })]);
      const audio = (await settle("audio/speech", speech.id)).result!;
      expect(audio).toMatchObject({ object: "binary", content_type: "audio/wav" });
      expect(Buffer.from(audio.data as string, "base64").equals(speechBytes({ input: "async speech", response_format: "wav" }))).toBe(true);
      expect((await settle("audio/transcriptions", transcription.id)).result).toMatchObject({ text: expect.any(String) });
    });

    it("then requests and results larger than a bus message complete: a 9 MB OCR document, a 25 MB upload, a 20 MB speech file", async () => {
      // Larger than the job bus carries (NATS's 1 MiB here, the in-process bus's 8 MiB): the request
      // stays with the jobs service, and the worker reads it from there.
      const pdf = `data:application/pdf;base64,${"A".repeat(9 * 1024 * 1024)}`;
      const ocr = await create("ocr", { model: "ocr", document: { type: "document_url", document_url: pdf } });
      expect((await settle("ocr", ocr.id)).result).toMatchObject({ object: "ocr", model: "ocr", pages: expect.any(Array) });
      const ocrCall = mis.requests.find((r) => JSON.stringify(r.body).includes(pdf.slice(0, 64)));
      expect(ocrCall?.body).toMatchObject({ document: { document_url: pdf } });

      const upload = Buffer.alloc(25_000_000, 7);
      const form = new FormData();
      form.append("file", new Blob([upload], { type: "audio/wav" }), "long.wav");
      form.append("model", "stt");
      const transcription = await create("audio/transcriptions", form);
      // The emulator says how many bytes of audio it was sent: all of them.
      expect((await settle("audio/transcriptions", transcription.id)).result).toMatchObject({ text: "Transcribed 25000000 bytes from long.wav." });

      // A result too large for the finished event goes to the jobs service over HTTP, and the poll
      // streams it back from Postgres.
      const size = 20_000_000;
      oa.script({ audioBytes: size });
      const body = { model: "tts", input: "a very long speech", voice: "alloy", response_format: "wav" };
      const speech = await create("audio/speech", body);
      const audio = (await settle("audio/speech", speech.id)).result!;
      expect(audio).toMatchObject({ object: "binary", content_type: "audio/wav" });
      const bytes = Buffer.from(audio.data as string, "base64");
      expect(bytes.length).toBe(size);
      expect(bytes.equals(speechBytes(body, size))).toBe(true);
    }, 120_000);

    it("then responses, completions, images and OCR jobs answer as their routes do", async () => {
      const [responses, completions, images, ocr] = await Promise.all([
        create("responses", { model: "claude", input: "respond later" }),
        create("completions", { model: "instr", prompt: "Say this", max_tokens: 10 }),
        create("images/generations", { model: "image", prompt: "a fox", n: 1 }),
        create("ocr", { model: "ocr", document: { type: "document_url", document_url: "https://example.com/a.pdf" } }),
      ]);
      expect((await settle("responses", responses.id)).result).toMatchObject({ object: "response", status: "completed", model: "claude" });
      assertOpenAI("CreateCompletionResponse", (await settle("completions", completions.id)).result);
      assertOpenAI("ImagesResponse", (await settle("images/generations", images.id)).result);
      expect((await settle("ocr", ocr.id)).result).toMatchObject({ object: "ocr", model: "ocr", pages: expect.any(Array) });
    });

    it("then bad bodies, streams, unknown models and unknown routes are refused at creation like the regular route", async () => {
      expect(await call("POST", "/async/chat/completions", { model: "gpt", messages: [{ role: "user", content: "x" }], stream: true })).toMatchObject({
        status: 400,
        body: { error: { param: "stream" } },
      });
      expect(await call("POST", "/async/embeddings", { model: "embed" })).toMatchObject({ status: 400, body: { error: { param: "input" } } });
      expect(await call("POST", "/async/chat/completions", { model: "nope", messages: [{ role: "user", content: "x" }] })).toMatchObject({
        status: 404,
        body: { error: { code: "model_not_found" } },
      });
      expect(await call("POST", "/async/embeddings", { model: "gpt", input: "x" })).toMatchObject({ status: 400, body: { error: { param: "model" } } });
      expect((await call("POST", "/async/nothing/here", { model: "gpt" })).status).toBe(404);
      const messages = await call("POST", "/async/messages", { model: "claude", messages: [] });
      expect(messages).toMatchObject({ status: 400, body: { type: "error", error: { type: "invalid_request_error" } } });
    });

    it("then any key of the workspace reads the job, and every other workspace gets 404 as for no job at all", async () => {
      const job = await create("embeddings", { model: "embed", input: "mine" });
      expect((await settle("embeddings", job.id, sameWorkspaceKey)).status).toBe("completed");
      const foreign = await call("GET", `/async/embeddings/${job.id}`, undefined, {}, otherWorkspaceKey);
      const missing = await call("GET", `/async/embeddings/job_${"0".repeat(32)}`);
      expect(foreign.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(foreign.body.error).toMatchObject({ type: (missing.body.error as Record<string, unknown>).type, code: "not_found" });
      // The same id on another route is not this job either.
      expect((await call("GET", `/async/chat/completions/${job.id}`)).status).toBe(404);
    });

    it("then an upstream refusal fails the job with the route's error envelope", async () => {
      oa.script({ status: 400, body: { error: { message: "Invalid value for 'messages'.", type: "invalid_request_error", param: "messages", code: null } } });
      const job = await create("chat/completions", { model: "gpt", messages: [{ role: "user", content: "refused" }] });
      const done = await settle("chat/completions", job.id);
      expect(done.status).toBe("failed");
      expect(done.error).toMatchObject({ error: { type: "invalid_request_error", message: expect.any(String) } });
      expect(done.result).toBeUndefined();
    });

    it("then an upstream that keeps failing fails the job after its retries, with a server error", async () => {
      oa.script(...Array.from({ length: 3 }, () => ({ status: 503 })));
      const job = await create("embeddings", { model: "embed", input: "always failing" });
      const done = await settle("embeddings", job.id);
      expect(done.status).toBe("failed");
      expect(done.error).toMatchObject({ error: { type: "server_error" } });
      // The route's own attempt, then two more deliveries of the job.
      expect(oa.requests.filter((r) => JSON.stringify(r.body).includes("always failing"))).toHaveLength(3);
    }, 30_000);

    it("then a finished job's token reservation is settled against its real usage, as a live call's is", async () => {
      const limited = (await newWorkspaceKey(gw, { name: "async-tpm", models: ["*"], limits: { tokens_per_minute: 6000 } })).key;
      const body = { model: "gpt", max_tokens: 2500, messages: [{ role: "user", content: "settle me" }] };
      // Created together, so that they may well finish together and be settled in one message.
      const created = await Promise.all([1, 2].map(() => call("POST", "/async/chat/completions", body, {}, limited)));
      for (const job of created) {
        expect(job.status).toBe(202);
        expect((await settle("chat/completions", job.body.id as string, limited)).status).toBe("completed");
      }
      // Two reservations of about 2,500 tokens each leave room for a third only once they are settled
      // down to the few tokens the jobs really used. Settlements reach ingress over the bus, each in
      // its own time: a live call is tried until the room it sees says both have arrived (each live
      // call's own reservation is settled as it answers).
      const remaining = await eventually(async () => {
        const res = await call("POST", "/chat/completions", body, {}, limited);
        const left = Number(res.headers.get("x-ratelimit-remaining-tokens"));
        return res.status === 200 && left > 6000 - 2600 - 200 ? left : undefined;
      }, 10_000);
      expect(remaining).toBeGreaterThan(6000 - 2600 - 200);
    });

    it("then the same Idempotency-Key and body return the same job, and a different body is a 409", async () => {
      const body = { model: "embed", input: "idempotent" };
      const headers = { "idempotency-key": `idem-${name.replace(/\W/g, "")}` };
      const first = await create("embeddings", body, headers);
      const again = await call("POST", "/async/embeddings", body, headers);
      expect(again.status).toBe(202);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.body.id).toBe(first.id);
      expect(await call("POST", "/async/embeddings", { ...body, input: "different" }, headers)).toMatchObject({
        status: 409,
        body: { error: { param: "idempotency-key" } },
      });
      await settle("embeddings", first.id);
      expect(oa.requests.filter((r) => JSON.stringify(r.body).includes("idempotent"))).toHaveLength(1);
      expect((await call("POST", "/async/embeddings", body, { "idempotency-key": "bad key with spaces" })).status).toBe(400);
    });
  });

  describe(`when a job outlives its deadline in ${name} (3 s attempts, 2 attempts, short retention)`, () => {
    let gw: GatewayTarget;
    let key: string;
    beforeAll(async () => {
      gw = await startGatewayTarget(name, config(), {
        ...env,
        // Long enough for the second attempt to reach a worker before its own deadline on a loaded
        // machine: with 1 s, the mesh under the whole suite superseded it before it ran (2026-12-01).
        GATEWAY_JOB_TIMEOUT_MS: "3000",
        GATEWAY_JOB_MAX_ATTEMPTS: "2",
        GATEWAY_JOB_SWEEP_MS: "200",
        GATEWAY_JOB_RETENTION_HOURS: "0.001",
      });
      ({ key } = await newWorkspaceKey(gw, { name: "deadlines", models: ["*"] }));
    });
    afterAll(async () => {
      await gw?.stop();
      oa.reset();
    });

    const get = async (id: string) => {
      const res = await fetch(`${gw.baseURL}/async/embeddings/${id}`, { headers: { authorization: `Bearer ${key}` } });
      return { status: res.status, body: (await res.json()) as Job };
    };

    it("then each attempt replaced is aborted first, it fails with a clear time-out after its last attempt, and is removed after retention", async () => {
      oa.script({ hang: true }, { hang: true });
      const res = await fetch(`${gw.baseURL}/async/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "embed", input: "never answered" }),
      });
      const { id } = (await res.json()) as Job;
      const calls = () => oa.requests.filter((r) => JSON.stringify(r.body).includes("never answered"));
      // The retry cancels the first attempt before it runs: its upstream call is closed, not left
      // running beside the second (which would be paid for twice).
      await eventually(() => expect(calls()).toHaveLength(2), 45_000);
      await eventually(() => expect(calls()[0]?.aborted).toBe(true), 10_000);
      // Not asserted here that the job is still running: a loaded machine can spend its second
      // attempt's few seconds before this line. The failure below names both attempts instead.
      let last: Job | undefined;
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        last = (await get(id)).body;
        if (last.status === "failed") break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(last).toMatchObject({ status: "failed", error: { error: { code: "upstream_timeout", message: expect.stringContaining("2 attempts") } } });
      // One upstream call per attempt.
      expect(calls()).toHaveLength(2);
      // Failing the job out of attempts cancels its last attempt too.
      await eventually(() => expect(calls()[1]?.aborted).toBe(true), 10_000);
      // Retention is 3.6 s: the finished job is then gone, as if it never was.
      const gone = Date.now() + 15_000;
      let status = 200;
      while (status === 200 && Date.now() < gone) {
        status = (await get(id)).status;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(status).toBe(404);
    }, 90_000);
  });
}
