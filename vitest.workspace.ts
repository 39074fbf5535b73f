// The test projects: one per workspace package or service. Unit tests sit beside the code;
// end-to-end tests live in packages/testkit/test and start real Floe in both modes.
export const projects = ['packages/*', 'services/*'];
