import { useInfiniteQuery } from "@tanstack/react-query";
import { get, wsPath } from "../api";
import { Empty, ErrorBox, Loading, LoadMore } from "../components/States";
import { fmtDateTime, zoneLabel } from "../format";
import type { AuditPage } from "../types";
import { usePageTitle, useWorkspace } from "../workspace";
import { scrollable } from "../components/scrollable";

function json(value: unknown): string {
  return value === null || value === undefined ? "—" : JSON.stringify(value, null, 2);
}

/** Who changed what in the workspace: keys, settings, credentials, the team. Newest first. */
export function Audit() {
  const { ws, workspace, tz } = useWorkspace();
  usePageTitle(`Audit log · ${workspace.name}`);
  const audit = useInfiniteQuery({
    queryKey: ["audit", ws],
    queryFn: ({ pageParam }) => get<AuditPage>(wsPath(ws, "/audit"), { cursor: pageParam, limit: 100 }),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const records = audit.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <section className="page" aria-labelledby="audit-title">
      <div className="page-header">
        <div>
          <h1 id="audit-title">Audit log</h1>
          <p className="subtle">
            Every change to {workspace.name}, newest first · times in {zoneLabel(tz)}
          </p>
        </div>
      </div>
      {audit.isPending ? (
        <Loading label="Loading the audit log" />
      ) : audit.isError && !audit.data ? (
        <ErrorBox error={audit.error} retry={() => void audit.refetch()} />
      ) : records.length === 0 ? (
        <Empty title="Nothing recorded yet">
          <p>Changes to keys, settings, credentials and the team will be listed here.</p>
        </Empty>
      ) : (
        <>
          <div className="table-wrap" {...scrollable("Audit records, newest first")}>
            <table>
              <caption className="sr-only">Audit records, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Action</th>
                  <th scope="col">Target</th>
                  <th scope="col">Change</th>
                </tr>
              </thead>
              <tbody>
                {records.map((r) => (
                  <tr key={r.id}>
                    <td className="nowrap">{fmtDateTime(r.at, tz)}</td>
                    <td>{r.actor}</td>
                    <td className="mono nowrap">{r.action}</td>
                    <td>
                      <span className="subtle">{r.target.kind}</span> <span className="mono">{r.target.id}</span>
                    </td>
                    <td>
                      {r.before === null && r.after === null ? (
                        <span className="subtle">—</span>
                      ) : (
                        <details>
                          <summary>
                            Show
                            <span className="sr-only">
                              {" "}
                              the change of {r.action} on {r.target.id}
                            </span>
                          </summary>
                          <div className="diff">
                            <div>
                              <p className="strong">Before</p>
                              <pre className="code small">{json(r.before)}</pre>
                            </div>
                            <div>
                              <p className="strong">After</p>
                              <pre className="code small">{json(r.after)}</pre>
                            </div>
                          </div>
                        </details>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <LoadMore shown={records.length} noun="record" page={audit} />
        </>
      )}
    </section>
  );
}
