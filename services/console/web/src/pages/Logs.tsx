import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";
import { get, listOf, wsPath } from "../api";
import { Empty, ErrorBox, Loading, LoadMore } from "../components/States";
import { fmtShortDateTime, fmtInt, fmtMs, fmtUsd, zoneLabel } from "../format";
import { useKeyLabel, useKeyParts, useKeys } from "../hooks";
import type { List, LogsPage, ModelEntry } from "../types";
import { usePageTitle, useWorkspace } from "../workspace";
import { scrollable } from "../components/scrollable";

const filterNames = ["status", "model", "key_id", "route", "from", "to"] as const;
type Filters = Partial<Record<(typeof filterNames)[number], string>>;

const statusChoices = [
  ["", "Any status"],
  ["2xx", "2xx success"],
  ["4xx", "4xx client errors"],
  ["5xx", "5xx server errors"],
  ["400", "400 Bad request"],
  ["401", "401 Unauthorized"],
  ["403", "403 Forbidden"],
  ["404", "404 Not found"],
  ["429", "429 Rate limited or over budget"],
  ["499", "499 Caller went away"],
  ["500", "500 Internal error"],
  ["502", "502 Upstream error"],
  ["503", "503 Unavailable"],
  ["504", "504 Upstream timeout"],
] as const;

const routes = [
  "/v1/chat/completions",
  "/v1/messages",
  "/v1/responses",
  "/v1/completions",
  "/v1/embeddings",
  "/v1/rerank",
  "/v1/images/generations",
  "/v1/audio/speech",
  "/v1/audio/transcriptions",
  "/v1/ocr",
];

export function statusTone(status: number): string {
  return status >= 500 ? "badge-error" : status >= 400 ? "badge-warn" : "badge-ok";
}

