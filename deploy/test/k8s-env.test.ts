import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadGatewayConfig } from "@gw/config";
import type { IIngress } from "kubernetes-models/networking.k8s.io/v1";
import type { IContainer } from "kubernetes-models/v1";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConsoleEnv, oidcSettings } from "../../services/console/src/config";
import { loadInferenceEnv } from "../../services/inference/src/config";
import { doorSettings, loadIngressEnv } from "../../services/ingress/src/config";
import { loadJobsEnv } from "../../services/jobs/src/config";
import { loadToolsEnv } from "../../services/tools/src/config";
import { loadUsageEnv } from "../../services/usage/src/config";
import { deployDir, kustomize } from "./kustomize";
import { mainContainer, Manifests, resolvePort } from "./manifests";

/** Stand-ins for what the Secrets hold, shaped as each service's config.ts expects. */
const SECRET_SAMPLES: Record<string, string> = {
  DATABASE_URL: "postgresql://app:password@gw-postgres-rw.databases:5432/app",
  REDIS_URL: "redis://:password@gw-redis-master.redis:6379",
  GATEWAY_OIDC_ISSUER: "https://sso.example.com/realms/gateway",
  GATEWAY_OIDC_CLIENT_ID: "ai-gateway-console",
};
const sample = (name: string) => SECRET_SAMPLES[name] ?? "s".repeat(40);

const loaders = {
  ingress: (env: Record<string, string>) => loadIngressEnv(env),
  inference: (env: Record<string, string>) => loadInferenceEnv(env),
  tools: (env: Record<string, string>) => loadToolsEnv(env),
  jobs: (env: Record<string, string>) => loadJobsEnv(env),
  usage: (env: Record<string, string>) => loadUsageEnv(env),
  console: (env: Record<string, string>) => loadConsoleEnv(env),
};
/**
 * The services that call ingress's admin port, each read through its own config.ts: the console as
 * the person signed in, jobs to admit a batch's lines under their key's limits and budgets.
 */
const adminCallers = {
  console: (env: Record<string, string>) => loadConsoleEnv(env),
  jobs: (env: Record<string, string>) => loadJobsEnv(env),
};
/** The services that use no NATS (and are not handed its address). */
const WITHOUT_NATS = new Set(["console"]);
/** Which service holds the credentials of a provider, by its kind: the web tools run in tools. */
const TOOL_KINDS = new Set(["tavily", "serpapi"]);

