export { SandboxError, type SandboxErrorKind } from './errors.ts';
export { describeSandboxedSelect, runSandboxedSelect, type SandboxOptions, type StatementDescription } from './sandbox.ts';
export { createTrustedRunner, type TrustedRunner, type TrustedRunnerOptions, type TrustedRunOptions } from './trusted.ts';
export type { SandboxResult } from './execute.ts';
export type { SandboxView } from './views.ts';
export { ALLOWED_TABLE_FUNCTIONS, DENIED_FUNCTIONS } from './gate.ts';
