import type { FastifyPluginAsync } from 'fastify';
import { authorizeInstance, mayReadUser } from '@floe/auth';
import { forbidden, notFound } from '@floe/errors';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, createUser, deleteUser, getUser, listUsers, updateUser } from '@floe/meta';
import type { ManagementOptions } from './options.ts';
import { principalOf } from './principal-plugin.ts';
import { ERROR_RESPONSES, emailSchema, labelSchema, ref, userIdSchema } from './schemas.ts';
import { userWire } from './wire.ts';

interface CreateUserBody {
  email: string;
  display_name?: string;
  password?: string | null;
  is_instance_admin?: boolean;
  disabled?: boolean;
}
interface UpdateUserBody {
  display_name?: string;
  password?: string | null;
  is_instance_admin?: boolean;
  disabled?: boolean;
}
type UserParams = { user_id: string };

const TAGS = ['users'];
const passwordSchema = {
  type: ['string', 'null'],
  minLength: PASSWORD_MIN_LENGTH,
  maxLength: PASSWORD_MAX_LENGTH,
  description: 'Local password (stored as a salted scrypt hash). Omitted or null: a passwordless user, who cannot use the password form.',
} as const;
const userParams = { type: 'object', additionalProperties: false, required: ['user_id'], properties: { user_id: userIdSchema } } as const;

/** Local users: an instance-wide resource, managed by instance admins. */
export const userRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  app.get(
    '/users',
    {
      schema: {
        operationId: 'list_users',
        summary: 'List users (instance admin)',
        tags: TAGS,
        response: { 200: { type: 'object', additionalProperties: false, required: ['users'], properties: { users: { type: 'array', items: ref('User') } } }, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      authorizeInstance(principalOf(req), 'user.read');
      return { users: (await listUsers(opts.db)).map(userWire) };
    },
  );

  app.post<{ Body: CreateUserBody }>(
    '/users',
    {
      schema: {
        operationId: 'create_user',
        summary: 'Create a local user (instance admin)',
        tags: TAGS,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['email'],
          properties: { email: emailSchema, display_name: labelSchema, password: passwordSchema, is_instance_admin: { type: 'boolean' }, disabled: { type: 'boolean' } },
        },
        response: { 201: ref('User'), ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      authorizeInstance(principalOf(req), 'user.manage');
      const b = req.body;
      const user = await createUser(opts.db, { email: b.email, displayName: b.display_name, password: b.password, isInstanceAdmin: b.is_instance_admin, disabled: b.disabled });
      return reply.code(201).send(userWire(user));
    },
  );

  app.get<{ Params: UserParams }>(
    '/users/:user_id',
    { schema: { operationId: 'get_user', summary: 'Get a user (instance admin, or the user themselves)', tags: TAGS, params: userParams, response: { 200: ref('User'), ...ERROR_RESPONSES } } },
    async (req) => {
      if (!mayReadUser(principalOf(req), req.params.user_id)) throw forbidden('reading another user needs an instance admin');
      const user = await getUser(opts.db, req.params.user_id);
      if (!user) throw notFound(`user ${req.params.user_id} not found`);
      return userWire(user);
    },
  );

  app.patch<{ Params: UserParams; Body: UpdateUserBody }>(
    '/users/:user_id',
    {
      schema: {
        operationId: 'update_user',
        summary: 'Update a user (instance admin); a new password or disabling ends the user’s sessions',
        tags: TAGS,
        params: userParams,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: { display_name: labelSchema, password: passwordSchema, is_instance_admin: { type: 'boolean' }, disabled: { type: 'boolean' } },
        },
        response: { 200: ref('User'), ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      authorizeInstance(principalOf(req), 'user.manage');
      const b = req.body;
      return userWire(await updateUser(opts.db, req.params.user_id, { displayName: b.display_name, password: b.password, isInstanceAdmin: b.is_instance_admin, disabled: b.disabled }));
    },
  );

  app.delete<{ Params: UserParams }>(
    '/users/:user_id',
    {
      schema: {
        operationId: 'delete_user',
        summary: 'Delete a user with their memberships and sessions (instance admin)',
        tags: TAGS,
        params: userParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      authorizeInstance(principalOf(req), 'user.manage');
      await deleteUser(opts.db, req.params.user_id);
      return reply.code(204).send();
    },
  );
};
