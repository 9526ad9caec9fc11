import { createNatsBus } from "@gw/bus";
import type { Bus } from "@gw/bus";
import { MAX_USAGE_BATCH, usageRowOf } from "@gw/contracts";
import { createPgDb, type Db } from "@gw/db";
import { UsagePublisher } from "@gw/service-kit";
import { createTestDatabase, type TestDatabase, testNatsUrl, uniqueNamespace } from "@gw/testkit";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshWorkspace, gateway, logger, record, secret, testPricer, waitFor } from "./testing/harness";
import { createUsageService, type UsageService } from "./service";

/** Records published on the real JetStream usage stream reach the ledger once, and are acked. */
describe("when records are published on the NATS usage stream", { timeout: 90_000 }, () => {
  const namespace = uniqueNamespace();
  const stream = `${namespace.toUpperCase()}_USAGE`;
  let url: string;
  let database: TestDatabase;
  let db: Db;
  let bus: Bus;
  let service: UsageService;
  let admin: NatsConnection;

  beforeAll(async () => {
    url = await testNatsUrl();
    database = await createTestDatabase();
    db = createPgDb({ url: database.url, applicationName: "gw-usage-nats-test" });
    bus = await createNatsBus({ url, secret, namespace, logger, name: "usage-nats-test" });
    const now = Date.UTC(2025, 0, 25);
    service = createUsageService({
      settings: { host: "127.0.0.1", port: 0, internalSecret: secret, retentionDays: 400 },
      gateway,
      bus,
      db,
      logger,
      clock: () => now,
      pricer: testPricer(),
    });
    await service.start();
    admin = await connect({ servers: url });
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await bus?.close();
    await db?.close();
    await database?.drop();
    if (admin) {
      const jsm = await admin.jetstreamManager();
      for (const name of [stream, `${namespace.toUpperCase()}_WORK`]) await jsm.streams.delete(name).catch(() => false);
      await admin.close();
    }
  }, 60_000);

  it("then each is written once, each message acked once, and a copy published again under another id is skipped", async () => {
    const ws = freshWorkspace();
    const records = Array.from({ length: 3_000 }, (_, i) => record({ workspace_id: ws, started_at: Date.UTC(2025, 0, 10) + i * 1_000 }));
    // As publishers send them: batches of up to MAX_USAGE_BATCH records, one message each.
    const size = MAX_USAGE_BATCH;
    const batches = Array.from({ length: Math.ceil(records.length / size) }, (_, i) => records.slice(i * size, (i + 1) * size));
    await Promise.all(batches.map((b) => bus.enqueue("usage.records", { records: b }, { msgId: b[0]!.request_id })));
    // The same record again with another message id gets past the stream's dedupe: the ledger's catches it.
    await bus.enqueue("usage.records", { records: [records[0]!] }, { msgId: `${records[0]!.request_id}:again` });
    const messages = batches.length + 1;
    const rows = async () => Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM usage.records WHERE workspace_id = $1", [ws])).rows[0]?.n);
    const jsm = await admin.jetstreamManager();
    const consumer = () => jsm.consumers.info(stream, "usage_usage_records");
    await waitFor(
      async () => {
        const info = await consumer();
        return info.num_pending === 0 && info.num_ack_pending === 0 && info.delivered.consumer_seq === messages;
      },
      "every message to be delivered and acked",
      60_000,
    );
    expect(await rows()).toBe(records.length);
    const info = await consumer();
    expect(info.num_redelivered).toBe(0);
    expect(info.delivered.consumer_seq).toBe(messages);
    // A work-queue stream removes what was acked: nothing is left.
    expect((await jsm.streams.info(stream)).state.messages).toBe(0);
    const hourly = await db.query<{ n: string }>("SELECT sum(requests)::text AS n FROM usage.hourly WHERE workspace_id = $1", [ws]);
    expect(hourly.rows[0]?.n).toBe(String(records.length));
  });

  it("then a full batch of the largest records, too large for one message, arrives whole in smaller ones", async () => {
    const ws = freshWorkspace();
    // Every string at its longest, of a character JSON escapes to six bytes: about 6.5 KB a record,
    // so MAX_USAGE_BATCH of them pass NATS's 1 MB.
    const long = (n: number) => "\u0001".repeat(n);
    const records = Array.from({ length: MAX_USAGE_BATCH }, (_, i) =>
      record({
        workspace_id: ws,
        started_at: Date.UTC(2025, 0, 11) + i,
        route: `/v1/${long(190)}`,
        model: long(256),
        error_type: long(100),
        status: 500,
        outcome: { provider: long(200), upstream_model: long(300), attempts: 1 },
      }),
    );
    expect(JSON.stringify({ records }).length).toBeGreaterThan(1024 * 1024);
    const jsm = await admin.jetstreamManager();
    const delivered = async () => (await jsm.consumers.info(stream, "usage_usage_records")).delivered.consumer_seq;
    const before = await delivered();
    const publisher = new UsagePublisher({ bus, logger });
    for (const r of records) publisher.publish(usageRowOf(r));
    await publisher.flush(30_000);
    expect(publisher.pending).toBe(0);
    const rows = async () => Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM usage.records WHERE workspace_id = $1", [ws])).rows[0]?.n);
    await waitFor(async () => (await rows()) === records.length, "every record to reach the ledger", 60_000);
    const stored = await db.query<{ model: string }>("SELECT DISTINCT model FROM usage.records WHERE workspace_id = $1", [ws]);
    expect(stored.rows).toEqual([{ model: long(256) }]);
    // Refused whole before sending, then sent in halves (or smaller): more than one message came.
    expect((await delivered()) - before).toBeGreaterThanOrEqual(2);
  });
});
