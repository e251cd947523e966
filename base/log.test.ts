import { describe, expect, it } from 'vitest';
import { chooseLogFormat } from './log.js';

describe('chooseLogFormat', () => {
  it('pretty on a terminal, JSON otherwise', () => {
    expect(chooseLogFormat(true, undefined)).toBe('pretty');
    expect(chooseLogFormat(false, undefined)).toBe('json');
    // A pipe or a file: Node leaves isTTY undefined.
    expect(chooseLogFormat(undefined, undefined)).toBe('json');
  });

  it('RIPPLE_LOG_FORMAT wins either way; anything else is ignored', () => {
    expect(chooseLogFormat(true, 'json')).toBe('json');
    expect(chooseLogFormat(false, 'pretty')).toBe('pretty');
    expect(chooseLogFormat(false, 'yaml')).toBe('json');
    expect(chooseLogFormat(true, '')).toBe('pretty');
  });
});
