import { createHash } from 'node:crypto';

/**
 * The router's own consent page (auth.oauth.consent_url left empty): one self-contained HTML
 * document whose script reads GET /oauth/consent/context?request=… with the session cookie,
 * offers the password sign-in when there is no session, and posts the user's decision to
 * /oauth/authorize/decision, then follows its redirect_to. Everything it shows is set as text
 * (textContent), never as HTML: the client's name is whatever the client registered.
 */
const SCRIPT = `
const $ = (id) => document.getElementById(id);
const handle = new URLSearchParams(location.search).get('request') || '';
const show = (id) => { for (const s of ['signin', 'consent', 'message']) $(s).hidden = s !== id; };
const say = (text) => { $('message').textContent = text; show('message'); };
const SCOPE_TEXT = { query: 'read this tenant\\'s traces, logs, metrics and profiles', ingest: 'send telemetry into this tenant' };
async function load() {
  const res = await fetch('/oauth/consent/context?request=' + encodeURIComponent(handle), { credentials: 'same-origin' });
  if (res.status === 401) return show('signin');
  const body = await res.json();
  if (!res.ok) return say(body.error || 'This request cannot be decided.');
  $('client').textContent = body.client.client_name;
  $('redirect').textContent = new URL(body.client.redirect_uri).origin;
  $('user').textContent = body.user.email;
  const list = $('scopes');
  list.replaceChildren(...body.scopes.map((s) => { const li = document.createElement('li'); li.textContent = SCOPE_TEXT[s] || s; return li; }));
  const pick = $('tenant');
  pick.replaceChildren(...body.tenants.map((t) => { const o = document.createElement('option'); o.value = t.tenant_id; o.textContent = t.tenant_id + ' (' + t.role + ': ' + t.scopes.join(', ') + ')'; return o; }));
  $('approve').disabled = body.tenants.length === 0;
  if (body.tenants.length === 0) $('none').hidden = false;
  show('consent');
}
async function decide(approve) {
  const res = await fetch('/oauth/authorize/decision', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify(approve ? { request: handle, approve: true, tenant_id: $('tenant').value } : { request: handle, approve: false }) });
  const body = await res.json();
  if (!res.ok) return say(body.error || 'The decision was refused.');
  location.assign(body.redirect_to);
}
$('approve').addEventListener('click', () => decide(true));
$('deny').addEventListener('click', () => decide(false));
$('signin-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const res = await fetch('/ui/session', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: $('username').value, password: $('password').value }) });
  if (!res.ok) { $('signin-error').textContent = 'Sign-in failed.'; return; }
  load();
});
load().catch(() => say('Floe could not be reached.'));
`;

export const CONSENT_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Floe: authorize an application</title>
<style>
body { font: 15px/1.5 system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; color: #1b1f24; }
h1 { font-size: 1.3rem; } button { font: inherit; padding: .4rem 1rem; margin-right: .5rem; } select, input { font: inherit; width: 100%; margin: .3rem 0 .8rem; }
.muted { color: #57606a; } #signin-error { color: #b42318; }
</style>
</head>
<body>
<section id="signin" hidden>
<h1>Sign in to Floe</h1>
<p class="muted">An application asks for access to your telemetry. Sign in to decide.</p>
<form id="signin-form"><label>Email <input id="username" type="email" autocomplete="username" required></label>
<label>Password <input id="password" type="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button> <span id="signin-error"></span></form>
</section>
<section id="consent" hidden>
<h1><span id="client"></span> wants access to Floe</h1>
<p class="muted">Signed in as <span id="user"></span>. After you decide, your browser goes back to <span id="redirect"></span>.</p>
<p>It asks to:</p><ul id="scopes"></ul>
<label>In tenant <select id="tenant"></select></label>
<p id="none" hidden>None of your tenants lets you grant this.</p>
<button id="approve" type="button">Allow</button><button id="deny" type="button">Deny</button>
</section>
<p id="message" hidden></p>
<script>${SCRIPT}</script>
</body>
</html>
`;

/** Only this page's own script and style run; it talks only to its origin and cannot be framed (clickjacking a consent). */
export const CONSENT_PAGE_CSP = [
  "default-src 'none'",
  `script-src 'sha256-${createHash('sha256').update(SCRIPT, 'utf8').digest('base64')}'`,
  "style-src 'unsafe-inline'",
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');
