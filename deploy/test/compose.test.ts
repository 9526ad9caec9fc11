import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { loadGatewayConfig } from "@gw/config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConsoleEnv } from "../../services/console/src/config";
import { loadInferenceEnv } from "../../services/inference/src/config";
import { loadIngressEnv } from "../../services/ingress/src/config";
import { loadJobsEnv } from "../../services/jobs/src/config";
import { loadToolsEnv } from "../../services/tools/src/config";
import { loadUsageEnv } from "../../services/usage/src/config";
import { deployDir, repoDir } from "./kustomize";

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; target: string };
  command?: string[];
  environment?: string[];
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  read_only?: boolean;
}

const compose = parse(readFileSync(join(deployDir, "docker-compose.yml"), "utf8")) as { services: Record<string, ComposeService> };
const gatewayServices = {
  ingress: loadIngressEnv,
  inference: loadInferenceEnv,
  tools: loadToolsEnv,
  jobs: loadJobsEnv,
  usage: loadUsageEnv,
  console: loadConsoleEnv,
} as const;
/** The services that talk over NATS: all but the console. */
const natsServices = Object.keys(gatewayServices).filter((name) => name !== "console");
/** The services with a schema of their own, each migrated once by its `<name>-migrate` container. */
const migratingServices = ["ingress", "jobs", "usage", "console"];
const infra = ["postgres", "redis", "nats"];
const svc = (name: string): ComposeService => {
  const s = compose.services[name];
  if (!s) throw new Error(`no compose service ${name}`);
  return s;
};

/** A service's environment with ${VAR:?…} filled by samples and ${VAR:-default} by its default; bare names left out. */
function environment(name: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of svc(name).environment ?? []) {
    const eq = entry.indexOf("=");
    if (eq < 0) continue;
    env[entry.slice(0, eq)] = entry
      .slice(eq + 1)
      .replace(/\$\{(\w+):-([^}]*)\}/g, (_m, _v, fallback: string) => fallback)
      .replace(/\$\{(\w+):\?[^}]*\}/g, () => "s".repeat(40));
  }
  return env;
}

