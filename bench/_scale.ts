// Scale curves: the informer and converge scenarios at several sizes, tabulated and drawn as
// SVG line charts (log-log: a straight line is a power law, the vertical gap between two
// lines is their ratio). run.ts runs the points; this module sizes, renders and writes them.

/** The sizes of the curves per run mode, and how often each point runs. */
export const SCALE_SIZES = {
  full: {
    informer: [{ m: 1_000, reps: 1 }, { m: 10_000, reps: 3 }, { m: 50_000, reps: 3 }],
    converge: [{ n: 500, reps: 1 }, { n: 2_000, reps: 3 }, { n: 10_000, reps: 1 }],
  },
  quick: {
    informer: [{ m: 200, reps: 1 }, { m: 2_000, reps: 1 }, { m: 10_000, reps: 1 }],
    converge: [{ n: 50, reps: 1 }, { n: 200, reps: 1 }, { n: 1_000, reps: 1 }],
  },
  smoke: {
    informer: [{ m: 50, reps: 1 }, { m: 100, reps: 1 }],
    converge: [{ n: 10, reps: 1 }, { n: 20, reps: 1 }],
  },
} as const;

/** Contenders on each curve. */
export const SCALE_CONTENDERS = {
  informer: ["kubeno", "client-go", "client-go-json-list"],
  converge: ["kubeno", "controller-runtime", "kube-rs", "limit"],
} as const;

/** Medians per size, per contender: `{ "1000": { kubeno: {...}, "client-go": {...} } }`. */
export type Curve = Record<string, Record<string, Record<string, number>>>;

/** The scale results as stored in results.json. */
export interface ScaleResults {
  informer?: Curve;
  converge?: Curve;
}

const COLORS: Record<string, string> = {
  kubeno: "#2563eb",
  "controller-runtime": "#dc2626",
  "client-go": "#dc2626",
  "client-go-json-list": "#f59e0b",
  "kube-rs": "#ea580c",
  limit: "#6b7280",
  "client-node": "#16a34a",
};

/** One line of a chart. */
export interface Series {
  name: string;
  points: [number, number][];
}

/**
 * A log-log line chart as a standalone SVG document.
 *
 * @param title Chart title.
 * @param xLabel What x is (e.g. "objects").
 * @param yLabel What y is, with its unit.
 * @param series The lines.
 * @returns SVG text.
 */
