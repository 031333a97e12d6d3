// Drives a page of `jrpc show --html` in Debian's headless chromium and prints what it found as one
// JSON line (cli/tests/html.rs checks it).
//
//   node drive.mjs PAGE.html SCREENSHOT.png SPAN_METHOD FILTER
//
// Loads the page from a file: URL and records every request the page makes; counts the timeline's
// spans and ticks; clicks the span of SPAN_METHOD and reads the detail panel; types FILTER into the
// filter box and counts what stays visible. Screenshots: SCREENSHOT with the span selected,
// and SCREENSHOT with `-filtered` before its extension once the filter is applied. Bounded by a
// 60 s watchdog.
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const [page_path, screenshot, spanMethod, filter] = process.argv.slice(2);
const watchdog = setTimeout(() => {
  process.stderr.write('watchdog: the browser did not finish within 60 s\n');
  process.exit(2);
}, 60000);

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const requests = [];
  const errors = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  await page.goto(pathToFileURL(page_path).href, { waitUntil: 'load' });

  const spans = await page.$$eval('.span', (nodes) =>
    nodes.map((n) => ({ method: n.dataset.method, from: n.dataset.from, status: n.dataset.status, id: n.dataset.id, width: n.getBoundingClientRect().width })),
  );
  const ticks = await page.$$eval('.tick', (nodes) => nodes.map((n) => ({ method: n.dataset.method, kind: n.dataset.kind })));

  await page.click(`.span[data-method="${spanMethod}"]`);
  const detail = await page.$eval('#detail', (n) => ({
    title: n.querySelector('h2')?.textContent ?? '',
    meta: n.querySelector('.meta')?.textContent ?? '',
    json: [...n.querySelectorAll('pre.json')].map((p) => p.textContent),
  }));
  const selectedRows = await page.$$eval('#list tr.selected', (rows) => rows.length);
  await page.screenshot({ path: screenshot, fullPage: false });

  await page.fill('#filter', filter);
  const visible = await page.$$eval('.span', (nodes) =>
    nodes.filter((n) => getComputedStyle(n).display !== 'none').map((n) => n.dataset.method),
  );
  const visibleRows = await page.$$eval('#list tbody tr', (rows) => rows.filter((r) => getComputedStyle(r).display !== 'none').length);
  const count = await page.$eval('#count', (n) => n.textContent);
  await page.screenshot({ path: screenshot.replace(/(\.png)?$/, '-filtered.png'), fullPage: false });

  await page.fill('#filter', '');
  const allAgain = await page.$$eval('.span', (nodes) => nodes.filter((n) => getComputedStyle(n).display !== 'none').length);

  console.log(JSON.stringify({ requests, errors, spans, ticks, detail, selectedRows, visible, visibleRows, count, allAgain }));
} finally {
  await browser.close();
  clearTimeout(watchdog);
}
