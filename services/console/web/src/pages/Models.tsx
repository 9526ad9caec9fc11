import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { get, listOf, wsPath } from "../api";
import { Empty, ErrorBox, Loading } from "../components/States";
import { fmtPrice } from "../format";
import type { List, ModelEntry } from "../types";
import { usePageTitle, useWorkspace } from "../workspace";
import { scrollable } from "../components/scrollable";

/** Price fields the gateway's config knows (packages/config), in the order people look for them. */
const priceColumns: { field: string; label: string }[] = [
  { field: "input_per_mtok", label: "Input / 1M tokens" },
  { field: "output_per_mtok", label: "Output / 1M tokens" },
  { field: "cached_input_per_mtok", label: "Cached input / 1M" },
  { field: "cache_write_per_mtok", label: "Cache write / 1M" },
];
const otherPrices: Record<string, string> = {
  per_image: "per image",
  per_audio_second: "per audio second",
  per_1k_chars: "per 1,000 characters",
  per_page: "per page",
  per_call: "per call",
  per_credit: "per credit",
};

/** The workspace's model catalog, with prices. */
export function Models() {
  const { ws, workspace } = useWorkspace();
  usePageTitle(`Models · ${workspace.name}`);
  const [filter, setFilter] = useState("");
  const models = useQuery({
    queryKey: ["models", ws],
    queryFn: async () => listOf(await get<List<ModelEntry>>(wsPath(ws, "/models"))),
    staleTime: 5 * 60_000,
  });
  const shown = (models.data ?? []).filter((m) => m.name.toLowerCase().includes(filter.trim().toLowerCase()));
  const used = priceColumns.filter((c) => (models.data ?? []).some((m) => m.price && m.price[c.field] !== undefined));
  return (
    <section className="page" aria-labelledby="models-title">
      <div className="page-header">
        <div>
          <h1 id="models-title">Models</h1>
          <p className="subtle">The models {workspace.name} may call, with the prices its usage is billed at (US dollars).</p>
        </div>
        <div className="field field-inline">
          <label htmlFor="models-filter">Find a model</label>
          <input id="models-filter" className="input" type="search" value={filter} onChange={(e) => setFilter(e.target.value)} />
        </div>
      </div>
      {models.isPending ? (
        <Loading label="Loading models" />
      ) : models.isError ? (
        <ErrorBox error={models.error} retry={() => void models.refetch()} />
      ) : models.data.length === 0 ? (
        <Empty title="No models available">
          <p>This workspace's model allow-list matches none of the gateway's models. A platform operator can change it.</p>
        </Empty>
      ) : shown.length === 0 ? (
        <Empty title={`No model matches “${filter}”`} />
      ) : (
        <div className="table-wrap" {...scrollable("Models and prices")}>
          <table>
            <caption className="sr-only">Models and prices</caption>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Type</th>
                {used.map((c) => (
                  <th scope="col" className="num" key={c.field}>
                    {c.label}
                  </th>
                ))}
                <th scope="col">Other prices</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((m) => {
                const others = Object.entries(m.price ?? {}).filter(([field]) => !priceColumns.some((c) => c.field === field));
                return (
                  <tr key={m.name}>
                    <th scope="row" className="mono cell-name">
                      {m.name}
                    </th>
                    <td>{m.type ?? "—"}</td>
                    {used.map((c) => (
                      <td className="num" key={c.field}>
                        {m.price && m.price[c.field] !== undefined ? fmtPrice(m.price[c.field]) : "—"}
                      </td>
                    ))}
                    <td>
                      {m.price === null ? (
                        <span className="subtle">No price known</span>
                      ) : others.length > 0 ? (
                        others.map(([field, value]) => (
                          <span key={field} className="nowrap price-chip">
                            {fmtPrice(value)} {otherPrices[field] ?? field.replaceAll("_", " ")}
                          </span>
                        ))
                      ) : (
                        "—"
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
