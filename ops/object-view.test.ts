import { describe, expect, it } from 'vitest';
import { groupsOf } from './object-view.js';
import { OBJECTS_PAGE, OBJECTS_SCRIPT } from './object-page.js';

describe('object view', () => {
  it('groups the role datastore value by ServingGroup, roles sorted, groups without roles kept', () => {
    const value = {
      updatedAt: '2026-11-28T07:00:00Z',
      groups: { 'chat-1': { state: 'Creating' }, 'chat-0': { state: 'Running', revision: 'r1' } },
      roles: {
        'chat-0/prefill-0': { group: 'chat-0', roleName: 'prefill', roleId: 'prefill-0', state: 'Running' },
        'chat-0/decode-0': { group: 'chat-0', roleName: 'decode', roleId: 'decode-0', state: 'Deleting', revision: 'r1' },
      },
    };
    expect(groupsOf(value)).toEqual({
      updatedAt: '2026-11-28T07:00:00Z',
      groups: [
        { name: 'chat-0', state: 'Running', revision: 'r1', roles: [{ role: 'decode', id: 'decode-0', state: 'Deleting', revision: 'r1' }, { role: 'prefill', id: 'prefill-0', state: 'Running' }] },
        { name: 'chat-1', state: 'Creating', roles: [] },
      ],
    });
    expect(groupsOf({ something: 'else' })).toBeUndefined();
  });

  it('the page draws with text nodes only and loads no script but its own', () => {
    expect(OBJECTS_SCRIPT).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
    expect(OBJECTS_PAGE.match(/<script[^>]*>/g)).toEqual(['<script src="/objects/app.js">']);
  });
});
