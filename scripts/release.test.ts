import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';

// docs/releasing.md: one version in package.json, its lock, the chart (version and appVersion, the image tag
// it runs) and CHANGELOG.md; `ripple --version` prints it; scripts/release.sh sets all of them at once.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkgSchema = z.object({ version: z.string(), license: z.string().optional() }).passthrough();
const lockSchema = z.object({ version: z.string(), packages: z.record(z.string(), z.object({ version: z.string().optional(), license: z.string().optional() }).passthrough()) }).passthrough();
const chartSchema = z.object({ version: z.string(), appVersion: z.string() }).passthrough();
const valuesSchema = z.object({ image: z.object({ repository: z.string(), tag: z.string() }).passthrough() }).passthrough();

function versionsIn(dir: string) {
  const pkg = pkgSchema.parse(JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')));
  const lock = lockSchema.parse(JSON.parse(readFileSync(path.join(dir, 'package-lock.json'), 'utf8')));
  const chart = chartSchema.parse(parse(readFileSync(path.join(dir, 'charts/ripple/Chart.yaml'), 'utf8')));
  const changelog = readFileSync(path.join(dir, 'CHANGELOG.md'), 'utf8');
  return { pkg, lock, chart, changelog };
}
const sections = (changelog: string) => [...changelog.matchAll(/^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$/gm)].map((m) => ({ version: m[1]!, date: m[2] }));

describe('a release names one version everywhere', () => {
  const { pkg, lock, chart, changelog } = versionsIn(root);

  it('package.json, its lock, the chart version and the chart appVersion (the image tag) agree', () => {
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    expect({ lock: lock.version, lockRoot: lock.packages['']?.version, chart: chart.version, image: chart.appVersion }).toEqual({ lock: pkg.version, lockRoot: pkg.version, chart: pkg.version, image: pkg.version });
    // The chart runs the appVersion tag only while image.tag is left empty.
    const values = valuesSchema.parse(parse(readFileSync(path.join(root, 'charts/ripple/values.yaml'), 'utf8')));
    expect(values.image.tag).toBe('');
  });

  it('CHANGELOG.md has an Unreleased section on top and a dated section for the version', () => {
    const s = sections(changelog);
    expect(s[0]).toEqual({ version: 'Unreleased', date: undefined });
    const mine = s.find((x) => x.version === pkg.version);
    expect(mine, `CHANGELOG.md has no "## [${pkg.version}] - YYYY-MM-DD" section`).toBeDefined();
    expect(mine?.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('the licence is Apache-2.0 in package.json, the lock and LICENSE, with a NOTICE', () => {
    expect(pkg.license).toBe('Apache-2.0');
    expect(lock.packages['']?.license).toBe('Apache-2.0');
    expect(readFileSync(path.join(root, 'LICENSE'), 'utf8')).toMatch(/Apache License\s+Version 2\.0, January 2004/);
    expect(readFileSync(path.join(root, 'NOTICE'), 'utf8')).toMatch(/volcano-sh\/kthena[\s\S]*llm-d-workload-variant-autoscaler[\s\S]*KusionStack\/kuperator/);
  });

  it('ripple --version and -V print the version', () => {
    for (const flag of ['--version', '-V']) {
      const r = spawnSync(process.execPath, [path.join(root, 'bin', 'ripple.js'), flag], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(`${pkg.version}\n`);
    }
    // The CLI loads through tsx: seconds on a busy 2-core machine.
  }, 120_000);
});

describe('scripts/release.sh', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-release-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('sets a new version in every place and opens a new Unreleased section', () => {
    mkdirSync(path.join(dir, 'scripts'));
    mkdirSync(path.join(dir, 'charts/ripple'), { recursive: true });
    for (const f of ['package.json', 'package-lock.json', 'CHANGELOG.md', 'charts/ripple/Chart.yaml', 'scripts/release.sh']) cpSync(path.join(root, f), path.join(dir, f));
    const before = versionsIn(dir);
    const r = spawnSync('bash', [path.join(dir, 'scripts/release.sh'), '9.8.7'], { encoding: 'utf8', env: { ...process.env, npm_config_offline: 'true' } });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const after = versionsIn(dir);
    expect([after.pkg.version, after.lock.version, after.lock.packages['']?.version, after.chart.version, after.chart.appVersion]).toEqual(Array(5).fill('9.8.7'));
    const s = sections(after.changelog);
    expect(s.slice(0, 3).map((x) => x.version)).toEqual(['Unreleased', '9.8.7', before.pkg.version]);
    expect(s[1]?.date).toBe(new Date().toISOString().slice(0, 10));
    // Nothing else in the chart changed.
    expect({ ...after.chart, version: before.chart.version, appVersion: before.chart.appVersion }).toEqual(before.chart);

    const again = spawnSync('bash', [path.join(dir, 'scripts/release.sh'), '9.8.7'], { encoding: 'utf8' });
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/already has a section for 9\.8\.7/);
    const bad = spawnSync('bash', [path.join(dir, 'scripts/release.sh'), 'v1.0'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/usage: scripts\/release.sh X\.Y\.Z/);
  });
});
