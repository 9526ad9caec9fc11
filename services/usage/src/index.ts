export { createUsageService, usageMigrations } from "./service";
export type { UsageDeps, UsageService, UsageSettings } from "./service";
export { UsageRetentionEnv } from "./config";
export { operatorIdentity, isOperator } from "./scope";
export type { Pricer, PriceQuery, PriceResult, PriceLine } from "./pricing";
