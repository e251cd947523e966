import { describe, expect, it } from 'vitest';
import { webhookEnv } from './webhook.js';

describe('webhookEnv', () => {
  it('reads the switches as true/false, unset or empty as false', () => {
    expect(webhookEnv({})).toEqual({ graceDelete: false, function: false });
    expect(webhookEnv({ RIPPLE_WEBHOOK_GRACE_DELETE: 'true', RIPPLE_WEBHOOK_FUNCTION: '' })).toEqual({ graceDelete: true, function: false });
    expect(webhookEnv({ RIPPLE_WEBHOOK_GRACE_DELETE: 'false', RIPPLE_WEBHOOK_FUNCTION: 'true' })).toEqual({ graceDelete: false, function: true });
  });

  it('refuses anything else with the variable named, instead of reading it as off', () => {
    expect(() => webhookEnv({ RIPPLE_WEBHOOK_GRACE_DELETE: 'yes' })).toThrow(/RIPPLE_WEBHOOK_GRACE_DELETE must be "true" or "false"/);
    expect(() => webhookEnv({ RIPPLE_WEBHOOK_FUNCTION: 'TRUE' })).toThrow(/RIPPLE_WEBHOOK_FUNCTION must be "true" or "false"/);
  });
});
