// A small SVG of line panels (no plotting dependency): bench/scale.ts draws its growth curves with it.

export interface Series {
  name: string;
  points: Array<[number, number]>;
}

export interface Panel {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];
const W = 360;
const H = 240;
const M = { left: 56, right: 12, top: 28, bottom: 40 };

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2));

function panel(p: Panel, ox: number, oy: number): string {
  const xs = p.series.flatMap((s) => s.points.map(([x]) => x));
  const ys = p.series.flatMap((s) => s.points.map(([, y]) => y)).filter(Number.isFinite);
  const xMax = Math.max(...xs, 1);
  const xMin = Math.min(...xs, 0);
  const yMax = Math.max(...ys, 0) * 1.1 || 1;
  const sx = (x: number) => ox + M.left + ((x - xMin) / (xMax - xMin || 1)) * (W - M.left - M.right);
  const sy = (y: number) => oy + H - M.bottom - (y / yMax) * (H - M.top - M.bottom);
  const out: string[] = [];
  out.push(`<text x="${ox + W / 2}" y="${oy + 16}" text-anchor="middle" font-size="13" font-weight="bold">${esc(p.title)}</text>`);
  out.push(`<line x1="${sx(xMin)}" y1="${sy(0)}" x2="${sx(xMax)}" y2="${sy(0)}" stroke="#333"/>`);
  out.push(`<line x1="${sx(xMin)}" y1="${sy(0)}" x2="${sx(xMin)}" y2="${sy(yMax)}" stroke="#333"/>`);
  for (let i = 0; i <= 4; i++) {
    const y = (yMax * i) / 4;
    out.push(`<text x="${sx(xMin) - 4}" y="${sy(y) + 4}" text-anchor="end" font-size="10">${fmt(y)}</text>`);
    out.push(`<line x1="${sx(xMin)}" y1="${sy(y)}" x2="${sx(xMax)}" y2="${sy(y)}" stroke="#ddd"/>`);
  }
  for (const x of [...new Set(xs)]) out.push(`<text x="${sx(x)}" y="${sy(0) + 14}" text-anchor="middle" font-size="10">${fmt(x)}</text>`);
  out.push(`<text x="${ox + W / 2}" y="${oy + H - 6}" text-anchor="middle" font-size="11">${esc(p.xLabel)}</text>`);
  out.push(`<text x="${ox + 12}" y="${oy + H / 2}" text-anchor="middle" font-size="11" transform="rotate(-90 ${ox + 12} ${oy + H / 2})">${esc(p.yLabel)}</text>`);
  p.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length] ?? '#000';
    const pts = s.points.filter(([, y]) => Number.isFinite(y));
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ')}"/>`);
    for (const [x, y] of pts) out.push(`<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="3" fill="${color}"/>`);
    out.push(`<text x="${ox + M.left + 8}" y="${oy + M.top + 12 + i * 13}" font-size="10" fill="${color}">${esc(s.name)}</text>`);
  });
  return out.join('\n');
}

/** Panels laid out `columns` wide. */
export function renderPanels(panels: Panel[], columns = 2): string {
  const rows = Math.ceil(panels.length / columns);
  const width = W * Math.min(columns, panels.length);
  const height = H * rows;
  const body = panels.map((p, i) => panel(p, (i % columns) * W, Math.floor(i / columns) * H)).join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n${body}\n</svg>\n`;
}