/** The request log: filters in the URL (so a view can be linked), pages by cursor, newest first. */
export function Logs() {
  const { ws, workspace, tz, can } = useWorkspace();
  usePageTitle(`Logs · ${workspace.name}`);
  const [search, setSearch] = useSearchParams();
  const navigate = useNavigate();
  const filters: Filters = {};
  for (const name of filterNames) {
    const value = search.get(name);
    if (value) filters[name] = value;
  }
  const [draft, setDraft] = useState<Filters>(filters);
  const keys = useKeys();
  const keyLabel = useKeyLabel();
  const keyParts = useKeyParts();
  const models = useQuery({
    queryKey: ["models", ws],
    queryFn: async () => listOf(await get<List<ModelEntry>>(wsPath(ws, "/models"))),
    enabled: can("models.read"),
    staleTime: 5 * 60_000,
  });

  const logs = useInfiniteQuery({
    queryKey: ["logs", ws, filters, tz],
    queryFn: ({ pageParam }) => get<LogsPage>(wsPath(ws, "/logs"), { ...filters, tz, limit: 50, cursor: pageParam }),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const records = logs.data?.pages.flatMap((p) => p.data) ?? [];
  const filtered = Object.keys(filters).length > 0;

  const apply = (event: FormEvent) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const name of filterNames) {
      const value = draft[name]?.trim();
      if (value) params.set(name, value);
    }
    setSearch(params);
  };
  const set = (name: keyof Filters) => (e: { target: { value: string } }) => setDraft((d) => ({ ...d, [name]: e.target.value }));
  const detail = (id: string) => `/w/${encodeURIComponent(ws)}/logs/${encodeURIComponent(id)}`;

  return (
    <section className="page" aria-labelledby="logs-title">
      <div className="page-header">
        <div>
          <h1 id="logs-title">Logs</h1>
          <p className="subtle">
            Every request to {workspace.name}, newest first · times in {zoneLabel(tz)}
          </p>
        </div>
      </div>

      <form className="card filters" onSubmit={apply} aria-label="Filter requests">
        <div className="field">
          <label htmlFor="f-status">Status</label>
          <select id="f-status" className="select" value={draft.status ?? ""} onChange={set("status")}>
            {statusChoices.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
            {draft.status && !statusChoices.some(([v]) => v === draft.status) && <option value={draft.status}>{draft.status}</option>}
          </select>
        </div>
        <div className="field">
          <label htmlFor="f-model">Model</label>
          <input id="f-model" className="input" list="f-model-list" value={draft.model ?? ""} onChange={set("model")} spellCheck={false} />
          <datalist id="f-model-list">
            {(models.data ?? []).map((m) => (
              <option key={m.name} value={m.name} />
            ))}
          </datalist>
        </div>
        <div className="field">
          <label htmlFor="f-key">Key</label>
          {keys.data ? (
            <select id="f-key" className="select" value={draft.key_id ?? ""} onChange={set("key_id")}>
              <option value="">Any key</option>
              {keys.data.map((k) => (
                <option key={k.id} value={k.id}>
                  {keyLabel(k.id)}
                </option>
              ))}
            </select>
          ) : (
            <input id="f-key" className="input" placeholder="Key id" value={draft.key_id ?? ""} onChange={set("key_id")} spellCheck={false} />
          )}
        </div>
        <div className="field">
          <label htmlFor="f-route">Route</label>
          <input id="f-route" className="input" list="f-route-list" value={draft.route ?? ""} onChange={set("route")} spellCheck={false} />
          <datalist id="f-route-list">
            {routes.map((r) => (
              <option key={r} value={r} />
            ))}
          </datalist>
        </div>
        <div className="field">
          <label htmlFor="f-from">From</label>
          <input id="f-from" className="input" type="datetime-local" value={draft.from ?? ""} onChange={set("from")} />
        </div>
        <div className="field">
          <label htmlFor="f-to">Until</label>
          <input id="f-to" className="input" type="datetime-local" value={draft.to ?? ""} onChange={set("to")} />
        </div>
        <div className="filter-actions">
          <button type="submit" className="btn btn-primary">
            Apply filters
          </button>
          {filtered && (
            <button
              type="button"
              className="btn"
              onClick={() => {
                setDraft({});
                setSearch(new URLSearchParams());
              }}
            >
              Clear
            </button>
          )}
        </div>
      </form>

      {logs.isPending ? (
        <Loading label="Loading requests" />
      ) : logs.isError && !logs.data ? (
        <ErrorBox error={logs.error} retry={() => void logs.refetch()} />
      ) : records.length === 0 ? (
        filtered ? (
          <Empty title="No request matches these filters">
            <p>Widen the time range or clear a filter.</p>
          </Empty>
        ) : (
          <Empty title="No requests yet">
            <p>No requests yet — create a key and call the API. {can("keys.read") && <Link to={`/w/${encodeURIComponent(ws)}/keys`}>Go to keys</Link>}</p>
          </Empty>
        )
      ) : (
        <>
          <div className="table-wrap" {...scrollable("Requests, newest first")}>
            <table className="table-hover">
              <caption className="sr-only">Requests, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Status</th>
                  <th scope="col">Model and route</th>
                  <th scope="col">Key</th>
                  <th scope="col" className="num">
                    Duration
                  </th>
                  <th scope="col" className="num">
                    Tokens in / out
                  </th>
                  <th scope="col" className="num">
                    Cost
                  </th>
                </tr>
              </thead>
              <tbody>
                {records.map((r) => (
                  <tr
                    key={r.request_id}
                    className={r.status >= 400 ? "row-error" : undefined}
                    onClick={(event) => {
                      if ((event.target as HTMLElement).closest("a, button")) return;
                      navigate(detail(r.request_id));
                    }}
                  >
                    <td className="nowrap">
                      <Link to={detail(r.request_id)}>
                        {fmtShortDateTime(r.started_at, tz)}
                        <span className="sr-only">, request {r.request_id}</span>
                      </Link>
                    </td>
                    <td className="nowrap">
                      <span className={`badge ${statusTone(r.status)}`}>{r.status}</span>
                      {r.error_type && <span className="block error-type">{r.error_type}</span>}
                    </td>
                    <td className="nowrap">
                      <span className="block mono">{r.model ?? "—"}</span>
                      <span className="block mono small subtle">{r.route}</span>
                    </td>
                    <td className="nowrap" title={keyParts(r.key_id).detail}>
                      {keyParts(r.key_id).name}
                    </td>
                    <td className="num">{fmtMs(r.duration_ms)}</td>
                    <td className="num nowrap">
                      {fmtInt(r.input_tokens)} / {fmtInt(r.output_tokens)}
                    </td>
                    <td className="num">{fmtUsd(r.cost_usd)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <LoadMore shown={records.length} noun="request" page={logs} />
        </>
      )}
    </section>
  );
}
