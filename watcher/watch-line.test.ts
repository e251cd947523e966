import { describe, expect, it } from 'vitest';
import { parseWatchLine } from './watch-line.js';

describe('parseWatchLine', () => {
  it('reads a BOOKMARK, which has a resourceVersion and no name, as a bookmark', () => {
    // The shape kube-apiserver sends: the resource's kind and apiVersion, metadata with only a resourceVersion.
    const raw = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '12345', creationTimestamp: null } };
    expect(parseWatchLine('BOOKMARK', raw)).toEqual({ kind: 'bookmark', resourceVersion: '12345' });
  });

  it('reads a bookmark with the initial-events-end annotation the same way', () => {
    const raw = { metadata: { resourceVersion: '77', annotations: { 'k8s.io/initial-events-end': 'true' } } };
    expect(parseWatchLine('BOOKMARK', raw)).toEqual({ kind: 'bookmark', resourceVersion: '77' });
  });

  it('a bookmark without a resourceVersion is invalid, not an object', () => {
    expect(parseWatchLine('BOOKMARK', { metadata: {} })).toMatchObject({ kind: 'invalid', type: 'BOOKMARK' });
  });

  it('ADDED/MODIFIED/DELETED carry a named object', () => {
    const obj = { metadata: { name: 'a', namespace: 'ns', resourceVersion: '3' } };
    expect(parseWatchLine('MODIFIED', obj)).toEqual({ kind: 'object', type: 'MODIFIED', object: obj });
    expect(parseWatchLine('ADDED', { metadata: { resourceVersion: '3' } })).toMatchObject({ kind: 'invalid', type: 'ADDED' });
  });

  it('an ERROR gives the Status code, so a 410 can be told from other errors', () => {
    expect(parseWatchLine('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 5 (9)' })).toMatchObject({ kind: 'error', code: 410, message: 'too old resource version: 5 (9)' });
    expect(parseWatchLine('ERROR', 'garbage')).toMatchObject({ kind: 'error', code: undefined });
  });

  it('an unknown type is invalid', () => {
    expect(parseWatchLine('SOMETHING', {})).toMatchObject({ kind: 'invalid', type: 'SOMETHING' });
  });
});
