import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInProcessBus } from "@gw/bus";
import { internalHeaders, type Identity } from "@gw/contracts";
import { createPgliteDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { signIdentity } from "@gw/service-kit";
import { until } from "@gw/testkit";
import { JobStore } from "./job-store";
import { LARGE_BODY_BYTES } from "./upload-gate";
import type { JobsService } from "./service";
import { testJobsService } from "./testing/jobs-service";

/**
 * Large uploads through the jobs service's routes wait their turn: one held (its body still
 * arriving) keeps the next from being read until it is gone. The body limit is one large body here.
 */
const logger = createLogger({ service: "jobs-test", level: "silent" });
const SECRET = "u".repeat(32);
const identity: Identity = { workspace_id: "ws_u", key_id: "key_u", plan: "pro", models: [["*"]], tools: [] };
let db: Db;
let service: JobsService;
let port = 0;

beforeAll(async () => {
  db = await createPgliteDb();
  service = testJobsService({ db, bus: createInProcessBus({ logger }), internalSecret: SECRET, bodyLimitBytes: LARGE_BODY_BYTES });
  port = Number(new URL((await service.start()).url).port);
});
afterAll(async () => {
  await service?.stop();
  await db?.close();
});

/** A POST declaring a large body, of which only the first bytes are sent; the socket and what it has answered. */
function largePost(path: string, declared = LARGE_BODY_BYTES): { socket: Socket; answer: () => string } {
  let received = "";
  const socket = connect(port, "127.0.0.1");
  socket.on("data", (chunk) => (received += chunk.toString("latin1")));
  socket.on("error", () => {});
  socket.write(
    `POST ${path} HTTP/1.1\r\nhost: jobs\r\ncontent-type: application/octet-stream\r\ncontent-length: ${declared}\r\n` +
      `${internalHeaders.identity}: ${signIdentity(identity, SECRET)}\r\n\r\n` +
      "x".repeat(1024),
  );
  return { socket, answer: () => received };
}

describe("when a large upload is being received", () => {
  it.each(["/v1/async/audio/transcriptions", "/v1/files"])("then the next large one to %s waits until it is gone", async (path) => {
    const first = largePost(path);
    await until(() => service.heldUploadBytes() === LARGE_BODY_BYTES, "the first upload to hold the gate");
    const second = largePost(path);
    // The second's whole body is sent: only the gate keeps it from an answer (a 400: it is no form).
    second.socket.write("x".repeat(LARGE_BODY_BYTES - 1024));
    // A small body passes at once, and one over the limit is refused without waiting.
    const small = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream", [internalHeaders.identity]: signIdentity(identity, SECRET) },
      body: "not a form",
    });
    expect(small.status).toBe(400);
    const over = largePost(path, LARGE_BODY_BYTES + 1);
    over.socket.write("x".repeat(LARGE_BODY_BYTES + 1 - 1024));
    await until(() => over.answer().includes("\r\n\r\n"), "the answer to a body over the limit");
    expect(over.answer()).toMatch(/^HTTP\/1\.1 413 /);
    over.socket.destroy();
    await new Promise((r) => setTimeout(r, 300));
    expect(second.answer()).toBe("");
    first.socket.destroy();
    await until(() => second.answer().includes("\r\n\r\n"), "the second upload's answer");
    expect(second.answer()).toMatch(/^HTTP\/1\.1 400 /);
    second.socket.destroy();
    // Every answer, and every client gone, gave its bytes back.
    await until(() => service.heldUploadBytes() === 0, "the gate to be free again");
  });

  it("then a worker reading back a stored request waits too, and then gets it whole", async () => {
    const store = new JobStore(db, 60_000, 3_600_000);
    const request = { format: "json" as const, body: { model: "m", input: "stored" } };
    const { job } = await store.create({ id: `job_${"u".repeat(32)}`, route: "embeddings", identity, request, requestHash: "h" });
    const upload = largePost("/v1/async/audio/transcriptions");
    await until(() => service.heldUploadBytes() === LARGE_BODY_BYTES, "the upload to hold the gate");
    let answered = false;
    const read = fetch(`http://127.0.0.1:${port}/v1/jobs/${job.id}/request`, {
      headers: { [internalHeaders.identity]: signIdentity(identity, SECRET) },
    }).then((res) => {
      answered = true;
      return res;
    });
    await new Promise((r) => setTimeout(r, 300));
    const answeredWhileHeld = answered;
    upload.socket.destroy();
    expect(answeredWhileHeld).toBe(false);
    const res = await read;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(request);
  });
});
