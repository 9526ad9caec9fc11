import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Bus, createNatsBus, NatsCredentials } from "@gw/bus";
import { type UsageRecord, usageRecordsOf } from "../../packages/contracts/src/usage";
import { connectAsClient, natsServerAvailable, nkeys, type PrivateNats, startPrivateNats } from "@gw/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consumerNameOf, streamNameOf } from "../../packages/bus/src/nats-setup";
import { deployDir } from "./kustomize";

/**
 * The shipped deploy/nats/gateway-auth.conf on a real nats-server, driven by the real bus: each
 * service's user must let its bus start (which makes sure both streams exist), ingress and jobs
 * publish usage records, and usage pull them from GW_USAGE; other users must be refused both.
 * nats-permissions.test.ts checks the file's grants against the code; this checks the server
 * reads them as meant.
 */
const services = ["ingress", "inference", "tools", "jobs", "usage"] as const;
type Service = (typeof services)[number];
const NAMESPACE = "gw";
const SECRET = "deploy-usage-stream-test-internal-secret";
const silent = { info() {}, warn() {}, error() {} };

function record(requestId: string): UsageRecord {
  return {
    request_id: requestId,
    started_at: Date.now(),
    duration_ms: 12,
    workspace_id: "ws_deploy",
    key_id: "key_deploy",
    route: "/v1/chat/completions",
    status: 200,
    stream: false,
  };
}

/** Polls until `check` holds or the deadline passes; returns whether it held. */
async function eventually(check: () => boolean, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return true;
}

describe.skipIf(!natsServerAvailable())("the shipped NATS permissions on a real server, for usage records", () => {
  let nats: PrivateNats;
  const seeds = {} as Record<Service, string>;
  const buses = {} as Record<Service, Bus>;

  beforeAll(async () => {
    const env: Record<string, string> = {};
    for (const name of services) {
      const user = nkeys.createUser();
      seeds[name] = new TextDecoder().decode(user.getSeed());
      env[`GW_NATS_${name.toUpperCase()}_NKEY`] = user.getPublicKey();
    }
    nats = await startPrivateNats({
      auth: {
        config: 'include "gateway-auth.conf"',
        files: { "gateway-auth.conf": readFileSync(join(deployDir, "nats", "gateway-auth.conf"), "utf8") },
        env,
      },
    });
    // Usage first: the other buses then find GW_USAGE made, as in a mesh where usage started first;
    // whichever starts first creates it, with its own grants, and the start-up order is free.
    for (const name of ["usage", "ingress", "inference", "tools", "jobs"] as const) {
      buses[name] = await createNatsBus({
        url: nats.url,
        credentials: NatsCredentials.parse(seeds[name], `${name}'s seed`),
        secret: SECRET,
        namespace: NAMESPACE,
        logger: silent,
        name,
      });
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all(Object.values(buses).map((b) => b.close()));
    await nats?.stop();
  });

  it("when ingress and jobs publish usage records, then the usage service's durable receives both, with no permission violation", async () => {
    const received: string[] = [];
    const consumer = await buses.usage.consume("usage.records", { durable: "usage" }, async (m) => {
      received.push(...usageRecordsOf(m).map((r) => (r as { request_id: string }).request_id));
    });
    try {
      await buses.ingress.enqueue("usage.records", { records: [record("req_from_ingress")] }, { msgId: "req_from_ingress" });
      await buses.jobs.enqueue("usage.records", { records: [record("req_from_jobs")] }, { msgId: "req_from_jobs" });
      expect(await eventually(() => received.length >= 2), `received ${JSON.stringify(received)}`).toBe(true);
      expect(received.sort()).toEqual(["req_from_ingress", "req_from_jobs"]);
    } finally {
      await consumer.stop();
    }
    expect(nats.output()).not.toMatch(/Violation/i);
  });

  it("when another service's credentials publish a usage record or pull usage's consumer, then the server refuses them", async () => {
    const stream = streamNameOf(NAMESPACE, "usage");
    const next = `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumerNameOf("usage", "usage.records")}`;
    const inference = await connectAsClient(nats.url, seeds.inference);
    const ingress = await connectAsClient(nats.url, seeds.ingress);
    try {
      inference.publish("gw.usage.records", "{}");
      ingress.publish(next, "{}");
      await inference.flush();
      await ingress.flush();
      const literal = (s: string) => s.replace(/[.$]/g, "\\$&");
      const refused = await eventually(
        () =>
          new RegExp(`Publish Violation.*${literal("gw.usage.records")}`).test(nats.output()) &&
          new RegExp(`Publish Violation.*${literal(next)}`).test(nats.output()),
      );
      expect(refused, nats.output()).toBe(true);
    } finally {
      await inference.close();
      await ingress.close();
    }
  });
});