export function lineChart(title: string, xLabel: string, yLabel: string, series: Series[]): string {
  const W = 680, H = 380, L = 70, R = 170, T = 40, B = 50;
  const pts = series.flatMap((s) => s.points).filter(([x, y]) => x > 0 && y > 0);
  if (!pts.length) return "";
  const decade = (v: number, up: boolean) =>
    10 ** (up ? Math.ceil(Math.log10(v)) : Math.floor(Math.log10(v)));
  const xMin = decade(Math.min(...pts.map((p) => p[0])), false);
  const xMax = decade(Math.max(...pts.map((p) => p[0])), true);
  let yMin = decade(Math.min(...pts.map((p) => p[1])), false);
  let yMax = decade(Math.max(...pts.map((p) => p[1])), true);
  if (yMin === yMax) [yMin, yMax] = [yMin / 10, yMax * 10];
  const x = (v: number) =>
    L + ((Math.log10(v) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin))) * (W - L - R);
  const y = (v: number) =>
    H - B -
    ((Math.log10(v) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) * (H - T - B);
  const num = (v: number) => v >= 1000 ? `${v / 1000}k` : String(v);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${L}" y="22" font-size="14" font-weight="bold">${esc(title)}</text>`,
  ];
  for (let d = xMin; d <= xMax; d *= 10) {
    for (const m of [1, 2, 5]) {
      const v = d * m;
      if (v > xMax) break;
      out.push(
        `<line x1="${x(v).toFixed(1)}" y1="${T}" x2="${x(v).toFixed(1)}" y2="${
          H - B
        }" stroke="#e5e7eb"/>`,
        `<text x="${x(v).toFixed(1)}" y="${H - B + 16}" text-anchor="middle" fill="#374151">${
          num(v)
        }</text>`,
      );
    }
  }
  for (let d = yMin; d <= yMax; d *= 10) {
    for (const m of [1, 2, 5]) {
      const v = d * m;
      if (v > yMax) break;
      out.push(
        `<line x1="${L}" y1="${y(v).toFixed(1)}" x2="${W - R}" y2="${
          y(v).toFixed(1)
        }" stroke="#e5e7eb"/>`,
        `<text x="${L - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#374151">${
          num(v)
        }</text>`,
      );
    }
  }
  out.push(
    `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#111827"/>`,
    `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#111827"/>`,
    `<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">${
      esc(xLabel)
    } (log scale)</text>`,
    `<text transform="translate(16 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">${
      esc(yLabel)
    } (log scale)</text>`,
  );
  series.forEach((s, i) => {
    const color = COLORS[s.name] ?? ["#7c3aed", "#0891b2", "#ca8a04"][i % 3];
    const ps = s.points.filter(([a, b]) => a > 0 && b > 0).sort((a, b) => a[0] - b[0]);
    if (ps.length > 1) {
      out.push(
        `<polyline fill="none" stroke="${color}" stroke-width="2" points="${
          ps.map(([a, b]) => `${x(a).toFixed(1)},${y(b).toFixed(1)}`).join(" ")
        }"/>`,
      );
    }
    for (const [a, b] of ps) {
      out.push(`<circle cx="${x(a).toFixed(1)}" cy="${y(b).toFixed(1)}" r="3.5" fill="${color}"/>`);
    }
    const ly = T + 10 + i * 20;
    out.push(
      `<line x1="${W - R + 14}" y1="${ly}" x2="${
        W - R + 34
      }" y2="${ly}" stroke="${color}" stroke-width="2"/>`,
      `<text x="${W - R + 40}" y="${ly + 4}">${esc(s.name)}</text>`,
    );
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** The charts of a run: file name → SVG. */
export function scaleCharts(scale: ScaleResults): Record<string, string> {
  const series = (curve: Curve, field: string, scale = 1): Series[] => {
    const names = [...new Set(Object.values(curve).flatMap((c) => Object.keys(c)))];
    return names.map((name) => ({
      name,
      points: Object.entries(curve).map(([size, c]) =>
        [Number(size), (c[name]?.[field] ?? NaN) * scale] as [number, number]
      )
        .filter(([, v]) => Number.isFinite(v)),
    }));
  };
  const out: Record<string, string> = {};
  if (scale.informer) {
    out["scale-informer-sync.svg"] = lineChart(
      "Informer: start → synced",
      "ConfigMaps",
      "ms",
      series(scale.informer, "syncMs"),
    );
    out["scale-informer-memory.svg"] = lineChart(
      "Informer: RSS after sync",
      "ConfigMaps",
      "MiB",
      series(scale.informer, "rssAfterMiB"),
    );
  }
  if (scale.converge) {
    out["scale-converge-wall.svg"] = lineChart(
      "Converge: wall time",
      "Bench objects",
      "s",
      series(scale.converge, "wallMs", 1 / 1000),
    );
    out["scale-converge-cpu.svg"] = lineChart(
      "Converge: CPU time (user + system)",
      "Bench objects",
      "s",
      series(scale.converge, "cpuSec"),
    );
    out["scale-converge-rss.svg"] = lineChart(
      "Converge: peak RSS",
      "Bench objects",
      "MiB",
      series(scale.converge, "peakRssMiB"),
    );
  }
  return out;
}

const fmt = (x: number | undefined, digits = 0) =>
  x === undefined || Number.isNaN(x)
    ? "—"
    : x.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !b || Number.isNaN(a) || Number.isNaN(b)
    ? "—"
    : `${(a / b).toFixed(2)}×`;

/**
 * The scale curves as Markdown: a table per scenario and the charts (when `chartDir` is set,
 * as image links relative to BENCHMARKS.md).
 *
 * @param scale The curves.
 * @param chartDir Where the SVG files are, relative to BENCHMARKS.md; none: no images.
 * @returns Markdown.
 */
export function renderScale(scale: ScaleResults, chartDir?: string): string {
  const lines: string[] = [];
  const img = (file: string, alt: string) => chartDir ? [`![${alt}](${chartDir}/${file})`] : [];
  if (scale.informer) {
    lines.push(
      "### Scale: informer sync and memory",
      "",
      "| ConfigMaps | contender | start → synced (ms) | RSS after sync (MiB) | RSS per object (bytes) | CPU (s) |",
      "|---:|---|---:|---:|---:|---:|",
    );
    for (const [size, c] of Object.entries(scale.informer)) {
      for (const [who, x] of Object.entries(c)) {
        lines.push(
          `| ${fmt(Number(size))} | ${who} | ${fmt(x.syncMs)} | ${fmt(x.rssAfterMiB, 1)} | ${
            fmt(x.bytesPerObject)
          } | ${fmt(x.cpuSec, 2)} |`,
        );
      }
      const k = c.kubeno;
      const ratios = (label: string, g: Record<string, number> | undefined) =>
        `| ${fmt(Number(size))} | **${label}** | ${ratio(k?.syncMs, g?.syncMs)} | ${
          ratio(k?.rssAfterMiB, g?.rssAfterMiB)
        } | ${ratio(k?.bytesPerObject, g?.bytesPerObject)} | ${ratio(k?.cpuSec, g?.cpuSec)} |`;
      lines.push(ratios("kubeno / client-go", c["client-go"]));
      if (c["client-go-json-list"]) {
        lines.push(ratios("kubeno / client-go over JSON (paged list)", c["client-go-json-list"]));
      }
    }
    lines.push(
      "",
      ...img("scale-informer-sync.svg", "Informer sync time by size"),
      "",
      ...img("scale-informer-memory.svg", "Informer RSS by size"),
      "",
    );
  }
  if (scale.converge) {
    lines.push(
      "### Scale: converge",
      "",
      "| Bench objects | contender | wall (s) | CPU (s) | peak RSS (MiB) | API writes |",
      "|---:|---|---:|---:|---:|---:|",
    );
    for (const [size, c] of Object.entries(scale.converge)) {
      for (const [who, x] of Object.entries(c)) {
        lines.push(
          `| ${fmt(Number(size))} | ${who} | ${fmt(x.wallMs / 1000, 2)} | ${fmt(x.cpuSec, 2)} | ${
            fmt(x.peakRssMiB, 1)
          } | ${fmt(x.writesTotal)} |`,
        );
      }
      const k = c.kubeno;
      for (const peer of ["controller-runtime", "kube-rs", "limit"]) {
        const p = c[peer];
        if (!p) continue;
        lines.push(
          `| ${fmt(Number(size))} | **kubeno / ${peer}** | ${ratio(k?.wallMs, p.wallMs)} | ${
            ratio(k?.cpuSec, p.cpuSec)
          } | ${ratio(k?.peakRssMiB, p.peakRssMiB)} | ${ratio(k?.writesTotal, p.writesTotal)} |`,
        );
      }
    }
    lines.push(
      "",
      ...img("scale-converge-wall.svg", "Converge wall time by size"),
      "",
      ...img("scale-converge-cpu.svg", "Converge CPU time by size"),
      "",
      ...img("scale-converge-rss.svg", "Converge peak RSS by size"),
      "",
    );
  }
  return lines.join("\n");
}
