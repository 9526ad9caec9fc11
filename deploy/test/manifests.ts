import type { IDeployment } from "kubernetes-models/apps/v1";
import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import type { INetworkPolicy, INetworkPolicyPeer, INetworkPolicyPort } from "kubernetes-models/networking.k8s.io/v1";
import type { IConfigMap, IContainer, IService } from "kubernetes-models/v1";
import type { K8sObject } from "./kustomize";

/** Queries over one rendered overlay. */
export class Manifests {
  constructor(readonly objects: K8sObject[]) {}

  ofKind<T>(kind: string): T[] {
    return this.objects.filter((o) => o.kind === kind) as unknown as T[];
  }

  get deployments(): IDeployment[] {
    return this.ofKind<IDeployment>("Deployment");
  }

  get services(): IService[] {
    return this.ofKind<IService>("Service");
  }

  get hpas(): IHorizontalPodAutoscaler[] {
    return this.ofKind<IHorizontalPodAutoscaler>("HorizontalPodAutoscaler");
  }

  get networkPolicies(): INetworkPolicy[] {
    return this.ofKind<INetworkPolicy>("NetworkPolicy");
  }

  deployment(name: string): IDeployment {
    const found = this.deployments.find((d) => d.metadata?.name === name);
    if (!found) throw new Error(`no Deployment ${name}`);
    return found;
  }

  /** A ConfigMap by the name written in the sources (the rendered name carries a hash suffix). */
  configMap(name: string): IConfigMap {
    const found = this.ofKind<IConfigMap>("ConfigMap").find((c) => c.metadata?.name === name || c.metadata?.name?.startsWith(`${name}-`));
    if (!found) throw new Error(`no ConfigMap ${name}`);
    return found;
  }

  /** The Services whose selector picks the pods of this Deployment. */
  servicesFor(deployment: IDeployment): IService[] {
    const labels = podLabels(deployment);
    return this.services.filter((s) => s.spec?.selector && matches(s.spec.selector, labels));
  }
}

export function podLabels(deployment: IDeployment): Record<string, string> {
  return deployment.spec?.template.metadata?.labels ?? {};
}

export function mainContainer(deployment: IDeployment): IContainer {
  const container = deployment.spec?.template.spec?.containers[0];
  if (!container) throw new Error(`${deployment.metadata?.name} has no container`);
  return container;
}

export function allContainers(deployment: IDeployment): IContainer[] {
  const spec = deployment.spec?.template.spec;
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
}

/** Whether every label of the selector is on the object (an empty selector matches everything). */
export function matches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** The container port a probe or Service names, by number or by port name. */
export function resolvePort(container: IContainer, port: number | string | undefined): number | undefined {
  if (typeof port === "number") return container.ports?.some((p) => p.containerPort === port) ? port : undefined;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

/** Kubernetes quantities ("250m", "1", "512Mi") as numbers, to compare requests with limits. */
export function quantity(value: string | number): number {
  if (typeof value === "number") return value;
  const m = /^([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(value);
  if (!m) throw new Error(`not a quantity: ${value}`);
  const factor: Record<string, number> = { m: 1e-3, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(m[1]) * (m[2] ? (factor[m[2]] as number) : 1);
}

// ---- NetworkPolicy semantics, enough for the policies here ----

export type Source = { inNamespace: Record<string, string> } | { outside: true };

/** A peer is outside the namespace when it names namespaces or IP blocks. */
export function isOutsidePeer(peer: INetworkPolicyPeer): boolean {
  return peer.namespaceSelector !== undefined || peer.ipBlock !== undefined;
}

function portAllowed(ports: INetworkPolicyPort[] | undefined, port: number): boolean {
  return !ports || ports.length === 0 || ports.some((p) => p.port === port && (p.protocol ?? "TCP") === "TCP");
}

function policiesSelecting(policies: INetworkPolicy[], labels: Record<string, string>, type: "Ingress" | "Egress"): INetworkPolicy[] {
  return policies.filter((p) => matches(p.spec?.podSelector.matchLabels ?? {}, labels) && (p.spec?.policyTypes ?? []).includes(type));
}

/** Whether a pod with these labels accepts TCP on `port` from a pod of this namespace with `from` labels. */
export function ingressAllows(policies: INetworkPolicy[], to: Record<string, string>, from: Record<string, string>, port: number): boolean {
  return policiesSelecting(policies, to, "Ingress").some((p) =>
    (p.spec?.ingress ?? []).some(
      (rule) =>
        portAllowed(rule.ports, port) && (!rule.from || rule.from.some((peer) => !isOutsidePeer(peer) && matches(peer.podSelector?.matchLabels ?? {}, from))),
    ),
  );
}

/** Whether a pod with these labels may open TCP to `port` on a pod of this namespace (`to` labels), or anywhere (`to` undefined). */
export function egressAllows(policies: INetworkPolicy[], from: Record<string, string>, port: number, to?: Record<string, string>): boolean {
  return policiesSelecting(policies, from, "Egress").some((p) =>
    (p.spec?.egress ?? []).some(
      (rule) =>
        portAllowed(rule.ports, port) &&
        (!rule.to || (to !== undefined && rule.to.some((peer) => !isOutsidePeer(peer) && matches(peer.podSelector?.matchLabels ?? {}, to)))),
    ),
  );
}

/** The networks outside the cluster a pod may open TCP to on `port`: the ipBlocks of its egress rules (with their exceptions). */
export function egressIpBlocks(policies: INetworkPolicy[], from: Record<string, string>, port: number): { cidr: string; except: string[] }[] {
  return policiesSelecting(policies, from, "Egress").flatMap((p) =>
    (p.spec?.egress ?? [])
      .filter((rule) => portAllowed(rule.ports, port))
      .flatMap((rule) => (rule.to ?? []).flatMap((peer) => (peer.ipBlock ? [{ cidr: peer.ipBlock.cidr, except: peer.ipBlock.except ?? [] }] : []))),
  );
}
