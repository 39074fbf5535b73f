export { validationError, planningErrorReply as errorReply, type PlanningErrorReply } from '@floe/runtime';
