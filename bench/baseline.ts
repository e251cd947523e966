// A checkout of Ripple at another commit, beside this one, so a benchmark can run the code from before a
// change in the same run as the code after it (same machine, same Redis, alternating order). It shares
// this checkout's node_modules; the commit is BENCH_BASELINE_REF (default: the one named by the bench).
import { execFileSync } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import path from 'node:path';

export function baselineCheckout(root: string, ref: string): string {
  const sha = execFileSync('git', ['-C', root, 'rev-parse', '--verify', `${ref}^{commit}`], { encoding: 'utf8' }).trim();
  const dir = path.join(root, '.cache', 'bench-baseline', sha.slice(0, 12));
  if (!existsSync(path.join(dir, 'package.json'))) {
    console.log(`bench: checking out the baseline ${ref} (${sha.slice(0, 12)}) into ${path.relative(root, dir)}`);
    execFileSync('git', ['-C', root, 'worktree', 'add', '--force', '--detach', dir, sha], { stdio: 'ignore' });
  }
  const modules = path.join(dir, 'node_modules');
  if (!existsSync(modules)) symlinkSync(path.join(root, 'node_modules'), modules, 'dir');
  return dir;
}
