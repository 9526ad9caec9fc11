import { type ConsolePrincipal, ConsolePrincipal as PrincipalSchema, principalHeader, principalPurpose, type Workspace } from "@gw/contracts";
import { type ErrorCode, errorCodes, GatewayError } from "@gw/errors";
import { SignedClaims } from "@gw/service-kit";

export interface AdminAnswer {
  status: number;
  headers: Headers;
  body: Buffer;
}

/**
 * Ingress's admin API, called as a person: each call carries the signed principal naming the person
 * and the one workspace they act in, so ingress records them in its audit trail and keeps them to
 * that workspace. The console never reads another service's tables.
 */
export class AdminClient {
  private readonly claims: SignedClaims<typeof PrincipalSchema>;

  constructor(
    private readonly baseUrl: () => string,
    internalSecret: string,
    private readonly timeoutMs = 30_000,
  ) {
    this.claims = new SignedClaims(PrincipalSchema, internalSecret, principalPurpose);
  }

  async call(principal: ConsolePrincipal, method: string, path: string, body?: unknown, requestId?: string): Promise<AdminAnswer> {
    let answer: Response;
    try {
      answer = await fetch(`${this.baseUrl()}${path}`, {
        method,
        headers: {
          [principalHeader]: this.claims.sign(principal),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...(requestId ? { "x-request-id": requestId } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      throw new GatewayError("upstream_unavailable", "The gateway's admin API did not answer; try again", { cause: err });
    }
    return { status: answer.status, headers: answer.headers, body: Buffer.from(await answer.arrayBuffer()) };
  }

  /** The call's JSON answer; an error answer is thrown as the same error. */
  async json<T>(principal: ConsolePrincipal, method: string, path: string, body?: unknown): Promise<T> {
    const answer = await this.call(principal, method, path, body);
    const parsed = parseJson(answer.body);
    if (answer.status >= 400) throw errorFrom(answer.status, parsed);
    return parsed as T;
  }

  /** The workspace, or undefined when it does not exist. */
  async workspace(principal: ConsolePrincipal, id: string): Promise<Workspace | undefined> {
    const answer = await this.call(principal, "GET", `/admin/workspaces/${encodeURIComponent(id)}`);
    if (answer.status === 404) return undefined;
    const parsed = parseJson(answer.body);
    if (answer.status >= 400) throw errorFrom(answer.status, parsed);
    return parsed as Workspace;
  }
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** The admin API's OpenAI-style error, raised again with its status, message and param. */
export function errorFrom(status: number, parsed: unknown): GatewayError {
  const error = (parsed as { error?: { message?: string; param?: string | null; code?: string } } | undefined)?.error;
  const code = error?.code !== undefined && Object.hasOwn(errorCodes, error.code) ? (error.code as ErrorCode) : "invalid_request";
  return new GatewayError(code, error?.message ?? `The admin API answered ${status}`, { status, param: error?.param ?? undefined });
}
