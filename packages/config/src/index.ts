export * from "./gateway-config";
export * from "./load";
export * from "./env";
export * from "./build-info";
