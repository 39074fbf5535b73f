import type { CheckPageAnswer, DropDamagedAnswer, JobAnswer, JobStartedAnswer, RegisterAnswer, RollbackAnswer, UnregisteredPageAnswer } from '@floe/client';
import type { CheckReport, DropDamagedAnswer as Dropped, JobRunning, JobView, RegisterAnswer as Registered, RollbackAnswer as RolledBack, UnregisteredReport } from '@floe/compactor';

/**
 * Compile-time only, never imported: the typecheck fails here when an answer the compactor writes
 * (services/compactor/src/table-*.ts, maintenance-jobs.ts) stops giving a field the clients read of it (@floe/client
 * ops-answers.ts), or gives it of another type. The check lives in the CLI because it is the one
 * package that sees both: the compactor must not depend on @floe/client, nor the client on a
 * service. What the router lets through between them its route tests and the end-to-end suites
 * cover (packages/testkit/test/table-repair.e2e.test.ts, table-register.e2e.test.ts).
 */
type Gives<Written extends Read, Read> = [Written, Read];

export type OpsAnswersAgree = [
  Gives<CheckReport, CheckPageAnswer>,
  Gives<Dropped, DropDamagedAnswer>,
  Gives<RolledBack, RollbackAnswer>,
  Gives<UnregisteredReport, UnregisteredPageAnswer>,
  Gives<Registered, RegisterAnswer>,
  Gives<JobRunning, JobStartedAnswer>,
  Gives<JobView, JobAnswer>,
];
