/**
 * Starts the last-resort container, turning testcontainers' "no container runtime" into a message
 * that tells the developer what was tried and how to get past it.
 */
export async function startContainer<T>(service: string, tried: string, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`no ${service} for tests: ${tried}, and starting a container failed (${reason}); run one locally or set the URL variable`, { cause: err });
  }
}
