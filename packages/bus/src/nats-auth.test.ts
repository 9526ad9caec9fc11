import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { headers } from "nats";
import { afterAll, describe, expect, it } from "vitest";
import { createNatsOperator, nkeys } from "@gw/testkit";
import { NatsCredentials, natsAuthOptions, readNatsCredentials } from "./nats-auth";
import { createMessageSigner } from "./nats-signing";

const dir = mkdtempSync(join(tmpdir(), "bus-auth-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const seed = () => new TextDecoder().decode(nkeys.createUser().getSeed());

describe("natsAuthOptions", () => {
  it("when NATS_URL carries a user and password, then they become options and the servers lose them", () => {
    // nats.js ignores URL credentials, and a password starting with digits confused its port parsing.
    expect(natsAuthOptions("nats://svc:12%40p%3Ass@nats.example:4222")).toEqual({
      servers: ["nats://nats.example:4222"],
      user: "svc",
      pass: "12@p:ss",
    });
  });

  it("when NATS_URL carries a token or lists several servers, then the token is an option and each server is kept", () => {
    expect(natsAuthOptions("nats://s3cr3t@a:4222, nats://s3cr3t@b:4222,c:4222")).toEqual({
      servers: ["nats://a:4222", "nats://b:4222", "c:4222"],
      token: "s3cr3t",
    });
    expect(natsAuthOptions("nats://127.0.0.1:4222")).toEqual({ servers: ["nats://127.0.0.1:4222"] });
  });

  it("when credentials sit both in NATS_URL and in NATS_CREDS, or differ between servers, then it refuses without quoting them", () => {
    const creds = NatsCredentials.parse(seed(), "test");
    expect(() => natsAuthOptions("nats://u:hunter2@a:4222", creds)).toThrow(/NATS_URL carries a user or token and NATS_CREDS is set/);
    const err = (() => {
      try {
        natsAuthOptions("nats://u:hunter2@a:4222,nats://u:other@b:4222");
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toMatch(/different credentials/);
    expect(err?.message).not.toMatch(/hunter2|other/);
  });
});

describe("readNatsCredentials", () => {
  it("when the file holds an NKey user seed, then it is read as nkey credentials that never print the seed", () => {
    const s = seed();
    const creds = readNatsCredentials(file("user.nk", `${s}\n`));
    expect(creds.kind).toBe("nkey");
    expect(JSON.stringify({ creds })).not.toContain(s);
    expect(inspect(creds)).not.toContain(s);
    expect(typeof natsAuthOptions("nats://a:4222", creds).authenticator).toBe("function");
  });

  it("when the file is a .creds file (JWT and seed), then it is read as creds credentials", () => {
    const text = createNatsOperator().userCreds("reader");
    const creds = readNatsCredentials(file("user.creds", text.replace(/\n/g, "\r\n")));
    expect(creds.kind).toBe("creds");
    expect(inspect(creds)).toBe("NatsCredentials(creds)");
  });

  it("when the file is missing, unreadable or garbled, then the error names NATS_CREDS and the path, never the content", () => {
    expect(() => readNatsCredentials(join(dir, "nope"))).toThrow(/^NATS_CREDS: cannot read .*nope \(ENOENT\)$/);
    expect(() => readNatsCredentials(dir)).toThrow(/^NATS_CREDS: cannot read .* \(EISDIR\)$/);
    const garbled = "SUnot-a-seed-but-secret-looking";
    const err = (() => {
      try {
        readNatsCredentials(file("garbled", garbled));
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toMatch(/^NATS_CREDS: .*garbled holds neither a NATS \.creds file nor an NKey user seed/);
    expect(err?.message).not.toContain(garbled);
    // A seed whose checksum is wrong is garbled too. (Its last character carries two padding bits,
    // so a change there may not change the seed: a character in the middle is changed instead.)
    const s = seed();
    const flipped = `${s.slice(0, 20)}${s[20] === "A" ? "B" : "A"}${s.slice(21)}`;
    expect(() => readNatsCredentials(file("flipped", flipped))).toThrow(/NATS_CREDS/);
    const noSeed = createNatsOperator()
      .userCreds("x")
      .replace(/SU[A-Z2-7]{56}/, "SUBROKEN");
    expect(() => readNatsCredentials(file("broken.creds", noSeed))).toThrow(/NATS_CREDS: .*not a valid NATS \.creds file/);
  });
});

describe("message signatures", () => {
  const signer = createMessageSigner("sixteen-chars-secret");
  const payload = new TextEncoder().encode('{"a":1}');
  const signed = (subject: string, msgId: string, body = payload) => {
    const h = headers();
    h.set("gw-signature", signer.sign(subject, msgId, body));
    if (msgId) h.set("Nats-Msg-Id", msgId);
    return h;
  };

  it("when subject, message id and payload are those signed, then it verifies; when any differs, then it does not", () => {
    expect(signer.verify("gw.limits.settle", signed("gw.limits.settle", "limits.settle:j1"), payload)).toBe("ok");
    expect(signer.verify("gw.jobs.events", signed("gw.limits.settle", "limits.settle:j1"), payload)).toBe("bad signature");
    const otherId = signed("gw.limits.settle", "limits.settle:j1");
    otherId.set("Nats-Msg-Id", "limits.settle:j2");
    expect(signer.verify("gw.limits.settle", otherId, payload)).toBe("bad signature");
    expect(signer.verify("gw.limits.settle", signed("gw.limits.settle", "limits.settle:j1"), new TextEncoder().encode('{"a":2}'))).toBe("bad signature");
    expect(signer.verify("gw.limits.settle", headers(), payload)).toBe("unsigned");
    expect(signer.verify("gw.limits.settle", undefined, payload)).toBe("unsigned");
  });

  it("when another secret signed it, then it does not verify; a short or missing secret is refused up front", () => {
    const other = createMessageSigner("another-sixteen-chars");
    const h = headers();
    h.set("gw-signature", other.sign("gw.identity.changed", "", payload));
    expect(signer.verify("gw.identity.changed", h, payload)).toBe("bad signature");
    expect(() => createMessageSigner("short")).toThrow(/GATEWAY_INTERNAL_SECRET/);
    expect(() => createMessageSigner(undefined as unknown as string)).toThrow(/GATEWAY_INTERNAL_SECRET/);
  });
});
