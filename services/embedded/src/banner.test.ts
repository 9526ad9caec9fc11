import { describe, expect, it } from "vitest";
import { buildInfo } from "@gw/config";
import { embeddedBanner, meshBanner } from "./banner";
import type { ResolvedSecret } from "./secret-file";

const supplied: ResolvedSecret = { value: "operator-supplied-token-0123456789", supplied: true };

describe("the start banners", () => {
  it("when the gateway starts, then the first line names its release and commit, and a supplied token is never shown", () => {
    const { version, commit } = buildInfo();
    const banners = [
      embeddedBanner({ url: "http://127.0.0.1:8080", adminUrl: "http://127.0.0.1:8090", adminToken: supplied, dev: { count: 1 } }),
      meshBanner({ url: "http://127.0.0.1:8080", adminUrl: "http://127.0.0.1:8090", adminToken: supplied }),
    ];
    for (const banner of banners) {
      expect(banner).toContain(`AI gateway ${version} (${commit}) running`);
      expect(banner).not.toContain("operator-supplied-token-0123456789");
      expect(banner).toContain("from GATEWAY_ADMIN_TOKEN (not shown)");
    }
  });
});
