import { createUser, getUserByEmail, getUserByOidcIdentity, higherRole, isMetaError, linkOidcIdentity, syncMappedMemberships, type Db, type MembershipRole, type User } from '@floe/meta';

/** What the provider asserted about the person signing in (ID token and userinfo claims). */
export interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string | undefined;
  emailVerified: boolean;
  name: string | undefined;
  groups: readonly string[];
}

/** The request's logger or the process's: only these two levels are used. */
export interface LoginLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface OidcLoginRules {
  allowedEmailDomains: readonly string[];
  groupMappings: readonly { group: string; tenant: string; role: MembershipRole }[];
}

/** Reads the configured group claim: a list of names, or one name. Anything else is no groups. */
export function groupsOf(claim: unknown): string[] {
  if (typeof claim === 'string') return [claim];
  return Array.isArray(claim) ? claim.filter((g): g is string => typeof g === 'string') : [];
}

/** The mapped role per tenant the groups earn: the highest of the matching rules. */
export function mappedRoles(groups: readonly string[], mappings: OidcLoginRules['groupMappings']): Map<string, MembershipRole> {
  const have = new Set(groups);
  const out = new Map<string, MembershipRole>();
  for (const m of mappings) if (have.has(m.group)) out.set(m.tenant, higherRole(out.get(m.tenant), m.role)!);
  return out;
}

// A provider's display name is shown, not trusted: control characters are dropped rather than refused.
// eslint-disable-next-line no-control-regex
const printable = (s: string) => s.replace(/[\u0000-\u001f\u007f]/g, '');
const domainOf = (email: string) => email.slice(email.lastIndexOf('@') + 1).toLowerCase();
/**
 * OpenID Connect Core §2 allows a subject of at most 255 ASCII characters. Non-ASCII ones are let
 * through for providers that bend that, control characters are not: the database refuses a NUL.
 */
const SUBJECT = /^[^\p{Cc}]{1,255}$/u;

/**
 * Applies spec 2's SSO rules 1–3 and returns the user to sign in, or undefined to refuse. Every
 * refusal is the same to the caller (the reason is only logged), so the answer never tells
 * whether an address has an account.
 * - An identity already linked signs in as its user.
 * - Otherwise a verified email links the existing user with that address, whatever its domain
 *   (the allowlist gates creation only), or creates a passwordless user when the domain is
 *   allowed.
 * - Group mappings are rewritten at every sign-in, apart from local grants; tenants that do not
 *   exist are skipped with a warning. Nothing here touches the instance-admin flag.
 */
export async function signInWithOidc(db: Db, rules: OidcLoginRules, id: OidcIdentity, log: LoginLog): Promise<User | undefined> {
  const refuse = (reason: string) => {
    log.info({ issuer: id.issuer, subject: id.subject, reason }, 'SSO sign-in refused');
    return undefined;
  };
  if (!SUBJECT.test(id.subject)) return refuse('subject is not 1 to 255 characters without control characters');
  let user = await getUserByOidcIdentity(db, id.issuer, id.subject);
  if (!user) {
    if (!id.email || !id.emailVerified) return refuse('no verified email');
    const existing = await getUserByEmail(db, id.email);
    try {
      if (existing) {
        user = await linkOidcIdentity(db, existing.id, id.issuer, id.subject);
      } else {
        const allowed = rules.allowedEmailDomains.some((d) => d.toLowerCase() === domainOf(id.email!));
        if (!allowed) return refuse('email domain not allowed');
        user = await createUser(db, { email: id.email, displayName: printable(id.name ?? '').slice(0, 200), oidcIssuer: id.issuer, oidcSubject: id.subject });
        log.info({ user_id: user.id, issuer: id.issuer }, 'SSO user created');
      }
    } catch (err) {
      if (isMetaError(err, 'conflict') || isMetaError(err, 'bad_data')) return refuse(err.message);
      throw err;
    }
  }
  if (user.disabled) return refuse('user disabled');
  const { skippedTenants } = await syncMappedMemberships(db, user.id, mappedRoles(id.groups, rules.groupMappings));
  for (const tenant of skippedTenants) log.warn({ tenant, user_id: user.id }, 'SSO group mapping names a tenant that does not exist; skipped');
  return user;
}
