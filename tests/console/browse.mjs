#!/usr/bin/env node
// Drives Cairn's web console in real headless Chromium (Debian's `chromium`, through
// `playwright-core`; no browser is downloaded) as a person would, for
// crates/server/tests/it/console_browser.rs: sign in, find the run, open it and read the
// denied step's rule, go through the approvals queue with the keyboard only and approve the
// held call, and look at the runs on a phone-width screen. It takes a screenshot of each page
// and prints one JSON line: what it read, every URL the browser requested, and every console
// error and page error.
//
// Usage: node browse.mjs --base http://127.0.0.1:PORT --token TOKEN --run RUN --approval ID
//                        --shots DIR [--chromium /usr/bin/chromium]
// Every wait is bounded; the whole script stops after 60 s.

import { chromium } from 'playwright-core';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, word, i, all) => {
    if (word.startsWith('--')) pairs.push([word.slice(2), all[i + 1]]);
    return pairs;
  }, []),
);
for (const name of ['base', 'token', 'run', 'approval', 'shots']) {
  if (!args[name]) {
    console.error(`usage: browse.mjs --base URL --token T --run RUN --approval ID --shots DIR (missing --${name})`);
    process.exit(2);
  }
}
setTimeout(() => {
  console.error('browse.mjs: gave up after 60 s');
  process.exit(3);
}, 60_000).unref();

const seen = { requests: [], consoleErrors: [], pageErrors: [], pages: {} };
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

  // Sign in: the console sends a visitor to its sign-in form.
  await page.goto(`${args.base}/ui`);
  seen.pages.login = { url: new URL(page.url()).pathname, text: await text() };
  await shot('01-sign-in');
  await page.getByLabel('Token').fill(args.token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL('**/ui/runs');

  // Find the run and open it.
  seen.pages.runs = { text: await text() };
  await shot('02-runs');
  await page.getByRole('link', { name: args.run }).click();
  await page.waitForURL(`**/ui/runs/**`);
  seen.pages.timeline = { text: await text() };
  await shot('03-timeline');

  // The approvals queue, by keyboard only: Tab to the request's link, Enter; Tab to the
  // Approve button, Enter.
  await page.goto(`${args.base}/ui/approvals`);
  seen.pages.queue = { text: await text() };
  await shot('04-approvals');
  const focusOn = async (matches, limit) => {
    for (let i = 0; i < limit; i++) {
      await page.keyboard.press('Tab');
      const focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '');
      if (matches(focused)) return focused;
    }
    throw new Error('nothing matching took the focus');
  };
  await focusOn((label) => label === args.approval, 40);
  await page.keyboard.press('Enter');
  await page.waitForURL(`**/ui/approvals/${args.approval}`);
  seen.pages.request = { text: await text() };
  await shot('05-request');
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
  seen.pages.approved = { text: await text() };
  await shot('06-approved');

  // A phone-width screen: the runs page fits without scrolling sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${args.base}/ui/runs`);
  seen.pages.phone = {
    text: await text(),
    overflow: await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
  };
  await shot('07-runs-phone');
  seen.ok = true;
} catch (error) {
  seen.ok = false;
  seen.error = String(error);
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
