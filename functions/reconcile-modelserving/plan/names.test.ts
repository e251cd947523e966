import { describe, expect, it } from 'vitest';
import {
  controllerRevisionName,
  entryPodName,
  headlessServiceName,
  overlongNameAt,
  parseOrdinal,
  podName,
  roleId,
  servingGroupName,
  statusLabelSelector,
} from './names.js';

describe('names', () => {
  it("follows Kthena's naming", () => {
    const group = servingGroupName('vllm', 0);
    expect(group).toBe('vllm-0');
    expect(roleId('prefill', 1)).toBe('prefill-1');
    expect(entryPodName(group, roleId('prefill', 1))).toBe('vllm-0-prefill-1-0');
    expect(podName(group, roleId('prefill', 1), 2)).toBe('vllm-0-prefill-1-2');
    expect(headlessServiceName(group, 'prefill-1')).toBe('vllm-0-prefill-1-0');
    expect(controllerRevisionName('vllm', '5d7b9f')).toBe('vllm-5d7b9f');
  });

  it('parses only canonical ordinals with the right prefix', () => {
    expect(parseOrdinal('vllm-12', 'vllm')).toBe(12);
    expect(parseOrdinal('vllm-0', 'vllm')).toBe(0);
    expect(parseOrdinal('vllm-012', 'vllm')).toBeUndefined();
    expect(parseOrdinal('vllm-x', 'vllm')).toBeUndefined();
    expect(parseOrdinal('other-1', 'vllm')).toBeUndefined();
    expect(parseOrdinal('my-model-3', 'my-model')).toBe(3);
    expect(parseOrdinal('my-model-3', 'my')).toBeUndefined();
    expect(parseOrdinal('vllm-99999999999', 'vllm')).toBeUndefined();
  });

  it('selects one pod per ServingGroup for the scale subresource, keys sorted', () => {
    expect(statusLabelSelector('vllm', 'prefill')).toBe(
      'modelserving.volcano.sh/entry=true,modelserving.volcano.sh/name=vllm,modelserving.volcano.sh/role=prefill,modelserving.volcano.sh/role-id=prefill-0',
    );
    expect(statusLabelSelector('vllm', undefined)).toBe('modelserving.volcano.sh/entry=true,modelserving.volcano.sh/name=vllm');
  });
});

describe('generated names Kubernetes limits to 63 characters (issue 13 scenario 3)', () => {
  const name49 = 'a'.repeat(49);
  it('checks the highest real ordinal, not the replica count (no off-by-one)', () => {
    // replicas 10 → ordinals 0..9: `<49>-9-prefill-0-0` is 63 characters, which Kubernetes accepts.
    expect(overlongNameAt(name49, 9, [{ name: 'prefill', replicas: 1, hasService: true }])).toBeUndefined();
    expect(overlongNameAt(name49, 10, [{ name: 'prefill', replicas: 1, hasService: true }])).toBe(`${name49}-10-prefill-0-0`);
  });

  it('only Service names and label values count: a role without a Service has no long name', () => {
    expect(overlongNameAt(name49, 10, [{ name: 'prefill', replicas: 1, hasService: false }])).toBeUndefined();
    expect(overlongNameAt('a'.repeat(61), 100, [])).toBe(`${'a'.repeat(61)}-100`);
  });
});
