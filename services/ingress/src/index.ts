export { RateLimitEnv, rateLimitSettings } from "./config";
export { createIngressService, ingressMigrations } from "./service";
export type { IngressDeps, IngressService, IngressSettings, RateLimitSettings } from "./service";
export { RedisLimiter } from "./limits/redis-limiter";
