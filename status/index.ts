export * from './schema.js';
export * from './vocabulary.js';
export * from './conditions.js';
export * from './transitions.js';
export * from './phase.js';
export * from './grace.js';
export * from './engine.js';
export * from './kstatus.js';
