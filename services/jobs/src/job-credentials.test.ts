import { describe, expect, it } from "vitest";
import { providerCredentialSealing } from "@gw/contracts";
import { CredentialsReader, credentialsTransitPurpose, Sealer } from "@gw/service-kit";
import { JobCredentials } from "./job-credentials";

const MASTER = "jobs-credentials-test-master-key-0123456789";
const SECRET = "jobs-credentials-test-internal-secret";
const reader = new CredentialsReader(SECRET);

describe("JobCredentials", () => {
  it("when a job arrives with its workspace's own credentials, then they are kept sealed at rest as ingress keeps them, and each dispatch seals them for transit", () => {
    const credentials = new JobCredentials(MASTER, SECRET);
    const stored = credentials.seal("ws_a", { openai: "sk-own-openai", anthropic: "sk-ant-own" });
    expect(JSON.stringify(stored)).not.toContain("sk-own");
    expect(JSON.stringify(stored)).not.toContain("sk-ant");
    // Ingress's at-rest sealer opens them: a `credentials.changed` value is the same kind of thing.
    const ingress = new Sealer(MASTER, providerCredentialSealing.purpose);
    expect(ingress.open(stored.openai?.sealed ?? "", providerCredentialSealing.context("ws_a", "openai"))).toBe("sk-own-openai");
    const header = credentials.forWork("ws_a", stored) as string;
    expect(reader.read(header, "ws_a")).toEqual({ openai: "sk-own-openai", anthropic: "sk-ant-own" });
    expect(() => reader.read(header, "ws_b")).toThrow();
  });

  it("when the service has no master key, then a job with credentials is refused with a 503 saying what to set", () => {
    const credentials = new JobCredentials(undefined, SECRET);
    expect(credentials.canKeep).toBe(false);
    expect(() => credentials.seal("ws_a", { openai: "sk" })).toThrow(
      expect.objectContaining({ status: 503, message: expect.stringContaining("GATEWAY_MASTER_KEY") }),
    );
  });

  it("when a credential was removed, then the work carries none for it (the platform's is used, as for a new call)", () => {
    const credentials = new JobCredentials(MASTER, SECRET);
    const stored = credentials.seal("ws_a", { openai: "sk-own-openai" });
    expect(credentials.forWork("ws_a", { openai: { version: 9 } })).toBeUndefined();
    expect(reader.read(credentials.forWork("ws_a", { ...stored, anthropic: { version: 9 } }), "ws_a")).toEqual({ openai: "sk-own-openai" });
    expect(credentials.forWork("ws_a", null)).toBeUndefined();
  });

  it("when kept credentials do not open (another master key, another workspace's), then dispatching refuses rather than fall back to the platform's", () => {
    const stored = new JobCredentials("another-master-key-0123456789abcdefghij", SECRET).seal("ws_a", { openai: "sk-own" });
    expect(() => new JobCredentials(MASTER, SECRET).forWork("ws_a", stored)).toThrow(expect.objectContaining({ code: "provider_not_configured" }));
    expect(() => new JobCredentials(undefined, SECRET).forWork("ws_a", stored)).toThrow(/could not be opened/);
    const mine = new JobCredentials(MASTER, SECRET).seal("ws_a", { openai: "sk-own" });
    expect(() => new JobCredentials(MASTER, SECRET).forWork("ws_b", mine)).toThrow(/could not be opened/);
  });

  it("when a job from before the upgrade holds its transit header, then it is sealed at rest; a header that does not open is left alone", () => {
    const credentials = new JobCredentials(MASTER, SECRET);
    const header = new Sealer(SECRET, credentialsTransitPurpose).seal(JSON.stringify({ openai: "sk-legacy" }), "ws_a");
    const stored = credentials.fromTransit("ws_a", header);
    expect(reader.read(credentials.forWork("ws_a", stored ?? null), "ws_a")).toEqual({ openai: "sk-legacy" });
    expect(credentials.fromTransit("ws_b", header)).toBeUndefined();
    expect(new JobCredentials(undefined, SECRET).fromTransit("ws_a", header)).toBeUndefined();
  });
});
