import { describe, expect, it } from 'vitest';
import { isTransientSinkError } from './sink-errors.js';

/** What ioredis throws for an error reply (redis-errors' ReplyError, whose name is its class name). */
class ReplyError extends Error {
  override get name(): string {
    return 'ReplyError';
  }
}

describe('isTransientSinkError', () => {
  it('Redis failover and overload replies, connection and socket errors are transient', () => {
    expect(isTransientSinkError(new ReplyError("READONLY You can't write against a read only replica."))).toBe(true);
    expect(isTransientSinkError(new ReplyError('OOM command not allowed when used memory > maxmemory'))).toBe(true);
    expect(isTransientSinkError(new Error('Connection is closed.'))).toBe(true);
    expect(isTransientSinkError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }))).toBe(true);
  });

  it('what BullMQ refuses about a job id, a script error and anything else are the key\'s own', () => {
    expect(isTransientSinkError(new Error('Custom Id cannot contain :'))).toBe(false);
    expect(isTransientSinkError(new ReplyError('ERR user_script:12: Script attempted to access nonexistent global variable'))).toBe(false);
    expect(isTransientSinkError(new TypeError('x is undefined'))).toBe(false);
    expect(isTransientSinkError('a string')).toBe(false);
  });
});
