import { connect } from "nats";
import type { MsgHdrs, NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkSubject } from "@gw/contracts";
import { createRecordingLogger, jobWork, sleep, waitFor } from "./bus-testing";
import { encodeJson } from "./messages";
import { createNatsBus } from "./nats-bus";
import { consumerNameOf, natsSubjectOf, streamKindOf, streamNameOf, toNatsHeaders } from "./nats-setup";
import { createMessageSigner } from "./nats-signing";
import type { Bus } from "./types";

/**
 * Anyone who can reach NATS can publish raw messages. Those the bus did not sign under the
 * internal secret must never reach a handler, whatever they claim to be.
 */
const url = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const secret = "bus-signing-test-internal-secret";
const runId = `s${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const namespaces: string[] = [];
const buses: Bus[] = [];
let raw: NatsConnection;

beforeAll(async () => {
  raw = await connect({ servers: url, name: "forger" });
});
afterAll(async () => {
  await Promise.all(buses.map((b) => b.close()));
  const jsm = await raw.jetstreamManager();
  for (const ns of namespaces) {
    await jsm.streams.delete(streamNameOf(ns)).catch(() => false);
    await jsm.streams.delete(streamNameOf(ns, "usage")).catch(() => false);
  }
  await raw.close();
});

async function open() {
  const namespace = `${runId}_${namespaces.length + 1}`;
  namespaces.push(namespace);
  const logger = createRecordingLogger();
  const bus = await createNatsBus({ url, secret, namespace, logger, name: "signing-test" });
  buses.push(bus);
  return { bus, logger, namespace };
}

const MARK = "FORGED_CONTENT";
const forgedMessages: Record<WorkSubject, unknown> = {
  // A job "completed" with a result of the forger's choosing.
  "jobs.events": { job_id: "job_victim", status: "completed", attempt: 1, at: 1, result: { text: MARK } },
  // Tokens handed back to a workspace.
  "limits.settle": { job_id: "job_victim", ticket: { workspace_id: `ws_${MARK}`, key_id: "key_1", bucket: 1, tokens: 1_000_000 }, used: 0 },
  // Work run under an identity the forger wrote.
  "jobs.work.inference": jobWork(MARK),
  "jobs.work.tools": jobWork(MARK),
  // A workspace's provider credential replaced by the forger's.
  "credentials.changed": { workspace_id: `ws_${MARK}`, provider: "oa", sealed: "forged", version: 1 },
  // A usage record billing a workspace for what it never called.
  "usage.records": usageRecord(MARK),
  // A detailed log of a conversation that never happened.
  "usage.bodies": capturedBodies(MARK),
};
const genuine: { [S in WorkSubject]: (id: string) => unknown } = {
  "jobs.events": (id) => ({ job_id: `job_${id}`, status: "completed", attempt: 1, at: 2 }),
  "limits.settle": (id) => ({ job_id: `job_${id}`, ticket: { workspace_id: "ws_1", key_id: "key_1", bucket: 1, tokens: 10 }, used: 5 }),
  "jobs.work.inference": (id) => jobWork(id),
  "jobs.work.tools": (id) => jobWork(id),
  "credentials.changed": (id) => ({ workspace_id: `ws_${id}`, provider: "oa", version: 2 }),
  "usage.records": (id) => usageRecord(id),
  "usage.bodies": (id) => capturedBodies(id),
};

function capturedBodies(id: string) {
  const body = { text: `{"said":"${id}"}`, truncated: false, bytes: 12 };
  return { bodies: [{ request_id: `req_${id}`, started_at: 1, workspace_id: `ws_${id}`, key_id: "key_1", retention_days: 7, request: body, response: body }] };
}

function usageRecord(id: string) {
  const record = {
    request_id: `req_${id}`,
    started_at: 1,
    duration_ms: 1,
    workspace_id: `ws_${id}`,
    key_id: "key_1",
    route: "/v1/chat/completions",
    status: 200,
    stream: false,
  };
  return { records: [record] };
}

/** The ways to get a message past a check that is not there: each must be refused. */
function forgeries(subject: string): { name: string; msgID: string; payload: Uint8Array; headers?: MsgHdrs }[] {
  const payload = encodeJson(forgedMessages[subject.slice(subject.indexOf(".") + 1) as WorkSubject]);
  const ours = createMessageSigner(secret);
  const theirs = createMessageSigner("a-secret-the-forger-guessed");
  const sig = (signature: string) => toNatsHeaders({}, signature);
  return [
    { name: "unsigned", msgID: "f1", payload },
    { name: "signed with another secret", msgID: "f2", payload, headers: sig(theirs.sign(subject, "f2", payload)) },
    { name: "a signature made for another subject", msgID: "f3", payload, headers: sig(ours.sign(`${subject}x`, "f3", payload)) },
    { name: "a signature made for another message id", msgID: "f4", payload, headers: sig(ours.sign(subject, "other", payload)) },
    {
      name: "a payload changed after signing",
      msgID: "f5",
      payload: encodeJson({ ...(JSON.parse(new TextDecoder().decode(payload)) as object), attempt: 2 }),
      headers: sig(ours.sign(subject, "f5", payload)),
    },
  ];
}

describe("nats bus signatures", { timeout: 90_000 }, () => {
  for (const subject of Object.keys(forgedMessages) as WorkSubject[]) {
    it(`when raw messages on ${subject} lack a valid signature, then none reaches the handler, each is terminated and logged by subject only`, async () => {
      const { bus, logger, namespace } = await open();
      const natsSubject = natsSubjectOf(namespace, subject);
      const js = raw.jetstream();
      const forged = forgeries(natsSubject);
      for (const f of forged) await js.publish(natsSubject, f.payload, { msgID: f.msgID, headers: f.headers });
      const handled: unknown[] = [];
      await bus.consume(subject, { durable: "worker", ackWaitMs: 1_000 }, async (m) => void handled.push(m));
      // Signed by the bus itself, after the forgeries: once it is handled, they have all been seen.
      await bus.enqueue(subject, genuine[subject]("real") as never, { msgId: "real" });
      await waitFor(() => handled.length === 1, "the signed message");
      expect(handled).toEqual([genuine[subject]("real")]);
      const warnings = logger.entries.filter((e) => e.msg.includes("without a valid signature"));
      expect(warnings.map((w) => [w.level, w.obj.subject, w.obj.reason])).toEqual(
        forged.map((f) => ["warn", subject, f.name === "unsigned" ? "unsigned" : "bad signature"]),
      );
      expect(JSON.stringify(logger.entries)).not.toContain(MARK);
      // A work-queue stream keeps a message until it is acknowledged or terminated: once it is empty,
      // no forgery was nak'ed or left unacked to come back later.
      const jsm = await raw.jetstreamManager();
      const stream = streamNameOf(namespace, streamKindOf(subject));
      await waitFor(async () => (await jsm.streams.info(stream)).state.messages === 0, "an empty stream");
      const ci = await jsm.consumers.info(stream, consumerNameOf("worker", subject));
      expect(ci.num_redelivered).toBe(0);
      expect(ci.num_ack_pending).toBe(0);
      expect(handled).toHaveLength(1);
    });
  }

  it("when raw identity.changed broadcasts lack a valid signature, then subscribers never see them and each is logged", async () => {
    const { bus, logger, namespace } = await open();
    const seen: unknown[] = [];
    bus.subscribe("identity.changed", (m) => void seen.push(m));
    const subject = natsSubjectOf(namespace, "identity.changed");
    const payload = encodeJson({ kind: "key", id: "key_victim", at: 1 });
    const theirs = createMessageSigner("a-secret-the-forger-guessed");
    const ours = createMessageSigner(secret);
    // Each round sends the forgeries then a signed broadcast: when the signed one arrives, the
    // subscription was in place for the forgeries before it (one connection keeps order).
    await waitFor(async () => {
      raw.publish(subject, payload);
      raw.publish(subject, payload, { headers: toNatsHeaders({}, theirs.sign(subject, "", payload)) });
      raw.publish(subject, encodeJson({ kind: "workspace", id: "ws_victim", at: 1 }), { headers: toNatsHeaders({}, ours.sign(subject, "", payload)) });
      raw.publish(subject, encodeJson({ kind: "key", id: "key_real", at: 2 }), {
        headers: toNatsHeaders({}, ours.sign(subject, "", encodeJson({ kind: "key", id: "key_real", at: 2 }))),
      });
      await raw.flush();
      await sleep(50);
      return seen.length > 0;
    }, "a signed broadcast");
    expect(seen.every((m) => JSON.stringify(m) === JSON.stringify({ kind: "key", id: "key_real", at: 2 }))).toBe(true);
    const warnings = logger.entries.filter((e) => e.msg === "bus: broadcast without a valid signature, dropped");
    expect(warnings.length).toBeGreaterThanOrEqual(3);
    expect(warnings.slice(0, 3).map((w) => [w.level, w.obj.subject, w.obj.reason])).toEqual([
      ["warn", "identity.changed", "unsigned"],
      ["warn", "identity.changed", "bad signature"],
      ["warn", "identity.changed", "bad signature"],
    ]);
    // And the bus's own broadcasts still arrive.
    await bus.publish("identity.changed", { kind: "workspace", id: "ws_ok", at: 3 });
    await waitFor(() => seen.some((m) => JSON.stringify(m).includes("ws_ok")), "the bus's own broadcast");
  });

  it("when two processes hold different internal secrets, then work from one is refused by the other", async () => {
    const { bus: sender, namespace } = await open();
    const logger = createRecordingLogger();
    const receiver = await createNatsBus({ url, secret: "a-different-internal-secret", namespace, logger, name: "other" });
    buses.push(receiver);
    const handled: string[] = [];
    await receiver.consume("jobs.work.tools", { durable: "tools" }, async (m) => void handled.push(m.job_id));
    await sender.enqueue("jobs.work.tools", jobWork("mismatch"), { msgId: "mismatch" });
    await waitFor(() => logger.has("warn", "work message without a valid signature"), "the refusal");
    expect(handled).toEqual([]);
  });
});
