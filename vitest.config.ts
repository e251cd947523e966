import { configDefaults, defineConfig } from 'vitest/config';

// The real node's tests (test/integration/real-node-*) need root, containerd and RIPPLE_REAL_NODE=1, which also
// makes the sandbox start the node (docs/operations.md); without it they are not selected at all. The
// testcontainers test needs root and podman the same way (its runtime, test/harness/container-runtime.ts).
const realNodeTests =
  process.env.RIPPLE_REAL_NODE === '1' ? [] : ['test/integration/real-node-*.test.ts', 'test/integration/testcontainers-*.test.ts'];

// The files that need what `scripts/ensure-deps.sh late` builds (KEDA; the real node's CoreDNS and images; the
// Redis image). scripts/test.sh runs the others first with RIPPLE_TEST_LATE=skip while those builds run beside them,
// then these.
const LATE_TESTS = ['test/integration/autoscaler-keda-e2e.test.ts', 'test/integration/real-node-*.test.ts', 'test/integration/testcontainers-*.test.ts'];
const skipped = process.env.RIPPLE_TEST_LATE === 'skip' ? LATE_TESTS : [];

// Two projects: unit tests of pure logic sit beside the code and need nothing running;
// integration tests under test/ share one real control plane and one real Redis per run.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['**/*.test.ts'],
          // .sandbox: the real node's containers keep their images' files there (a package's own tests among them).
          exclude: ['test/**', '**/node_modules/**', '.cache/**', '.sandbox/**', 'bench/**'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...realNodeTests, ...skipped],
          globalSetup: ['test/harness/global-setup.ts'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // The sandbox has two cores; files run one at a time so timing-sensitive tests are fair.
          fileParallelism: false,
        },
      },
    ],
  },
});
