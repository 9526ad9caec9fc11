import { createHmac } from "node:crypto";
import type { Identity } from "@gw/contracts";
import { GatewayError } from "@gw/errors";
import { describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { createLogger, redactSecrets } from "@gw/logger";
import { credentialsTransitPurpose, CredentialsReader, IdentitySigner, IdentityVerifier, signIdentity, verifyIdentity } from "./identity";
import { Sealer } from "./sealed";

const secret = "test-internal-secret-0123456789";
const identity: Identity = {
  workspace_id: "ws_abc",
  key_id: "key_def",
  plan: "pro",
  models: [["*"], ["gpt-4o-mini", "claude-*"]],
  tools: ["webtool"],
};
const t0 = Date.UTC(2030, 0, 1);

/** Runs fn and returns the GatewayError it throws (fails the test if it throws anything else). */
function rejection(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("expected a GatewayError, but nothing was thrown");
}

function signRaw(payload: object, key = secret): string {
  const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
  return `${body}.${createHmac("sha256", key).update(body).digest("base64url")}`;
}

describe("signIdentity / verifyIdentity", () => {
  it("when a header is signed and verified with the same secret, then the identity comes back unchanged", () => {
    const header = signIdentity(identity, secret, t0);
    expect(verifyIdentity(header, secret, 300, t0 + 1_000)).toEqual(identity);
  });

  it("when verified, then the issue time is not part of the returned identity", () => {
    const verified = verifyIdentity(signIdentity(identity, secret, t0), secret, 300, t0);
    expect("iat" in verified).toBe(false);
  });

  it("when the payload is tampered with, then it is rejected as unauthenticated_internal", () => {
    const header = signIdentity(identity, secret, t0);
    const [, signature] = header.split(".");
    const forged = Buffer.from(JSON.stringify({ ...identity, plan: "enterprise", iat: t0 / 1000 })).toString("base64url");
    const err = rejection(() => verifyIdentity(`${forged}.${signature}`, secret, 300, t0));
    expect(err.code).toBe("unauthenticated_internal");
    expect(err.status).toBe(401);
  });

  it("when the signature is tampered with, then it is rejected", () => {
    const [payload, signature] = signIdentity(identity, secret, t0).split(".") as [string, string];
    const first = signature.startsWith("A") ? "B" : "A";
    const err = rejection(() => verifyIdentity(`${payload}.${first}${signature.slice(1)}`, secret, 300, t0));
    expect(err.code).toBe("unauthenticated_internal");
  });

  it("when signed with another secret, then it is rejected", () => {
    const header = signIdentity(identity, "another-secret-of-enough-length", t0);
    const err = rejection(() => verifyIdentity(header, secret, 300, t0));
    expect(err.code).toBe("unauthenticated_internal");
  });

  it("when the header is missing or empty, then it is rejected", () => {
    expect(rejection(() => verifyIdentity(undefined, secret, 300, t0)).code).toBe("unauthenticated_internal");
    expect(rejection(() => verifyIdentity("", secret, 300, t0)).code).toBe("unauthenticated_internal");
  });

  it("when the issue time is older than the max age, then it is rejected as expired", () => {
    const header = signIdentity(identity, secret, t0);
    expect(verifyIdentity(header, secret, 300, t0 + 299_000)).toEqual(identity);
    const err = rejection(() => verifyIdentity(header, secret, 300, t0 + 301_000));
    expect(err.code).toBe("unauthenticated_internal");
    expect(err.message).toMatch(/expired/i);
  });

  it("when the issue time is far in the future, then it is rejected too", () => {
    const header = signIdentity(identity, secret, t0 + 3_600_000);
    expect(rejection(() => verifyIdentity(header, secret, 300, t0)).code).toBe("unauthenticated_internal");
  });

  it("when the header has no dot, no payload or no signature, then it is rejected", () => {
    const header = signIdentity(identity, secret, t0);
    const [payload, signature] = header.split(".") as [string, string];
    for (const bad of [payload, `.${signature}`, `${payload}.`, "not-a-header", "a.b.c"]) {
      expect(rejection(() => verifyIdentity(bad, secret, 300, t0)).code, bad).toBe("unauthenticated_internal");
    }
  });

  it("when characters are appended to a valid signature, then it is rejected (a header has exactly one valid form)", () => {
    const header = signIdentity(identity, secret, t0);
    for (const suffix of ["$$", "==", "!", " x"]) {
      expect(rejection(() => verifyIdentity(header + suffix, secret, 300, t0)).code, suffix).toBe("unauthenticated_internal");
    }
  });

  it("when a correctly signed payload is not JSON, then it is rejected as malformed", () => {
    const body = Buffer.from("{not json").toString("base64url");
    const header = `${body}.${createHmac("sha256", secret).update(body).digest("base64url")}`;
    const err = rejection(() => verifyIdentity(header, secret, 300, t0));
    expect(err.code).toBe("unauthenticated_internal");
    expect(err.message).toMatch(/malformed/i);
  });

  it("when a correctly signed payload lacks identity fields or an iat, then it is rejected", () => {
    const noIat = signRaw({ ...identity });
    expect(rejection(() => verifyIdentity(noIat, secret, 300, t0)).code).toBe("unauthenticated_internal");
    const badPlan = signRaw({ ...identity, plan: "gold", iat: t0 / 1000 });
    expect(rejection(() => verifyIdentity(badPlan, secret, 300, t0)).message).toMatch(/malformed/i);
    const noWorkspace = signRaw({ key_id: "k", plan: "pro", models: [], tools: [], iat: t0 / 1000 });
    expect(rejection(() => verifyIdentity(noWorkspace, secret, 300, t0)).code).toBe("unauthenticated_internal");
  });
});

describe("IdentitySigner and IdentityVerifier", () => {
  const secret = "signer-test-secret-0123456789";
  const who: Identity = { workspace_id: "ws_1", key_id: "key_1", plan: "pro", models: [["*"]], tools: [] };

  it("when the same identity is signed twice within the refresh time, then the header is reused, and re-signed after", () => {
    const signer = new IdentitySigner(secret, 60_000);
    const first = signer.sign(who, 1_000_000);
    expect(signer.sign(who, 1_059_000)).toBe(first);
    const later = signer.sign(who, 1_061_000);
    expect(later).not.toBe(first);
    expect(verifyIdentity(later, secret, 300, 1_061_000)).toEqual(who);
    // Another object with the same content is signed on its own.
    expect(signer.sign({ ...who }, 1_000_000)).toBe(signIdentity(who, secret, 1_000_000));
  });

  it("when a verified header is presented again, then it is accepted until it is older than the maximum age", () => {
    const verifier = new IdentityVerifier(secret, 300);
    const header = signIdentity(who, secret, 2_000_000);
    expect(verifier.verify(header, 2_000_000)).toEqual(who);
    expect(verifier.verify(header, 2_299_000)).toEqual(who);
    expect(() => verifier.verify(header, 2_301_000)).toThrow(/Expired/);
  });

  it("when a header differs from a verified one by a single character, then it is still checked and refused", () => {
    const verifier = new IdentityVerifier(secret);
    const header = signIdentity(who, secret);
    verifier.verify(header);
    const tampered = `${header.slice(0, -1)}${header.endsWith("A") ? "B" : "A"}`;
    expect(() => verifier.verify(tampered)).toThrow(/signature/);
    expect(() => verifier.verify(undefined)).toThrow(/Missing/);
  });

  it("when more headers are verified than the cache holds, then it starts over and keeps verifying correctly", () => {
    const verifier = new IdentityVerifier(secret, 300, 2);
    const headers = [1, 2, 3].map((i) => signIdentity({ ...who, key_id: `key_${i}` }, secret));
    expect(headers.map((h) => verifier.verify(h).key_id)).toEqual(["key_1", "key_2", "key_3"]);
    expect(verifier.verify(headers[0] as string).key_id).toBe("key_1");
  });
});

describe("CredentialsReader", () => {
  it("when a workspace's own credential is opened, then the process's log lines censor it from then on", () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ service: "t", destination });
    const own = "workspace-own-credential-0123456789"; // no known key shape: only being told censors it
    const header = new Sealer(secret, credentialsTransitPurpose).seal(JSON.stringify({ openai: own }), "ws_abc");
    const reader = new CredentialsReader(secret, (values) => redactSecrets(logger, values));
    logger.info(`before: ${own}`);
    expect(reader.read(header, "ws_abc")).toEqual({ openai: own });
    logger.info(`after: ${own}`);
    logger.warn({ upstream: { message: `Incorrect API key provided: ${own}` } }, "provider said");
    expect(lines[0]).toContain(own);
    expect(lines.slice(1).join("")).not.toContain(own);
    expect(lines[1]).toContain("[redacted]");
  });
});