describe("deploy/docker-compose.yml", () => {
  it.each(Object.keys(gatewayServices))("when %s is built, then it is deploy/Dockerfile's target of that name, hardened as in Kubernetes", (name) => {
    const s = svc(name);
    expect(s.build).toEqual({ context: "..", dockerfile: "deploy/Dockerfile", target: name });
    expect(s.read_only).toBe(true);
    expect(parseInt(s.stop_grace_period ?? "0", 10)).toBeGreaterThanOrEqual(30);
  });

  it.each(Object.keys(gatewayServices))("when %s starts, then its config.ts accepts the environment compose gives it", (name) => {
    const env = gatewayServices[name as keyof typeof gatewayServices](environment(name)) as Record<string, unknown>;
    if (!natsServices.includes(name)) {
      // No NATS, so neither its address nor its password.
      expect((svc(name).environment ?? []).filter((e) => /NATS/.test(e))).toEqual([]);
      expect(svc(name).depends_on?.nats).toBeUndefined();
      return;
    }
    // The services log in as the user the NATS container is started with.
    const url = new URL(String(env.NATS_URL));
    expect([url.hostname, url.port, url.username]).toEqual(["nats", "4222", "gateway"]);
    expect(url.password.length).toBeGreaterThanOrEqual(16);
  });

  it("when NATS starts, then it requires the password the services log in with", () => {
    const command = svc("nats").command ?? [];
    expect(command[command.indexOf("--user") + 1]).toBe("gateway");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: compose interpolates it, not JavaScript.
    expect(command[command.indexOf("--pass") + 1]).toBe("${NATS_PASSWORD:?set it in deploy/.env (see compose.env.example)}");
    for (const name of natsServices) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: compose interpolates it, not JavaScript.
      expect(svc(name).environment, name).toContain("NATS_URL=nats://gateway:${NATS_PASSWORD:?set it in deploy/.env (see compose.env.example)}@nats:4222");
    }
  });

  it("when an enterprise workspace's job is stored, then jobs gets the same GATEWAY_MASTER_KEY as ingress", () => {
    for (const name of ["ingress", "jobs"]) expect(svc(name).environment, name).toContain("GATEWAY_MASTER_KEY");
  });

  it.each(Object.keys(gatewayServices))("when %s starts, then GATEWAY_CONFIG names the repository's config file, mounted read-only", (name) => {
    const path = environment(name).GATEWAY_CONFIG;
    expect(path, `${name} sets GATEWAY_CONFIG`).toBeDefined();
    expect(svc(name).volumes ?? []).toContain(`../gateway.config.yaml:${path}:ro`);
  });

  it("when ingress calls the other services, then its URLs name their compose services and ports", () => {
    const env = environment("ingress");
    for (const name of ["inference", "tools", "jobs", "usage", "console"]) {
      const url = new URL(env[`${name.toUpperCase()}_URL`] ?? "");
      expect(url.hostname).toBe(name);
      expect(url.port).toBe(environment(name)[`${name.toUpperCase()}_PORT`]);
      expect(svc("ingress").depends_on?.[name]).toEqual({ condition: "service_healthy" });
    }
    // Each through its config.ts as well: the console's port is the one CONSOLE_URL names.
    expect(new URL(loadIngressEnv(env).CONSOLE_URL).port).toBe(String(loadConsoleEnv(environment("console")).CONSOLE_PORT));
  });

  it.each(["console", "jobs"] as const)(
    "when %s calls ingress's admin API, then INGRESS_ADMIN_URL names ingress's compose service and admin port, and nothing makes it wait for ingress",
    (name) => {
      // Set here, not left to config.ts's default (ingress on the same host, as in the embedded default).
      expect(environment(name).INGRESS_ADMIN_URL).toBeDefined();
      const url = new URL(gatewayServices[name](environment(name)).INGRESS_ADMIN_URL);
      expect(url.hostname).toBe("ingress");
      expect(url.port).toBe(String(loadIngressEnv(environment("ingress")).ADMIN_PORT));
      // ingress waits for it to be healthy; it calls ingress only when asked (the console) or while a
      // batch runs, retrying (jobs), so it must not wait for ingress in turn (that would be a cycle).
      expect(svc("ingress").depends_on?.[name]).toEqual({ condition: "service_healthy" });
      expect(svc(name).depends_on?.ingress).toBeUndefined();
    },
  );

  it("when the services wait for one another to start, then no chain of depends_on leads back to where it started", () => {
    const cycles: string[] = [];
    const visit = (name: string, path: string[]) => {
      if (path.includes(name)) {
        cycles.push([...path.slice(path.indexOf(name)), name].join(" → "));
        return;
      }
      for (const next of Object.keys(compose.services[name]?.depends_on ?? {})) visit(next, [...path, name]);
    };
    for (const name of Object.keys(compose.services)) visit(name, []);
    expect(cycles).toEqual([]);
  });

  it("when the console hands out links, then they start with the address compose publishes ingress's public port on, unless deploy/.env says otherwise", () => {
    const url = new URL(loadConsoleEnv(environment("console")).GATEWAY_PUBLIC_URL ?? "");
    const published = (svc("ingress").ports ?? []).find((p) => p.endsWith(`:${environment("ingress").PORT}`));
    expect(published?.split(":")[0]).toBe(url.port);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: compose interpolates it, not JavaScript.
    expect(svc("console").environment).toContain("GATEWAY_PUBLIC_URL=${GATEWAY_PUBLIC_URL:-http://127.0.0.1:8080}");
    // Single sign-on is passed on only when set, all three by their bare names.
    for (const name of ["GATEWAY_OIDC_ISSUER", "GATEWAY_OIDC_CLIENT_ID", "GATEWAY_OIDC_CLIENT_SECRET"]) expect(svc("console").environment).toContain(name);
  });

  it("when the mesh comes up, then migrations run first, once, from the service's own image", () => {
    for (const name of migratingServices) {
      const migrate = svc(`${name}-migrate`);
      expect(migrate.image).toBe(svc(name).image);
      // The image's bundled migration entry (pnpm build makes it from src/migrate.ts).
      expect(migrate.command).toEqual([`/app/services/${name}/dist/migrate.js`]);
      expect(existsSync(join(repoDir, `services/${name}/src/migrate.ts`))).toBe(true);
      expect(migrate.depends_on?.postgres).toEqual({ condition: "service_healthy" });
      expect(svc(name).depends_on?.[`${name}-migrate`]).toEqual({ condition: "service_completed_successfully" });
    }
  });

  it("when ports are published, then only ingress's are, and its admin port only on this computer", () => {
    const published = Object.entries(compose.services).filter(([, s]) => (s.ports ?? []).length > 0);
    expect(published.map(([name]) => name)).toEqual(["ingress"]);
    expect(svc("ingress").ports).toEqual(["8080:8080", "127.0.0.1:8090:8090"]);
  });

  it("when Postgres, Redis and NATS run, then they are versioned images with health checks, and NATS has JetStream", () => {
    for (const name of infra) {
      expect(svc(name).image).toMatch(/^[\w./-]+:\d+(\.\d+)*-[\w.]+$|^[\w./-]+:\d+(\.\d+)*$/);
      expect(svc(name).healthcheck?.test.length).toBeGreaterThan(1);
    }
    expect(svc("nats").command).toContain("--jetstream");
  });

  it("when a secret is needed, then compose takes it from deploy/.env or the shell, never from the file", () => {
    for (const name of [...Object.keys(gatewayServices), ...migratingServices.map((n) => `${n}-migrate`)]) {
      for (const entry of svc(name).environment ?? []) {
        const [key, value] = [entry.split("=")[0] ?? "", entry.split("=").slice(1).join("=")];
        if (/(SECRET|TOKEN|_KEY)$/.test(key)) expect(value === "" || /^\$\{\w+:\?[^}]+\}$/.test(value), entry).toBe(true);
      }
    }
  });

  it("when compose reads a variable from deploy/.env, then compose.env.example lists it (set or commented out)", () => {
    const example = readFileSync(join(deployDir, "compose.env.example"), "utf8");
    const listed = new Set([...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]));
    const read = new Set<string>();
    for (const s of Object.values(compose.services)) {
      // A list of NAME=value entries (a bare NAME passes on deploy/.env's), or a map (the infrastructure's).
      const environment: string[] = Array.isArray(s.environment) ? s.environment : Object.values((s.environment ?? {}) as Record<string, string>);
      for (const entry of [...environment, ...(s.command ?? [])]) {
        for (const m of entry.matchAll(/\$\{(\w+)(?::[-?][^}]*)?\}/g)) read.add(m[1] ?? "");
      }
      for (const entry of Array.isArray(s.environment) ? s.environment : []) if (/^[A-Z][A-Z0-9_]*$/.test(entry)) read.add(entry);
    }
    expect([...read]).toEqual(expect.arrayContaining(["GATEWAY_INTERNAL_SECRET", "NATS_PASSWORD", "POSTGRES_PASSWORD", "GATEWAY_OIDC_CLIENT_SECRET"]));
    expect([...read].filter((name) => !listed.has(name)).sort()).toEqual([]);
  });

  it("when a provider is configured, then its credential variable reaches the service that calls it and no other", () => {
    const config = loadGatewayConfig(join(repoDir, "gateway.config.yaml"));
    const passed = (name: string) => (svc(name).environment ?? []).filter((e) => /_API_KEY$/.test(e));
    const tools = new Set(["tavily", "serpapi"]);
    const expected = (want: boolean) =>
      Object.values(config.providers)
        .filter((p) => tools.has(p.kind) === want)
        .map((p) => p.api_key_env)
        .sort();
    expect(passed("inference").sort()).toEqual(expected(false));
    expect(passed("tools").sort()).toEqual(expected(true));
    expect(passed("ingress")).toEqual([]);
    expect(passed("jobs")).toEqual([]);
    expect(passed("usage")).toEqual([]);
    expect(passed("console")).toEqual([]);
  });
});

describe("deploy/docker/healthcheck.mjs", () => {
  let server: Server;
  let port: number;
  let status = 200;
  beforeAll(async () => {
    server = createServer((req, res) => {
      res.statusCode = req.url === "/readyz" ? status : 404;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const check = (env: Record<string, string>, portVar = "SOME_PORT") =>
    new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, [join(deployDir, "docker/healthcheck.mjs"), portVar], {
        env: { PATH: process.env.PATH ?? "", ...env },
        stdio: "ignore",
      });
      child.on("exit", (code) => resolve(code));
    });

  it("when /readyz answers 200 on the port the named variable holds, then the check passes", async () => {
    status = 200;
    expect(await check({ SOME_PORT: String(port) })).toBe(0);
  });

  it("when /readyz answers 503 (draining or a dependency down), then the check fails", async () => {
    status = 503;
    expect(await check({ SOME_PORT: String(port) })).toBe(1);
  });

  it("when nothing listens, or the variable holds no port, then the check fails", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const unused = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(await check({ SOME_PORT: String(unused) })).toBe(1);
    expect(await check({})).toBe(1);
  });
});
