// Prints how many milliseconds headless Chromium takes to open a page of Tenon's and
// draw it (from navigation to the second animation frame after the page is ready).
// usage: node open-time.mjs PAGE.html
import { chromium } from "playwright-core";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
const began = Date.now();
await page.goto(pathToFileURL(resolve(process.argv[2])).href);
await page.waitForSelector("body[data-ready='1']", { timeout: 120000 });
await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
console.log(Date.now() - began);
await browser.close();
