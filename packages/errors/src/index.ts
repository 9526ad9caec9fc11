export * from "./codes";
export * from "./gateway-error";
