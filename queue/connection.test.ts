import { describe, expect, it } from 'vitest';
import { redactUrl } from '../base/redact.js';
import { parseRedisUrl, reconnectOnError } from './connection.js';

describe('REDIS_URL', () => {
  it('names one server', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379/2')).toEqual({ kind: 'single', url: 'redis://127.0.0.1:6379/2' });
    expect(parseRedisUrl('rediss://u:p@h:1')).toEqual({ kind: 'single', url: 'rediss://u:p@h:1' });
  });
  it('names a Sentinel-managed primary', () => {
    expect(parseRedisUrl('redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster')).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: '127.0.0.1', port: 26379 },
        { host: '127.0.0.1', port: 26380 },
      ],
      masterName: 'mymaster',
      db: 0,
    });
    expect(parseRedisUrl('redis+sentinel://:s3cret@h:1/m/3')).toMatchObject({ password: 's3cret', db: 3, masterName: 'm' });
  });
  it('names a Redis Cluster by its seed nodes', () => {
    expect(parseRedisUrl('redis+cluster://127.0.0.1:7000,127.0.0.1:7001')).toEqual({
      kind: 'cluster',
      seeds: [
        { host: '127.0.0.1', port: 7000 },
        { host: '127.0.0.1', port: 7001 },
      ],
    });
    expect(parseRedisUrl('redis+cluster://app:s%40cret@h:1/')).toMatchObject({ username: 'app', password: 's@cret', seeds: [{ host: 'h', port: 1 }] });
    expect(parseRedisUrl('redis+cluster://:pw@h:1')).toEqual({ kind: 'cluster', seeds: [{ host: 'h', port: 1 }], password: 'pw' });
    expect(parseRedisUrl('rediss+cluster://h:1,h:2')).toMatchObject({ kind: 'cluster', tls: true });
    expect(() => parseRedisUrl('redis+cluster://h:1/2')).toThrow(/no database/);
    expect(() => parseRedisUrl('redis+cluster://u:pw@h')).toThrow(/"h" in REDIS_URL is not host:port/);
  });
  it('rejects what it cannot read, without showing a password', () => {
    expect(() => parseRedisUrl('http://x')).toThrow(/must start with redis:\/\//);
    expect(() => parseRedisUrl('redis+sentinel://h:1')).toThrow(/masterName/);
    expect(() => parseRedisUrl('redis+sentinel://:pw@h/m')).toThrow(/"h" in REDIS_URL is not host:port/);
    expect(() => parseRedisUrl('memcached://u:hunter2@h')).toThrow(/\/\/\[redacted\]@h/);
  });
  it('redacts credentials', () => {
    expect(redactUrl('redis://u:hunter2@h:1')).toBe('redis://[redacted]@h:1');
    expect(redactUrl('redis://u:p@ss@h:1')).toBe('redis://[redacted]@h:1');
    expect(redactUrl('redis://h:1')).toBe('redis://h:1');
  });
  it('reconnects and resends after a failover answer, not after other errors', () => {
    expect(reconnectOnError(new Error('READONLY You can\'t write against a read only replica.'))).toBe(2);
    expect(reconnectOnError(new Error('LOADING Redis is loading the dataset in memory'))).toBe(2);
    expect(reconnectOnError(new Error('OOM command not allowed'))).toBe(false);
  });
});
