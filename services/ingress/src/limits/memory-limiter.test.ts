import { limiterContract } from "./limiter-contract";
import { MemoryLimiter } from "./memory-limiter";

limiterContract("in-memory", async (options) => new MemoryLimiter(options));
