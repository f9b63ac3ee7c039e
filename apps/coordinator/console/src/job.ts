/**
 * One job: what the operator can do with it, its settings, its next fire times
 * (with DST notes) and its per-fire ledger — every occurrence with each of its
 * attempts, skips and expired leases, the worker and the fencing token.
 */
import { api, ApiFailure, type Job, type Occurrence, type Run } from './api';
import { duration, h, relative, replace, time, when } from './dom';
import { badge, problem, type View } from './context';

const DST_NOTES: Record<NonNullable<Occurrence['dst']>, (o: Occurrence) => string> = {
  'gap-shifted': (o) => `${o.scheduledLocal ?? 'the written time'} does not exist that day (spring forward): fires shifted later by the gap`,
  'repeated-first': () => 'this local time occurs twice that day (fall back): fires at its first instant',
  'repeated-elapsed': () => 'second pass of a repeated hour: the schedule covers every hour, so it follows elapsed time',
};

export function jobView(view: View, id: string): void {
  const messages = h('div', { class: 'messages', 'aria-live': 'polite' });
  const actions = h('div', { class: 'actions', role: 'group', 'aria-label': 'Actions' });
  const title = h('h1', null, 'Job');
  const body = h('div');
  replace(view.main, h('p', null, h('a', { href: '#/jobs' }, '← Jobs')), title, actions, messages, body);

  let job: Job | null = null;
  let last = '';
  const refresh = async () => {
    try {
      const [fresh, upcoming, runs] = await Promise.all([api.job(id), api.upcoming(id), allRuns(id)]);
      if (view.left()) return;
      job = fresh;
      const snapshot = JSON.stringify([fresh, upcoming, runs]);
      if (snapshot === last) return;
      last = snapshot;
      title.textContent = fresh.name ? `Job ${fresh.name}` : `Job ${fresh.jobId}`;
      if (view.canWrite) replace(actions, actionButtons(fresh));
      replace(body, settings(fresh), upcomingSection(upcoming.occurrences, upcoming.timezone), timeline(runs));
    } catch (error) {
      if (!view.left()) replace(body, problem(error));
    }
  };

  const say = (...content: Array<Node | string>) => replace(messages, h('div', { class: 'message', role: 'status' }, content));
  const act = async (label: string, action: () => Promise<unknown>, done: string) => {
    try {
      await action();
      say(done);
    } catch (error) {
      if (error instanceof ApiFailure && error.reason === 'JOB_CLAIMED') replace(messages, await claimedExplanation(id, error));
      else replace(messages, h('div', { class: 'message' }, h('strong', null, `${label} refused. `), problem(error)));
    }
    last = '';
    await refresh();
  };

  const actionButtons = (j: Job) => {
    const waiting = j.state === 'DUE' || j.state === 'PAUSED';
    return [
      waiting || j.state === 'CLAIMED'
        ? h('button', { type: 'button', class: 'danger', onclick: () => act('Cancel', () => api.cancel(id), 'Cancelled: the job will not run again.') }, 'Cancel job')
        : null,
      j.state === 'CLAIMED'
        ? h('button', { type: 'button', class: 'danger', onclick: () => act('Abort', () => api.abort(id), abortRequested()) }, 'Abort run')
        : null,
      j.state === 'DUE' ? h('button', { type: 'button', onclick: () => act('Pause', () => api.verb(id, 'pause'), 'Paused: no occurrence starts until it is resumed.') }, 'Pause') : null,
      j.state === 'PAUSED' ? h('button', { type: 'button', onclick: () => act('Resume', () => api.verb(id, 'resume'), 'Resumed.') }, 'Resume') : null,
      j.state === 'DUE' || j.state === 'DEAD'
        ? h('button', { type: 'button', onclick: () => act('Trigger', () => api.verb(id, 'trigger'), 'Triggered: it runs now.') }, 'Trigger now')
        : null,
    ];
  };
  const abortRequested = () =>
    'Abort requested: the agent stops the handler and keeps the lease until it has stopped; the run then ends CANCELLED in the timeline below.';

  /** The 409 of a cancel, in words: who holds the job, since when, and that abort is the way. */
  const claimedExplanation = async (jobId: string, error: ApiFailure) => {
    const details = error.details ?? {};
    const runId = typeof details['runId'] === 'string' ? details['runId'] : null;
    const holder = typeof details['leaseOwner'] === 'string' ? details['leaseOwner'] : 'an agent';
    const leaseUntil = typeof details['leaseUntil'] === 'string' ? details['leaseUntil'] : null;
    let since: string | null = null;
    try {
      since = (await allRuns(jobId)).find((run) => run.runId === runId)?.startedAt ?? null;
    } catch {
      // The explanation stands without the start time.
    }
    return h(
      'div',
      { class: 'message explain', role: 'alert' },
      h('h2', null, 'This job cannot be cancelled: it is running'),
      h(
        'p',
        null,
        'Agent ',
        h('strong', { class: 'holder' }, holder),
        ` holds it (run ${runId ?? '?'}, fencing token ${String(details['leaseGeneration'] ?? '?')})`,
        since ? [' since ', h('strong', { class: 'since' }, when(since)), ` (${relative(since)})`] : '',
        leaseUntil ? `; its lease runs until ${when(leaseUntil)} and is renewed while the run lives.` : '.',
      ),
      h(
        'p',
        null,
        'Cancel only stops a job that has not started. To stop this run, abort it (',
        h('code', null, String(details['abort'] ?? `POST /jobs/${jobId}/abort`)),
        '): the agent stops the handler and keeps the lease until it has stopped, so the job never runs twice at once.',
      ),
      view.canWrite ? h('button', { type: 'button', class: 'danger', onclick: () => act('Abort', () => api.abort(jobId), abortRequested()) }, 'Abort this run') : null,
    );
  };

  view.every(3000, refresh);
  void job;
}

