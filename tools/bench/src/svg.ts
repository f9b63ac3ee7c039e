/**
 * The start-lag chart: one panel per spike workload, one cumulative
 * distribution per system configuration, log-scaled time axis. Plain SVG
 * text, no dependencies.
 */

export interface Series {
  label: string;
  /** Ascending start lags in ms (all rounds pooled). */
  lags: number[];
}

export interface Panel {
  title: string;
  series: Series[];
}

const COLORS = ['#d62728', '#1f77b4', '#aec7e8', '#2ca02c', '#98df8a', '#9467bd', '#ff7f0e'];

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function startLagSvg(panels: Panel[], subtitle: string): string {
  const panelW = 520;
  const panelH = 340;
  const margin = { left: 60, right: 20, top: 66, bottom: 50 };
  const width = panels.length * panelW;
  const legendH = 24 * Math.max(...panels.map((p) => p.series.length), 1) + 20;
  const height = panelH + legendH + 46;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  out.push(`<text x="10" y="18" font-size="14" font-weight="bold">Start lag (handler start − due time), cumulative share of jobs</text>`);
  out.push(`<text x="10" y="34" fill="#555">${esc(subtitle)}</text>`);
  const allLags = panels.flatMap((p) => p.series.flatMap((s) => s.lags)).filter((v) => v > 0);
  const maxLag = Math.max(10, ...allLags);
  const lo = 0; // log10(1 ms)
  const hi = Math.ceil(Math.log10(maxLag));
  panels.forEach((panel, pi) => {
    const x0 = pi * panelW + margin.left;
    const y0 = margin.top;
    const w = panelW - margin.left - margin.right;
    const h = panelH - margin.top - margin.bottom;
    const sx = (ms: number) => x0 + ((Math.log10(Math.max(1, ms)) - lo) / (hi - lo)) * w;
    const sy = (share: number) => y0 + h - share * h;
    out.push(`<text x="${x0}" y="${y0 - 8}" font-weight="bold">${esc(panel.title)}</text>`);
    out.push(`<rect x="${x0}" y="${y0}" width="${w}" height="${h}" fill="none" stroke="#999"/>`);
    for (let d = lo; d <= hi; d++) {
      const x = sx(10 ** d);
      out.push(`<line x1="${x}" y1="${y0}" x2="${x}" y2="${y0 + h}" stroke="#eee"/>`);
      const label = 10 ** d >= 1000 ? `${10 ** (d - 3)} s` : `${10 ** d} ms`;
      out.push(`<text x="${x}" y="${y0 + h + 16}" text-anchor="middle" fill="#333">${label}</text>`);
    }
    for (const share of [0, 0.25, 0.5, 0.75, 0.9, 1]) {
      const y = sy(share);
      out.push(`<line x1="${x0}" y1="${y}" x2="${x0 + w}" y2="${y}" stroke="#eee"/>`);
      out.push(`<text x="${x0 - 6}" y="${y + 4}" text-anchor="end" fill="#333">${share}</text>`);
    }
    out.push(`<text x="${x0 + w / 2}" y="${y0 + h + 34}" text-anchor="middle" fill="#333">start lag (log scale; ≤ 1 ms drawn at 1 ms)</text>`);
    panel.series.forEach((series, si) => {
      if (series.lags.length === 0) return;
      // At most ~300 steps per curve: enough for the shape, small enough for a docs page.
      const n = series.lags.length;
      const step = Math.max(1, Math.floor(n / 300));
      const points: string[] = [];
      for (let i = 0; i < n; i += step) {
        const lag = series.lags[i]!;
        points.push(`${sx(lag).toFixed(1)},${sy(i / n).toFixed(1)}`);
        points.push(`${sx(lag).toFixed(1)},${sy(Math.min(n, i + step) / n).toFixed(1)}`);
      }
      points.push(`${sx(series.lags[n - 1]!).toFixed(1)},${sy(1).toFixed(1)}`);
      out.push(`<polyline fill="none" stroke="${COLORS[si % COLORS.length]}" stroke-width="${si === 0 ? 2.5 : 1.5}" points="${points.join(' ')}"/>`);
    });
  });
  const legendY = panelH + 36;
  const names = panels[0]?.series.map((s) => s.label) ?? [];
  names.forEach((name, i) => {
    const y = legendY + i * 24;
    out.push(`<line x1="20" y1="${y}" x2="50" y2="${y}" stroke="${COLORS[i % COLORS.length]}" stroke-width="3"/>`);
    out.push(`<text x="58" y="${y + 4}">${esc(name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}
