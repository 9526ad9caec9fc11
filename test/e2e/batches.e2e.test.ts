import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertOpenAI, startAnthropicUpstream, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { eventually } from "./harness";
import { ledgerRecord } from "./ledger-helpers";
import { newWorkspaceKey, startGatewayTarget, targetNames, testPlans, type GatewayTarget } from "./targets";

/**
 * OpenAI's Files and Batch APIs through ingress, with the official `openai` client, in the mesh and
 * the embedded default: a mixed JSONL runs line by line as async jobs on any provider of the
 * workspace, the output and error files are OpenAI's lines, a malformed file fails validation
 * naming its lines, lines are paced by the key's limits, a cancelled batch writes what never ran as
 * errors, and another workspace sees none of it.
 */
const KEYS = { oa: "sk-batch-oa", ant: "sk-ant-batch" };
let oa: UpstreamEmulator;
let ant: UpstreamEmulator;

beforeAll(async () => {
  oa = await startOpenAIUpstream({ apiKey: KEYS.oa });
  ant = await startAnthropicUpstream({ apiKey: KEYS.ant });
});
afterAll(async () => {
  await Promise.all([oa?.close(), ant?.close()]);
});

const config = () => `
providers:
  oa:  { kind: openai,    base_url: "${oa.url}",  api_key_env: BATCH_OA, max_retries: 0 }
  ant: { kind: anthropic, base_url: "${ant.url}", api_key_env: BATCH_ANT }
models:
  gpt:    { type: chat,      routes: [{ provider: oa, model: gpt-4o-mini }] }
  claude: { type: chat,      routes: [{ provider: ant, model: claude-sonnet-4-5 }] }
  embed:  { type: embedding, routes: [{ provider: oa, model: text-embedding-3-small }] }
${testPlans}`;
const env = { BATCH_OA: KEYS.oa, BATCH_ANT: KEYS.ant };

interface OutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: Record<string, unknown> } | null;
  error: { code: string; message: string } | null;
}

const jsonl = (lines: unknown[]) => `${lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n")}\n`;
const chatLine = (customId: string, model: string, text: string) => ({
  custom_id: customId,
  method: "POST",
  url: "/v1/chat/completions",
  body: { model, messages: [{ role: "user", content: text }], max_tokens: 20 },
});
const parseLines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as OutputLine);