/** Every run of the job, following the cursor (up to 10 000). */
async function allRuns(id: string): Promise<Run[]> {
  const runs: Run[] = [];
  let cursor: string | null = null;
  do {
    const page = await api.runs(id, cursor);
    runs.push(...page.runs);
    cursor = page.nextCursor;
  } while (cursor !== null && runs.length < 10_000);
  return runs;
}

function settings(job: Job): HTMLElement {
  const rows: Array<[string, Node | string]> = [
    ['Id', h('code', null, job.jobId)],
    ['State', h('span', null, badge(job.state), job.pausedReason ? ` — ${job.pausedReason}` : '')],
    ['Task', job.task],
    ['Schedule', job.schedule ? `${job.schedule} (${job.timezone})` : `one-off at ${when(job.runAt)}`],
    ['Next run', job.nextRunAt ? h('span', null, time(job.nextRunAt), ` (${relative(job.nextRunAt)})`) : '—'],
    ['Occurrence served', time(job.occurrenceAt)],
    ['Attempt', `${job.attempt} of ${job.maxAttempts}`],
    ['Held by', job.leaseOwner ? `${job.leaseOwner} (fencing token ${job.leaseGeneration})` : `nobody (last fencing token ${job.leaseGeneration})`],
    ['Abort', job.abort ? `requested ${when(job.abort.requestedAt)} by ${job.abort.requestedBy ?? '?'}${job.abort.stopSchedule ? ', stopping the schedule' : ''}` : '—'],
    ['Timeout', job.timeoutSeconds === null ? 'none' : `${job.timeoutSeconds} s`],
    ['Misfire / overlap', `${job.misfirePolicy} / ${job.overlapPolicy}${job.catchupWindowMs ? `, catch-up window ${duration(job.catchupWindowMs)}` : ''}`],
    ['Retry', `${duration(job.retry.initialIntervalMs)} ×${job.retry.multiplier} up to ${duration(job.retry.maxIntervalMs)}, jitter ${job.retry.jitter}`],
    ['Start jitter', job.jitterMs ? duration(job.jitterMs) : 'none'],
    ['Pause on failure', job.pauseOnFailure ? 'yes' : 'no'],
    ['Backfill', job.backfill ? `through ${when(job.backfill.through)}, then resumes ${when(job.backfill.resumeAt)}` : '—'],
    ['Idempotency key', job.idempotencyKey ?? '—'],
    ['Created / updated', `${when(job.createdAt)} / ${when(job.updatedAt)} (version ${job.version})`],
    ['Payload', h('pre', null, JSON.stringify(job.payload, null, 2))],
  ];
  return h('section', { 'aria-labelledby': 'settings-title' }, h('h2', { id: 'settings-title' }, 'Settings'), h('dl', { class: 'settings' }, rows.map(([k, v]) => [h('dt', null, k), h('dd', null, v)])));
}

