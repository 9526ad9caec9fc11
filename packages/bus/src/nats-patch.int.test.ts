import { randomBytes } from "node:crypto";
import { connect, NatsError, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const url = process.env.NATS_URL ?? "nats://127.0.0.1:4222";

/**
 * What patches/nats@2.29.3.patch changes in the client, checked on a live connection: if an upgrade
 * drops the patch, these fail. The connection's socket is nats.js's own (protocol.transport.socket).
 */
describe("the patched nats client", () => {
  let nc: NatsConnection;
  let writes = 0;
  beforeAll(async () => {
    nc = await connect({ servers: url, noAsyncTraces: true });
    const socket = (nc as unknown as { protocol: { transport: { socket: { write: (...args: unknown[]) => boolean } } } }).protocol.transport.socket;
    const write = socket.write.bind(socket);
    socket.write = (...args: unknown[]) => {
      writes++;
      return write(...args);
    };
  });
  afterAll(() => nc.close());

  it("when commands are sent over several microtasks of one turn of the event loop, then they leave in one socket write", async () => {
    await nc.flush();
    const subject = `patch.${process.pid}.${Date.now()}`;
    const got: string[] = [];
    const sub = nc.subscribe(subject, { callback: (_err, msg) => void got.push(msg.string()) });
    await nc.flush();
    const before = writes;
    // Each publish after an await: unpatched, a microtask flushes each one on its own.
    const sent = (async () => {
      for (let i = 0; i < 10; i++) {
        nc.publish(subject, `m${i}`);
        await Promise.resolve();
      }
    })();
    await sent;
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes - before).toBe(1);
    await nc.flush();
    expect(got).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
    sub.unsubscribe();
  });

  it("when a request is answered, then no Cancelled error is built for it; a request left unanswered still times out with one", async () => {
    const subject = `patch.echo.${process.pid}.${Date.now()}`;
    const sub = nc.subscribe(subject, { callback: (_err, msg) => msg.respond(msg.data) });
    await nc.flush();
    const built: string[] = [];
    const original = NatsError.errorForCode;
    NatsError.errorForCode = (code: string, chainedError?: Error) => {
      built.push(code);
      return original.call(NatsError, code, chainedError);
    };
    try {
      for (let i = 0; i < 5; i++) expect((await nc.request(subject, `r${i}`, { timeout: 2_000 })).string()).toBe(`r${i}`);
      expect(built).toEqual([]);
      await expect(nc.request(`${subject}.nobody`, "x", { timeout: 200 })).rejects.toThrow();
    } finally {
      NatsError.errorForCode = original;
      sub.unsubscribe();
    }
  });

  it("when a message arrives over several socket reads, then it is received whole, in one buffer of its own size", async () => {
    const subject = `patch.large.${process.pid}.${Date.now()}`;
    const got: Uint8Array[] = [];
    const sub = nc.subscribe(subject, { callback: (_err, msg) => void got.push(msg.data) });
    await nc.flush();
    // A socket read takes at most 64 KB, so the larger payloads arrive over several. Unpatched, a
    // 200 KB payload ends in a buffer grown by doubling to about 377 KB.
    const sizes = [1, 1_000, 65_536, 200_000, 500_001, 1_000_000];
    const sent = sizes.map((size) => randomBytes(size));
    for (const payload of sent) nc.publish(subject, payload);
    await nc.flush();
    await expect.poll(() => got.length).toBe(sizes.length);
    sub.unsubscribe();
    got.forEach((data, i) => {
      expect(Buffer.from(data).equals(sent[i]!)).toBe(true);
      if (sizes[i]! > 65_536) expect(data.buffer.byteLength).toBe(sizes[i]);
    });
  });
});
