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
