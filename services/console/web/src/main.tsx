import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { lazy, StrictMode, Suspense } from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter, Navigate, Route, Routes } from "react-router";
import { ApiError, setCsrfToken } from "./api";
import { ErrorBoundary } from "./components/ErrorBoundary";
import { Loading } from "./components/States";
import { RequireSession, sessionKey } from "./session";
import { Shell } from "./Shell";
import { Need, WorkspaceScopeRoute, workspacePages } from "./workspace";
import "./styles.css";

const SignIn = lazy(() => import("./pages/SignIn").then((m) => ({ default: m.SignIn })));
const Home = lazy(() => import("./pages/Home").then((m) => ({ default: m.Home })));
const Overview = lazy(() => import("./pages/Overview").then((m) => ({ default: m.Overview })));
const Keys = lazy(() => import("./pages/Keys").then((m) => ({ default: m.Keys })));
const Models = lazy(() => import("./pages/Models").then((m) => ({ default: m.Models })));
const Logs = lazy(() => import("./pages/Logs").then((m) => ({ default: m.Logs })));
const LogDetail = lazy(() => import("./pages/LogDetail").then((m) => ({ default: m.LogDetail })));
const Usage = lazy(() => import("./pages/Usage").then((m) => ({ default: m.Usage })));
const Team = lazy(() => import("./pages/Team").then((m) => ({ default: m.Team })));
const Settings = lazy(() => import("./pages/Settings").then((m) => ({ default: m.Settings })));
const Audit = lazy(() => import("./pages/Audit").then((m) => ({ default: m.Audit })));
const Workspaces = lazy(() => import("./pages/Workspaces").then((m) => ({ default: m.Workspaces })));
const NotFound = lazy(() => import("./pages/NotFound").then((m) => ({ default: m.NotFound })));

/** A 401 on any call means the session is over: forget it, and RequireSession sends the person to sign in. */
function signedOut(error: unknown, key?: readonly unknown[]): void {
  if (!(error instanceof ApiError) || error.status !== 401 || key?.[0] === sessionKey[0]) return;
  setCsrfToken(undefined);
  queryClient.setQueryData(sessionKey, null);
}

const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({ onError: (error, query) => signedOut(error, query.queryKey) }),
  mutationCache: new MutationCache({ onError: (error, _v, _c, mutation) => (mutation.meta?.signIn ? undefined : signedOut(error)) }),
  defaultOptions: {
    queries: {
      staleTime: 30_000,
      refetchOnWindowFocus: false,
      retry: (count, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && count < 2,
    },
  },
});

const anyOf = (path: string) => workspacePages.find((p) => p.path === path)?.anyOf ?? [];

function App() {
  return (
    <BrowserRouter basename="/console">
      <ErrorBoundary>
        <Suspense fallback={<Loading label="Loading" full />}>
          <Routes>
            <Route path="/sign-in" element={<SignIn />} />
            <Route path="/invite" element={<SignIn />} />
            <Route
              element={
                <RequireSession>
                  <Shell />
                </RequireSession>
              }
            >
              <Route index element={<Home />} />
              <Route path="/workspaces" element={<Workspaces />} />
              <Route path="/w/:ws" element={<WorkspaceScopeRoute />}>
                <Route
                  index
                  element={
                    <Need anyOf={anyOf("")}>
                      <Overview />
                    </Need>
                  }
                />
                <Route
                  path="keys"
                  element={
                    <Need anyOf={anyOf("keys")}>
                      <Keys />
                    </Need>
                  }
                />
                <Route
                  path="models"
                  element={
                    <Need anyOf={anyOf("models")}>
                      <Models />
                    </Need>
                  }
                />
                <Route
                  path="logs"
                  element={
                    <Need anyOf={anyOf("logs")}>
                      <Logs />
                    </Need>
                  }
                />
                <Route
                  path="logs/:requestId"
                  element={
                    <Need anyOf={anyOf("logs")}>
                      <LogDetail />
                    </Need>
                  }
                />
                <Route
                  path="usage"
                  element={
                    <Need anyOf={anyOf("usage")}>
                      <Usage />
                    </Need>
                  }
                />
                <Route
                  path="team"
                  element={
                    <Need anyOf={anyOf("team")}>
                      <Team />
                    </Need>
                  }
                />
                <Route
                  path="settings"
                  element={
                    <Need anyOf={anyOf("settings")}>
                      <Settings />
                    </Need>
                  }
                />
                <Route
                  path="audit"
                  element={
                    <Need anyOf={anyOf("audit")}>
                      <Audit />
                    </Need>
                  }
                />
                <Route path="*" element={<NotFound />} />
              </Route>
              <Route path="/w" element={<Navigate to="/" replace />} />
              <Route path="*" element={<NotFound />} />
            </Route>
          </Routes>
        </Suspense>
      </ErrorBoundary>
    </BrowserRouter>
  );
}

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={queryClient}>
        <App />
      </QueryClientProvider>
    </StrictMode>,
  );
}
