export * from "./infra";
export * from "./emulators";
export * from "./openapi";
export * from "./otlp-receiver";
export * from "./oidc-provider";
export * from "./smtp-receiver";
