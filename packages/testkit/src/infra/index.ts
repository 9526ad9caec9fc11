export { createTestDatabase } from "./postgres";
export type { TestDatabase } from "./postgres";
export { testRedisUrl, uniquePrefix } from "./redis";
export { testNatsUrl, uniqueNamespace } from "./nats";
export { startTcpProxy } from "./tcp-proxy";
export type { TcpProxy } from "./tcp-proxy";
export { freePort } from "./free-port";
