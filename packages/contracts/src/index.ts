export * from "./bus";
export * from "./identity";
export * from "./admin";
export * from "./errors";
export * from "./chat";
export * from "./messages";
