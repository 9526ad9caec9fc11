import { describe, expect, it } from "vitest";
import { createLogger } from "@gw/logger";
import { CredentialsReader, Sealer, UNOPENED_CREDENTIAL } from "@gw/service-kit";
import type { KeyPrincipal } from "../store/identity-store";
import { testPrincipal } from "../testing/principal";
import { credentialContext, CredentialRelay } from "./credential-relay";

const logger = createLogger({ service: "relay-test", level: "silent" });
const internalSecret = "relay-test-internal-secret-0123";
const atRest = new Sealer("relay-test-master-key-0123456789abcdef", "provider-credentials");

function principal(plan: "pro" | "enterprise", workspaceId: string, keys: Record<string, string>): KeyPrincipal {
  const sealedCredentials = Object.fromEntries(Object.entries(keys).map(([p, k]) => [p, atRest.seal(k, credentialContext(workspaceId, p))]));
  return testPrincipal({ sealedCredentials }, { id: workspaceId, plan });
}

describe("CredentialRelay", () => {
  it("when an enterprise workspace has credentials, then the header opens to them in the services, for that workspace only", () => {
    const relay = new CredentialRelay(atRest, internalSecret, logger);
    const p = principal("enterprise", "ws_a", { openai: "sk-a-own", anthropic: "sk-ant-a" });
    const header = relay.headerFor(p) as string;
    expect(header).not.toContain("sk-a-own");
    const reader = new CredentialsReader(internalSecret);
    expect(reader.read(header, "ws_a")).toEqual({ openai: "sk-a-own", anthropic: "sk-ant-a" });
    expect(() => reader.read(header, "ws_b")).toThrow(/Invalid internal credentials/);
    expect(relay.headerFor(p)).toBe(header); // computed once per cached principal
  });

  it("when the workspace is not on the enterprise plan, or has none, then no header is sent", () => {
    expect(new CredentialRelay(atRest, internalSecret, logger).headerFor(principal("pro", "ws_p", { openai: "sk-p" }))).toBeUndefined();
    expect(new CredentialRelay(atRest, internalSecret, logger).headerFor(principal("enterprise", "ws_e", {}))).toBeUndefined();
  });

  it("when a stored credential cannot be opened (no master key, or one sealed for another workspace), then it goes as unopened, never leaving the platform's in its place", () => {
    const reader = new CredentialsReader(internalSecret);
    const noKey = new CredentialRelay(undefined, internalSecret, logger).headerFor(principal("enterprise", "ws_e", { openai: "sk-e-own" }));
    expect(reader.read(noKey, "ws_e")).toEqual({ openai: UNOPENED_CREDENTIAL });
    const p = principal("enterprise", "ws_a", { anthropic: "sk-ant-a" });
    p.sealedCredentials.openai = atRest.seal("sk-b-own", credentialContext("ws_b", "openai"));
    const header = new CredentialRelay(atRest, internalSecret, logger).headerFor(p);
    expect(reader.read(header, "ws_a")).toEqual({ anthropic: "sk-ant-a", openai: UNOPENED_CREDENTIAL });
  });
});