function upcomingSection(occurrences: Occurrence[], timezone: string): HTMLElement {
  return h(
    'section',
    { 'aria-labelledby': 'upcoming-title' },
    h('h2', { id: 'upcoming-title' }, 'Next fire times'),
    occurrences.length === 0
      ? h('p', null, 'None: the job is finished.')
      : h(
          'table',
          null,
          h('thead', null, h('tr', null, ['At (UTC)', `Local (${timezone})`, 'Offset', 'DST'].map((label) => h('th', { scope: 'col' }, label)))),
          h('tbody', null, occurrences.map((o) => h('tr', null, h('td', null, time(o.at)), h('td', null, o.local.replace('T', ' ')), h('td', null, o.offset), h('td', null, o.dst ? DST_NOTES[o.dst](o) : '—')))),
        ),
  );
}

/** The ledger, one entry per fire (occurrence), newest first, each with its attempts and skips. */
function timeline(runs: Run[]): HTMLElement {
  const fires = new Map<string, Run[]>();
  for (const run of runs) {
    const list = fires.get(run.scheduledFor) ?? [];
    list.push(run);
    fires.set(run.scheduledFor, list);
  }
  const newest = [...fires.entries()].reverse().slice(0, 200);
  return h(
    'section',
    { 'aria-labelledby': 'timeline-title' },
    h('h2', { id: 'timeline-title' }, 'Timeline'),
    h('p', { class: 'hint' }, `${runs.length} ledger rows over ${fires.size} fires${fires.size > 200 ? ' (newest 200 shown)' : ''}; newest first.`),
    newest.length === 0
      ? h('p', null, 'Nothing has run yet.')
      : h(
          'ol',
          { class: 'timeline' },
          newest.map(([scheduledFor, attempts]) =>
            h(
              'li',
              { class: 'fire' },
              h('h3', null, 'Fire for ', time(scheduledFor)),
              h(
                'table',
                null,
                h('thead', null, h('tr', null, ['Outcome', 'Attempt', 'Fencing token', 'Worker', 'Started', 'Finished', 'Duration', 'Why'].map((label) => h('th', { scope: 'col' }, label)))),
                h('tbody', null, attempts.map((run) => runRow(run))),
              ),
            ),
          ),
        ),
  );
}

function runRow(run: Run): HTMLElement {
  const end = run.finishedAt ? Date.parse(run.finishedAt) : Date.now();
  const took = run.startedAt ? duration(end - Date.parse(run.startedAt)) + (run.finishedAt ? '' : ' so far') : '—';
  const why = [
    run.outcome === 'LEASE_EXPIRED' ? 'the worker stopped renewing its lease; retried' : null,
    run.reason,
    run.abortedBy && !(run.error ?? '').startsWith('aborted by') ? `aborted by ${run.abortedBy}` : null,
    run.error,
  ].filter((part): part is string => part !== null && part !== '');
  return h(
    'tr',
    { class: `run run-${run.outcome.toLowerCase().replace(/_/g, '-')}` },
    h('td', null, badge(run.outcome)),
    h('td', null, String(run.attempt)),
    h('td', null, run.leaseGeneration === null ? '—' : String(run.leaseGeneration)),
    h('td', null, run.workerId ?? '—'),
    h('td', null, time(run.startedAt)),
    h('td', null, time(run.finishedAt)),
    h('td', null, took),
    h('td', { class: 'why' }, why.join('; ')),
  );
}
