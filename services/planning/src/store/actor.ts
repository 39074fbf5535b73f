/**
 * Who acts in a request, as the repositories need it: the tenant every statement is scoped to,
 * and the author recorded on what is created (a Floe user, or the API key that acts for none).
 */
export interface Actor {
  readonly tenantId: string;
  readonly userId: string | null;
  readonly keyId: string | null;
}
