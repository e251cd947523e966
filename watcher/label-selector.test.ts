import { describe, expect, it } from 'vitest';
import { matchesLabels, parseLabelSelector } from './label-selector.js';

const matches = (selector: string, labels: Record<string, string>) => matchesLabels(parseLabelSelector(selector), labels);

describe('label selectors', () => {
  it('equality and inequality; != and notin match objects without the label, as on the API server', () => {
    expect(matches('kusionstack.io/control=true', { 'kusionstack.io/control': 'true' })).toBe(true);
    expect(matches('kusionstack.io/control==true', { 'kusionstack.io/control': 'false' })).toBe(false);
    expect(matches('a!=b', {})).toBe(true);
    expect(matches('a!=b', { a: 'b' })).toBe(false);
    expect(matches('a notin (x, y)', {})).toBe(true);
    expect(matches('a notin (x,y)', { a: 'y' })).toBe(false);
  });

  it('set, existence and several requirements at once', () => {
    expect(matches('env in (prod, staging),tier', { env: 'prod', tier: 'web' })).toBe(true);
    expect(matches('env in (prod, staging),tier', { env: 'dev', tier: 'web' })).toBe(false);
    expect(matches('env in (prod, staging),tier', { env: 'prod' })).toBe(false);
    expect(matches('!canary', { canary: '' })).toBe(false);
    expect(matches('!canary, app = x', { app: 'x' })).toBe(true);
    expect(matches('modelserving.volcano.sh/name', { 'modelserving.volcano.sh/name': 'm' })).toBe(true);
  });

  it('the empty selector matches everything; a malformed one is an error, not "match all"', () => {
    expect(matches('', { a: 'b' })).toBe(true);
    expect(() => parseLabelSelector('a=b,')).toThrow(/empty requirement/);
    expect(() => parseLabelSelector('a in b')).toThrow(/cannot parse/);
    expect(() => parseLabelSelector('a=(b)')).toThrow(/cannot parse/);
  });
});
