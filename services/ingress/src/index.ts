export { createIngressService, ingressMigrations } from "./service";
export type { IngressDeps, IngressService, IngressSettings } from "./service";
