#!/usr/bin/env node
// Drives Cairn's web console in real headless Chromium (Debian's `chromium`, through
// `playwright-core`; no browser is downloaded) as a person would. Each journey takes a
// screenshot of every page it visits and prints one JSON line: what it read, every URL the
// browser requested, and every console error and page error.
//
// Journeys (`--journey`, with their arguments):
//   approve          --base URL --token T --run RUN --approval ID
//       sign in with a token, find the run, read the denied step's rule, go through the
//       approvals queue with the keyboard only and approve the held call, then look at the
//       runs on a phone-width screen (crates/server/tests/it/console_browser.rs).
//   incident         --link URL --run RUN --tampered RUN
//       enter by `cairn ui`'s one-time link, find the demo run, open its compaction and read
//       the blocked rehydration, open the denied refund and read its rule, then verify a
//       tampered run and read where it breaks (crates/cli/tests/it/ui.rs).
//   approve-waiting  --link URL
//       enter by the one-time link, wait for a request to appear in the queue while an agent
//       host waits on it, and approve it (the real-host harness, crates/cli/tests/it/real_hosts).
// Every journey takes --shots DIR [--chromium /usr/bin/chromium]. Every wait is bounded; the
// whole script stops after 90 s.

import { chromium } from 'playwright-core';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, word, i, all) => {
    if (word.startsWith('--')) pairs.push([word.slice(2), all[i + 1]]);
    return pairs;
  }, []),
);
const journeys = {
  approve: ['base', 'token', 'run', 'approval'],
  incident: ['link', 'run', 'tampered'],
  'approve-waiting': ['link'],
};
const journey = args.journey ?? 'approve';
for (const name of [...(journeys[journey] ?? ['journey']), 'shots']) {
  if (!args[name]) {
    console.error(`browse.mjs --journey ${journey}: missing --${name} (journeys: ${Object.keys(journeys).join(', ')})`);
    process.exit(2);
  }
}
setTimeout(() => {
  console.error('browse.mjs: gave up after 90 s');
  process.exit(3);
}, 90_000).unref();

const seen = { journey, requests: [], consoleErrors: [], pageErrors: [], pages: {} };
const browser = await chromium.launch({
  executablePath: args.chromium ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  page.on('request', (request) => seen.requests.push(request.url()));
  page.on('console', (message) => {
    if (message.type() === 'error') seen.consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => seen.pageErrors.push(String(error)));
  const text = async () => (await page.locator('main').innerText()).replace(/\s+/g, ' ');
  const shot = async (name) => page.screenshot({ path: `${args.shots}/${name}.png`, fullPage: true });
  const read = async (name, screenshot) => {
    seen.pages[name] = { url: new URL(page.url()).pathname, text: await text() };
    if (screenshot) await shot(screenshot);
  };
  // Tabs until the focused element's text satisfies `matches` (at most `limit` presses).
  const focusOn = async (matches, limit) => {
    for (let i = 0; i < limit; i++) {
      await page.keyboard.press('Tab');
      const focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '');
      if (matches(focused)) return focused;
    }
    throw new Error('nothing matching took the focus');
  };

  if (journey === 'approve') {
    // Sign in: the console sends a visitor to its sign-in form.
    await page.goto(`${args.base}/ui`);
    await read('login', '01-sign-in');
    await page.getByLabel('Token').fill(args.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/ui/runs');

    // Find the run and open it.
    await read('runs', '02-runs');
    await page.getByRole('link', { name: args.run }).click();
    await page.waitForURL(`**/ui/runs/**`);
    await read('timeline', '03-timeline');

    // The approvals queue, by keyboard only: Tab to the request's link, Enter; Tab to the
    // Approve button, Enter.
    await page.goto(`${args.base}/ui/approvals`);
    await read('queue', '04-approvals');
    await focusOn((label) => label === args.approval, 40);
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/ui/approvals/${args.approval}`);
    await read('request', '05-request');
    await focusOn((label) => label === 'Approve', 40);
    // The form posts, and the service answers with the request's page again (303).
    const posted = page.waitForResponse((response) => response.url().endsWith('/approve'));
    const shown = page.waitForResponse(
      (response) =>
        response.request().method() === 'GET' && response.url().endsWith(`/ui/approvals/${args.approval}`),
    );
    await page.keyboard.press('Enter');
    seen.approveStatus = (await posted).status();
    await shown;
    await page.waitForLoadState('load');
    await read('approved', '06-approved');

    // A phone-width screen: the runs page fits without scrolling sideways.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${args.base}/ui/runs`);
    seen.pages.phone = {
      text: await text(),
      overflow: await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
    };
    await shot('07-runs-phone');
  } else if (journey === 'incident') {
    // Enter by the link `cairn ui` printed: straight to the runs.
    await page.goto(args.link);
    await page.waitForURL('**/ui/runs');
    await read('runs', null);

    // The demo run, its compaction, and what the durable record said across it.
    await page.getByRole('link', { name: args.run, exact: true }).click();
    await page.waitForURL(`**/ui/runs/${args.run}`);
    await read('timeline', null);
    await page.getByRole('link', { name: 'context_compaction' }).first().click();
    await page.waitForURL('**/boundaries/**');
    await read('boundary', '09-boundary');

    // Back to the records; the refused refund and the rule that refused it.
    await page.goBack();
    await page.waitForURL(`**/ui/runs/${args.run}`);
    const refund = page.locator('tr', { hasText: 'payments.refund' }).first();
    await refund.getByRole('link').first().click();
    await page.waitForURL('**/steps/**');
    await read('step', '08-step');

    // A run whose records were rewritten in the store: verified on demand, where it breaks.
    await page.goto(new URL('/ui/runs', page.url()).href);
    await page.getByRole('link', { name: args.tampered, exact: true }).click();
    await page.waitForURL(`**/ui/runs/${args.tampered}`);
    await page.getByRole('link', { name: 'Verify this run now' }).click();
    await page.waitForURL('**/verify');
    await read('tampered', '10-tampered');
  } else if (journey === 'approve-waiting') {
    await page.goto(args.link);
    await page.waitForURL('**/ui/runs');
    // The queue, looked at again until the waiting host's request is in it (at most 60 s).
    const queue = new URL('/ui/approvals', page.url()).href;
    const until = Date.now() + 60_000;
    let request = null;
    while (Date.now() < until) {
      await page.goto(queue);
      const links = page.locator('main table a');
      if ((await links.count()) > 0) {
        request = links.first();
        break;
      }
      await page.waitForTimeout(200);
    }
    if (!request) throw new Error('no approval request appeared within 60 s');
    await read('queue', '11-waiting-queue');
    await request.click();
    await page.waitForURL('**/ui/approvals/**');
    await read('request', '12-waiting-request');
    const posted = page.waitForResponse((response) => response.url().endsWith('/approve'));
    await page.getByRole('button', { name: 'Approve' }).click();
    seen.approveStatus = (await posted).status();
    await page.waitForLoadState('load');
    await read('approved', '13-waiting-approved');
  }
  seen.ok = true;
} catch (error) {
  seen.ok = false;
  seen.error = String(error);
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
