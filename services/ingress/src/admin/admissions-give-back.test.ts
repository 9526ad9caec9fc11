import { createHash } from "node:crypto";
import { request, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { AdmissionClaims, admissionHeader, admissionPurpose } from "@gw/contracts";
import { SignedClaims } from "@gw/service-kit";
import type { CredentialRelay } from "../credentials/credential-relay";
import type { RateLimitGate } from "../limits/rate-limit-gate";
import type { Ticket } from "../limits/types";
import type { IdentityStore, KeyPrincipal } from "../store/identity-store";
import { testPrincipal } from "../testing/principal";
import { mountAdmissions } from "./admissions";

/**
 * The admission's give-back when its lines will not run after all: the jobs service gone before the
 * answer reaches it (its time-out, a reset; the key's lookup is held until it has gone, so it is gone
 * before the answer exists, every time), or the answer failing after lines were admitted.
 */
const SECRET = "admissions-give-back-test-secret";
const claims = new SignedClaims(AdmissionClaims, SECRET, admissionPurpose);
const status = { requests: { limit: 10, remaining: 9, resetMs: 1_000 }, tokens: { limit: 1_000, remaining: 900, resetMs: 1_000 } };

const line = (text: string) => ({ model: "gpt", max_tokens: 10, messages: [{ role: "user", content: text }] });
/** The jobs service's headers for this body: its type and the admission's signature. */
const signedHeaders = (body: string) => ({
  "content-type": "application/json",
  [admissionHeader]: claims.sign({ workspace_id: "ws_1", body_sha256: createHash("sha256").update(body).digest("hex") }),
});

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function admissionsApp(lookup: () => Promise<KeyPrincipal>, settled: Ticket[], headerFor: () => string | undefined = () => undefined) {
  const app = express();
  mountAdmissions(app, {
    store: { findByKeyId: lookup } as unknown as IdentityStore,
    rateLimits: {
      admit: async () => ({ allowed: true, status, ticket: { workspaceId: "ws_1", keyId: "key_1", bucket: 7, tokens: 25 } }),
      settle: (ticket: Ticket, used: number) => settled.push({ ...ticket, tokens: ticket.tokens - used }),
    } as unknown as RateLimitGate,
    budgets: undefined,
    credentials: { headerFor } as unknown as CredentialRelay,
    internalSecret: SECRET,
    rateWindowMs: 60_000,
  });
  const sockets: Socket[] = [];
  server = app.listen(0, "127.0.0.1");
  server.on("connection", (socket) => sockets.push(socket));
  await new Promise((resolve) => server!.once("listening", resolve));
  return { port: (server.address() as AddressInfo).port, sockets };
}

describe("when an admission's lines will not run after all", () => {
  it("then the lines' reservations are given back, even when it went while the key was being looked up", async () => {
    let lookedUp!: () => void;
    const looking = new Promise<void>((resolve) => (lookedUp = resolve));
    let answer!: (principal: KeyPrincipal) => void;
    const lookup = () => {
      lookedUp();
      return new Promise<KeyPrincipal>((resolve) => (answer = resolve));
    };
    const settled: Ticket[] = [];
    const { port, sockets } = await admissionsApp(lookup, settled);

    const body = JSON.stringify({ workspace_id: "ws_1", key_id: "key_1", route: "/v1/chat/completions", bodies: [line("a")] });
    const sent = request({ port, host: "127.0.0.1", method: "POST", path: "/internal/admissions", headers: signedHeaders(body) });
    sent.on("error", () => {});
    sent.end(body);
    await looking;
    // The caller goes; the server has seen its connection close before the key is found.
    const closed = new Promise((resolve) => sockets[0]!.once("close", resolve));
    sent.destroy();
    await closed;
    answer(testPrincipal());
    await expect.poll(() => settled, { timeout: 5_000 }).toEqual([{ workspaceId: "ws_1", keyId: "key_1", bucket: 7, tokens: 25 }]);
  });

  it("then an admission that fails after admitting lines gives back what it reserved for them", async () => {
    const settled: Ticket[] = [];
    const { port } = await admissionsApp(
      async () => testPrincipal(),
      settled,
      () => {
        throw new Error("the workspace's credentials could not be opened");
      },
    );
    const body = JSON.stringify({ workspace_id: "ws_1", key_id: "key_1", route: "/v1/chat/completions", bodies: [line("a"), line("b")] });
    const status = await new Promise<number>((resolve, reject) => {
      const sent = request({ port, host: "127.0.0.1", method: "POST", path: "/internal/admissions", headers: signedHeaders(body) }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      sent.on("error", reject);
      sent.end(body);
    });
    expect(status).toBe(500);
    expect(settled).toEqual([
      { workspaceId: "ws_1", keyId: "key_1", bucket: 7, tokens: 25 },
      { workspaceId: "ws_1", keyId: "key_1", bucket: 7, tokens: 25 },
    ]);
  });
});
