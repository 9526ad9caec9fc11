import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createNatsOperator, natsServerAvailable, nkeys, startPrivateNats } from "@gw/testkit";
import type { PrivateNats, PrivateNatsAuth } from "@gw/testkit";
import { createRecordingLogger, jobWork, waitFor } from "./bus-testing";
import type { RecordingLogger } from "./bus-testing";
import { readNatsCredentials } from "./nats-auth";
import type { NatsCredentials } from "./nats-auth";
import { createNatsBus } from "./nats-bus";
import type { Bus } from "./types";

const secret = "bus-auth-test-internal-secret";
const dir = mkdtempSync(join(tmpdir(), "bus-nats-auth-"));
const servers: PrivateNats[] = [];
const buses: Bus[] = [];
afterAll(async () => {
  await Promise.all(buses.map((b) => b.close()));
  await Promise.all(servers.map((s) => s.stop()));
  rmSync(dir, { recursive: true, force: true });
});

async function server(auth: PrivateNatsAuth): Promise<PrivateNats> {
  const s = await startPrivateNats({ auth });
  servers.push(s);
  return s;
}

function credsFile(name: string, text: string): NatsCredentials {
  const path = join(dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return readNatsCredentials(path);
}

async function open(url: string, credentials?: NatsCredentials, logger: RecordingLogger = createRecordingLogger()): Promise<Bus> {
  const bus = await createNatsBus({ url, credentials, secret, namespace: "auth", logger, name: "auth-test" });
  buses.push(bus);
  return bus;
}

/** A job through the connection, both ways: JetStream API, publish and pull all allowed. */
async function roundTrip(bus: Bus): Promise<void> {
  const got: string[] = [];
  await bus.consume("jobs.work.tools", { durable: "tools" }, async (m) => void got.push(m.job_id));
  await bus.enqueue("jobs.work.tools", jobWork("auth"), { msgId: "auth" });
  await waitFor(() => got.length === 1, "the job");
  expect(got).toEqual(["job_auth"]);
}

const refused = /NATS refused the connection \(AUTHORIZATION_VIOLATION\): check the user and password or token in NATS_URL, or the file NATS_CREDS names/;

describe.skipIf(!natsServerAvailable())("nats bus against a nats-server that requires credentials", { timeout: 60_000 }, () => {
  it("when NATS_URL carries the user and password, then the bus connects and carries work, and no log line holds them", async () => {
    const password = "12:p@ss/word";
    const s = await server({ user: "gateway", password });
    const logger = createRecordingLogger();
    const bus = await open(`nats://gateway:${encodeURIComponent(password)}@127.0.0.1:${s.port}`, undefined, logger);
    await roundTrip(bus);
    expect(JSON.stringify(logger.entries)).not.toContain("p@ss");
    await expect(open(s.url)).rejects.toThrow(refused);
    await expect(open(`nats://gateway:wrong@127.0.0.1:${s.port}`)).rejects.toThrow(refused);
  });

  it("when NATS_URL carries the token, then the bus connects; a wrong token is refused", async () => {
    const s = await server({ token: "t0ken-for-the-gateway" });
    await roundTrip(await open(`nats://t0ken-for-the-gateway@127.0.0.1:${s.port}`));
    await expect(open(`nats://not-the-token@127.0.0.1:${s.port}`)).rejects.toThrow(refused);
    await expect(open(s.url)).rejects.toThrow(refused);
  });

  it("when NATS_CREDS names an NKey user seed the server knows, then the bus connects; another seed is refused", async () => {
    const user = nkeys.createUser();
    const s = await server({ nkeys: [user.getPublicKey()] });
    await roundTrip(await open(s.url, credsFile("user.nk", new TextDecoder().decode(user.getSeed()))));
    const stranger = credsFile("stranger.nk", new TextDecoder().decode(nkeys.createUser().getSeed()));
    await expect(open(s.url, stranger)).rejects.toThrow(refused);
    await expect(open(s.url)).rejects.toThrow(refused);
  });

  it("when NATS_CREDS names a .creds file of the server's operator, then the bus connects; another operator's is refused", async () => {
    const operator = createNatsOperator();
    const s = await server({ operator });
    await roundTrip(await open(s.url, credsFile("gateway.creds", operator.userCreds("gateway"))));
    const foreign = credsFile("foreign.creds", createNatsOperator().userCreds("gateway"));
    await expect(open(s.url, foreign)).rejects.toThrow(refused);
    await expect(open(s.url)).rejects.toThrow(refused);
  });
});
