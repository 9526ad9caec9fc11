export { AuthGuardEnv, authGuardSettings, DoorEnv, doorSettings, RateLimitEnv, rateLimitSettings } from "./config";
export { createIngressService, ingressMigrations } from "./service";
export type { AuthGuardSettings, DoorSettings, IngressDeps, IngressService, IngressSettings, RateLimitSettings } from "./service";
export { RedisLimiter } from "./limits/redis-limiter";
