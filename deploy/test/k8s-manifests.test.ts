import { existsSync } from "node:fs";
import { join } from "node:path";
import type { IScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1";
import type { IIngress } from "kubernetes-models/networking.k8s.io/v1";
import type { IContainer, ISecret } from "kubernetes-models/v1";
import { beforeAll, describe, expect, it } from "vitest";
import { consumerNameOf, streamKindOf, streamNameOf } from "../../packages/bus/src/nats-setup";
import { unknownFields, validateObject } from "./k8s-models";
import { deployDir, kustomize, repoDir } from "./kustomize";
import {
  allContainers,
  egressAllows,
  egressIpBlocks,
  ingressAllows,
  isOutsidePeer,
  mainContainer,
  Manifests,
  matches,
  podLabels,
  quantity,
  resolvePort,
} from "./manifests";

const overlays = { dev: "ai-gateway-dev", prod: "ai-gateway" } as const;
const services = ["ingress", "inference", "tools", "jobs", "usage", "console"] as const;
/** The services only ingress calls, at the URL its <NAME>_URL variable holds. */
const internalServices = ["inference", "tools", "jobs", "usage", "console"] as const;
/**
 * The services that call ingress's admin port, at the URL their INGRESS_ADMIN_URL holds: the console
 * as the person signed in, jobs to admit a batch's lines under their key's limits and budgets.
 */
const adminCallers = ["console", "jobs"] as const;
/** The services with a schema of their own, migrated by an init container before they serve. */
const migratingServices = ["ingress", "jobs", "usage", "console"] as const;
/** What the internet egress rules leave closed: the private ranges and the cloud metadata address. */
const PRIVATE_RANGES = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"];
/** Each JetStream consumer KEDA scales a service on (prod): the service's durable and its subject. */
const backlogConsumers = [
  { name: "inference", durable: "inference", subject: "jobs.work.inference" },
  { name: "tools", durable: "tools", subject: "jobs.work.tools" },
  { name: "usage", durable: "usage", subject: "usage.records" },
] as const;
/** runUntilSignal's hard stop timeout (packages/service-kit/src/run.ts): the longest a drain takes. */
const HARD_STOP_SECONDS = 30;
/** The one peer from outside the namespace that may reach a service other than ingress, and only its metrics port. */
const PROMETHEUS = { namespace: "monitoring", pod: { "app.kubernetes.io/name": "prometheus" } };
const INGRESS_CONTROLLER = { namespace: "ingress-nginx", pod: { "app.kubernetes.io/name": "ingress-nginx" } };

describe.each(Object.entries(overlays))("the %s overlay", (overlay, namespace) => {
  let m: Manifests;
  beforeAll(() => {
    m = new Manifests(kustomize(join(deployDir, "k8s", "overlays", overlay)));
  });
  const eachService = (fn: (name: (typeof services)[number]) => void) => () => services.forEach(fn);

  it("when rendered, then every object matches its Kubernetes or KEDA API schema", () => {
    expect(m.objects.length).toBeGreaterThan(20);
    for (const obj of m.objects) validateObject(obj);
  });

  it("when rendered, then no object carries a field the API does not know (a misspelt field would be dropped silently)", () => {
    expect(m.objects.flatMap((o) => unknownFields(o).map((f) => `${o.kind}/${o.metadata.name}: ${f}`))).toEqual([]);
  });

  it("when rendered, then everything lives in the overlay's namespace, which enforces the restricted pod security standard", () => {
    const ns = m.objects.find((o) => o.kind === "Namespace");
    expect(ns?.metadata.name).toBe(namespace);
    expect(ns?.metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe("restricted");
    for (const o of m.objects.filter((o) => o.kind !== "Namespace")) expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe(namespace);
  });

  it(
    "when rendered, then there is one Deployment per service, its selector matches its pod labels, and a Service selects exactly its pods",
    eachService((name) => {
      const d = m.deployment(`gw-${name}`);
      const selector = d.spec?.selector.matchLabels ?? {};
      expect(Object.keys(selector).length).toBeGreaterThan(0);
      expect(matches(selector, podLabels(d))).toBe(true);
      const svcs = m.servicesFor(d);
      expect(svcs.map((s) => s.metadata?.name)).toEqual([`gw-${name}`]);
      for (const other of m.deployments.filter((o) => o !== d)) expect(m.servicesFor(other)).not.toContain(svcs[0]);
      for (const port of svcs[0]?.spec?.ports ?? []) {
        expect(resolvePort(mainContainer(d), port.targetPort ?? port.port), `gw-${name} Service port ${port.name}`).toBeDefined();
      }
    }),
  );

  it(
    "when rendered, then every service has readiness, liveness and startup probes on its own container ports",
    eachService((name) => {
      const c = mainContainer(m.deployment(`gw-${name}`));
      expect(c.readinessProbe?.httpGet?.path).toBe("/readyz");
      expect(c.livenessProbe?.httpGet?.path).toBe("/livez");
      expect(c.startupProbe?.httpGet?.path).toMatch(/^\/(livez|readyz)$/);
      for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe]) {
        expect(resolvePort(c, probe?.httpGet?.port)).toBe(resolvePort(c, "http"));
      }
    }),
  );

  it("when rendered, then every container has CPU and memory requests and limits, requests within limits", () => {
    for (const d of m.deployments) {
      for (const c of allContainers(d)) {
        const where = `${d.metadata?.name}/${c.name}`;
        for (const r of ["cpu", "memory"]) {
          const request = c.resources?.requests?.[r];
          const limit = c.resources?.limits?.[r];
          expect(request, `${where} requests.${r}`).toBeDefined();
          expect(limit, `${where} limits.${r}`).toBeDefined();
          expect(quantity(request as string), where).toBeLessThanOrEqual(quantity(limit as string));
        }
      }
    }
  });

  it("when rendered, then every pod runs as a non-root user, without privilege escalation or capabilities, on a read-only root filesystem", () => {
    for (const d of m.deployments) {
      const pod = d.spec?.template.spec;
      expect(pod?.securityContext?.runAsNonRoot, d.metadata?.name).toBe(true);
      expect(pod?.securityContext?.runAsUser ?? 1).toBeGreaterThan(0);
      expect(pod?.securityContext?.seccompProfile?.type).toBe("RuntimeDefault");
      expect(pod?.automountServiceAccountToken).toBe(false);
      for (const c of allContainers(d)) {
        expect(c.securityContext?.allowPrivilegeEscalation, `${d.metadata?.name}/${c.name}`).toBe(false);
        expect(c.securityContext?.readOnlyRootFilesystem).toBe(true);
        expect(c.securityContext?.capabilities?.drop).toContain("ALL");
        expect(c.securityContext?.privileged ?? false).toBe(false);
      }
    }
  });

  it("when a pod is stopped, then the grace period covers the preStop delay plus the service's whole drain", () => {
    for (const d of m.deployments) {
      const preStop = mainContainer(d).lifecycle?.preStop;
      const delay = preStop?.sleep?.seconds ?? Number(preStop?.exec?.command?.at(-1));
      expect(delay, `${d.metadata?.name} preStop`).toBeGreaterThanOrEqual(5);
      expect(d.spec?.template.spec?.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(delay + HARD_STOP_SECONDS);
    }
  });

  it("when rendered, then each Deployment is scaled by exactly one autoscaler, and it scales on CPU", () => {
    const scaledObjects = m.ofKind<IScaledObject>("ScaledObject");
    for (const d of m.deployments) {
      const name = d.metadata?.name;
      expect(d.spec?.replicas, `${name}: the autoscaler owns replicas`).toBeUndefined();
      const hpas = m.hpas.filter((h) => h.spec?.scaleTargetRef.kind === "Deployment" && h.spec.scaleTargetRef.name === name);
      const sos = scaledObjects.filter((s) => (s.spec.scaleTargetRef.kind ?? "Deployment") === "Deployment" && s.spec.scaleTargetRef.name === name);
      expect(hpas.length + sos.length, `${name} autoscalers`).toBe(1);
      for (const h of hpas) {
        expect(h.spec?.metrics?.some((x) => x.resource?.name === "cpu" && x.resource.target.type === "Utilization")).toBe(true);
        expect(h.spec?.minReplicas ?? 1).toBeLessThanOrEqual(h.spec?.maxReplicas ?? 0);
      }
      for (const s of sos) expect(s.spec.triggers.some((t) => t.type === "cpu")).toBe(true);
      // In production no service rests on a single pod.
      if (overlay === "prod") expect(minReplicas(m, name ?? ""), `${name} floor`).toBeGreaterThanOrEqual(2);
    }
  });

  it("when rendered, then every Deployment has a PodDisruptionBudget that still lets a node drain", () => {
    const pdbs = m.ofKind<IPodDisruptionBudget>("PodDisruptionBudget");
    for (const d of m.deployments) {
      const own = pdbs.filter((p) => matches(p.spec?.selector?.matchLabels ?? {}, podLabels(d)));
      expect(own.length, `${d.metadata?.name} PDBs`).toBe(1);
      const spec = own[0]?.spec;
      if (spec?.minAvailable !== undefined) expect(Number(spec.minAvailable)).toBeLessThan(minReplicas(m, d.metadata?.name ?? ""));
      else expect(Number(spec?.maxUnavailable)).toBeGreaterThanOrEqual(1);
    }
  });

  it("when rendered, then no Secret carries values and secrets reach the pods only by reference", () => {
    for (const s of m.ofKind<ISecret>("Secret")) expect({ name: s.metadata?.name, data: s.data, stringData: s.stringData }).toEqual({ name: s.metadata?.name });
    const secretLike = /(SECRET|TOKEN|PASSWORD|_KEY|DATABASE_URL|REDIS_URL)$/;
    for (const d of m.deployments) {
      for (const c of allContainers(d)) {
        for (const e of c.env ?? []) if (secretLike.test(e.name)) expect(e.valueFrom?.secretKeyRef, `${d.metadata?.name} ${e.name}`).toBeDefined();
      }
    }
    for (const cm of m.ofKind<{ data?: Record<string, string> }>("ConfigMap")) {
      expect(Object.keys(cm.data ?? {}).filter((k) => secretLike.test(k))).toEqual([]);
    }
  });

  it("when rendered, then network traffic is denied by default and every service has its own policy", () => {
    const deny = m.networkPolicies.find((p) => Object.keys(p.spec?.podSelector.matchLabels ?? {}).length === 0 && !p.spec?.ingress && !p.spec?.egress);
    expect(deny?.spec?.policyTypes).toEqual(expect.arrayContaining(["Ingress", "Egress"]));
    for (const d of m.deployments) {
      const own = m.networkPolicies.filter(
        (p) => Object.keys(p.spec?.podSelector.matchLabels ?? {}).length > 0 && matches(p.spec?.podSelector.matchLabels ?? {}, podLabels(d)),
      );
      expect(own.length, `${d.metadata?.name} policies`).toBeGreaterThanOrEqual(1);
      expect(own.flatMap((p) => p.spec?.policyTypes ?? [])).toEqual(expect.arrayContaining(["Ingress", "Egress"]));
    }
    expect(m.networkPolicies.flatMap((p) => p.spec?.ingress ?? []).filter((r) => !r.from || r.from.length === 0)).toEqual([]);
  });

  it("when traffic comes from outside the namespace, then only ingress's public port takes it (Prometheus may scrape metrics ports)", () => {
    for (const p of m.networkPolicies) {
      const target = m.deployments.find(
        (d) => matches(p.spec?.podSelector.matchLabels ?? {}, podLabels(d)) && Object.keys(p.spec?.podSelector.matchLabels ?? {}).length > 0,
      );
      for (const rule of p.spec?.ingress ?? []) {
        for (const peer of (rule.from ?? []).filter(isOutsidePeer)) {
          expect(peer.ipBlock, `${p.metadata?.name}: no IP ranges`).toBeUndefined();
          const ns = peer.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"];
          const ports = (rule.ports ?? []).map((x) => x.port);
          expect(ports.length, `${p.metadata?.name}: an outside peer gets named ports only`).toBeGreaterThan(0);
          const c = target && mainContainer(target);
          if (ns === INGRESS_CONTROLLER.namespace && target?.metadata?.name === "gw-ingress") {
            expect(peer.podSelector?.matchLabels).toEqual(INGRESS_CONTROLLER.pod);
            expect(ports).toEqual([resolvePort(c!, "http")]);
          } else {
            expect(ns, `${p.metadata?.name}: outside peer`).toBe(PROMETHEUS.namespace);
            expect(peer.podSelector?.matchLabels).toEqual(PROMETHEUS.pod);
            expect(ports).toEqual([Number(target?.spec?.template.metadata?.annotations?.["prometheus.io/port"])]);
          }
        }
      }
    }
  });

  it("when ingress calls a service at its URL, then the Service, the container port and both policies let it through", () => {
    const ingress = m.deployment("gw-ingress");
    const env = Object.fromEntries((mainContainer(ingress).env ?? []).map((e) => [e.name, e.value]));
    for (const name of internalServices) {
      const url = new URL(env[`${name.toUpperCase()}_URL`] ?? "");
      const svc = m.services.find((s) => s.metadata?.name === url.hostname);
      const svcPort = svc?.spec?.ports?.find((p) => p.port === Number(url.port));
      const target = m.deployment(`gw-${name}`);
      const port = resolvePort(mainContainer(target), svcPort?.targetPort ?? svcPort?.port);
      expect(port, `${url} reaches a container port`).toBeDefined();
      expect(egressAllows(m.networkPolicies, podLabels(ingress), port!, podLabels(target)), `egress to ${name}`).toBe(true);
      expect(ingressAllows(m.networkPolicies, podLabels(target), podLabels(ingress), port!), `${name} accepts ingress`).toBe(true);
    }
    // …and nothing else in the namespace may call the internal services, but inference the jobs
    // service (a job's request or result too large for a NATS message).
    const alsoAllowed: Record<string, string[]> = { jobs: ["gw-inference"] };
    for (const name of internalServices) {
      const target = m.deployment(`gw-${name}`);
      const allowed = ["gw-ingress", ...(alsoAllowed[name] ?? [])];
      for (const caller of m.deployments.filter((d) => !allowed.includes(d.metadata?.name ?? ""))) {
        expect(ingressAllows(m.networkPolicies, podLabels(target), podLabels(caller), resolvePort(mainContainer(target), "http")!)).toBe(false);
      }
    }
  });

  it("when inference hands the jobs service a large result, then its JOBS_URL reaches the jobs container through both policies", () => {
    const inference = m.deployment("gw-inference");
    const env = Object.fromEntries((mainContainer(inference).env ?? []).map((e) => [e.name, e.value]));
    const url = new URL(env.JOBS_URL ?? "");
    const svc = m.services.find((s) => s.metadata?.name === url.hostname);
    const svcPort = svc?.spec?.ports?.find((p) => p.port === Number(url.port));
    const jobs = m.deployment("gw-jobs");
    const port = resolvePort(mainContainer(jobs), svcPort?.targetPort ?? svcPort?.port);
    expect(port, `${url} reaches a container port`).toBeDefined();
    expect(egressAllows(m.networkPolicies, podLabels(inference), port!, podLabels(jobs))).toBe(true);
    expect(ingressAllows(m.networkPolicies, podLabels(jobs), podLabels(inference), port!)).toBe(true);
  });

  it("when usage runs, then it may reach Postgres and NATS but neither the internet nor the other services", () => {
    const usage = podLabels(m.deployment("gw-usage"));
    for (const port of [443, 80, 6379]) expect(egressAllows(m.networkPolicies, usage, port), `gw-usage → :${port}`).toBe(false);
    for (const name of services.filter((n) => n !== "usage")) {
      const target = m.deployment(`gw-${name}`);
      const port = resolvePort(mainContainer(target), "http")!;
      expect(egressAllows(m.networkPolicies, usage, port, podLabels(target)), `gw-usage → gw-${name}`).toBe(false);
    }
  });

  it("when jobs runs, then it may reach Postgres, NATS and ingress's admin port, but neither the internet nor the other services' ports", () => {
    const jobs = podLabels(m.deployment("gw-jobs"));
    for (const port of [443, 80, 6379]) expect(egressAllows(m.networkPolicies, jobs, port), `gw-jobs → :${port}`).toBe(false);
    expect(egressIpBlocks(m.networkPolicies, jobs, 443)).toEqual([]);
    for (const name of services.filter((n) => n !== "jobs")) {
      const target = m.deployment(`gw-${name}`);
      const port = resolvePort(mainContainer(target), "http")!;
      expect(egressAllows(m.networkPolicies, jobs, port, podLabels(target)), `gw-jobs → gw-${name}`).toBe(false);
    }
    const ingress = m.deployment("gw-ingress");
    expect(egressAllows(m.networkPolicies, jobs, resolvePort(mainContainer(ingress), "admin")!, podLabels(ingress)), "gw-jobs → ingress admin").toBe(true);
  });

  it("when a service needs Postgres, Redis, NATS or DNS, then its egress policy lets it reach them, and only those it needs", () => {
    const natsPort = Number(new URL(m.configMap("gw-env").data?.NATS_URL ?? "").port || 4222);
    for (const d of m.deployments) {
      const labels = podLabels(d);
      const dns = m.networkPolicies.some(
        (p) =>
          matches(p.spec?.podSelector.matchLabels ?? {}, labels) &&
          (p.spec?.egress ?? []).some((r) => r.ports?.some((x) => x.port === 53 && x.protocol === "UDP")),
      );
      expect(dns, `${d.metadata?.name} → DNS`).toBe(true);
      // The variables its containers get, those of the ConfigMaps they take whole included (gw-env: NATS_URL).
      const names = new Set(
        allContainers(d).flatMap((c) => [
          ...(c.env ?? []).map((e) => e.name),
          ...(c.envFrom ?? []).flatMap((f) => (f.configMapRef ? Object.keys(m.configMap(f.configMapRef.name ?? "").data ?? {}) : [])),
        ]),
      );
      const wanted = { [natsPort]: names.has("NATS_URL"), 5432: names.has("DATABASE_URL"), 6379: names.has("REDIS_URL") };
      for (const [port, needed] of Object.entries(wanted)) {
        // A service not given an address may not reach the port either (the console: no NATS, no Redis).
        expect(egressAllows(m.networkPolicies, labels, Number(port)), `${d.metadata?.name} → :${port}`).toBe(needed);
      }
    }
    expect(egressAllows(m.networkPolicies, podLabels(m.deployment("gw-console")), natsPort)).toBe(false);
  });

  it.each(adminCallers)(
    "when %s calls ingress's admin API at INGRESS_ADMIN_URL, then the Service's admin port, the container port and both policies let it through, and it reaches no other port of ingress",
    (name) => {
      const ingress = m.deployment("gw-ingress");
      const caller = m.deployment(`gw-${name}`);
      const url = new URL(mainContainer(caller).env?.find((e) => e.name === "INGRESS_ADMIN_URL")?.value ?? "");
      const svc = m.services.find((s) => s.metadata?.name === url.hostname);
      expect(svc && m.servicesFor(ingress)).toContain(svc);
      const svcPort = svc?.spec?.ports?.find((p) => p.port === Number(url.port));
      expect(svcPort?.name).toBe("admin");
      const port = resolvePort(mainContainer(ingress), svcPort?.targetPort ?? svcPort?.port);
      expect(port).toBe(resolvePort(mainContainer(ingress), "admin"));
      expect(egressAllows(m.networkPolicies, podLabels(caller), port!, podLabels(ingress)), `${name} → ingress admin`).toBe(true);
      expect(ingressAllows(m.networkPolicies, podLabels(ingress), podLabels(caller), port!), `ingress admin ← ${name}`).toBe(true);
      expect(
        egressAllows(m.networkPolicies, podLabels(caller), resolvePort(mainContainer(ingress), "http")!, podLabels(ingress)),
        `${name} → ingress public`,
      ).toBe(false);
    },
  );

  it("when a service of the namespace is not one of ingress's admin callers (console, jobs), then the admin port takes nothing from it", () => {
    const ingress = m.deployment("gw-ingress");
    const port = resolvePort(mainContainer(ingress), "admin")!;
    const callers = adminCallers.map((name) => `gw-${name}`);
    const others = m.deployments.filter((d) => !callers.includes(d.metadata?.name ?? ""));
    expect(others.map((d) => d.metadata?.name).sort()).toEqual(["gw-inference", "gw-ingress", "gw-tools", "gw-usage"]);
    for (const other of others) {
      expect(ingressAllows(m.networkPolicies, podLabels(ingress), podLabels(other), port), `ingress admin ← ${other.metadata?.name}`).toBe(false);
      expect(egressAllows(m.networkPolicies, podLabels(other), port, podLabels(ingress)), `${other.metadata?.name} → ingress admin`).toBe(false);
    }
  });

  it("when the console runs, then it may reach Postgres, ingress's admin port and the internet over HTTPS (single sign-on), and nothing else", () => {
    const console_ = podLabels(m.deployment("gw-console"));
    for (const name of services.filter((n) => n !== "console" && n !== "ingress")) {
      const target = m.deployment(`gw-${name}`);
      expect(egressAllows(m.networkPolicies, console_, resolvePort(mainContainer(target), "http")!, podLabels(target)), `gw-console → gw-${name}`).toBe(false);
    }
    for (const port of [80, 6379, 4222]) expect(egressAllows(m.networkPolicies, console_, port), `gw-console → :${port}`).toBe(false);
    // The OIDC issuer: anywhere on the internet, on 443 only, never the private ranges or the metadata address.
    expect(egressIpBlocks(m.networkPolicies, console_, 443)).toEqual([{ cidr: "0.0.0.0/0", except: PRIVATE_RANGES }]);
    expect(egressIpBlocks(m.networkPolicies, console_, 80)).toEqual([]);
    expect(egressIpBlocks(m.networkPolicies, console_, 5432)).toEqual([]);
  });

  it(
    "when Prometheus scrapes, then each pod's annotations point at the port serving /metrics",
    eachService((name) => {
      const d = m.deployment(`gw-${name}`);
      const a = d.spec?.template.metadata?.annotations ?? {};
      expect(a["prometheus.io/scrape"]).toBe("true");
      expect(a["prometheus.io/path"]).toBe("/metrics");
      // ingress serves /metrics on its admin port, the others on their one port.
      expect(Number(a["prometheus.io/port"])).toBe(resolvePort(mainContainer(d), name === "ingress" ? "admin" : "http"));
    }),
  );

  it("when the public host is routed, then only /v1 and /console go, both to ingress's public port, unbuffered and with a long read timeout", () => {
    const routes = m.ofKind<IIngress>("Ingress");
    expect(routes).toHaveLength(1);
    const route = routes[0]!;
    const a = route.metadata?.annotations ?? {};
    expect(a["nginx.ingress.kubernetes.io/proxy-buffering"]).toBe("off");
    expect(Number(a["nginx.ingress.kubernetes.io/proxy-read-timeout"])).toBeGreaterThanOrEqual(3600);
    expect(route.spec?.rules).toHaveLength(1);
    const paths = route.spec?.rules?.flatMap((r) => r.http?.paths ?? []) ?? [];
    // The console is reached through ingress (which passes /console/* on), never at its own Service.
    expect(paths.map((p) => [p.path, p.pathType])).toEqual([
      ["/v1", "Prefix"],
      ["/console", "Prefix"],
    ]);
    for (const path of paths) {
      const backend = path.backend.service;
      expect(backend?.name, path.path).toBe("gw-ingress");
      const svcPort = m.services
        .find((s) => s.metadata?.name === "gw-ingress")
        ?.spec?.ports?.find((p) => p.name === backend?.port?.name || p.port === backend?.port?.number);
      expect(resolvePort(mainContainer(m.deployment("gw-ingress")), svcPort?.targetPort)).toBe(8080);
    }
    if (overlay === "prod") expect(route.spec?.tls?.[0]?.hosts).toEqual(route.spec?.rules?.map((r) => r.host));
  });

  it("when ingress, jobs, usage or console starts, then an init container first runs that service's migrations from the same image", () => {
    for (const name of migratingServices) {
      const d = m.deployment(`gw-${name}`);
      const init = d.spec?.template.spec?.initContainers ?? [];
      expect(init.map((c) => c.name)).toEqual(["migrate"]);
      expect(init[0]?.image).toBe(mainContainer(d).image);
      const script = init[0]?.args?.[0] ?? "";
      // The image's bundled migration entry (pnpm build makes it from src/migrate.ts).
      expect(script).toBe(`/app/services/${name}/dist/migrate.js`);
      expect(existsSync(join(repoDir, `services/${name}/src/migrate.ts`))).toBe(true);
      const db = (c: IContainer | undefined) => c?.env?.find((e) => e.name === "DATABASE_URL")?.valueFrom?.secretKeyRef;
      expect(db(init[0])).toEqual(db(mainContainer(d)));
    }
  });

  it(
    "when rendered, then every container runs its own service's image, at a fixed tag",
    eachService((name) => {
      for (const c of allContainers(m.deployment(`gw-${name}`))) {
        const image = c.image ?? "";
        expect(image).toMatch(new RegExp(`(^|/)ai-gateway/${name}(:[\\w.-]+)?(@sha256:[0-9a-f]{64})?$`));
        const tag = /:([\w.-]+)(@|$)/.exec(image)?.[1];
        expect(tag, image).toBeDefined();
        expect(tag).not.toBe("latest");
        if (overlay === "prod") expect(image).toMatch(/^[a-z0-9.-]+\.[a-z]+\//); // from a registry, never a local image
      }
    }),
  );

  if (overlay === "prod") {
    it("when async jobs or usage records pile up, then KEDA scales inference, tools and usage on their own JetStream consumer's backlog", () => {
      const natsNamespace = m.configMap("gw-env").data?.NATS_NAMESPACE ?? "";
      for (const { name, durable, subject } of backlogConsumers) {
        const so = m.ofKind<IScaledObject>("ScaledObject").find((s) => s.spec.scaleTargetRef.name === `gw-${name}`);
        const js = so?.spec.triggers.find((t) => t.type === "nats-jetstream");
        // The stream the bus puts the subject in: GW_WORK for jobs' work, GW_USAGE for usage records.
        expect(js?.metadata, name).toMatchObject({ stream: streamNameOf(natsNamespace, streamKindOf(subject)), consumer: consumerNameOf(durable, subject) });
        expect(Number(js?.metadata.lagThreshold)).toBeGreaterThan(0);
        expect(js?.metadata.natsServerMonitoringEndpoint).toMatch(/:8222$/);
        // These also serve requests (usage: the admin API's queries): never scaled to zero.
        expect(so?.spec.minReplicaCount).toBeGreaterThanOrEqual(2);
      }
      // No ScaledObject is left without its consumer here.
      expect(
        m
          .ofKind<IScaledObject>("ScaledObject")
          .map((s) => s.spec.scaleTargetRef.name)
          .sort(),
      ).toEqual(backlogConsumers.map(({ name }) => `gw-${name}`).sort());
    });
  } else {
    it("when the cluster has no KEDA, then the overlay needs none", () => {
      expect(m.ofKind("ScaledObject")).toEqual([]);
    });
  }
});

function minReplicas(m: Manifests, deployment: string): number {
  const hpa = m.hpas.find((h) => h.spec?.scaleTargetRef.name === deployment);
  const so = m.ofKind<IScaledObject>("ScaledObject").find((s) => s.spec.scaleTargetRef.name === deployment);
  return hpa?.spec?.minReplicas ?? so?.spec.minReplicaCount ?? 1;
}
