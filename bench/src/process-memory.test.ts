import { describe, expect, it } from "vitest";
import { mergePeak, parseVmRssKb, processRssKb, readRss, sampleRss } from "./process-memory";

// The lines around VmRSS as the kernel writes them (tabs and padded numbers included).
const status = ["Name:\tnode", "VmPeak:\t 1234567 kB", "VmHWM:\t  222222 kB", "VmRSS:\t   98765 kB", "RssAnon:\t   50000 kB", "Threads:\t11"].join("\n");

describe("parseVmRssKb", () => {
  it("when the status has a VmRSS line, then it reads that line and not its neighbours", () => {
    expect(parseVmRssKb(status)).toBe(98765);
  });

  it("when there is no VmRSS line (a kernel thread, a zombie), then it throws", () => {
    expect(() => parseVmRssKb("Name:\tkthreadd\nState:\tS (sleeping)")).toThrow(/VmRSS/);
  });
});

describe("reading live processes", () => {
  it("when a process runs, then its RSS is read, and when it is gone, then it is left out", () => {
    if (process.platform !== "linux") return;
    const own = processRssKb(process.pid);
    expect(own).toBeGreaterThan(1024); // a Node process holds more than 1 MB
    expect(processRssKb(2 ** 30)).toBeUndefined();
    expect(Object.keys(readRss({ self: process.pid, gone: 2 ** 30 })).sort()).toEqual(["bench", "self"]);
  });

  it("when sampled over time, then each process keeps its peak", async () => {
    if (process.platform !== "linux") return;
    const sampler = sampleRss({ self: process.pid }, 10);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(sampler.stop().self).toBeGreaterThan(1024);
  });
});

describe("mergePeak", () => {
  it("keeps the larger value per process and adds new ones", () => {
    const peak = { a: 10, b: 5 };
    mergePeak(peak, { a: 7, b: 9, c: 1 });
    expect(peak).toEqual({ a: 10, b: 9, c: 1 });
  });
});
