import { useQuery, useQueryClient } from "@tanstack/react-query";
import { createContext, useContext, type ReactNode } from "react";
import { Navigate, useLocation } from "react-router";
import { abortReads, ApiError, BASE, get, post, setCsrfToken } from "./api";
import { ErrorBox, Loading } from "./components/States";
import type { ConsoleSession } from "./types";

export const sessionKey = ["session"] as const;

async function loadSession(): Promise<ConsoleSession | null> {
  try {
    const session = await get<ConsoleSession>("/session");
    setCsrfToken(session.csrf_token);
    return session;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      setCsrfToken(undefined);
      return null;
    }
    throw err;
  }
}

export function useSessionQuery() {
  return useQuery({ queryKey: sessionKey, queryFn: loadSession, staleTime: 5 * 60_000, retry: 1 });
}

const SessionContext = createContext<ConsoleSession | null>(null);

export function useSession(): ConsoleSession {
  const session = useContext(SessionContext);
  if (!session) throw new Error("useSession outside a signed-in page");
  return session;
}

/** The sign-in page's address, keeping where the person was (same-origin, under /console/). */
export function signInPath(returnTo: string): string {
  return `/sign-in?return_to=${encodeURIComponent(returnTo)}`;
}

/** Pages that need a session: signed out (or a 401 anywhere), they go to sign-in and come back. */
export function RequireSession({ children }: { children: ReactNode }) {
  const location = useLocation();
  const query = useSessionQuery();
  if (query.isPending) return <Loading label="Loading your session" full />;
  if (query.isError) {
    return (
      <main className="center-page" id="main">
        <ErrorBox error={query.error} retry={() => void query.refetch()} />
      </main>
    );
  }
  if (query.data === null) {
    return <Navigate to={signInPath(`${BASE}${location.pathname}${location.search}`)} replace />;
  }
  return <SessionContext.Provider value={query.data}>{children}</SessionContext.Provider>;
}

/** Signing out (this session or every one): the cached answers go with it. */
export function useSignOut() {
  const client = useQueryClient();
  return async (everywhere: boolean) => {
    // Reads still in flight (a page's first loads) go first, and their retries with them.
    await client.cancelQueries();
    abortReads();
    try {
      await post(everywhere ? "/sign-out/everywhere" : "/sign-out");
    } finally {
      setCsrfToken(undefined);
      client.clear();
      client.setQueryData(sessionKey, null);
    }
  };
}
