import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadProcessConfig } from './config.js';

describe('REDIS_URL in the process config', () => {
  it('accepts every form queue/connection.ts reads', () => {
    for (const url of ['redis://127.0.0.1:6379/1', 'redis+sentinel://a:26379,b:26379/mymaster', 'redis+cluster://a:7000,b:7001,c:7002']) {
      expect(loadProcessConfig({ REDIS_URL: url }).REDIS_URL).toBe(url);
    }
  });
  it('says what is wrong with one it cannot read, without the password', () => {
    expect(() => loadProcessConfig({ REDIS_URL: 'redis+cluster://u:hunter2@a:7000,b' })).toThrow(/REDIS_URL: cluster node "b" in REDIS_URL is not host:port/);
    expect(() => loadProcessConfig({ REDIS_URL: 'memcached://u:hunter2@h' })).not.toThrow(/hunter2/);
    expect(() => loadProcessConfig({ REDIS_URL: 'memcached://h' })).toThrow(/must start with redis:\/\//);
  });
});

describe('secrets read from NAME_FILE', () => {
  it('names the file it cannot read and keeps the read error as the cause', () => {
    const file = path.join(tmpdir(), `ripple-config-test-missing-${process.pid}`);
    let thrown: unknown;
    try {
      loadProcessConfig({ RIPPLE_OPS_TOKEN_FILE: file });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({
      message: expect.stringMatching(new RegExp(`^invalid environment: RIPPLE_OPS_TOKEN_FILE: cannot read ${file} \\(ENOENT`)),
      cause: expect.objectContaining({ code: 'ENOENT', path: file }),
    });
  });
});
