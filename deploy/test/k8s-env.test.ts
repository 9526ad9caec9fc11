import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadGatewayConfig } from "@gw/config";
import type { IContainer } from "kubernetes-models/v1";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadInferenceEnv } from "../../services/inference/src/config";
import { loadIngressEnv } from "../../services/ingress/src/config";
import { loadJobsEnv } from "../../services/jobs/src/config";
import { loadToolsEnv } from "../../services/tools/src/config";
import { loadUsageEnv } from "../../services/usage/src/config";
import { deployDir, kustomize } from "./kustomize";
import { mainContainer, Manifests, resolvePort } from "./manifests";

/** Stand-ins for what the Secrets hold, shaped as each service's config.ts expects. */
const SECRET_SAMPLES: Record<string, string> = {
  DATABASE_URL: "postgresql://app:password@gw-postgres-rw.databases:5432/app",
  REDIS_URL: "redis://:password@gw-redis-master.redis:6379",
};
const sample = (name: string) => SECRET_SAMPLES[name] ?? "s".repeat(40);

const loaders = {
  ingress: (env: Record<string, string>) => loadIngressEnv(env),
  inference: (env: Record<string, string>) => loadInferenceEnv(env),
  tools: (env: Record<string, string>) => loadToolsEnv(env),
  jobs: (env: Record<string, string>) => loadJobsEnv(env),
  usage: (env: Record<string, string>) => loadUsageEnv(env),
};
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

  /** The container's environment as Kubernetes would set it, with sample values for Secret references. */
  function environment(c: IContainer): Record<string, string> {
    const env: Record<string, string> = {};
    for (const from of c.envFrom ?? []) {
      if (from.configMapRef) Object.assign(env, m.configMap(from.configMapRef.name ?? "").data);
    }
    for (const e of c.env ?? []) {
      if (e.value !== undefined) env[e.name] = e.value;
      else if (e.valueFrom?.secretKeyRef && !e.valueFrom.secretKeyRef.optional) env[e.name] = sample(e.name);
      else if (e.valueFrom?.configMapKeyRef) env[e.name] = m.configMap(e.valueFrom.configMapKeyRef.name ?? "").data?.[e.valueFrom.configMapKeyRef.key] ?? "";
    }
    return env;
  }

  it.each(Object.keys(loaders))("when %s starts with the rendered environment, then its config.ts accepts it and listens on the container's ports", (name) => {
    const c = mainContainer(m.deployment(`gw-${name}`));
    const env = loaders[name as keyof typeof loaders](environment(c)) as Record<string, unknown>;
    const portVar = name === "ingress" ? "PORT" : `${name.toUpperCase()}_PORT`;
    expect(env[portVar]).toBe(resolvePort(c, "http"));
    if (name === "ingress") expect(env.ADMIN_PORT).toBe(resolvePort(c, "admin"));
    expect(env.NATS_URL).toMatch(/^nats:\/\//);
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
  });

  it("when ingress proxies usage queries, then its config.ts takes USAGE_URL, the URL of gw-usage's Service", () => {
    const env = loadIngressEnv(environment(mainContainer(m.deployment("gw-ingress")))) as Record<string, unknown>;
    expect(new URL(String(env.USAGE_URL)).hostname).toBe("gw-usage");
  });

  it("when usage starts, then it keeps records as long as its manifest says, and reads no secret but the database and the internal one", () => {
    const c = mainContainer(m.deployment("gw-usage"));
    const env = loadUsageEnv(environment(c)) as Record<string, unknown>;
    expect(env.GATEWAY_USAGE_RETENTION_DAYS).toBe(Number(c.env?.find((e) => e.name === "GATEWAY_USAGE_RETENTION_DAYS")?.value));
    const secrets = (c.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [`${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`] : []));
    expect(secrets.sort()).toEqual(["gw-postgres-app/uri", "gw-secrets/internal-secret"]);
  });
});
