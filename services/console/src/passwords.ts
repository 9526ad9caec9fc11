import { hash, verify } from "@node-rs/argon2";

/**
 * argon2id with OWASP's first recommended setting (19 MiB, 2 passes, 1 lane): about 20–40 ms per
 * check here, slow for a guesser, cheap enough for people signing in.
 */
const options = {
  algorithm: 2 /* Algorithm.Argon2id: a const enum, which this build cannot import */,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, options);
}

/** A hash of nothing anyone knows, checked when there is no account, so a miss costs what a hit does. */
let decoy: Promise<string> | undefined;

/**
 * Whether `password` is the one `stored` was made from. With no stored hash (no such person, or one
 * who signs in only by SSO) the decoy is checked anyway and the answer is false: the time taken
 * does not tell whether the account exists.
 */
export async function checkPassword(stored: string | null | undefined, password: string): Promise<boolean> {
  decoy ??= hashPassword("decoy password that no account has");
  const target = stored ?? (await decoy);
  const match = await verify(target, password).catch(() => false);
  return match && stored !== null && stored !== undefined;
}
