import { describe, expect, it } from 'vitest';
import {
  controllerRevisionName,
  entryPodName,
  headlessServiceName,
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
