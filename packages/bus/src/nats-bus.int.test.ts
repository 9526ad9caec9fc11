import { spawn, spawnSync } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AckPolicy, DiscardPolicy, RetentionPolicy, StorageType, connect, nanos } from "nats";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workSubjects } from "@gw/contracts";
import { freePort } from "@gw/testkit";
import { runBusContract } from "./bus-contract";
import { createRecordingLogger, deferred, jobWork, sleep, waitFor } from "./bus-testing";
import { encodeJson } from "./messages";
import { createNatsBus } from "./nats-bus";
import { USAGE_STREAM_MAX_AGE_MS, USAGE_STREAM_MAX_MSGS, consumerNameOf, natsSubjectOf, streamKindOf, streamNameOf, toNatsHeaders } from "./nats-setup";
import { createMessageSigner } from "./nats-signing";
import type { Bus } from "./types";

const url = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const secret = "bus-int-test-internal-secret";
const signer = createMessageSigner(secret);
// Every run gets its own namespaces (hence streams) on the shared server; afterAll deletes them.
const runId = `t${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const namespaces: string[] = [];
function newNamespace(): string {
  const ns = `${runId}_${namespaces.length + 1}`;
  namespaces.push(ns);
  return ns;
}

afterAll(async () => {
  const nc = await connect({ servers: url });
  const jsm = await nc.jetstreamManager();
  for (const ns of namespaces) {
    // Deleting the stream deletes its consumers with it.
    await jsm.streams.delete(streamNameOf(ns)).catch(() => false);
    await jsm.streams.delete(streamNameOf(ns, "usage")).catch(() => false);
  }
  await nc.close();
});

runBusContract("nats bus", async ({ logger }) => createNatsBus({ url, secret, namespace: newNamespace(), logger, name: "bus-int-test" }));

describe("nats bus", { timeout: 90_000 }, () => {
  let admin: NatsConnection;
  const buses: Bus[] = [];
  beforeAll(async () => {
    admin = await connect({ servers: url });
  });
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close()));
    await admin.close();
  });

  async function open(namespace = newNamespace()) {
    const logger = createRecordingLogger();
    const bus = await createNatsBus({ url, secret, namespace, logger, name: "bus-int-test" });
    buses.push(bus);
    return { bus, logger, namespace, stream: streamNameOf(namespace) };
  }

  it("when a bus connects and consumes, then a work-queue stream and a durable explicit-ack consumer exist", async () => {
    const { bus, namespace, stream } = await open();
    await bus.consume("jobs.work.tools", { durable: "tools", ackWaitMs: 7_000, maxDeliver: 4 }, async () => undefined);
    const jsm = await admin.jetstreamManager();
    const si = await jsm.streams.info(stream);
    expect(si.config.retention).toBe(RetentionPolicy.Workqueue);
    expect(si.config.storage).toBe(StorageType.File);
    expect(si.config.duplicate_window).toBe(nanos(60 * 60 * 1000));
    const subjectsOf = (kind: string) =>
      Object.keys(workSubjects)
        .filter((s) => streamKindOf(s) === kind)
        .sort()
        .map((s) => natsSubjectOf(namespace, s));
    expect([...si.config.subjects].sort()).toEqual(subjectsOf("work"));
    expect(si.config.subjects).not.toContain(natsSubjectOf(namespace, "usage.records"));
    const ci = await jsm.consumers.info(stream, consumerNameOf("tools", "jobs.work.tools"));
    expect(ci.config).toMatchObject({
      durable_name: "tools_jobs_work_tools",
      ack_policy: AckPolicy.Explicit,
      filter_subject: natsSubjectOf(namespace, "jobs.work.tools"),
      ack_wait: nanos(7_000),
      max_deliver: 4,
    });
  });

  it("when usage records are enqueued, then they wait in a stream of their own that refuses new records at its limits instead of dropping old ones", async () => {
    const { bus, namespace } = await open();
    const record = {
      request_id: "req_1",
      started_at: 1,
      duration_ms: 2,
      workspace_id: "ws_1",
      key_id: "key_1",
      route: "/v1/models",
      status: 200,
      stream: false,
    };
    await bus.enqueue("usage.records", { records: [record] }, { msgId: record.request_id });
    await bus.enqueue("usage.records", { records: [record] }, { msgId: record.request_id });
    const jsm = await admin.jetstreamManager();
    const usage = await jsm.streams.info(streamNameOf(namespace, "usage"));
    expect([...usage.config.subjects].sort()).toEqual([natsSubjectOf(namespace, "usage.bodies"), natsSubjectOf(namespace, "usage.records")]);
    expect(usage.config).toMatchObject({
      retention: RetentionPolicy.Workqueue,
      discard: DiscardPolicy.New,
      max_age: nanos(USAGE_STREAM_MAX_AGE_MS),
      max_msgs: USAGE_STREAM_MAX_MSGS,
    });
    // The second publish had the same request id: the stream kept one.
    expect(usage.state.messages).toBe(1);
    expect((await jsm.streams.info(streamNameOf(namespace))).state.messages).toBe(0);
    const seen: unknown[] = [];
    await bus.consume("usage.records", { durable: "usage" }, async (m) => void seen.push(m));
    await waitFor(() => seen.length === 1, "the record");
    expect(seen).toEqual([{ records: [record] }]);
  });

  it("when a consumer restarts with new ackWaitMs and maxDeliver, then the durable is updated in place", async () => {
    const { bus, stream } = await open();
    const c = await bus.consume("jobs.events", { durable: "jobs", ackWaitMs: 5_000, maxDeliver: 2 }, async () => undefined);
    await c.stop();
    await bus.consume("jobs.events", { durable: "jobs", ackWaitMs: 9_000, maxDeliver: 6 }, async () => undefined);
    const ci = await (await admin.jetstreamManager()).consumers.info(stream, consumerNameOf("jobs", "jobs.events"));
    expect(ci.config.ack_wait).toBe(nanos(9_000));
    expect(ci.config.max_deliver).toBe(6);
  });

  it("when a work message on the wire fails its schema, then it is terminated, logged and never redelivered", async () => {
    const { bus, logger, namespace, stream } = await open();
    const js = admin.jetstream();
    // Signed as the bus would, so they get past the signature check to the schema check.
    const subject = natsSubjectOf(namespace, "jobs.work.tools");
    for (const [msgID, payload] of [
      ["bad-1", encodeJson({ job_id: "not-a-job" })],
      ["bad-2", new TextEncoder().encode("{not json")],
    ] as const) {
      await js.publish(subject, payload, { msgID, headers: toNatsHeaders({}, signer.sign(subject, msgID, payload)) });
    }
    const got: string[] = [];
    await bus.consume("jobs.work.tools", { durable: "tools", ackWaitMs: 1_000 }, async (m) => void got.push(m.job_id));
    await bus.enqueue("jobs.work.tools", jobWork("ok"), { msgId: "ok" });
    await waitFor(() => got.length === 1, "the valid message");
    await waitFor(() => logger.entries.filter((e) => e.msg.includes("failed its schema")).length === 2, "two logs");
    await sleep(2_500); // past two ack waits
    expect(got).toEqual(["job_ok"]);
    const jsm = await admin.jetstreamManager();
    const ci = await jsm.consumers.info(stream, consumerNameOf("tools", "jobs.work.tools"));
    expect(ci.num_ack_pending).toBe(0);
    expect(ci.num_redelivered).toBe(0);
    // Terminated and acked messages leave the work-queue stream.
    await waitFor(async () => (await jsm.streams.info(stream)).state.messages === 0, "an empty stream");
  });

  it("when a broadcast on the wire fails its schema, then subscribers never see it", async () => {
    const { bus, logger, namespace } = await open();
    const seen: unknown[] = [];
    bus.subscribe("identity.changed", (m) => void seen.push(m));
    // Publish from this bus after the raw one so the subscription is known to be registered.
    await sleep(200);
    const subject = natsSubjectOf(namespace, "identity.changed");
    const bogus = encodeJson({ kind: "bogus" });
    admin.publish(subject, bogus, { headers: toNatsHeaders({}, signer.sign(subject, "", bogus)) });
    await admin.flush();
    await bus.publish("identity.changed", { kind: "key", id: "key_9", at: 9 });
    await waitFor(() => seen.length === 1, "the valid broadcast");
    await waitFor(() => logger.has("warn", "broadcast message failed its schema"), "the warning");
    expect(seen).toEqual([{ kind: "key", id: "key_9", at: 9 }]);
  });

  it("when two buses share a namespace, then a broadcast reaches both and each job is handled once", async () => {
    const first = await open();
    const second = await open(first.namespace);
    const heard = { a: 0, b: 0 };
    first.bus.subscribe("identity.changed", () => void heard.a++);
    second.bus.subscribe("identity.changed", () => void heard.b++);
    // Each connection registers its subscription on its own, so keep publishing until both hear.
    await waitFor(async () => {
      await first.bus.publish("identity.changed", { kind: "workspace", id: "ws_1", at: 1 });
      await sleep(50);
      return heard.a > 0 && heard.b > 0;
    }, "both replicas");
    const handled: string[] = [];
    for (const { bus } of [first, second]) {
      await bus.consume("jobs.work.inference", { durable: "inference", concurrency: 2 }, async (m) => {
        handled.push(m.job_id);
        await sleep(30);
      });
    }
    for (let i = 0; i < 10; i++) await first.bus.enqueue("jobs.work.inference", jobWork(`p${i}`), { msgId: `p${i}` });
    await waitFor(() => handled.length === 10, "ten jobs");
    await sleep(500);
    expect(new Set(handled).size).toBe(10);
    expect(handled).toHaveLength(10);
  });

  // The deletion happens while a handler runs, so the next pull goes to a consumer that no longer
  // exists: the server drops such a pull without a word, which is the case the loop must notice.
  for (const target of ["consumer", "stream"] as const) {
    it(`when the ${target} is deleted from under a running bus, then it is re-created and work resumes`, async () => {
      const { bus, logger, stream } = await open();
      const got: string[] = [];
      const hold = deferred();
      // A short pull: the server drops a deleted consumer's pull silently, and its expiry is when the bus notices.
      await bus.consume("jobs.work.tools", { durable: "tools", pullExpiresMs: 1_500 }, async (m) => {
        got.push(m.job_id);
        if (m.job_id === "job_before") await hold.promise;
      });
      await bus.enqueue("jobs.work.tools", jobWork("before"), { msgId: "before" });
      await waitFor(() => got.length === 1, "the first job");
      const jsm = await admin.jetstreamManager();
      if (target === "consumer") await jsm.consumers.delete(stream, consumerNameOf("tools", "jobs.work.tools"));
      else await jsm.streams.delete(stream);
      hold.resolve();
      await bus.enqueue("jobs.work.tools", jobWork("after"), { msgId: "after" });
      await waitFor(() => got.includes("job_after"), "the job after the deletion", 60_000);
      // The ack of the first job went to the deleted consumer: with the stream kept it comes
      // back once (at-least-once); with the stream gone it is gone too.
      const expected = target === "consumer" ? ["job_after", "job_before", "job_before"] : ["job_after", "job_before"];
      await sleep(500);
      expect([...got].sort()).toEqual(expected);
      expect(logger.has("warn", "pulling work failed")).toBe(true);
      expect(await bus.ping()).toBe(true);
    });
  }
});

// A private server on its own port and store, so restarting it cannot disturb the shared one.
const natsServerBin = process.env.NATS_SERVER_BIN ?? "nats-server";
const haveNatsServer = spawnSync(natsServerBin, ["--version"]).status === 0;

describe.skipIf(!haveNatsServer)("nats bus across a NATS server restart", { timeout: 120_000 }, () => {
  let port = 0;
  let storeDir = "";
  let server: ChildProcess | null = null;

  async function startServer(): Promise<void> {
    const child = spawn(natsServerBin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], {
      stdio: "ignore",
    });
    server = child;
    // If the test process dies without afterAll, do not leave a server behind.
    process.once("exit", () => child.kill("SIGKILL"));
    await waitFor(async () => {
      const nc = await connect({ servers: `nats://127.0.0.1:${port}`, reconnect: false }).catch(() => null);
      if (!nc) return false;
      const ok = await nc
        .jetstreamManager()
        .then(() => true)
        .catch(() => false);
      await nc.close();
      return ok;
    }, "the private nats-server");
  }

  async function stopServer(): Promise<void> {
    const child = server;
    server = null;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    await exited;
  }

  beforeAll(async () => {
    port = await freePort();
    storeDir = mkdtempSync(join(tmpdir(), "bus-nats-"));
    await startServer();
  });
  afterAll(async () => {
    await stopServer();
    rmSync(storeDir, { recursive: true, force: true });
  });

  it("when the server restarts, then consuming and subscriptions resume on their own", async () => {
    const logger = createRecordingLogger();
    const bus = await createNatsBus({ url: `nats://127.0.0.1:${port}`, secret, namespace: "restart", logger });
    try {
      const jobs: string[] = [];
      const heard: number[] = [];
      await bus.consume("jobs.work.tools", { durable: "tools" }, async (m) => void jobs.push(m.job_id));
      bus.subscribe("identity.changed", (m) => void heard.push(m.at));
      await bus.enqueue("jobs.work.tools", jobWork("one"), { msgId: "one" });
      await waitFor(() => jobs.length === 1, "the job before the restart");

      await stopServer();
      await waitFor(() => logger.has("warn", "NATS connection trouble"), "the disconnect");
      expect(await bus.ping()).toBe(false);
      await startServer();
      await waitFor(() => bus.ping(), "the bus to reconnect", 60_000);

      await bus.enqueue("jobs.work.tools", jobWork("two"), { msgId: "two" });
      await waitFor(() => jobs.length === 2, "the job after the restart", 60_000);
      expect(jobs).toEqual(["job_one", "job_two"]);
      await waitFor(async () => {
        await bus.publish("identity.changed", { kind: "key", id: "key_1", at: 2 });
        await sleep(50);
        return heard.includes(2);
      }, "a broadcast after the restart");
    } finally {
      await bus.close();
    }
  });
});
