// The console's only way to the server: Steward's own Connect services, in
// Connect's JSON protocol, with the signed-in person's bearer token. There
// is no second API: what a call may do is the server's to decide.

const tokenKey = 'steward.token';

export const session = {
  token: () => sessionStorage.getItem(tokenKey) || '',
  signIn: (token) => sessionStorage.setItem(tokenKey, token),
  signOut: () => sessionStorage.removeItem(tokenKey),
};

// RPCError is a Connect error: its code ("permission_denied", …) and the
// server's message, which names the field or the rule.
export class RPCError extends Error {
  constructor(code, message) {
    super(message || code);
    this.code = code;
  }
}

function headers(contentType) {
  const h = { 'Content-Type': contentType, 'Connect-Protocol-Version': '1' };
  const t = session.token();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

async function errorOf(res) {
  let body = {};
  try { body = await res.json(); } catch { /* not JSON: a proxy's page */ }
  const err = new RPCError(body.code || 'unknown', body.message || `HTTP ${res.status}`);
  // A token no longer accepted (expired, revoked) ends the session: the
  // page goes back to sign-in rather than polling on with errors.
  if (err.code === 'unauthenticated') window.dispatchEvent(new CustomEvent('steward-unauthenticated', { detail: err }));
  return err;
}

// call makes one unary call, e.g. call('QueryService/GetTask', {taskId}).
export async function call(method, body = {}) {
  const res = await fetch('/steward.v1.' + method, {
    method: 'POST', headers: headers('application/json'), body: JSON.stringify(body),
  });
  if (!res.ok) throw await errorOf(res);
  return res.json();
}

const enc = new TextEncoder();
const dec = new TextDecoder();

// envelope frames one message as Connect's streaming protocol does: a
// flags byte, a big-endian length, the JSON.
function envelope(msg) {
  const payload = enc.encode(JSON.stringify(msg));
  const out = new Uint8Array(5 + payload.length);
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

function concat(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

// stream makes a server-streaming call and hands each message to onMessage
// as it arrives, reading envelopes off the response body. It resolves when
// the stream ends and rejects with the stream's error.
export async function stream(method, body, onMessage, signal) {
  const res = await fetch('/steward.v1.' + method, {
    method: 'POST', headers: headers('application/connect+json'), body: envelope(body), signal,
  });
  if (!res.ok) throw await errorOf(res);
  const reader = res.body.getReader();
  let buf = new Uint8Array(0);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new RPCError('unavailable', 'the stream ended without its end message');
    buf = concat(buf, value);
    while (buf.length >= 5) {
      const view = new DataView(buf.buffer, buf.byteOffset);
      const flags = view.getUint8(0);
      const size = view.getUint32(1);
      if (buf.length < 5 + size) break;
      const msg = JSON.parse(dec.decode(buf.subarray(5, 5 + size)));
      buf = buf.slice(5 + size);
      if (flags & 2) {
        if (msg.error) throw new RPCError(msg.error.code, msg.error.message);
        return;
      }
      onMessage(msg);
    }
  }
}

// listAll follows a list's page tokens, up to bound items: a server list
// stops short (a page, ListTasks' scan bound) and says so by a token.
// It answers the items and whether more are left unread.
export async function listAll(method, req, key, bound = 500) {
  const items = [];
  let token = '';
  do {
    const resp = await call(method, { ...req, pageToken: token || undefined });
    items.push(...(resp[key] || []));
    token = resp.nextPageToken || '';
  } while (token && items.length < bound);
  return { items, more: token !== '' };
}
