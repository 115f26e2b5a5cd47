// heartbeat and keepAlive: the agent's word while it is busy
// (TaskService.Heartbeat, docs/liveness.md).

/**
 * keepAlive heartbeats the task every opts.intervalMs (30 s by default),
 * the first at once, until the returned stop() is called; stop resolves
 * once the loop has ended. Each answer goes to opts.onBeat(answer,
 * undefined), a failed heartbeat to opts.onBeat(undefined, error). Until
 * stopped it keeps Node running, as any timer does.
 */
export function keepAlive(client, taskId, opts = {}) {
  const { intervalMs = 30_000, onBeat, note = "" } = opts;
  const stopped = new AbortController();
  const done = (async () => {
    while (!stopped.signal.aborted) {
      let answer, error;
      try {
        answer = await client.heartbeat(taskId, note, { signal: stopped.signal });
      } catch (err) {
        error = err;
      }
      if (onBeat && !stopped.signal.aborted) onBeat(answer, error);
      await pause(intervalMs, stopped.signal);
    }
  })();
  return async () => {
    stopped.abort();
    await done;
  };
}

function pause(ms, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
