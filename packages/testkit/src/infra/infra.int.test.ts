import { connect as natsConnect } from "nats";
import { Client } from "pg";
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { createTestDatabase, testNatsUrl, testRedisUrl, uniqueNamespace, uniquePrefix } from "./index";
import { withClient } from "./postgres";

const SLOW = 120_000; // the first call may start a container

describe("createTestDatabase", () => {
  it(
    "when two databases are created, then each is empty, uniquely named and invisible to the other",
    async () => {
      const [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
      try {
        expect(a.url).not.toBe(b.url);
        const nameA = await withClient(a.url, async (c) => {
          await c.query("create table only_in_a (id int)");
          return (await c.query<{ db: string }>("select current_database() as db")).rows[0]?.db;
        });
        expect(nameA).toMatch(/^gw_t_[a-z0-9]+$/);
        const seenFromB = await withClient(b.url, (c) => c.query("select 1 from pg_tables where tablename = 'only_in_a'"));
        expect(seenFromB.rowCount).toBe(0);
      } finally {
        await Promise.all([a.drop(), b.drop()]);
      }
    },
    SLOW,
  );

  it(
    "when dropped while a connection is still open, then the database is gone and drop can be repeated",
    async () => {
      const database = await createTestDatabase();
      const lingering = new Client({ connectionString: database.url });
      lingering.on("error", () => {}); // FORCE terminates it; that is the point
      await lingering.connect();
      await database.drop();
      await database.drop();
      await expect(withClient(database.url, (c) => c.query("select 1"))).rejects.toMatchObject({ code: "3D000" });
      await lingering.end().catch(() => undefined);
    },
    SLOW,
  );
});

describe("testRedisUrl", () => {
  it(
    "when asked twice, then the same server answers and prefixes keep keys apart",
    async () => {
      const url = await testRedisUrl();
      expect(await testRedisUrl()).toBe(url);
      const client = createClient({ url });
      await client.connect();
      try {
        const [p1, p2] = [uniquePrefix("My Label"), uniquePrefix("My Label")];
        expect(p1).toMatch(/^gwt:my-label:[a-z0-9]+:$/);
        expect(p1).not.toBe(p2);
        await client.set(`${p1}k`, "one", { EX: 60 });
        expect(await client.get(`${p1}k`)).toBe("one");
        expect(await client.get(`${p2}k`)).toBeNull();
      } finally {
        await client.close();
      }
    },
    SLOW,
  );
});

describe("testNatsUrl", () => {
  it(
    "when connected, then JetStream is available and namespaces are unique lowercase tokens",
    async () => {
      const url = await testNatsUrl();
      const nc = await natsConnect({ servers: url });
      try {
        const jsm = await nc.jetstreamManager();
        const ns = uniqueNamespace();
        expect(ns).toMatch(/^[a-z][a-z0-9]+$/);
        expect(uniqueNamespace()).not.toBe(ns);
        await jsm.streams.add({ name: ns, subjects: [`${ns}.>`] });
        await jsm.streams.delete(ns);
      } finally {
        await nc.close();
      }
    },
    SLOW,
  );
});
