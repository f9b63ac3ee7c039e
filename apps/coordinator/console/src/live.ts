/**
 * Live: due soon, running (and who holds it), dead, dispatch lag and
 * throughput. The gauges come from this coordinator's /metrics (cluster-wide
 * ones say so in their help); throughput and lag are the change between two
 * scrapes of this coordinator's counters; the lists come from the API.
 */
import { api, type Job } from './api';
import { h, relative, replace, time } from './dom';
import { problem, type View } from './context';

const INTERVAL_MS = 3000;

/** Sum of every sample of a metric (all label sets), or null when the metric is absent. */
export function metric(text: string, name: string): number | null {
  let total: number | null = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) total = (total ?? 0) + value;
  }
  return total;
}

export function liveView(view: View): void {
  const tiles = h('div', { class: 'tiles', 'aria-live': 'polite' });
  const lists = h('div');
  replace(view.main, h('h1', null, 'Live'), h('p', { class: 'hint' }, `Refreshed every ${INTERVAL_MS / 1000} s.`), tiles, lists);
  let previous: { at: number; finished: number; lagSum: number; lagCount: number } | null = null;

  view.every(INTERVAL_MS, async () => {
    try {
      const [text, running, dead] = await Promise.all([
        api.metrics(),
        api.jobs(new URLSearchParams({ state: 'CLAIMED', limit: '1000' })),
        api.jobs(new URLSearchParams({ state: 'DEAD', limit: '100' })),
      ]);
      if (view.left()) return;
      const now = Date.now();
      const sample = {
        at: now,
        finished: metric(text, 'kairos_runs_finished_total') ?? 0,
        lagSum: metric(text, 'kairos_dispatch_lag_seconds_sum') ?? 0,
        lagCount: metric(text, 'kairos_dispatch_lag_seconds_count') ?? 0,
      };
      const seconds = previous ? (now - previous.at) / 1000 : 0;
      const throughput = previous && seconds > 0 ? ((sample.finished - previous.finished) / seconds).toFixed(2) : '…';
      const claims = previous ? sample.lagCount - previous.lagCount : 0;
      const lag = previous && claims > 0 ? `${(((sample.lagSum - previous.lagSum) / claims) * 1000).toFixed(0)} ms` : previous ? 'no claims' : '…';
      const allTimeLag = sample.lagCount > 0 ? `${((sample.lagSum / sample.lagCount) * 1000).toFixed(0)} ms since start` : 'no claims yet';
      previous = sample;
      const tile = (label: string, value: string | number, note: string) =>
        h('div', { class: 'tile' }, h('div', { class: 'tile-label' }, label), h('div', { class: 'tile-value' }, String(value)), h('div', { class: 'tile-note' }, note));
      replace(
        tiles,
        tile('Due in the next minute', metric(text, 'kairos_jobs_due_next_minute') ?? '—', 'cluster-wide'),
        tile('Running', running.jobs.length + (running.nextCursor ? '+' : ''), `claimed jobs, namespace ${view.me.namespace}`),
        tile('Oldest overdue', `${(metric(text, 'kairos_oldest_overdue_job_seconds') ?? 0).toFixed(1)} s`, 'cluster-wide'),
        tile('Dispatch lag', lag, `mean over the last ${INTERVAL_MS / 1000} s, this coordinator; ${allTimeLag}`),
        tile('Throughput', `${throughput}/s`, 'runs finished, this coordinator'),
        tile('Dead jobs', dead.jobs.length + (dead.nextCursor ? '+' : ''), 'need a human'),
        tile('Agents here', metric(text, 'kairos_connected_agents') ?? '—', 'connected to this coordinator'),
      );
      replace(lists, jobTable('Running now', 'running-title', running.jobs, 'Nothing is running.'), jobTable('Dead', 'dead-title', dead.jobs, 'No dead jobs.'));
    } catch (error) {
      if (!view.left()) replace(tiles, problem(error));
    }
  });
}

function jobTable(title: string, id: string, jobs: Job[], empty: string): HTMLElement {
  return h(
    'section',
    { 'aria-labelledby': id },
    h('h2', { id }, title),
    jobs.length === 0
      ? h('p', null, empty)
      : h(
          'table',
          null,
          h('thead', null, h('tr', null, ['Job', 'Task', 'Held by', 'Fencing token', 'Occurrence', 'Attempt'].map((label) => h('th', { scope: 'col' }, label)))),
          h(
            'tbody',
            null,
            jobs.map((job) =>
              h(
                'tr',
                null,
                h('td', null, h('a', { href: `#/jobs/${job.jobId}` }, job.name ?? job.jobId)),
                h('td', null, job.task),
                h('td', null, job.leaseOwner ?? '—'),
                h('td', null, String(job.leaseGeneration)),
                h('td', null, time(job.occurrenceAt), job.occurrenceAt ? ` (${relative(job.occurrenceAt)})` : ''),
                h('td', null, `${job.attempt}/${job.maxAttempts}`),
              ),
            ),
          ),
        ),
  );
}
