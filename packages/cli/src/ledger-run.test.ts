import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "./run";

/** A stand-in admin API: records each request and answers with the canned reply. */
let server: Server;
let adminUrl: string;
const requests: { method: string; url: string; authorization: string | undefined }[] = [];
let reply: { status: number; type: string; body: string } = { status: 200, type: "application/json", body: "{}" };
const answer = (body: unknown, status = 200) => {
  reply = { status, type: "application/json", body: JSON.stringify(body) };
};

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push({ method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization });
    req.resume();
    req.on("end", () => res.writeHead(reply.status, { "content-type": reply.type }).end(reply.body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  adminUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  requests.length = 0;
});

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await runCli(argv, { adminUrl, adminToken: "admin-secret", out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

const usageRows = {
  object: "list",
  data: [
    {
      day: "2026-05-01",
      model: "gpt-4o-mini",
      requests: 1200,
      errors: 3,
      input_tokens: 1534000,
      output_tokens: 200000,
      cached_input_tokens: 1000,
      reasoning_tokens: null,
      cost_usd: 0.35,
      latency_ms_p50: 412.4,
      latency_ms_p95: 1830,
    },
    {
      day: "2026-05-01",
      model: "claude-sonnet",
      requests: 7,
      errors: 0,
      input_tokens: "900",
      output_tokens: 120,
      cached_input_tokens: null,
      reasoning_tokens: 40,
      // money comes as exact decimal text (a numeric column); counts may too
      cost_usd: "0.000123450000",
      latency_ms_p50: null,
      latency_ms_p95: null,
    },
  ],
};

describe("runCli: usage", () => {
  it("when usage is asked with filters, then the query and the admin token reach the API and a table with totals is printed", async () => {
    answer(usageRows);
    const { code, out, err } = await run(["usage", "--workspace", "ws_1", "--from", "2026-05-01", "--group-by", "day,model", "--tz", "Europe/Paris"]);
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(requests).toHaveLength(1);
    const sent = new URL(requests[0]!.url, adminUrl);
    expect(requests[0]).toMatchObject({ method: "GET", authorization: "Bearer admin-secret" });
    expect(sent.pathname).toBe("/admin/usage");
    expect(Object.fromEntries(sent.searchParams)).toEqual({ workspace_id: "ws_1", from: "2026-05-01", group_by: "day,model", tz: "Europe/Paris" });
    expect(out).toBe(
      [
        "day         model          requests  errors      input   output  cached  reasoning    cost_usd  p50_ms  p95_ms",
        "2026-05-01  gpt-4o-mini       1,200       3  1,534,000  200,000   1,000          -        0.35     412   1,830",
        "2026-05-01  claude-sonnet         7       0        900      120       -         40  0.00012345       -       -",
        "total                         1,207       3  1,534,900  200,120   1,000         40  0.35012345       -       -",
        "",
      ].join("\n"),
    );
  });

  it("when usage is asked with --json, then the API's answer is printed as JSON", async () => {
    answer(usageRows);
    const { code, out } = await run(["usage", "--json"]);
    expect(code).toBe(0);
    expect(requests[0]!.url).toBe("/admin/usage");
    expect(JSON.parse(out)).toEqual(usageRows);
  });

  it("when no usage matches, then it says so", async () => {
    answer({ object: "list", data: [] });
    expect((await run(["usage"])).out).toBe("no usage matches\n");
  });
});

const record = {
  request_id: "req_abc",
  started_at: Date.UTC(2026, 4, 1, 9, 30, 0),
  duration_ms: 812.6,
  workspace_id: "ws_1",
  key_id: "key_2",
  route: "/v1/chat/completions",
  model: "gpt-4o-mini",
  status: 200,
  stream: true,
  outcome: { provider: "openai", attempts: 2, usage: { input_tokens: 1500, output_tokens: 42 } },
};

describe("runCli: logs", () => {
  it("when logs lists records, then one line each is printed and the next page's cursor after them", async () => {
    answer({
      object: "list",
      data: [record, { ...record, request_id: "req_def", status: 429, error_type: "rate_limit_error", outcome: undefined, cost_usd: "0.000000" }],
      next_cursor: "c_2",
    });
    const { code, out } = await run(["logs", "--key", "key_2", "--status", "429", "--limit", "2"]);
    expect(code).toBe(0);
    expect(requests[0]!.url).toBe("/admin/logs?key_id=key_2&status=429&limit=2");
    expect(requests[0]!.authorization).toBe("Bearer admin-secret");
    expect(out).toBe(
      [
        "time                      request_id  workspace  key    route                 model        status   ms  input  output  cost_usd",
        "2026-05-01T09:30:00.000Z  req_abc     ws_1       key_2  /v1/chat/completions  gpt-4o-mini     200  813  1,500      42         -",
        "2026-05-01T09:30:00.000Z  req_def     ws_1       key_2  /v1/chat/completions  gpt-4o-mini     429  813      -       -      0.00",
        "more: add --cursor c_2",
        "",
      ].join("\n"),
    );
  });

  it("when logs is given a request id, then that record's fields are printed one per line", async () => {
    answer(record);
    const { code, out } = await run(["logs", "req_abc"]);
    expect(code).toBe(0);
    expect(requests[0]!.url).toBe("/admin/logs/req_abc");
    expect(out).toBe(
      [
        "request_id                   req_abc",
        "started_at                   2026-05-01T09:30:00.000Z",
        "duration_ms                  812.6",
        "workspace_id                 ws_1",
        "key_id                       key_2",
        "route                        /v1/chat/completions",
        "model                        gpt-4o-mini",
        "status                       200",
        "stream                       true",
        "outcome.provider             openai",
        "outcome.attempts             2",
        "outcome.usage.input_tokens   1500",
        "outcome.usage.output_tokens  42",
        "",
      ].join("\n"),
    );
  });

  it("when the record does not exist, then the API's 404 message is printed and the exit code is 1", async () => {
    answer({ error: { message: "No request req_zzz", type: "invalid_request_error", code: "not_found" } }, 404);
    const { code, err } = await run(["logs", "req_zzz"]);
    expect(code).toBe(1);
    expect(err).toBe("error (404): No request req_zzz\n");
  });
});

const statement = {
  workspace_id: "ws_1",
  month: "2026-05",
  currency: "usd",
  lines: [
    { model: "gpt-4o-mini", item: "input_tokens", units: "1534900", unit: "token", unit_price_usd: "0.000000150000", amount_usd: "0.230235000000" },
    { tool: "webtool", item: "search", units: 12, unit: "call", unit_price_usd: 0.008, amount_usd: 0.096 },
  ],
  total_usd: "0.326235000000",
};

describe("runCli: statement", () => {
  it("when a statement is asked, then its lines and total are printed", async () => {
    answer(statement);
    const { code, out } = await run(["statement", "ws_1", "--month", "2026-05"]);
    expect(code).toBe(0);
    expect(requests[0]).toMatchObject({ url: "/admin/workspaces/ws_1/statement?month=2026-05", authorization: "Bearer admin-secret" });
    expect(out).toBe(
      [
        "workspace ws_1  month 2026-05  currency usd",
        "model/tool   item              units  unit   unit_price_usd  amount_usd",
        "gpt-4o-mini  input_tokens  1,534,900  token      0.00000015    0.230235",
        "webtool      search               12  call            0.008       0.096",
        "total_usd 0.326235",
        "",
      ].join("\n"),
    );
  });

  it("when --csv is given, then format=csv is asked for and the body is printed byte for byte", async () => {
    const csv = 'model_or_tool,item,units\r\n"gpt-4o-mini, eu",input_tokens,1534900\r\n';
    reply = { status: 200, type: "text/csv; charset=utf-8", body: csv };
    const { code, out } = await run(["statement", "ws_1", "--month", "2026-05", "--csv"]);
    expect(code).toBe(0);
    expect(requests[0]!.url).toBe("/admin/workspaces/ws_1/statement?month=2026-05&format=csv");
    expect(out).toBe(csv);
  });

  it("when --csv is given and the API refuses, then its JSON error is printed, not the body", async () => {
    answer({ error: { message: "No workspace ws_9", type: "invalid_request_error", code: "not_found" } }, 404);
    const { code, out, err } = await run(["statement", "ws_9", "--month", "2026-05", "--csv"]);
    expect(code).toBe(1);
    expect(out).toBe("");
    expect(err).toBe("error (404): No workspace ws_9\n");
  });
});
