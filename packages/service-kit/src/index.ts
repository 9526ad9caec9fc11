export * from "./app";
export * from "./health";
export * from "./identity";
export * from "./metrics";
export * from "./run";
export * from "./server";
export * from "./patterns";
export * from "./internal-service";
