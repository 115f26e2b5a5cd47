// The console: sign-in, then a page per route (#/tasks, #/task/ID,
// #/inbox, #/objectives, #/objective/ID, #/schedules, #/schedule/ID). Each page is built from the server's answers to the caller;
// the page hides what the caller may not do, and the server refuses it
// anyway.
import { call, session } from './api.js';
import { h, field, failure } from './ui.js';
import { tasksPage } from './tasks.js';
import { taskPage } from './task.js';
import { inboxPage } from './inbox.js';
import { objectivesPage, objectivePage } from './objectives.js';
import { schedulesPage, schedulePage } from './schedules.js';

const main = document.getElementById('main');
// me is who the server says the caller is (QueryService/WhoAmI).
let me = null;
// leave ends what the current page keeps running (a watch, a refresh).
let leave = () => {};

function signInPage(message) {
  const token = h('input', { type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const form = h('form', { class: 'card signin', 'aria-labelledby': 'signin-h' },
    h('h1', { id: 'signin-h' }, 'Sign in to Steward'),
    h('p', {}, 'Paste the bearer token you call Steward with. It is kept in this tab only (sessionStorage) and sent with every call; the server decides what you may see and do.'),
    message ? h('p', { class: 'error', role: 'alert' }, message) : null,
    field('token', 'Bearer token', token),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    session.signIn(token.value.trim());
    route();
  });
  main.replaceChildren(form);
  token.focus();
}

async function identify() {
  try {
    me = await call('QueryService/WhoAmI');
  } catch (err) {
    me = null;
    // Only a refused token is forgotten: a server down or unreachable
    // keeps it, and the page offers to try again.
    if (err.code === 'unauthenticated') {
      session.signOut();
      signInPage('That token was not accepted.');
    } else {
      main.replaceChildren(failure(err, 'Asking the server who you are'),
        h('button', { type: 'button', class: 'primary', onclick: route }, 'Try again'));
    }
    return false;
  }
  document.getElementById('who').textContent =
    `${me.principal}${me.tenant ? ' · tenant ' + me.tenant : ''}${me.roles && me.roles.length ? ' · ' + me.roles.join(', ') : ''}`;
  document.getElementById('nav').hidden = false;
  document.getElementById('signout').hidden = false;
  return true;
}

async function route() {
  leave();
  leave = () => {};
  if (!session.token()) {
    document.getElementById('nav').hidden = true;
    document.getElementById('signout').hidden = true;
    document.getElementById('who').textContent = '';
    signInPage();
    return;
  }
  if (!me && !(await identify())) return;
  const hash = location.hash || '#/tasks';
  const [path, query] = hash.slice(1).split('?');
  const params = new URLSearchParams(query || '');
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (path.startsWith('/' + a.dataset.nav)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  // left says a later route replaced this one: an answer read for it
  // arrives too late to draw, or to start a refresh.
  let gone = false;
  leave = () => { gone = true; };
  const ctx = { me, main, params, left: () => gone, onLeave: (f) => { const prev = leave; leave = () => { prev(); f(); }; } };
  const id = (prefix) => decodeURIComponent(path.slice(prefix.length));
  if (path.startsWith('/task/')) await taskPage(ctx, id('/task/'));
  else if (path === '/inbox') await inboxPage(ctx);
  else if (path.startsWith('/objective/')) await objectivePage(ctx, id('/objective/'));
  else if (path === '/objectives') await objectivesPage(ctx);
  else if (path.startsWith('/schedule/')) await schedulePage(ctx, id('/schedule/'));
  else if (path === '/schedules') await schedulesPage(ctx);
  else await tasksPage(ctx);
  main.focus({ preventScroll: true });
}

document.getElementById('signout').addEventListener('click', () => {
  session.signOut();
  me = null;
  location.hash = '#/tasks';
  route();
});
window.addEventListener('hashchange', route);
window.addEventListener('steward-unauthenticated', () => {
  if (!me) return; // signing in: identify says so itself
  session.signOut();
  me = null;
  leave();
  leave = () => {};
  for (const id of ['nav', 'signout']) document.getElementById(id).hidden = true;
  document.getElementById('who').textContent = '';
  signInPage('Your token is no longer accepted (expired or revoked): sign in again.');
});
route();
