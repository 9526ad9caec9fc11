import { useQuery } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { Link, useParams } from "react-router";
import { ApiError, get, wsPath } from "../api";
import { CopyButton } from "../components/CopyButton";
import { scrollable } from "../components/scrollable";
import { ErrorBox, Loading, Notice } from "../components/States";
import { fmtBytes, fmtDateTime, fmtInt, fmtMs, fmtUsd, prettyJson, zoneLabel } from "../format";
import { useKeyLabel } from "../hooks";
import type { CapturedBody, LedgerRecord } from "../types";
import { usePageTitle, useWorkspace } from "../workspace";
import { statusTone } from "./Logs";

/** One request: its metadata, and its bodies when captured and the role may read them. */
export function LogDetail() {
  const { ws, workspace, tz, can } = useWorkspace();
  const { requestId = "" } = useParams();
  usePageTitle(`Request ${requestId}`);
  const keyLabel = useKeyLabel();
  const record = useQuery({
    queryKey: ["log", ws, requestId],
    queryFn: () => get<LedgerRecord>(wsPath(ws, `/logs/${encodeURIComponent(requestId)}`)),
  });
  const back = (
    <Link to={`/w/${encodeURIComponent(ws)}/logs`} className="back-link">
      ← All requests
    </Link>
  );
  if (record.isPending) return <Loading label="Loading the request" />;
  if (record.isError) {
    return (
      <section className="page">
        {back}
        <h1>Request {requestId}</h1>
        {record.error instanceof ApiError && record.error.status === 404 ? (
          <Notice tone="warning">
            <p>No request {requestId} in this workspace. It may be older than the ledger keeps, or still on its way (a few seconds).</p>
          </Notice>
        ) : (
          <ErrorBox error={record.error} retry={() => void record.refetch()} />
        )}
      </section>
    );
  }
  const r = record.data;
  const rows: [string, ReactNode][] = [
    [
      "Request id",
      <span key="id" className="mono">
        {r.request_id}
      </span>,
    ],
    ["Started", `${fmtDateTime(r.started_at, tz)} (${zoneLabel(tz)})`],
    [
      "Status",
      <span key="status" className={`badge ${statusTone(r.status)}`}>
        {r.status}
      </span>,
    ],
    ["Error type", r.error_type ?? "—"],
    [
      "Route",
      <span key="route" className="mono">
        {r.route}
      </span>,
    ],
    ["Model", r.model ?? "—"],
    ["Provider", r.provider ?? "—"],
    ["Upstream model", r.upstream_model ?? "—"],
    ["Key", keyLabel(r.key_id)],
    ["Attempts", r.attempts === null ? "—" : fmtInt(r.attempts)],
    ["Streamed", r.stream ? "Yes" : "No"],
    ["Job", r.job_id ?? "—"],
    ["Duration", fmtMs(r.duration_ms)],
    ["Time to first token", fmtMs(r.ttft_ms)],
    ["Upstream time", fmtMs(r.upstream_ms)],
    ["Input tokens", fmtInt(r.input_tokens)],
    ["Cached input tokens", fmtInt(r.cached_input_tokens)],
    ["Cache write tokens", fmtInt(r.cache_write_tokens)],
    ["Output tokens", fmtInt(r.output_tokens)],
    ["Reasoning tokens", fmtInt(r.reasoning_tokens)],
    ...Object.entries(r.units ?? {}).map(([unit, n]): [string, ReactNode] => [unit.replaceAll("_", " "), fmtInt(n)]),
    ["Cost", r.cost_usd === null ? "Not priced" : fmtUsd(r.cost_usd)],
    ["Price version", r.price_version ?? "—"],
  ];
  const hasBodies = r.request_body !== undefined || r.response_body !== undefined;
  return (
    <section className="page" aria-labelledby="log-title">
      {back}
      <div className="page-header">
        <h1 id="log-title" className="break">
          Request <span className="mono">{r.request_id}</span>
        </h1>
        <CopyButton text={window.location.href} label="Copy link" />
      </div>
      {r.status >= 400 && (
        <Notice tone="warning">
          <p>
            This request failed with <strong>{r.status}</strong>
            {r.error_type ? (
              <>
                {" "}
                (<span className="mono">{r.error_type}</span>)
              </>
            ) : null}
            .
          </p>
        </Notice>
      )}
      <div className="card">
        <h2>Details</h2>
        <dl className="meta">
          {rows.map(([label, value]) => (
            <div key={label}>
              <dt>{label}</dt>
              <dd>{value}</dd>
            </div>
          ))}
        </dl>
      </div>
      {hasBodies ? (
        <>
          {r.request_body && <Body title="Request body" body={r.request_body} />}
          {r.response_body ? <Body title="Response body" body={r.response_body} /> : <p className="subtle">No response body was kept.</p>}
        </>
      ) : (
        <Notice>
          <p>
            {!can("logs.bodies")
              ? "Your role sees request metadata only, not bodies."
              : workspace.plan !== "enterprise"
                ? "Request and response bodies are kept on the Enterprise plan only (detailed logs)."
                : !workspace.logging.bodies
                  ? "Detailed logs are off for this workspace, so bodies are not kept. An admin can turn them on in Settings."
                  : "No bodies were kept for this request (its key opts out, they have expired, or they were dropped)."}
          </p>
        </Notice>
      )}
    </section>
  );
}

function Body({ title, body }: { title: string; body: CapturedBody }) {
  const text = body.truncated ? body.text : prettyJson(body.text);
  return (
    <div className="card">
      <div className="card-header">
        <h2>{title}</h2>
        <span className="subtle">
          {body.content_type ?? "text"} · {fmtBytes(body.bytes)}
          {body.truncated && " · cut at 256 KB"}
        </span>
        <CopyButton text={text} label="Copy" />
      </div>
      <pre className="code" {...scrollable(title)}>
        {text}
      </pre>
    </div>
  );
}
