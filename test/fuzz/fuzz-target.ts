import { randomBytes } from "node:crypto";
import { Agent } from "node:http";
import { adminClient } from "../e2e/harness";
import { newWorkspaceKey, startGatewayTarget, type GatewayTarget, type TargetName } from "../e2e/targets";
import type { KeyChoice } from "./fuzz-case";
import { startUpstreams, type Upstreams } from "./upstreams";

/** A running gateway with the emulators behind it and the keys the cases name. */
export interface FuzzTarget {
  name: TargetName;
  gw: GatewayTarget;
  upstreams: Upstreams;
  /** Host and port of the public port, for raw requests. */
  public: { host: string; port: number };
  /** The headers a key choice turns into. */
  keyHeaders(choice: KeyChoice): Record<string, string>;
  /** The valid key, for polling jobs. */
  key: string;
  /** A keep-alive agent, for the plain calls made between cases. */
  agent: Agent;
  /**
   * When an emulator last failed (answered 5xx, or never answered): the model's circuit breaker may
   * then be open for its cooldown, and its 503s are the documented, legitimate kind.
   */
  providerFailedAt: number;
  /** Why the gateway is not whole (a process exited, a /livez that does not answer 200), or undefined. */
  deadOrDying(): Promise<string | undefined>;
  stop(): Promise<void>;
}

/**
 * Research jobs are read at the provider every 50 ms, so an accepted one settles within a case. The
 * per-address guard on failed authentications is off: every request here comes from 127.0.0.1, and
 * after its 60 failures a minute every later case would get a 429 instead of reaching the code under
 * test (the flood then also stands for many addresses, which that guard does not stop).
 */
const FUZZ_ENV = { GATEWAY_RESEARCH_POLL_MS: "50", GATEWAY_AUTH_FAILURES_PER_MINUTE: "0" };

/** Limits far above what a fuzz run sends, so no case meets a 429 by accident. */
const NO_LIMITS = { requests_per_minute: 100_000_000, tokens_per_minute: 1_000_000_000_000 };

export async function startFuzzTarget(name: TargetName): Promise<FuzzTarget> {
  const upstreams = await startUpstreams();
  let gw: GatewayTarget;
  try {
    gw = await startGatewayTarget(name, upstreams.configYaml, { ...upstreams.env, ...FUZZ_ENV });
  } catch (err) {
    await upstreams.close();
    throw err;
  }
  const admin = adminClient(gw.adminURL, gw.adminToken);
  const workspace = { name: "fuzz", plan: "enterprise", models: ["*"], tools: ["webtool", "serptool"], limits: NO_LIMITS };
  const valid = await newWorkspaceKey(gw, workspace);
  const revoked = await admin<{ id: string; key: string }>("POST", `/admin/workspaces/${valid.workspaceId}/keys`, {});
  await admin("PATCH", `/admin/keys/${revoked.id}`, { status: "revoked" });
  const disabled = await admin<{ id: string; key: string }>("POST", `/admin/workspaces/${valid.workspaceId}/keys`, {});
  await admin("PATCH", `/admin/keys/${disabled.id}`, { status: "disabled" });

  const url = new URL(gw.baseURL);
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const unknown = `gw_live_${randomBytes(30).toString("base64url").replace(/[-_]/g, "x").slice(0, 40)}`;
  const headersFor: Record<KeyChoice, Record<string, string>> = {
    valid: { authorization: `Bearer ${valid.key}` },
    "valid-x-api-key": { "x-api-key": valid.key },
    "valid-lowercase-bearer": { authorization: `bearer ${valid.key}` },
    missing: {},
    "empty-bearer": { authorization: "Bearer " },
    "bearer-only": { authorization: "Bearer" },
    basic: { authorization: `Basic ${Buffer.from(`user:${valid.key}`).toString("base64")}` },
    malformed: { authorization: "Bearer gw_live_not-a-key!" },
    unknown: { authorization: `Bearer ${unknown}` },
    revoked: { authorization: `Bearer ${revoked.key}` },
    disabled: { authorization: `Bearer ${disabled.key}` },
    long: { authorization: `Bearer gw_live_${"A".repeat(10_000)}` },
    latin1: { authorization: "Bearer gw_live_\xe9\xff\xfe" },
    "two-keys": { authorization: `Bearer ${unknown}`, "x-api-key": valid.key },
  };

  const livez = async (port: number | string) => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/livez`, { signal: AbortSignal.timeout(5_000) });
      return res.status === 200 ? undefined : `/livez on port ${port} answered ${res.status}`;
    } catch (err) {
      return `/livez on port ${port} failed: ${(err as Error).message}`;
    }
  };

  return {
    name,
    gw,
    upstreams,
    public: { host: url.hostname, port: Number(url.port) },
    keyHeaders: (choice) => headersFor[choice],
    key: valid.key,
    agent,
    providerFailedAt: 0,
    async deadOrDying() {
      const mesh = gw.mesh;
      if (!mesh) return livez(url.port);
      for (const [service, child] of Object.entries(mesh.mesh.processes)) {
        if (child.exitCode !== null || child.signalCode !== null) {
          return `the ${service} process exited (code ${child.exitCode}, signal ${child.signalCode})\n${mesh.output().slice(-4_000)}`;
        }
      }
      const ports = [mesh.ports.public, mesh.ports.inference, mesh.ports.tools, mesh.ports.jobs];
      const problems = (await Promise.all(ports.map(livez))).filter(Boolean);
      return problems.length > 0 ? problems.join("; ") : undefined;
    },
    async stop() {
      agent.destroy();
      await gw.stop();
      await upstreams.close();
    },
  };
}