for (const name of targetNames) {
  describe(`when batches run through ${name}`, () => {
    let gw: GatewayTarget;
    let client: OpenAI;
    let other: OpenAI;

    beforeAll(async () => {
      gw = await startGatewayTarget(name, config(), env);
      const mine = await newWorkspaceKey(gw, { name: "batches", models: ["*"] });
      const theirs = await newWorkspaceKey(gw, { name: "batches-other", models: ["*"] });
      client = new OpenAI({ apiKey: mine.key, baseURL: gw.baseURL, maxRetries: 0 });
      other = new OpenAI({ apiKey: theirs.key, baseURL: gw.baseURL, maxRetries: 0 });
    }, 180_000);
    afterAll(async () => {
      await gw?.stop();
      oa.reset();
      ant.reset();
    });

    const finished = async (openai: OpenAI, id: string, statuses = ["completed", "failed", "expired", "cancelled"]) =>
      eventually(async () => {
        const batch = await openai.batches.retrieve(id);
        expect(statuses, JSON.stringify(batch)).toContain(batch.status);
        return batch;
      }, 60_000);

    it("then a mixed JSONL runs every good line on its own provider, and the output and error files say how each line ended", async () => {
      const input = jsonl([
        chatLine("gpt-1", "gpt", "batch line one"),
        chatLine("claude-1", "claude", "batch line two"),
        { custom_id: "bad-body", method: "POST", url: "/v1/chat/completions", body: { model: "gpt", messages: "not a list" } },
        chatLine("unknown-model", "no-such-model", "nowhere"),
        chatLine("gpt-2", "gpt", "batch line five"),
      ]);
      const file = await client.files.create({ file: await toFile(Buffer.from(input), "mixed.jsonl"), purpose: "batch" });
      expect(file).toMatchObject({ object: "file", purpose: "batch", filename: "mixed.jsonl", bytes: Buffer.byteLength(input), status: "processed" });
      expect(file.id).toMatch(/^file-[A-Za-z0-9]+$/);
      expect(file.expires_at! - file.created_at).toBe(30 * 86_400);
      expect(await client.files.retrieve(file.id)).toEqual(file);

      const upstreamCalls = oa.requests.length + ant.requests.length;
      const created = await client.batches.create({
        input_file_id: file.id,
        endpoint: "/v1/chat/completions",
        completion_window: "24h",
        metadata: { run: "mixed" },
      });
      expect(created).toMatchObject({ object: "batch", status: "validating", input_file_id: file.id, metadata: { run: "mixed" } });
      expect(created.id).toMatch(/^batch_[0-9a-f]{32}$/);
      expect(created.expires_at! - created.created_at).toBe(86_400);

      const batch = await finished(client, created.id);
      expect(batch.status).toBe("completed");
      expect(batch.request_counts).toEqual({ total: 5, completed: 3, failed: 2 });
      for (const at of [batch.in_progress_at, batch.finalizing_at, batch.completed_at]) expect(at).toEqual(expect.any(Number));
      // The two refused lines never reached a provider.
      expect(oa.requests.length + ant.requests.length - upstreamCalls).toBe(3);

      const output = parseLines(await (await client.files.content(batch.output_file_id!)).text());
      expect(output.map((l) => l.custom_id)).toEqual(["gpt-1", "claude-1", "gpt-2"]);
      for (const line of output) {
        expect(line.id).toMatch(/^batch_req_[0-9a-f]{32}$/);
        expect(line.error).toBeNull();
        expect(line.response?.status_code).toBe(200);
        expect(line.response?.request_id).toBe(line.id);
        assertOpenAI("CreateChatCompletionResponse", line.response?.body);
      }
      expect(output[0]!.response!.body).toMatchObject({ model: "gpt", choices: [{ message: { content: expect.stringContaining("batch line one") } }] });
      // Translated from Anthropic's Messages, as the regular chat route answers it.
      expect(output[1]!.response!.body).toMatchObject({ model: "claude", object: "chat.completion" });
      expect(ant.requests.at(-1)?.headers["x-api-key"]).toBe(KEYS.ant);

      const errors = parseLines(await (await client.files.content(batch.error_file_id!)).text());
      expect(errors.map((l) => [l.custom_id, l.response?.status_code])).toEqual([
        ["bad-body", 400],
        ["unknown-model", 404],
      ]);
      expect(errors[0]!.response!.body).toMatchObject({ error: { type: "invalid_request_error", param: "messages" } });
      expect(errors[1]!.response!.body).toMatchObject({ error: { message: expect.stringContaining("no-such-model") } });

      // The batch's usage is the sum of what the lines' answers reported.
      const usages = output.map((l) => l.response!.body.usage as { prompt_tokens: number; completion_tokens: number; total_tokens: number });
      expect(batch.usage).toMatchObject({
        input_tokens: usages.reduce((n, u) => n + u.prompt_tokens, 0),
        output_tokens: usages.reduce((n, u) => n + u.completion_tokens, 0),
        total_tokens: usages.reduce((n, u) => n + u.total_tokens, 0),
      });
      // Each line that ran is a request of the usage ledger, under its batch_req id, with its own tokens.
      for (const [index, line] of output.entries()) {
        const record = await ledgerRecord(gw, line.id);
        expect(record).toMatchObject({ request_id: line.id, model: index === 1 ? "claude" : "gpt", status: 200 });
        expect(record.input_tokens).toBe(usages[index]!.prompt_tokens);
        expect(record.output_tokens).toBe(usages[index]!.completion_tokens);
      }
      const outputFile = await client.files.retrieve(batch.output_file_id!);
      expect(outputFile).toMatchObject({ purpose: "batch_output", filename: `${batch.id}_output.jsonl` });

      const listed = await client.batches.list({ limit: 5 });
      expect(listed.data.map((b) => b.id)).toContain(batch.id);
      const files = await client.files.list({ purpose: "batch" });
      expect(files.data.map((f) => f.id)).toContain(file.id);
    });

    it("then a file with malformed lines fails validation naming each line, and runs none of them", async () => {
      const input = jsonl([
        chatLine("ok", "gpt", "fine"),
        "{not json",
        { ...chatLine("wrong-url", "gpt", "x"), url: "/v1/embeddings" },
        chatLine("ok", "gpt", "duplicate id"),
      ]);
      const file = await client.files.create({ file: await toFile(Buffer.from(input), "broken.jsonl"), purpose: "batch" });
      const calls = oa.requests.length;
      const created = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
      const batch = await finished(client, created.id);
      expect(batch.status).toBe("failed");
      expect(batch.failed_at).toEqual(expect.any(Number));
      expect(batch.errors?.data?.map((e) => [e.code, e.line])).toEqual([
        ["invalid_json_line", 2],
        ["mismatched_url", 3],
        ["duplicate_custom_id", 4],
      ]);
      expect(oa.requests.length).toBe(calls);
    });

    it("then files and batches belong to their workspace: another one gets 404s, and a deleted file is gone", async () => {
      const file = await client.files.create({ file: await toFile(Buffer.from(jsonl([chatLine("a", "gpt", "a")])), "mine.jsonl"), purpose: "batch" });
      const batch = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
      await expect(other.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
      await expect(other.files.content(file.id)).rejects.toMatchObject({ status: 404 });
      await expect(other.files.delete(file.id)).rejects.toMatchObject({ status: 404 });
      await expect(other.batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 });
      await expect(other.batches.cancel(batch.id)).rejects.toMatchObject({ status: 404 });
      await expect(other.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" })).rejects.toMatchObject({
        status: 404,
      });
      expect((await other.files.list()).data.map((f) => f.id)).not.toContain(file.id);
      expect((await other.batches.list()).data.map((b) => b.id)).not.toContain(batch.id);
      expect((await finished(client, batch.id)).status).toBe("completed");
      expect(await client.files.delete(file.id)).toEqual({ id: file.id, object: "file", deleted: true });
      await expect(client.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
      await expect(client.files.content(file.id)).rejects.toMatchObject({ status: 404 });
    });

    it("then Responses and embeddings batches run as well, and a file named in any script comes back under its name", async () => {
      const responses = jsonl([
        { custom_id: "r1", method: "POST", url: "/v1/responses", body: { model: "gpt", input: "responses line" } },
        { custom_id: "r2", method: "POST", url: "/v1/responses", body: { model: "claude", input: "translated line", max_output_tokens: 30 } },
      ]);
      const embeddings = jsonl([{ custom_id: "e1", method: "POST", url: "/v1/embeddings", body: { model: "embed", input: ["one", "two"] } }]);
      const responsesFile = await client.files.create({ file: await toFile(Buffer.from(responses), "データ.jsonl"), purpose: "batch" });
      const embeddingsFile = await client.files.create({ file: await toFile(Buffer.from(embeddings), "emb.jsonl"), purpose: "batch" });
      const [r, e] = await Promise.all([
        client.batches.create({ input_file_id: responsesFile.id, endpoint: "/v1/responses", completion_window: "24h" }),
        client.batches.create({ input_file_id: embeddingsFile.id, endpoint: "/v1/embeddings", completion_window: "24h" }),
      ]);
      const [rDone, eDone] = [await finished(client, r.id), await finished(client, e.id)];
      expect([rDone.status, eDone.status]).toEqual(["completed", "completed"]);
      const rLines = parseLines(await (await client.files.content(rDone.output_file_id!)).text());
      expect(rLines.map((l) => [l.custom_id, l.response?.body.object])).toEqual([
        ["r1", "response"],
        ["r2", "response"],
      ]);
      const rUsage = rLines.map((l) => l.response!.body.usage as { input_tokens: number; output_tokens: number });
      expect(rDone.usage).toMatchObject({
        input_tokens: rUsage.reduce((n, u) => n + u.input_tokens, 0),
        output_tokens: rUsage.reduce((n, u) => n + u.output_tokens, 0),
      });
      const [eLine] = parseLines(await (await client.files.content(eDone.output_file_id!)).text());
      expect(eLine?.response?.body).toMatchObject({ object: "list", data: [{ index: 0 }, { index: 1 }] });
      // The name in the download, as RFC 6266 carries one outside Latin-1.
      const raw = await fetch(`${gw.baseURL}/files/${responsesFile.id}/content`, { headers: { authorization: `Bearer ${client.apiKey}` } });
      expect(raw.status).toBe(200);
      expect(raw.headers.get("content-disposition")).toContain(`filename*=UTF-8''${encodeURIComponent("データ.jsonl")}`);
      expect(await raw.text()).toBe(responses);
    });

    it("then bad uploads and batch requests get OpenAI's 400s", async () => {
      await expect(client.files.create({ file: await toFile(Buffer.from("{}\n"), "x.jsonl"), purpose: "fine-tune" })).rejects.toMatchObject({
        status: 400,
        error: { param: "purpose" },
      });
      await expect(client.files.create({ file: await toFile(Buffer.from("{}"), "x.txt"), purpose: "batch" })).rejects.toMatchObject({ status: 400 });
      const file = await client.files.create({ file: await toFile(Buffer.from(jsonl([chatLine("a", "gpt", "a")])), "x.jsonl"), purpose: "batch" });
      await expect(
        client.batches.create({ input_file_id: file.id, endpoint: "/v1/audio/speech" as "/v1/chat/completions", completion_window: "24h" }),
      ).rejects.toMatchObject({ status: 400, error: { param: "endpoint" } });
      await expect(client.batches.create({ input_file_id: "file-nothere", endpoint: "/v1/chat/completions", completion_window: "24h" })).rejects.toMatchObject({
        status: 404,
      });
      await expect(
        client.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { k: "nul\u0000" } }),
      ).rejects.toMatchObject({ status: 400 });
      await expect(client.batches.list({ after: "not-a-batch" })).rejects.toMatchObject({ status: 400, error: { param: "after" } });
      await expect(client.files.list({ purpose: "nonsense" })).rejects.toMatchObject({ status: 400 });
    });

    it("then lines are admitted at the pace the key's limits allow, and a cancelled batch writes the lines it never ran as errors", async () => {
      const slow = await newWorkspaceKey(gw, { name: "batches-paced", models: ["*"] }, { limits: { requests_per_minute: 2 } });
      const paced = new OpenAI({ apiKey: slow.key, baseURL: gw.baseURL, maxRetries: 0 });
      const input = jsonl(Array.from({ length: 6 }, (_, i) => chatLine(`line-${i}`, "gpt", `paced ${i}`)));
      const file = await paced.files.create({ file: await toFile(Buffer.from(input), "paced.jsonl"), purpose: "batch" });
      const created = await paced.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
      // Creating the file and the batch took both requests of the minute: no line runs until it has passed.
      const running = await eventually(async () => {
        const batch = await paced.batches.retrieve(created.id);
        expect(batch.status).toBe("in_progress");
        return batch;
      }, 20_000);
      expect(running.request_counts).toEqual({ total: 6, completed: 0, failed: 0 });
      const cancelling = await paced.batches.cancel(created.id);
      expect(["cancelling", "cancelled"]).toContain(cancelling.status);
      expect(cancelling.cancelling_at).toEqual(expect.any(Number));
      const batch = await finished(paced, created.id);
      expect(batch.status).toBe("cancelled");
      expect(batch.cancelled_at).toEqual(expect.any(Number));
      expect(batch.request_counts).toEqual({ total: 6, completed: 0, failed: 6 });
      const errors = parseLines(await (await paced.files.content(batch.error_file_id!)).text());
      expect(errors.map((l) => l.custom_id)).toEqual(["line-0", "line-1", "line-2", "line-3", "line-4", "line-5"]);
      expect(errors.every((l) => l.response === null && l.error?.code === "batch_cancelled")).toBe(true);
      expect(batch.output_file_id).toBeUndefined();
      await expect(paced.batches.cancel(created.id)).resolves.toMatchObject({ status: "cancelled" });
      await expect(client.batches.cancel((await finished(client, (await client.batches.list()).data[0]!.id)).id)).rejects.toMatchObject({ status: 409 });
    });
  });
}
