import type { UsageRecord } from "@gw/contracts";
import type { Db } from "@gw/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BodyStore } from "../bodies";
import { addDecimal } from "../decimal";
import type { UsageRow } from "../queries/usage-query";
import { usageSourceHeader } from "../routes";
import { type LedgerRow, toLedgerRow } from "../ingest/ledger-row";
import { LedgerWriter } from "../ingest/ledger-writer";
import { RecordPartitions } from "../partitions";
import { freshWorkspace, identityOf, logger as silentLogger, PRICE_CHANGE, record, type RunningLedger, startLedger, testPricer, waitFor } from "./harness";

export interface OpenedLedgerDb {
  db: Db;
  dispose(): Promise<void>;
}

const SLOW = 120_000;
const H = 3_600_000;
const JAN = (day: number, hour = 0, minute = 0) => Date.UTC(2025, 0, day, hour, minute);

interface LogsPage {
  data: { request_id: string; started_at: string }[];
  next_cursor: string | null;
}

/**
 * The ledger end to end on one kind of database: records published on the (in-process) bus, then
 * read back through the service's routes and tables. Run on PGlite and on Postgres.
 */
export function describeLedger(label: string, open: () => Promise<OpenedLedgerDb>): void {
  describe(`${label}: usage ledger`, { timeout: 60_000 }, () => {
    let opened: OpenedLedgerDb;
    let ledger: RunningLedger;
    let now = JAN(25, 12);
    const db = () => opened.db;

    beforeAll(async () => {
      opened = await open();
      ledger = await startLedger({ db: opened.db, clock: () => now });
    }, SLOW);
    afterAll(async () => {
      await ledger?.stop();
      await opened?.dispose();
    }, SLOW);

    const ingest = async (records: UsageRecord[]) => {
      await ledger.publish(records);
      await ledger.settle();
    };
    const usage = async (query: string) => {
      const res = await ledger.get(`/v1/usage?${query}`);
      expect(res.status, await res.clone().text()).toBe(200);
      return { data: ((await res.json()) as { data: UsageRow[] }).data, source: res.headers.get(usageSourceHeader) };
    };
    const count = async (sql: string, params: unknown[]) => Number((await db().query<{ n: string }>(sql, params)).rows[0]?.n);

    describe("when a record is delivered more than once", () => {
      it("then it is one row and counted once, whether the copies share a batch or not", async () => {
        const ws = freshWorkspace();
        const once = record({ workspace_id: ws, started_at: JAN(10, 9) });
        const twice = record({ workspace_id: ws, started_at: JAN(10, 9, 30) });
        const third = record({ workspace_id: ws, started_at: JAN(10, 9, 45) });
        await ingest([once, twice, twice]); // the copies of `twice` arrive together
        await ingest([once, twice, third]); // and again, in later batches, beside a new record
        expect(await count("SELECT count(*) AS n FROM usage.records WHERE workspace_id = $1", [ws])).toBe(3);
        expect(await count("SELECT sum(requests) AS n FROM usage.hourly WHERE workspace_id = $1", [ws])).toBe(3);
        expect(await count("SELECT sum(requests) AS n FROM usage.hourly_models WHERE workspace_id = $1", [ws])).toBe(3);
        expect(await count("SELECT sum(units) AS n FROM usage.hourly_lines WHERE workspace_id = $1 AND item = 'output_tokens'", [ws])).toBe(300);
        const { data } = await usage(`workspace_id=${ws}&from=2025-01-10&to=2025-01-11`);
        expect(data).toMatchObject([{ requests: 3, input_tokens: 3000, output_tokens: 300 }]);
      });
    });

    describe("when the writer meets a batch with a record already written", () => {
      /** A writer whose record inserts are noted: "plain", or "skipping" (ON CONFLICT DO NOTHING). */
      const noted = (skipDuplicatesForMs: number) => {
        const statements: string[] = [];
        const spy: Db = Object.assign(Object.create(db()) as Db, {
          query: (sql: string, params?: unknown[]) => {
            if (sql.includes("INSERT INTO usage.records"))
              statements.push(sql.includes("ON CONFLICT DO NOTHING\n  RETURNING request_id") ? "skipping" : "plain");
            return db().query(sql, params);
          },
        });
        return { writer: new LedgerWriter(spy, new RecordPartitions(spy), { skipDuplicatesForMs }), statements };
      };
      const rows = (ws: string) => [9, 10, 11].map((minute) => toLedgerRow(record({ workspace_id: ws, started_at: JAN(11, 9, minute) }), testPricer()).row!);

      it("then only its new records are written and counted, and for the window after, batches skip duplicates from the start", async () => {
        const ws = freshWorkspace();
        const [a, b, c] = rows(ws) as [LedgerRow, LedgerRow, LedgerRow];
        const { writer, statements } = noted(60_000);
        expect(await writer.write([a])).toEqual({ inserted: [a], duplicates: 0 });
        expect(await writer.write([a, b])).toEqual({ inserted: [b], duplicates: 1 });
        expect(await writer.write([c])).toEqual({ inserted: [c], duplicates: 0 });
        expect(statements).toEqual(["plain", "plain", "skipping", "skipping"]);
        expect(await count("SELECT count(*) AS n FROM usage.records WHERE workspace_id = $1", [ws])).toBe(3);
        expect(await count("SELECT sum(requests) AS n FROM usage.hourly WHERE workspace_id = $1", [ws])).toBe(3);
        expect(await count("SELECT sum(requests) AS n FROM usage.hourly_models WHERE workspace_id = $1", [ws])).toBe(3);
        expect(await count("SELECT sum(units) AS n FROM usage.hourly_lines WHERE workspace_id = $1 AND item = 'input_tokens'", [ws])).toBe(3000);
      });

      it("then with no window the next batch is written plainly again", async () => {
        const [a, b, c] = rows(freshWorkspace()) as [LedgerRow, LedgerRow, LedgerRow];
        const { writer, statements } = noted(0);
        await writer.write([a]);
        expect(await writer.write([b, a])).toEqual({ inserted: [b], duplicates: 1 });
        expect(await writer.write([c])).toEqual({ inserted: [c], duplicates: 0 });
        expect(statements).toEqual(["plain", "plain", "skipping", "plain"]);
      });
    });

    describe("when a record carries a NUL in a client-chosen name", () => {
      it("then it is written with the character replaced instead of failing its batch", async () => {
        const ws = freshWorkspace();
        const odd = record({ workspace_id: ws, started_at: JAN(11, 1), model: "gpt\u0000test", status: 404, error_type: "model_not_found" });
        const next = record({ workspace_id: ws, started_at: JAN(11, 2) });
        await ingest([odd, next]);
        expect(await ledger.json(`/v1/logs/${odd.request_id}`)).toMatchObject({ model: "gpt\uFFFDtest", status: 404 });
        expect(await count("SELECT count(*) AS n FROM usage.records WHERE workspace_id = $1", [ws])).toBe(2);
      });

      it("then a query naming it with the NUL finds it, and a NUL in any other filter or id is an empty answer or a 404, not a 500", async () => {
        const ws = freshWorkspace();
        const odd = record({ workspace_id: ws, started_at: JAN(11, 5), model: "mini\u0000x", status: 404, error_type: "model_not_found" });
        await ingest([odd, record({ workspace_id: ws, started_at: JAN(11, 6) })]);
        const logs = await ledger.json<{ data: { request_id: string }[] }>(`/v1/logs?workspace_id=${ws}&model=mini%00x`);
        expect(logs.data.map((r) => r.request_id)).toEqual([odd.request_id]);
        const usage = await ledger.json<{ data: { requests: number }[] }>(`/v1/usage?workspace_id=${ws}&model=mini%00x&from=2025-01-01&to=2025-02-01`);
        expect(usage.data.map((r) => r.requests)).toEqual([1]);
        for (const query of ["key_id=%00", "route=a%00b", "workspace_id=ws%00"]) {
          const res = await ledger.get(`/v1/logs?${query}`);
          expect([res.status, ((await res.json()) as { data: unknown[] }).data], query).toEqual([200, []]);
        }
        expect((await ledger.get(`/v1/usage?key_id=%00`)).status).toBe(200);
        expect((await ledger.get(`/v1/logs/req_%00`)).status).toBe(404);
        expect((await ledger.get(`/v1/workspaces/ws%00/statement?month=2025-01`)).status).toBe(200);
        const cursor = Buffer.from(JSON.stringify([JAN(11, 6), "req\u0000"])).toString("base64url");
        expect((await ledger.get(`/v1/logs?workspace_id=${ws}&cursor=${cursor}`)).status).toBe(200);
      });
    });

    describe("when a record carries a lone UTF-16 surrogate in a client-chosen name", () => {
      it("then it is written with U+FFFD in its place instead of failing its batch", async () => {
        const ws = freshWorkspace();
        const odd = record({ workspace_id: ws, started_at: JAN(11, 3), model: "gpt\ud800test", error_type: "x\udc00", status: 404 });
        const next = record({ workspace_id: ws, started_at: JAN(11, 4), error_type: "back\\ud800slash", status: 400 });
        await ingest([odd, next]);
        expect(await ledger.json(`/v1/logs/${odd.request_id}`)).toMatchObject({ model: "gpt\uFFFDtest", error_type: "x\uFFFD" });
        expect(await ledger.json(`/v1/logs/${next.request_id}`)).toMatchObject({ error_type: "back\\ud800slash" });
      });
    });

    describe("when a message holds malformed records among good ones", () => {
      it("then the good ones are written, one with a malformed call outcome is kept without it, and only the broken one is dropped", async () => {
        const ws = freshWorkspace();
        const good = record({ workspace_id: ws, started_at: JAN(11, 9) });
        const badOutcome = { ...record({ workspace_id: ws, started_at: JAN(11, 9, 5) }), outcome: { provider: "openai", attempts: -1 } };
        const broken = { ...record({ workspace_id: ws, started_at: JAN(11, 9, 10) }), status: "teapot" };
        const invalidBefore = await ledger.metric("gw_usage_invalid_records_total");
        await ledger.publishMessage([good, badOutcome, broken]);
        await ledger.settle();
        const rows = await db().query<{ request_id: string; provider: string | null; attempts: number | null }>(
          "SELECT request_id, provider, attempts FROM usage.records WHERE workspace_id = $1 ORDER BY started_at",
          [ws],
        );
        expect(rows.rows).toEqual([
          { request_id: good.request_id, provider: "openai", attempts: 1 },
          { request_id: badOutcome.request_id, provider: null, attempts: null },
        ]);
        expect(await ledger.metric("gw_usage_invalid_records_total")).toBe(invalidBefore + 1);
      });
    });

    describe("when records fall on several days", () => {
      it("then each lands in its day's partition, created on demand", async () => {
        const ws = freshWorkspace();
        const days = [JAN(2, 23, 59), JAN(3, 0, 1), JAN(7, 12)];
        await ingest(days.map((at) => record({ workspace_id: ws, started_at: at })));
        const { rows } = await db().query<{ partition: string; started_at: Date }>(
          "SELECT tableoid::regclass::text AS partition, started_at FROM usage.records WHERE workspace_id = $1 ORDER BY started_at",
          [ws],
        );
        expect(rows.map((r) => r.partition)).toEqual(["usage.records_20250102", "usage.records_20250103", "usage.records_20250107"]);
      });
    });

    describe("when a record is priced at ingest", () => {
      it("then its exact cost and price version are stored, and the version's prices are kept", async () => {
        const ws = freshWorkspace();
        const r = record({
          workspace_id: ws,
          started_at: JAN(5, 10),
          outcome: { provider: "openai", upstream_model: "gpt-4o", usage: { input_tokens: 1234, output_tokens: 567, cached_input_tokens: 200 } },
        });
        const unpriced = record({ workspace_id: ws, started_at: JAN(5, 11), model: "mystery" });
        await ingest([r, unpriced]);
        const log = await ledger.json<Record<string, unknown>>(`/v1/logs/${r.request_id}`);
        // 1,034 uncached and 200 cached input tokens at 2.5 USD per million, 567 output at 10.
        expect(log).toMatchObject({
          request_id: r.request_id,
          started_at: new Date(JAN(5, 10)).toISOString(),
          workspace_id: ws,
          cost_usd: "0.008755",
          input_tokens: 1234,
          cached_input_tokens: 200,
          cache_write_tokens: null,
          provider: "openai",
          units: {},
        });
        expect(String(log.price_version)).toMatch(/^config:[0-9a-f]{12}$/);
        const { rows } = await db().query<{ item: string; unit_price_usd: string }>(
          "SELECT item, unit_price_usd::text FROM usage.price_versions WHERE price_version = $1 AND name = 'gpt-test' ORDER BY item",
          [log.price_version],
        );
        expect(rows.map((p) => [p.item, Number(p.unit_price_usd)])).toEqual([
          ["cached_input_tokens", 2.5],
          ["input_tokens", 2.5],
          ["output_tokens", 10],
        ]);
        expect(await ledger.json(`/v1/logs/${unpriced.request_id}`)).toMatchObject({ cost_usd: null, price_version: null });
        const metrics = await (await fetch(`${ledger.url}/metrics`)).text();
        expect(metrics).toMatch(/gw_usage_unpriced_records_total\{model="mystery",service="usage"\} [1-9]/);
      });
    });

    describe("when usage is grouped", () => {
      const ws = freshWorkspace();
      const records: UsageRecord[] = [];
      beforeAll(async () => {
        const keys = ["key_a", "key_b"];
        const shapes = [
          { model: "gpt-test", route: "/v1/chat/completions", provider: "openai" },
          { model: "emb-test", route: "/v1/embeddings", provider: "openai" },
          { model: "mystery", route: "/v1/chat/completions", provider: "openai" },
        ];
        const statuses = [200, 200, 200, 429, 500];
        for (let i = 0; i < 120; i++) {
          const shape = shapes[i % 3]!;
          records.push(
            record({
              workspace_id: ws,
              // Spread over Jan 8 to Feb 2 (two months), at odd minutes.
              started_at: JAN(8) + i * 5 * H + (i % 7) * 60_000,
              key_id: keys[i % 2]!,
              model: shape.model,
              route: shape.route,
              status: statuses[i % 5]!,
              duration_ms: 10 + (i % 13) * 25,
              outcome: { provider: shape.provider, usage: { input_tokens: 100 + i, output_tokens: i % 4, reasoning_tokens: i % 3 } },
            }),
          );
        }
        await ingest(records);
      }, SLOW);

      /** What any grouping must add up to, computed from the records themselves. */
      const expected = (key: (r: UsageRecord) => string) => {
        const groups = new Map<string, { requests: number; errors: number; input_tokens: number; output_tokens: number; reasoning_tokens: number }>();
        for (const r of records) {
          const g = groups.get(key(r)) ?? { requests: 0, errors: 0, input_tokens: 0, output_tokens: 0, reasoning_tokens: 0 };
          g.requests += 1;
          g.errors += r.status >= 400 ? 1 : 0;
          g.input_tokens += r.outcome?.usage?.input_tokens ?? 0;
          g.output_tokens += r.outcome?.usage?.output_tokens ?? 0;
          g.reasoning_tokens += r.outcome?.usage?.reasoning_tokens ?? 0;
          groups.set(key(r), g);
        }
        return groups;
      };
      const keyOf: Record<string, (r: UsageRecord) => string> = {
        hour: (r) => new Date(Math.floor(r.started_at / H) * H).toISOString().replace(".000Z", "Z"),
        day: (r) => new Date(r.started_at).toISOString().slice(0, 10),
        month: (r) => new Date(r.started_at).toISOString().slice(0, 7),
        model: (r) => r.model ?? "",
        key: (r) => r.key_id,
        provider: (r) => r.outcome?.provider ?? "",
        route: (r) => r.route,
        status: (r) => String(r.status),
      };
      const outKey: Record<string, string> = { key: "key_id" };
      const groupings = [
        ...Object.keys(keyOf).map((f) => [f]),
        ["day", "model"],
        ["month", "key", "status"],
        ["model", "route", "provider"],
        ["hour", "status"],
      ];

      for (const fields of groupings) {
        it(`then group_by=${fields.join(",")} adds up to the records, from roll-ups and from raw records alike`, async () => {
          const want = expected((r) => fields.map((f) => keyOf[f]!(r)).join("|"));
          const range = `workspace_id=${ws}&group_by=${fields.join(",")}`;
          const rollups = await usage(`${range}&from=2025-01-01T00:00:00Z&to=2025-03-01T00:00:00Z`);
          // A bound off the hour sends the same question to the raw records.
          const raw = await usage(`${range}&from=2025-01-01T00:00:00.001Z&to=2025-03-01T00:00:00Z`);
          expect([rollups.source, raw.source]).toEqual(["rollups", "records"]);
          for (const answer of [rollups.data, raw.data]) {
            const got = new Map(
              answer.map((row) => {
                const id = fields.map((f) => String((row as unknown as Record<string, unknown>)[outKey[f] ?? f] ?? "")).join("|");
                const { requests, errors, input_tokens, output_tokens, reasoning_tokens } = row;
                return [id, { requests, errors, input_tokens, output_tokens, reasoning_tokens }];
              }),
            );
            expect(got).toEqual(want);
          }
          // Costs agree to the last digit; latency percentiles are exact from records, bucketed from roll-ups.
          expect(rollups.data.map((r) => r.cost_usd)).toEqual(raw.data.map((r) => r.cost_usd));
          for (const [i, row] of rollups.data.entries()) {
            const exact = raw.data[i]!.latency_ms_p50!;
            expect(Math.abs(row.latency_ms_p50! - exact)).toBeLessThanOrEqual(exact * 0.27 + 1);
          }
        });
      }

      it("then no group_by is one total row, and a group of only unpriced records costs null", async () => {
        const { data } = await usage(`workspace_id=${ws}&from=2025-01-01&to=2025-03-01`);
        expect(data).toHaveLength(1);
        expect(data[0]).toMatchObject({ requests: 120, errors: 48 });
        const total = records.length;
        expect(data[0]!.requests).toBe(total);
        const byModel = await usage(`workspace_id=${ws}&from=2025-01-01&to=2025-03-01&group_by=model`);
        expect(byModel.data.find((r) => r.model === "mystery")?.cost_usd).toBeNull();
        expect(byModel.data.find((r) => r.model === "gpt-test")?.cost_usd).toMatch(/^\d+\.\d+$/);
      });

      it("then from and to bound the period, to excluded, and key_id and model filter it", async () => {
        const from = Date.UTC(2025, 0, 12);
        const to = Date.UTC(2025, 0, 14, 6);
        const inRange = records.filter((r) => r.started_at >= from && r.started_at < to);
        const { data } = await usage(`workspace_id=${ws}&from=2025-01-12T00:00:00Z&to=2025-01-14T06:00:00Z`);
        expect(data[0]?.requests).toBe(inRange.length);
        const keyB = await usage(`workspace_id=${ws}&key_id=key_b&model=gpt-test&from=2025-01-01&to=2025-03-01`);
        expect(keyB.data[0]?.requests).toBe(records.filter((r) => r.key_id === "key_b" && r.model === "gpt-test").length);
      });
    });

    describe("when days are counted in a time zone", () => {
      it("then 14:30 and 15:30 UTC are one day in UTC and two in Tokyo, and a half-hour zone reads raw records", async () => {
        const ws = freshWorkspace();
        await ingest([record({ workspace_id: ws, started_at: JAN(15, 14, 30) }), record({ workspace_id: ws, started_at: JAN(15, 15, 30) })]);
        const utc = await usage(`workspace_id=${ws}&group_by=day&from=2025-01-14&to=2025-01-17`);
        expect(utc.data.map((r) => [r.day, r.requests])).toEqual([["2025-01-15", 2]]);
        const tokyo = await usage(`workspace_id=${ws}&group_by=day&tz=Asia/Tokyo&from=2025-01-14&to=2025-01-17`);
        expect(tokyo.source).toBe("rollups");
        expect(tokyo.data.map((r) => [r.day, r.requests])).toEqual([
          ["2025-01-15", 1],
          ["2025-01-16", 1],
        ]);
        const hours = await usage(`workspace_id=${ws}&group_by=hour&tz=Asia/Tokyo&from=2025-01-14&to=2025-01-17`);
        expect(hours.data.map((r) => r.hour)).toEqual(["2025-01-15T23:00:00+09:00", "2025-01-16T00:00:00+09:00"]);
        // Kolkata (+05:30): 14:30 UTC is 20:00 there, 15:30 is 21:00, both on the 15th.
        const kolkata = await usage(`workspace_id=${ws}&group_by=hour&tz=Asia/Kolkata&from=2025-01-14&to=2025-01-17`);
        expect(kolkata.source).toBe("records");
        expect(kolkata.data.map((r) => r.hour)).toEqual(["2025-01-15T20:00:00+05:30", "2025-01-15T21:00:00+05:30"]);
      });
    });

    describe("when logs are paged while records keep arriving", () => {
      it("then every record present at the start is seen exactly once, newest first", async () => {
        const ws = freshWorkspace();
        const base = JAN(20, 8);
        const original = Array.from({ length: 150 }, (_, i) => record({ workspace_id: ws, started_at: base + Math.floor(i / 3) * 1000 }));
        await ingest(original);
        const seen: string[] = [];
        let cursor: string | null = null;
        let page = 0;
        do {
          const query = `workspace_id=${ws}&limit=40${cursor ? `&cursor=${cursor}` : ""}`;
          const body: LogsPage = await ledger.json<LogsPage>(`/v1/logs?${query}`);
          seen.push(...body.data.map((r) => r.request_id));
          cursor = body.next_cursor;
          page += 1;
          // Newer records, older ones and records at the very instant of the cursor arrive between pages.
          const last = body.data.at(-1);
          const at = last ? Date.parse(last.started_at) : base;
          await ingest([
            record({ workspace_id: ws, started_at: base + 3_600_000 + page }),
            record({ workspace_id: ws, started_at: at }),
            record({ workspace_id: ws, started_at: base - 1000 * page }),
          ]);
        } while (cursor);
        expect(new Set(seen).size).toBe(seen.length);
        const seenSet = new Set(seen);
        expect(original.filter((r) => !seenSet.has(r.request_id))).toEqual([]);
        const positions = original.map((r) => seen.indexOf(r.request_id));
        // Newest first: a later start is never listed after an earlier one.
        const byTime = [...original].sort((a, b) => b.started_at - a.started_at || (a.request_id < b.request_id ? 1 : -1));
        expect(byTime.map((r) => seen.indexOf(r.request_id))).toEqual([...positions].sort((a, b) => a - b));
      });

      it("then filters and limits apply and a bad cursor is a 400", async () => {
        const ws = freshWorkspace();
        await ingest([
          record({ workspace_id: ws, started_at: JAN(4, 1), status: 200 }),
          record({ workspace_id: ws, started_at: JAN(4, 2), status: 503, error_type: "server_error" }),
          record({ workspace_id: ws, started_at: JAN(4, 3), status: 429, key_id: "key_z", route: "/v1/embeddings", model: "emb-test" }),
        ]);
        const statuses = async (q: string) => (await ledger.json<{ data: { status: number }[] }>(`/v1/logs?workspace_id=${ws}&${q}`)).data.map((r) => r.status);
        expect(await statuses("")).toEqual([429, 503, 200]);
        expect(await statuses("status=5xx")).toEqual([503]);
        expect(await statuses("status=429")).toEqual([429]);
        expect(await statuses("key_id=key_z")).toEqual([429]);
        expect(await statuses("model=gpt-test")).toEqual([503, 200]);
        expect(await statuses("route=/v1/embeddings")).toEqual([429]);
        expect(await statuses("from=2025-01-04T01:30:00Z&to=2025-01-04T03:00:00Z")).toEqual([503]);
        const first = await ledger.json<LogsPage & { has_more: boolean }>(`/v1/logs?workspace_id=${ws}&limit=2`);
        expect([first.data.length, first.has_more]).toEqual([2, true]);
        const rest = await ledger.json<LogsPage>(`/v1/logs?workspace_id=${ws}&limit=2&cursor=${first.next_cursor}`);
        expect([rest.data.length, rest.next_cursor]).toEqual([1, null]);
        const bad = await ledger.get(`/v1/logs?cursor=not-a-cursor`);
        expect(bad.status).toBe(400);
        expect(await bad.json()).toMatchObject({ error: { param: "cursor", type: "invalid_request_error" } });
      });
    });

    describe("when a record has every field", () => {
      it("then each column holds its own value", async () => {
        const ws = freshWorkspace();
        const r = record({
          workspace_id: ws,
          started_at: JAN(6, 7),
          duration_ms: 1234.567,
          key_id: "key_every",
          route: "/v1/async/{route}/{job_id}",
          model: "gpt-test",
          status: 429,
          error_type: "rate_limit_error",
          stream: true,
          job_id: "job_every",
          outcome: {
            provider: "openai",
            upstream_model: "gpt-4o-2024",
            attempts: 3,
            upstream_ms: 987.5,
            ttft_ms: 12.25,
            usage: { input_tokens: 11, output_tokens: 22, cached_input_tokens: 3, cache_write_tokens: 4, reasoning_tokens: 5 },
            units: { images: 2, audio_seconds: 1.5 },
          },
        });
        await ingest([r]);
        expect(await ledger.json(`/v1/logs/${r.request_id}`)).toEqual({
          request_id: r.request_id,
          started_at: new Date(JAN(6, 7)).toISOString(),
          workspace_id: ws,
          key_id: "key_every",
          route: "/v1/async/{route}/{job_id}",
          model: "gpt-test",
          provider: "openai",
          upstream_model: "gpt-4o-2024",
          attempts: 3,
          status: 429,
          error_type: "rate_limit_error",
          stream: true,
          job_id: "job_every",
          duration_ms: 1234.567,
          ttft_ms: 12.25,
          upstream_ms: 987.5,
          input_tokens: 11,
          output_tokens: 22,
          cached_input_tokens: 3,
          cache_write_tokens: 4,
          reasoning_tokens: 5,
          units: { images: 2, audio_seconds: 1.5 },
          // 4 uncached input tokens at 2.5 USD per million, 3 cached and 4 written at the input price, 22 output at 10.
          cost_usd: "0.0002475",
          price_version: expect.stringMatching(/^config:[0-9a-f]{12}$/),
        });
      });
    });

    describe("when one record is asked for by id", () => {
      it("then its workspace and the operator see it, and anyone else or an unknown id gets a 404", async () => {
        const ws = freshWorkspace();
        const r = record({
          workspace_id: ws,
          started_at: JAN(6, 6),
          job_id: "job_abc",
          stream: true,
          outcome: { provider: "openai", ttft_ms: 42, units: { images: 2 } },
        });
        await ingest([r]);
        const own = await ledger.json<Record<string, unknown>>(`/v1/logs/${r.request_id}`, identityOf(ws));
        expect(own).toMatchObject({ request_id: r.request_id, job_id: "job_abc", stream: true, ttft_ms: 42, units: { images: 2 }, input_tokens: null });
        expect((await ledger.get(`/v1/logs/${r.request_id}`, identityOf(freshWorkspace()))).status).toBe(404);
        const unknown = await ledger.get("/v1/logs/req_nope");
        expect(unknown.status).toBe(404);
        expect(await unknown.json()).toMatchObject({ error: { code: "not_found", param: "request_id" } });
      });
    });

    describe("when a request's bodies were captured (detailed logs)", () => {
      const body = (text: string) => ({ text, truncated: false, bytes: text.length, content_type: "application/json" });
      const bodiesOf = (r: { request_id: string; workspace_id: string; key_id: string; started_at: number }, retention_days: number) => ({
        request_id: r.request_id,
        workspace_id: r.workspace_id,
        key_id: r.key_id,
        started_at: r.started_at,
        retention_days,
        request: body('{"q":"hi"}'),
        response: body('{"a":"hello"}'),
      });

      it("then the record by id carries them for its workspace, a copy delivered again is one row, and expired ones are not kept", async () => {
        const ws = freshWorkspace();
        const r = record({ workspace_id: ws, started_at: JAN(24, 10) });
        await ingest([r]);
        for (let i = 0; i < 2; i++) await ledger.bus.enqueue("usage.bodies", { bodies: [bodiesOf(r, 1)] }, { msgId: `bodies-${r.request_id}-${i}` });
        let own: Record<string, unknown> = {};
        await waitFor(async () => {
          own = await ledger.json<Record<string, unknown>>(`/v1/logs/${r.request_id}`, identityOf(ws));
          return own.request_body !== undefined;
        }, "the bodies to be written");
        expect(own).toMatchObject({ request_body: body('{"q":"hi"}'), response_body: body('{"a":"hello"}') });
        expect(await count("SELECT count(*) AS n FROM usage.bodies WHERE request_id = $1", [r.request_id])).toBe(1);
        // Started on the 20th with three days' retention: gone on the 24th, so never stored on the 25th.
        const old = record({ workspace_id: ws, started_at: JAN(20, 10) });
        await ingest([old]);
        await ledger.bus.enqueue("usage.bodies", { bodies: [bodiesOf(old, 3)] }, { msgId: `bodies-${old.request_id}` });
        await waitFor(async () => (await ledger.metric("gw_usage_bodies_total")) >= 3, "the old bodies to be handled");
        expect(await count("SELECT count(*) AS n FROM usage.bodies WHERE request_id = $1", [old.request_id])).toBe(0);
        expect((await ledger.json<Record<string, unknown>>(`/v1/logs/${old.request_id}`, identityOf(ws))).request_body).toBeUndefined();
      });

      it("then retention drops the day's partition whole, and the bodies are gone while the record stays", async () => {
        const ws = freshWorkspace();
        const r = record({ workspace_id: ws, started_at: JAN(24, 11) });
        await ingest([r]);
        await ledger.bus.enqueue("usage.bodies", { bodies: [bodiesOf(r, 1)] }, { msgId: `bodies-${r.request_id}` });
        await waitFor(async () => (await count("SELECT count(*) AS n FROM usage.bodies WHERE request_id = $1", [r.request_id])) === 1, "the bodies");
        const partition = "usage.bodies_20250125";
        expect(await count("SELECT count(*) AS n FROM pg_class WHERE oid = to_regclass($1)", [partition])).toBe(1);
        const dropped = await new BodyStore(db(), silentLogger).dropExpired(JAN(26, 1));
        expect(dropped).toContain("20250125");
        expect(await count("SELECT count(*) AS n FROM pg_class WHERE oid = to_regclass($1)", [partition])).toBe(0);
        const after = await ledger.json<Record<string, unknown>>(`/v1/logs/${r.request_id}`, identityOf(ws));
        expect(after).toMatchObject({ request_id: r.request_id });
        expect(after.request_body).toBeUndefined();
      });
    });

    describe("when a non-operator names another workspace", () => {
      it("then usage and statements are 403, logs 404, and without a workspace it reads its own", async () => {
        const mine = freshWorkspace();
        const theirs = freshWorkspace();
        await ingest([record({ workspace_id: mine, started_at: JAN(3, 3) }), record({ workspace_id: theirs, started_at: JAN(3, 3) })]);
        const me = identityOf(mine);
        expect((await ledger.get(`/v1/usage?workspace_id=${theirs}`, me)).status).toBe(403);
        expect((await ledger.get(`/v1/workspaces/${theirs}/statement?month=2025-01`, me)).status).toBe(403);
        expect((await ledger.get(`/v1/logs?workspace_id=${theirs}`, me)).status).toBe(404);
        const logs = await ledger.json<{ data: { workspace_id: string }[] }>("/v1/logs", me);
        expect(new Set(logs.data.map((r) => r.workspace_id))).toEqual(new Set([mine]));
        const own = await ledger.json<{ data: UsageRow[] }>("/v1/usage?from=2025-01-01&to=2025-02-01", me);
        expect(own.data).toMatchObject([{ requests: 1 }]);
        const forbidden = await ledger.get(`/v1/usage?workspace_id=${theirs}`, me);
        expect(await forbidden.json()).toMatchObject({ error: { type: "permission_error", param: "workspace_id" } });
        // The operator reads any workspace, or all of them.
        const all = await ledger.json<{ data: UsageRow[] }>("/v1/usage?from=2025-01-03&to=2025-01-04&group_by=day");
        expect(all.data[0]!.requests).toBeGreaterThanOrEqual(2);
      });

      it("then a call without a valid identity is refused", async () => {
        const res = await fetch(`${ledger.url}/v1/usage`);
        expect(res.status).toBe(401);
      });
    });

    describe("when a parameter is malformed", () => {
      const cases: [string, string, string][] = [
        ["/v1/usage", "from=yesterday", "from"],
        ["/v1/usage", "to=2025-02-30", "to"],
        ["/v1/usage", "from=2025-02-01&to=2025-01-01", "from"],
        ["/v1/usage", "group_by=day,week", "group_by"],
        ["/v1/usage", "tz=Mars/Olympus", "tz"],
        ["/v1/usage", "gruop_by=day", ""],
        ["/v1/logs", "limit=0", "limit"],
        ["/v1/logs", "limit=1001", "limit"],
        ["/v1/logs", "limit=ten", "limit"],
        ["/v1/logs", "status=6xx", "status"],
        ["/v1/logs", "status=20", "status"],
        ["/v1/logs", "from=2025-01-01&from=2025-01-02", "from"],
        ["/v1/workspaces/ws_x/statement", "month=2025-13", "month"],
        ["/v1/workspaces/ws_x/statement", "month=2025-01&format=pdf", "format"],
      ];
      for (const [path, query, param] of cases) {
        it(`then ${path}?${query} is a 400 naming ${param || "the unknown parameter"}`, async () => {
          const res = await ledger.get(`${path}?${query}`);
          expect(res.status).toBe(400);
          const body = (await res.json()) as { error: { type: string; param: string | null; message: string } };
          expect(body.error.type).toBe("invalid_request_error");
          if (param) expect(body.error.param).toBe(param);
          else expect(body.error.message).toMatch(/gruop_by/);
        });
      }
    });

    describe("when a month's statement is asked for", () => {
      it("then its lines and total are exact, a price change gives two lines, and once closed it never changes", async () => {
        const ws = freshWorkspace();
        const chat = (at: number, input: number) =>
          record({
            workspace_id: ws,
            started_at: at,
            outcome: { provider: "openai", upstream_model: "gpt-4o", usage: { input_tokens: input, output_tokens: 7 } },
          });
        const search = (at: number) =>
          record({
            workspace_id: ws,
            started_at: at,
            model: undefined,
            route: "/v1/tools/webtool/search",
            outcome: { provider: "tavily", units: { calls: 1 } },
          });
        await ingest([
          chat(JAN(2, 5), 333_333),
          chat(PRICE_CHANGE - 1, 1),
          chat(PRICE_CHANGE, 1_000_001),
          chat(JAN(31, 23, 59), 17),
          search(JAN(9)),
          search(JAN(10)),
          record({ workspace_id: ws, started_at: JAN(11), model: "mystery" }),
          chat(Date.UTC(2025, 1, 1), 5), // February: not on January's statement
        ]);
        now = JAN(25, 12);
        const open = await ledger.json<Record<string, unknown> & { lines: Record<string, string | null>[]; total_usd: string }>(
          `/v1/workspaces/${ws}/statement?month=2025-01`,
        );
        expect(open).toMatchObject({ status: "open", month: "2025-01", tz: "UTC", requests: 7, unpriced_requests: 1, period_start: "2025-01-01T00:00:00Z" });
        expect(open.lines.map((l) => [l.model ?? l.tool, l.item, l.units, l.unit_price_usd, l.amount_usd])).toEqual([
          ["gpt-test", "input_tokens", "333334", "2.5", "0.833335"],
          ["gpt-test", "input_tokens", "1000018", "3", "3.000054"],
          ["gpt-test", "output_tokens", "28", "10", "0.00028"],
          ["webtool", "calls", "2", "0.008", "0.016"],
        ]);
        const sumOfLines = open.lines.reduce((s, l) => addDecimal(s, l.amount_usd!), "0");
        expect(open.total_usd).toBe(sumOfLines);
        const { rows } = await db().query<{ total: string }>(
          "SELECT sum(cost_usd)::text AS total FROM usage.records WHERE workspace_id = $1 AND started_at < '2025-02-01'",
          [ws],
        );
        expect(addDecimal(rows[0]!.total, "0")).toBe(open.total_usd);
        expect(open.total_usd).toBe("3.849669");

        // The month closes; the first read freezes it, and a record arriving late changes nothing.
        now = Date.UTC(2025, 1, 3);
        const first = await (await ledger.get(`/v1/workspaces/${ws}/statement?month=2025-01`)).text();
        await ingest([chat(JAN(30), 1_000_000)]);
        now = Date.UTC(2025, 5, 1);
        const second = await (await ledger.get(`/v1/workspaces/${ws}/statement?month=2025-01`)).text();
        expect(second).toBe(first);
        expect(JSON.parse(first)).toMatchObject({ status: "closed", total_usd: "3.849669" });
        const withLate = await usage(`workspace_id=${ws}&from=2025-01-01&to=2025-02-01`);
        expect(withLate.data[0]?.requests).toBe(8);

        const csv = await ledger.get(`/v1/workspaces/${ws}/statement?month=2025-01&format=csv`, identityOf(ws));
        expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
        expect((await csv.text()).split("\r\n")).toEqual([
          "model,tool,item,unit,units,unit_price_usd,amount_usd",
          "gpt-test,,input_tokens,1M tokens,333334,2.5,0.833335",
          "gpt-test,,input_tokens,1M tokens,1000018,3,3.000054",
          "gpt-test,,output_tokens,1M tokens,28,10,0.00028",
          ",webtool,calls,call,2,0.008,0.016",
          "total,,,,,,3.849669",
          "",
        ]);
        now = JAN(25, 12);
      });

      it("then a month in a zone starts at the zone's midnight", async () => {
        const ws = freshWorkspace();
        // 2024-12-31 16:00 UTC is already January 1st in Tokyo.
        await ingest([record({ workspace_id: ws, started_at: Date.UTC(2024, 11, 31, 16) }), record({ workspace_id: ws, started_at: JAN(31, 16) })]);
        const utc = await ledger.json<{ requests: number }>(`/v1/workspaces/${ws}/statement?month=2025-01`);
        const tokyo = await ledger.json<{ requests: number; period_start: string }>(`/v1/workspaces/${ws}/statement?month=2025-01&tz=Asia/Tokyo`);
        expect([utc.requests, tokyo.requests]).toEqual([1, 1]);
        expect(tokyo.period_start).toBe("2025-01-01T00:00:00+09:00");
      });
    });
  });

  describe(`${label}: usage retention`, { timeout: 60_000 }, () => {
    it(
      "when a day has passed retention, then its partition is dropped whole with its roll-ups, and late records for it are not written",
      async () => {
        const opened = await open();
        let now = JAN(20, 12);
        let ledger = await startLedger({ db: opened.db, clock: () => now, retentionDays: 10 });
        try {
          const ws = freshWorkspace();
          await ledger.publish([record({ workspace_id: ws, started_at: JAN(12, 1) }), record({ workspace_id: ws, started_at: JAN(15, 1) })]);
          await ledger.settle();
          const partitions = async () =>
            (
              await opened.db.query<{ name: string }>(
                "SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'usage.records'::regclass ORDER BY 1",
              )
            ).rows.map((r) => r.name);
          // Made ahead: today and the next three days.
          expect(await partitions()).toEqual(expect.arrayContaining(["records_20250112", "records_20250120", "records_20250123"]));
          await ledger.stop();
          // Restarting runs maintenance; the cut-off is now Jan 14 12:00, so all of Jan 13 and before goes.
          now = JAN(24, 12);
          ledger = await startLedger({ db: opened.db, clock: () => now, retentionDays: 10 });
          await waitFor(async () => !(await partitions()).includes("records_20250112"), "the expired partition to be dropped");
          expect(await partitions()).toContain("records_20250115");
          expect(await partitions()).toContain("records_20250127");
          const left = await opened.db.query<{ n: string }>("SELECT count(*) AS n FROM usage.records WHERE workspace_id = $1", [ws]);
          expect(left.rows[0]?.n).toBe("1");
          const hours = await opened.db.query<{ n: string }>("SELECT count(*) AS n FROM usage.hourly WHERE workspace_id = $1", [ws]);
          expect(hours.rows[0]?.n).toBe("1");
          await ledger.publish([record({ workspace_id: ws, started_at: JAN(12, 2) })]);
          await ledger.settle();
          expect(await partitions()).not.toContain("records_20250112");
        } finally {
          await ledger.stop();
          await opened.dispose();
        }
      },
      SLOW,
    );
  });
}
