export * from "./infra";
export * from "./emulators";
export * from "./openapi";
