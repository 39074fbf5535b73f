import type { FloeUnderTest } from './floe.ts';

/**
 * A user made through the management API with the admin key, given `role` in `tenant`, and signed
 * in with a password at /ui/session: the user's id and the session cookie (`name=value`).
 */
export async function signedInMember(floe: Pick<FloeUnderTest, 'routerUrl' | 'adminApiKey'>, o: { email: string; tenant: string; role: 'viewer' | 'member' | 'admin'; password?: string }): Promise<{ id: string; cookie: string }> {
  const password = o.password ?? 'correct horse battery';
  const post = async (path: string, body: unknown, auth: boolean) => {
    const res = await fetch(`${floe.routerUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${floe.adminApiKey}` } : {}) },
      body: JSON.stringify(body),
    });
    if (res.status !== 200 && res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return res;
  };
  const user = (await (await post('/api/v1/users', { email: o.email, password }, true)).json()) as { id: string };
  await post(`/api/v1/tenants/${encodeURIComponent(o.tenant)}/memberships`, { user_id: user.id, role: o.role }, true);
  const login = await post('/ui/session', { username: o.email, password }, false);
  return { id: user.id, cookie: login.headers.get('set-cookie')!.split(';')[0]! };
}
