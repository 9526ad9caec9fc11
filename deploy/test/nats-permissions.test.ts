import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { broadcastSubjects, workSubjects } from "../../packages/contracts/src/bus";
import { consumerNameOf, natsSubjectOf, streamKindOf, streamKinds, streamNameOf } from "../../packages/bus/src/nats-setup";
import { deployDir, kustomize, repoDir } from "./kustomize";
import { mainContainer, Manifests } from "./manifests";

/**
 * deploy/nats/gateway-auth.conf gives each service a NATS user allowed only what it uses. What a
 * service uses is read here from its code, so a new subject or consumer that the file does not
 * allow fails this test rather than a deployment that locked NATS down.
 */
const services = ["ingress", "inference", "tools", "jobs", "usage"] as const;
type Service = (typeof services)[number];
const NAMESPACE = "gw";
/** The stream a work subject lives in (GW_WORK, or GW_USAGE for usage records), as the bus picks it. */
const streamOf = (subject: string) => streamNameOf(NAMESPACE, streamKindOf(subject));
/** Every service's bus makes sure every stream exists at start, whichever subjects it uses. */
const streams = streamKinds.map((kind) => streamNameOf(NAMESPACE, kind));

interface NatsUser {
  publish: string[];
  subscribe: string[];
}

/** The conf's users, by the service their NKey variable names (GW_NATS_<SERVICE>_NKEY). */
function readUsers(): Record<string, NatsUser> {
  const text = readFileSync(join(deployDir, "nats", "gateway-auth.conf"), "utf8").replace(/#[^\n]*/g, "");
  const users: Record<string, NatsUser> = {};
  const blocks = text.split(/nkey:\s*\$GW_NATS_([A-Z]+)_NKEY/).slice(1);
  for (let i = 0; i < blocks.length; i += 2) {
    const body = blocks[i + 1] ?? "";
    const list = (key: string) =>
      [...(new RegExp(`${key}:\\s*\\{\\s*allow:\\s*\\[([^\\]]*)\\]`).exec(body)?.[1] ?? "").matchAll(/"([^"]+)"/g)].map((m) => m[1] ?? "");
    users[(blocks[i] ?? "").toLowerCase()] = { publish: list("publish"), subscribe: list("subscribe") };
  }
  return users;
}

function sources(dir: string): string {
  return (
    readdirSync(dir, { recursive: true, encoding: "utf8" })
      // Test support (a service's src/testing/) drives the bus as tests need, not as the service does.
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts") && !f.split(/[\\/]/).includes("testing"))
      .map((f) => readFileSync(join(dir, f), "utf8"))
      .join("\n")
      // Whole-line comments, which may sit between a call's arguments and would hide it from the scan.
      .replace(/^\s*\/\/.*$/gm, "")
  );
}

/** What each service's code publishes, subscribes to and consumes (subject and durable). */
function usage(service: Service) {
  const code = sources(join(repoDir, "services", service, "src"));
  const publishes = new Set([...code.matchAll(/\.(?:enqueue|publish)\(\s*"([a-z.]+)"/g)].map((m) => m[1] ?? ""));
  // Helpers that publish on a caller's behalf: service-kit's job events and usage records, and
  // jobs's dispatcher, whose subject depends on the job's route (model routes or research).
  if (/\breportJobEvent\(/.test(code)) publishes.add("jobs.events");
  if (/\bworkSubjectFor\(/.test(code)) for (const s of ["jobs.work.inference", "jobs.work.tools"]) publishes.add(s);
  if (/\bnew UsagePublisher\(|\busageRecordsKind\.send\(/.test(code)) publishes.add("usage.records");
  const subscribes = [...code.matchAll(/\.subscribe\(\s*"([a-z.]+)"/g)].map((m) => m[1] ?? "");
  // service-kit's tracker of a worker's job attempts listens for superseded ones.
  if (/\bnew JobAttempts\(/.test(code)) subscribes.push("jobs.cancel");
  const consumes = [...code.matchAll(/\.consume\(\s*"([a-z.]+)",\s*\{\s*durable:\s*"([A-Za-z0-9_-]+)"/g)].map((m) => ({
    subject: m[1] ?? "",
    durable: m[2] ?? "",
  }));
  return { publishes: [...publishes], subscribes, consumes };
}

describe("the shipped NATS permissions (deploy/nats/gateway-auth.conf)", () => {
  const users = readUsers();

  it("when read, then there is one user per service and nothing else", () => {
    expect(Object.keys(users).sort()).toEqual([...services].sort());
  });

  it.each(services)("when %s publishes, subscribes and consumes what its code does, then its user allows exactly that much", (service) => {
    const user = users[service] as NatsUser;
    const used = usage(service);
    expect(used.publishes.length + used.consumes.length, "the code scan found the service's bus calls").toBeGreaterThan(0);
    for (const subject of used.publishes) expect(user.publish, `${service} publishes ${subject}`).toContain(natsSubjectOf(NAMESPACE, subject));
    for (const subject of used.subscribes) expect(user.subscribe, `${service} subscribes ${subject}`).toContain(natsSubjectOf(NAMESPACE, subject));
    for (const stream of streams) {
      for (const op of ["INFO", "CREATE", "UPDATE"]) expect(user.publish, `${service} makes sure ${stream} exists`).toContain(`$JS.API.STREAM.${op}.${stream}`);
    }
    for (const { subject, durable } of used.consumes) {
      const consumer = consumerNameOf(durable, subject);
      const stream = streamOf(subject);
      for (const allowed of [
        `$JS.API.CONSUMER.INFO.${stream}.${consumer}`,
        `$JS.API.CONSUMER.CREATE.${stream}.${consumer}.>`,
        `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
        `$JS.ACK.${stream}.${consumer}.>`,
      ]) {
        expect(user.publish, `${service} consumes ${subject} as ${durable}`).toContain(allowed);
      }
    }
    // Nothing beyond that: no subject of the gateway's it does not use, no consumer of another's,
    // no stream deletion or purge, no wildcard over the namespace, replies on its own inbox only.
    const own = new Set([
      ...used.publishes.map((s) => natsSubjectOf(NAMESPACE, s)),
      ...used.consumes.flatMap(({ subject, durable }) => {
        const c = consumerNameOf(durable, subject);
        const stream = streamOf(subject);
        return [
          `$JS.API.CONSUMER.INFO.${stream}.${c}`,
          `$JS.API.CONSUMER.CREATE.${stream}.${c}.>`,
          `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${c}`,
          `$JS.API.CONSUMER.MSG.NEXT.${stream}.${c}`,
          `$JS.ACK.${stream}.${c}.>`,
        ];
      }),
      "$JS.API.INFO",
      ...streams.flatMap((stream) => ["INFO", "CREATE", "UPDATE"].map((op) => `$JS.API.STREAM.${op}.${stream}`)),
    ]);
    expect(user.publish.filter((s) => !own.has(s))).toEqual([]);
    expect([...user.subscribe].sort()).toEqual([...used.subscribes.map((s) => natsSubjectOf(NAMESPACE, s)), `_INBOX.${service}.>`].sort());
  });

  it("when usage records travel, then ingress and jobs alone publish them and usage alone pulls them, from GW_USAGE only", () => {
    const subject = natsSubjectOf(NAMESPACE, "usage.records");
    const usageStream = streamOf("usage.records");
    expect(usageStream).toBe("GW_USAGE");
    const publishers = services.filter((name) => users[name]?.publish.includes(subject));
    expect(publishers).toEqual(["ingress", "jobs"]);
    const consumer = consumerNameOf("usage", "usage.records");
    const pullers = services.filter((name) => users[name]?.publish.some((s) => s.startsWith(`$JS.API.CONSUMER.MSG.NEXT.${usageStream}.`)));
    expect(pullers).toEqual(["usage"]);
    expect(users.usage?.publish).toContain(`$JS.API.CONSUMER.MSG.NEXT.${usageStream}.${consumer}`);
    // The usage user touches no consumer of the work stream, and nobody reaches usage's consumer there.
    const all = Object.values(users).flatMap((u) => u.publish);
    expect(all.filter((s) => s.includes(consumer) && !s.includes(`.${usageStream}.`))).toEqual([]);
    expect((users.usage?.publish ?? []).filter((s) => /^\$JS\.(API\.CONSUMER|ACK)\./.test(s) && !s.includes(`.${usageStream}.`))).toEqual([]);
  });

  it("when every subject of the contracts is counted, then each has a publisher, and each work subject a consumer", () => {
    const all = Object.values(users);
    for (const subject of [...Object.keys(workSubjects), ...Object.keys(broadcastSubjects)]) {
      expect(
        all.some((u) => u.publish.includes(natsSubjectOf(NAMESPACE, subject))),
        subject,
      ).toBe(true);
    }
    for (const subject of Object.keys(workSubjects)) {
      const next = new RegExp(`^\\$JS\\.API\\.CONSUMER\\.MSG\\.NEXT\\.${streamOf(subject)}\\.[A-Za-z0-9_-]+_${subject.replace(/\./g, "_")}$`);
      expect(
        all.some((u) => u.publish.some((s) => next.test(s))),
        subject,
      ).toBe(true);
    }
  });
});

describe.each(["dev", "prod"])("the %s overlay's NATS credentials", (overlay) => {
  const m = new Manifests(kustomize(join(deployDir, "k8s", "overlays", overlay)));

  it.each(services)("when gw-%s starts, then NATS_CREDS names a file of its own Secret, mounted read-only", (service) => {
    const d = m.deployment(`gw-${service}`);
    const c = mainContainer(d);
    const path = c.env?.find((e) => e.name === "NATS_CREDS")?.value ?? "";
    expect(path).toMatch(/^\//);
    const mount = c.volumeMounts?.find((v) => path.startsWith(`${v.mountPath}/`));
    expect(mount?.readOnly).toBe(true);
    const volume = d.spec?.template.spec?.volumes?.find((v) => v.name === mount?.name);
    expect(volume?.secret?.secretName).toBe(`gw-nats-${service}`);
    const file = path.slice((mount?.mountPath.length ?? 0) + 1);
    expect(volume?.secret?.items?.map((i) => [i.key, i.path])).toEqual([["creds", file]]);
    expect(volume?.secret?.optional).not.toBe(true);
  });

  it("when a Deployment is not one of the NATS users (the console), then it gets no NATS address, credentials or Secret, and its code no bus", () => {
    const others = m.deployments.filter((d) => !services.some((name) => d.metadata?.name === `gw-${name}`));
    expect(others.map((d) => d.metadata?.name)).toEqual(["gw-console"]);
    for (const d of others) {
      for (const c of [...(d.spec?.template.spec?.initContainers ?? []), ...(d.spec?.template.spec?.containers ?? [])]) {
        expect((c.env ?? []).map((e) => e.name).filter((n) => n.startsWith("NATS_"))).toEqual([]);
        // gw-env carries NATS_URL: taken whole, it would hand the address over.
        expect((c.envFrom ?? []).map((f) => f.configMapRef?.name)).not.toContain("gw-env");
      }
      expect((d.spec?.template.spec?.volumes ?? []).filter((v) => v.secret?.secretName?.startsWith("gw-nats-"))).toEqual([]);
    }
    const code = sources(join(repoDir, "services", "console", "src"));
    expect(code).not.toMatch(/from "@gw\/bus"|from "nats"/);
  });

  it("when the shared settings are read, then NATS_URL carries no credentials and NATS_NAMESPACE is the one the permissions name", () => {
    const env = m.configMap("gw-env").data ?? {};
    expect(env.NATS_URL).toMatch(/^nats:\/\/[^@]+$/);
    expect(env.NATS_NAMESPACE).toBe(NAMESPACE);
  });
});