describe.each(["dev", "prod"])("the %s overlay's configuration", (overlay) => {
  let m: Manifests;
  let tmp: string;
  beforeAll(() => {
    m = new Manifests(kustomize(join(deployDir, "k8s", "overlays", overlay)));
    tmp = mkdtempSync(join(tmpdir(), "gw-deploy-"));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  /**
   * The container's environment as Kubernetes would set it, with sample values for Secret references
   * (for optional ones too when `optionalSecrets`, as if those Secrets existed).
   */
  function environment(c: IContainer, optionalSecrets = false): Record<string, string> {
    const env: Record<string, string> = {};
    for (const from of c.envFrom ?? []) {
      if (from.configMapRef) Object.assign(env, m.configMap(from.configMapRef.name ?? "").data);
    }
    for (const e of c.env ?? []) {
      if (e.value !== undefined) env[e.name] = e.value;
      else if (e.valueFrom?.secretKeyRef && (optionalSecrets || !e.valueFrom.secretKeyRef.optional)) env[e.name] = sample(e.name);
      else if (e.valueFrom?.configMapKeyRef) {
        const value = m.configMap(e.valueFrom.configMapKeyRef.name ?? "").data?.[e.valueFrom.configMapKeyRef.key];
        // A missing key of a ConfigMap would stop the pod (CreateContainerConfigError) unless optional.
        if (!e.valueFrom.configMapKeyRef.optional) expect(value, `${c.name} ${e.name}: ${e.valueFrom.configMapKeyRef.key} is in the ConfigMap`).toBeDefined();
        if (value !== undefined) env[e.name] = value;
      }
    }
    return env;
  }

  /** The Service named by a URL's host, and the container port its URL port leads to in `deployment`'s pods. */
  function serviceTarget(url: URL, deployment: string): { service?: string; port?: number; portName?: string } {
    const d = m.deployment(deployment);
    const svc = m.servicesFor(d).find((s) => s.metadata?.name === url.hostname);
    const svcPort = svc?.spec?.ports?.find((p) => p.port === Number(url.port));
    return { service: svc?.metadata?.name, port: resolvePort(mainContainer(d), svcPort?.targetPort ?? svcPort?.port), portName: svcPort?.name };
  }

  it.each(Object.keys(loaders))("when %s starts with the rendered environment, then its config.ts accepts it and listens on the container's ports", (name) => {
    const c = mainContainer(m.deployment(`gw-${name}`));
    const raw = environment(c);
    const env = loaders[name as keyof typeof loaders](raw) as Record<string, unknown>;
    const portVar = name === "ingress" ? "PORT" : `${name.toUpperCase()}_PORT`;
    expect(env[portVar]).toBe(resolvePort(c, "http"));
    if (name === "ingress") expect(env.ADMIN_PORT).toBe(resolvePort(c, "admin"));
    if (WITHOUT_NATS.has(name)) expect(Object.keys(raw).filter((k) => k.startsWith("NATS_"))).toEqual([]);
    else expect(env.NATS_URL).toMatch(/^nats:\/\//);
  });

  it("when the console's migrations run, then the init container's environment is what migrate.ts needs: the database, and the log level", () => {
    const init = m.deployment("gw-console").spec?.template.spec?.initContainers?.[0];
    const env = environment(init!);
    expect(Object.keys(env).sort()).toEqual(["DATABASE_URL", "LOG_LEVEL"]);
    expect(env.LOG_LEVEL).toBe(loadConsoleEnv(environment(mainContainer(m.deployment("gw-console")))).LOG_LEVEL);
  });

  it("when a service starts, then GATEWAY_CONFIG names the mounted ConfigMap's file and the file passes the gateway's own validation", () => {
    let checked = 0;
    // Every service reads the config file (jobs checks async bodies against the model catalog,
    // usage costs records with its prices);
    // without the variable a container would look for it at the repository path and not start.
    for (const d of m.deployments) {
      const c = mainContainer(d);
      const path = c.env?.find((e) => e.name === "GATEWAY_CONFIG")?.value;
      expect(path, `${d.metadata?.name} sets GATEWAY_CONFIG`).toBeDefined();
      if (!path) continue;
      const mount = c.volumeMounts?.find((v) => path.startsWith(`${v.mountPath}/`));
      const volume = d.spec?.template.spec?.volumes?.find((v) => v.name === mount?.name);
      expect(volume?.configMap?.name, `${d.metadata?.name} mounts the config`).toBeDefined();
      const content = m.configMap(volume?.configMap?.name ?? "").data?.[path.slice((mount?.mountPath.length ?? 0) + 1)];
      expect(content, `${path} is in the ConfigMap`).toBeDefined();
      const file = join(tmp, `${d.metadata?.name}.yaml`);
      writeFileSync(file, content ?? "");
      expect(Object.keys(loadGatewayConfig(file).providers).length).toBeGreaterThan(0);
      checked++;
    }
    expect(checked).toBe(Object.keys(loaders).length);
  });

  it("when workspaces bring their own credentials, then ingress and jobs seal them under the same optional master key", () => {
    const ref = (name: string) => mainContainer(m.deployment(`gw-${name}`)).env?.find((e) => e.name === "GATEWAY_MASTER_KEY")?.valueFrom?.secretKeyRef;
    expect(ref("ingress")).toEqual({ name: "gw-secrets", key: "master-key", optional: true });
    expect(ref("jobs")).toEqual(ref("ingress"));
    expect(ref("inference")).toBeUndefined();
    expect(ref("usage")).toBeUndefined();
    expect(ref("console")).toBeUndefined();
  });

  it("when ingress holds request bodies, then their budget leaves room in its memory limit", () => {
    const c = mainContainer(m.deployment("gw-ingress"));
    const budgetMiB = Number(loadIngressEnv(environment(c)).GATEWAY_BODY_INFLIGHT_MB);
    const limit = String(c.resources?.limits?.memory ?? "");
    expect(limit).toMatch(/^\d+Mi$/);
    // A parsed JSON body costs about three times its bytes while it is checked and forwarded.
    expect(budgetMiB * 3 + 128).toBeLessThanOrEqual(parseInt(limit, 10) * 1.1);
  });

  it("when a provider is configured, then the service that calls it gets its credentials from a Secret, and no other service does", () => {
    const cm = m.configMap("gw-config");
    const file = join(tmp, "providers.yaml");
    writeFileSync(file, cm.data?.["gateway.config.yaml"] ?? "");
    const secretRefs = (name: string) =>
      (mainContainer(m.deployment(`gw-${name}`)).envFrom ?? []).flatMap((f) => (f.secretRef?.name ? [f.secretRef.name] : []));
    const kinds = Object.values(loadGatewayConfig(file).providers).map((p) => p.kind);
    if (kinds.some((k) => !TOOL_KINDS.has(k))) expect(secretRefs("inference")).toEqual(["gw-model-provider-keys"]);
    if (kinds.some((k) => TOOL_KINDS.has(k))) expect(secretRefs("tools")).toEqual(["gw-tool-provider-keys"]);
    expect(secretRefs("ingress")).toEqual([]);
    expect(secretRefs("jobs")).toEqual([]);
    expect(secretRefs("usage")).toEqual([]);
    expect(secretRefs("console")).toEqual([]);
  });

  it("when ingress proxies usage queries, then its config.ts takes USAGE_URL, the URL of gw-usage's Service", () => {
    const env = loadIngressEnv(environment(mainContainer(m.deployment("gw-ingress")))) as Record<string, unknown>;
    expect(new URL(String(env.USAGE_URL)).hostname).toBe("gw-usage");
  });

  it("when ingress passes /console on, then its config.ts takes CONSOLE_URL, gw-console's Service on the port the console listens on", () => {
    const env = loadIngressEnv(environment(mainContainer(m.deployment("gw-ingress"))));
    const target = serviceTarget(new URL(env.CONSOLE_URL), "gw-console");
    expect(target.service).toBe("gw-console");
    expect(target.port).toBe(loadConsoleEnv(environment(mainContainer(m.deployment("gw-console")))).CONSOLE_PORT);
  });

  it("when clients come through the ingress controller, then ingress trusts exactly that one hop for their address and scheme", () => {
    // Else every client would be the controller's address: one shared count of failed keys and
    // console sign-ins (a lockout for all), and no Secure cookie behind TLS. The NetworkPolicy lets
    // only the controller reach the public port (k8s-manifests.test.ts), which makes one hop right.
    const env = loadIngressEnv(environment(mainContainer(m.deployment("gw-ingress"))));
    expect(doorSettings(env).trustProxy).toBe(1);
  });

  it.each(Object.keys(adminCallers))(
    "when %s calls ingress's admin API, then its config.ts takes INGRESS_ADMIN_URL, gw-ingress's Service on the admin port",
    (name) => {
      const raw = environment(mainContainer(m.deployment(`gw-${name}`)));
      // Set by the manifest, not left to config.ts's default (ingress on the same host, as in the embedded default).
      expect(raw.INGRESS_ADMIN_URL).toBeDefined();
      const env = adminCallers[name as keyof typeof adminCallers](raw);
      const target = serviceTarget(new URL(env.INGRESS_ADMIN_URL), "gw-ingress");
      expect(target).toMatchObject({ service: "gw-ingress", portName: "admin" });
      expect(target.port).toBe(loadIngressEnv(environment(mainContainer(m.deployment("gw-ingress")))).ADMIN_PORT);
    },
  );

  it("when the console hands out links, then GATEWAY_PUBLIC_URL is the public route's host, over https exactly when the route has TLS", () => {
    const env = loadConsoleEnv(environment(mainContainer(m.deployment("gw-console"))));
    const url = new URL(env.GATEWAY_PUBLIC_URL ?? "");
    const route = m.ofKind<IIngress>("Ingress")[0];
    expect(url.host).toBe(route?.spec?.rules?.[0]?.host);
    expect(url.pathname).toBe("/");
    const tls = (route?.spec?.tls ?? []).some((t) => t.hosts?.includes(url.host));
    expect(url.protocol).toBe(tls ? "https:" : "http:");
  });

  it("when the console starts, then it reads no secret but the database, the internal one and, for single sign-on, one optional Secret holding all three settings", () => {
    const c = mainContainer(m.deployment("gw-console"));
    const refs = (c.env ?? []).flatMap((e) => {
      const ref = e.valueFrom?.secretKeyRef;
      return ref ? [{ variable: e.name, secret: `${ref.name}/${ref.key}`, optional: ref.optional === true }] : [];
    });
    expect(
      refs
        .filter((r) => !r.optional)
        .map((r) => r.secret)
        .sort(),
    ).toEqual(["gw-postgres-app/uri", "gw-secrets/internal-secret"]);
    const oidc = refs.filter((r) => r.optional);
    expect(oidc.map((r) => r.variable).sort()).toEqual(["GATEWAY_OIDC_CLIENT_ID", "GATEWAY_OIDC_CLIENT_SECRET", "GATEWAY_OIDC_ISSUER"]);
    expect(new Set(oidc.map((r) => r.secret.split("/")[0]))).toEqual(new Set(["gw-console-oidc"]));
    // Without that Secret, passwords only; with it, its three values are single sign-on's settings.
    expect(oidcSettings(loadConsoleEnv(environment(c)))).toBeUndefined();
    expect(oidcSettings(loadConsoleEnv(environment(c, true)))).toEqual({
      issuer: SECRET_SAMPLES.GATEWAY_OIDC_ISSUER,
      clientId: SECRET_SAMPLES.GATEWAY_OIDC_CLIENT_ID,
      clientSecret: sample("GATEWAY_OIDC_CLIENT_SECRET"),
    });
  });

  it("when usage starts, then it keeps records as long as its manifest says, and reads no secret but the database and the internal one", () => {
    const c = mainContainer(m.deployment("gw-usage"));
    const env = loadUsageEnv(environment(c)) as Record<string, unknown>;
    expect(env.GATEWAY_USAGE_RETENTION_DAYS).toBe(Number(c.env?.find((e) => e.name === "GATEWAY_USAGE_RETENTION_DAYS")?.value));
    const secrets = (c.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [`${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`] : []));
    expect(secrets.sort()).toEqual(["gw-postgres-app/uri", "gw-secrets/internal-secret"]);
  });
});
