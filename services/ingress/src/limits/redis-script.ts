import { createHash } from "node:crypto";
import type { RedisClientType } from "redis";

/**
 * A Lua script run by its SHA (EVALSHA), sent whole (EVAL) only when Redis does not have it (after a
 * restart or a flush), so each call carries the hash, not the script. The rate limiter and the
 * budgets each have one.
 */
export class RedisScript {
  private readonly sha: string;

  constructor(private readonly source: string) {
    this.sha = createHash("sha1").update(source).digest("hex");
  }

  async run(client: RedisClientType, keys: string[], args: string[]): Promise<unknown> {
    try {
      return await client.evalSha(this.sha, { keys, arguments: args });
    } catch (err) {
      if (!(err as Error).message?.startsWith("NOSCRIPT")) throw err;
      return client.eval(this.source, { keys, arguments: args });
    }
  }
}
