export * from './event-request.js';
export * from './keys.js';
export * from './event-name.js';
export * from './state.js';
export * from './aggregate.js';
export * from './observe.js';
export * from './spam-filter.js';
export * from './correlate.js';
