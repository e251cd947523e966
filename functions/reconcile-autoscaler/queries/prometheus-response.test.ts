import { describe, expect, it } from 'vitest';
import { parseInstantVector, parseSingleValue, valuesByPod } from './prometheus-response.js';

const vector = (result: unknown[]) => ({ status: 'success', data: { resultType: 'vector', result } });

describe('parseInstantVector', () => {
  it('reads a vector response', () => {
    const r = parseInstantVector(vector([{ metric: { pod: 'a' }, value: [1769688000.5, '0.42'] }]));
    expect(r).toEqual({ ok: true, warnings: [], samples: [{ labels: { pod: 'a' }, value: 0.42, timestampMs: 1769688000500 }] });
  });

  it('reads special values', () => {
    const r = parseInstantVector(vector([{ metric: { pod: 'a' }, value: [1, 'NaN'] }, { metric: { pod: 'b' }, value: [1, '+Inf'] }]));
    expect(r.ok && r.samples.map((s) => s.value)).toEqual([NaN, Infinity]);
  });

  it('reports Prometheus errors and unexpected shapes', () => {
    expect(parseInstantVector({ status: 'error', errorType: 'bad_data', error: 'parse error at char 5' })).toEqual({ ok: false, error: 'bad_data: parse error at char 5' });
    expect(parseInstantVector({ status: 'success', data: { resultType: 'matrix', result: [] } })).toEqual({ ok: false, error: 'expected an instant vector, got a matrix' });
    const bad = parseInstantVector({ status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: ['x', 1] }] } });
    expect(bad.ok).toBe(false);
    expect(parseInstantVector('<html>').ok).toBe(false);
  });

  it('keeps warnings', () => {
    const r = parseInstantVector({ ...vector([]), warnings: ['partial response'] });
    expect(r.ok && r.warnings).toEqual(['partial response']);
  });
});

describe('valuesByPod', () => {
  it('takes the pod from `pod`, else `pod_name`, dropping samples without one or with NaN', () => {
    const r = parseInstantVector(
      vector([
        { metric: { pod: 'a' }, value: [1, '0.5'] },
        { metric: { pod_name: 'b' }, value: [1, '0.25'] },
        { metric: {}, value: [1, '0.9'] },
        { metric: { pod: 'c' }, value: [1, 'NaN'] },
        { metric: { pod: 'a' }, value: [1, '0.7'] },
      ]),
    );
    expect(r.ok && [...valuesByPod(r.samples)]).toEqual([
      ['a', 0.7],
      ['b', 0.25],
    ]);
  });
});

describe('parseSingleValue', () => {
  it('reads the sum, treating an empty result as unknown rather than zero', () => {
    expect(parseSingleValue(vector([{ metric: {}, value: [1, '0'] }]))).toEqual({ ok: true, value: 0 });
    expect(parseSingleValue(vector([{ metric: {}, value: [1, '17.2'] }]))).toEqual({ ok: true, value: 17.2 });
    expect(parseSingleValue({ status: 'success', data: { resultType: 'scalar', result: [1, '3'] } })).toEqual({ ok: true, value: 3 });
    expect(parseSingleValue(vector([]))).toEqual({ ok: false, error: 'no data: the metric has no series yet' });
  });
});
