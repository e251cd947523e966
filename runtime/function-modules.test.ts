import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { allFunctions } from '../functions/index.js';
import { functionDefinitionSchema, functionModulePaths, loadFunctionModule, withFunctionModules } from './function-modules.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ripple-function-modules-'));
function moduleFile(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}
const good = (name: string) => `export function definitions(env) { return [{ name: '${name}', triggers: [], reconcile: async () => {}, concurrency: Number(env.N ?? '1') }]; }\n`;

describe('function modules', () => {
  it('every built-in definition passes the schema a module is checked with', () => {
    for (const def of allFunctions()) expect(functionDefinitionSchema.safeParse(def).error?.issues ?? [], def.name).toEqual([]);
  });

  it('loads definitions(env) with the environment, or a default export', async () => {
    const [a] = await loadFunctionModule(moduleFile('a.mjs', good('a')), { N: '3' });
    expect(a).toMatchObject({ name: 'a', concurrency: 3 });
    const [b] = await loadFunctionModule(moduleFile('b.mjs', `export default () => [{ name: 'b', triggers: [], reconcile: async () => {} }];\n`));
    expect(b?.name).toBe('b');
  });

  it('names the module and what is wrong', async () => {
    const none = moduleFile('none.mjs', 'export const x = 1;\n');
    await expect(loadFunctionModule(none)).rejects.toThrow(`function module ${none}: export a function \`definitions(env)\``);
    const bad = moduleFile('bad.mjs', "export const definitions = () => [{ name: 'Bad_Name', triggers: [{ resource: { kind: 'ConfigMap' }, map: 1 }], reconcile: 'no', concurency: 2 }];\n");
    const message = await loadFunctionModule(bad).then(
      () => '',
      (err: Error) => err.message,
    );
    expect(message).toContain(`function module ${bad}: `);
    expect(message).toContain('function "Bad_Name": name: function names are lowercase letters');
    expect(message).toContain('function "Bad_Name": triggers.0.resource.plural');
    expect(message).toContain('function "Bad_Name": triggers.0.map: map must be a function');
    expect(message).toContain('function "Bad_Name": reconcile: reconcile must be a function');
    expect(message).toMatch(/function "Bad_Name": .*concurency/); // a misspelt field is not silently ignored
    const empty = moduleFile('empty.mjs', 'export const definitions = () => [];\n');
    await expect(loadFunctionModule(empty)).rejects.toThrow('definitions(env) returned no function');
    await expect(loadFunctionModule(path.join(dir, 'missing.mjs'))).rejects.toThrow(/function module .*missing\.mjs: cannot import it/);
  });

  it('adds module functions after the built-in ones and refuses a name defined twice', async () => {
    const builtIn = allFunctions();
    const all = await withFunctionModules(builtIn, [moduleFile('c.mjs', good('c'))]);
    expect(all.map((f) => f.name)).toEqual([...builtIn.map((f) => f.name), 'c']);
    await expect(withFunctionModules(builtIn, [moduleFile('clash.mjs', good('emit-events'))])).rejects.toThrow('function "emit-events" is already defined by Ripple itself');
    const d1 = moduleFile('d1.mjs', good('d'));
    await expect(withFunctionModules([], [d1, moduleFile('d2.mjs', good('d'))])).rejects.toThrow(`is already defined by function module ${d1}`);
  });

  it('takes module paths from repeated flags and RIPPLE_FUNCTIONS_MODULES, each once', () => {
    expect(functionModulePaths(['/a.js'], { RIPPLE_FUNCTIONS_MODULES: '/b.js, /a.js,,' })).toEqual(['/a.js', '/b.js']);
    expect(functionModulePaths(undefined, {})).toEqual([]);
  });
});
